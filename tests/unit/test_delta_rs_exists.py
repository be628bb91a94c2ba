"""delta-rs's `exists` lists the log rather than loading the table (apply asks it about 9 times per table and
hour): a table exists once its log holds a commit, and a store it cannot reach raises rather than answering
no, since apply would then skip the table's tombstones or try to create it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeloader.engine.deltars import DeltaRsEngine


def test_a_table_exists_once_its_log_holds_a_commit(tmp_path) -> None:
    engine = DeltaRsEngine()
    (tmp_path / "parquet_only").mkdir()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "parquet_only" / "part-0.parquet")
    (tmp_path / "empty_log" / "_delta_log").mkdir(parents=True)
    engine.create(str(tmp_path / "table"), pa.schema([("id", pa.int64())]), {}, {})

    assert [engine.exists(str(tmp_path / name)) for name in ("missing", "parquet_only", "empty_log", "table")] == [
        False,
        False,
        False,
        True,
    ]


def test_a_store_that_cannot_be_reached_raises_rather_than_answering_no() -> None:
    engine = DeltaRsEngine(
        {
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # the discard port: nothing listens
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "timeout": "1s",
        }
    )
    with pytest.raises(OSError, match="list request"):
        engine.exists("s3://lake/silver/src/shop/orders")
