"""Both table engines keep one contract (tests/engine_contract.py): delta-rs in this process, Delta Lake on Spark
in its own Spark with the pinned jars (a JVM's jars are fixed when it starts); and the tables Delta on Spark
writes read the same with delta-rs (the Airflow side reads them so). Delta on Spark through s3a with the same
settings (`lakeloader.spark.s3a_conf`) is tests/system/test_spark_jars.py's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from engine_contract import continue_crossing, exercise, rows, start_crossing

from lakeloader.core.config import SourceConfig
from lakeloader.core.spark_conf import jars_dir, s3a_conf, session_conf
from lakeloader.engine import reader_for
from lakeloader.engine.deltars import DeltaRsEngine

CONTRACT_SCRIPT = Path(__file__).parents[1] / "engine_contract.py"
_TIMEOUT_SECONDS = 600
PROPERTIES = {"lakeloader.schemaSeq": "[7, 0]", "primary_key": '["id"]'}
EXPECTED = {
    "exists_before": False,
    "exists_after": True,
    "properties": {"primary_key": '["id"]'},
    "properties_set": PROPERTIES,
    "schema": [
        "id:int64", "name:string", "n:int32", "_cdc_seq:decimal128(38, 0)", "_cdc_seq2:decimal128(38, 0)",
        "_cdc_op:string", "_cdc_event_time:timestamp[us, tz=UTC]", "_cdc_source_file:string",
        "_cdc_source_line:int64", "_cdc_position:string", "_cdc_loaded_at:timestamp[us, tz=UTC]",
    ],
    # 3 inserted; then the older upsert of 1 ignored, 2 updated (its partial image: only n), 3 deleted
    "merges": [[3, 0, 0], [0, 1, 1]],
    "after_merges": [[1, "a", 1], [2, "b", 20]],
    "read_columns": [["n", "id"], [{"n": 1, "id": 1}, {"n": 20, "id": 2}]],
    "row_count": [2, 1],
    "converts": [False, True],  # names "a", "b" are not integers; n's 1 and 20 fit a tinyint
    "widened": ["n:int64", "extra:string"],
    "properties_kept": PROPERTIES,
    "deleted": [1, [[1, "a", 1]]],
    "rewritten": [[1, "a", 1]],
    "reclustered_files": 1,
    "clustered": True,
    "replaced": [[[1, "a"], [5, "e"]], PROPERTIES],
    "appended": [["2026-01-01T00", 3], ["2026-01-01T01", 4]],
    "version_grows": True,
    "checkpoints": {"interval": "10", "written": True},
}  # fmt: skip


def test_delta_rs_keeps_the_engine_contract(tmp_path: Path) -> None:
    assert exercise(DeltaRsEngine(), str(tmp_path)) == EXPECTED


@pytest.mark.skipif(not any(jars_dir().glob("*.jar")), reason=f"no jars in {jars_dir()}: run `make jars`")
def test_delta_on_spark_keeps_the_engine_contract_and_each_engine_continues_the_others_tables(
    tmp_path: Path,
) -> None:
    start_crossing(DeltaRsEngine(), str(tmp_path))
    completed = subprocess.run(
        [sys.executable, str(CONTRACT_SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    records = json.loads(completed.stdout.strip().splitlines()[-1])
    assert records == {"local": EXPECTED, "crossing": [[1, "a20", 1], [2, "b", 2], [3, "n", 3]]}
    # delta-rs reads and continues what Delta on Spark wrote (a source switching engines keeps its tables)
    assert rows(DeltaRsEngine(), str(tmp_path / "tables/copy"), ("id", "NAME")) == [[1, "a"], [5, "e"]]
    assert DeltaRsEngine().properties(str(tmp_path / "tables/copy")) == PROPERTIES
    continued = continue_crossing(DeltaRsEngine(), str(tmp_path), seq=30)
    assert continued == [[1, "a30", 1], [2, "b", 2], [3, "n", 3], [4, "n", 4]]


def test_a_delta_spark_source_gets_the_jars_and_s3a_settings_and_is_read_with_delta_rs_without_spark(
    tmp_path: Path,
) -> None:
    source = SourceConfig(
        name="shop",
        format="canal_json",
        export_uri=str(tmp_path / "exports"),
        lake_root="s3://lake/shop",
        s3_endpoint_url="http://127.0.0.1:9000",
        engine="delta_spark",
    )
    conf = session_conf(source) if any(jars_dir().glob("*.jar")) else {}
    if conf:
        assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
        assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert s3a_conf("http://127.0.0.1:9000")["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert session_conf(source.model_copy(update={"engine": "delta_rs"})) == {}
    assert isinstance(reader_for(source), DeltaRsEngine)  # reads without a JVM (the Airflow side)
