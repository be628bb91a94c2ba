"""Silver file layout: reclustering lays a table's files out in key order and size, so a merge of changes to
recent keys rewrites only the files holding them; the apply step reclusters at the source's recluster hours."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakeloader.apply.step import recluster_due
from lakeloader.cli.local_runner import run_hours
from lakeloader.core.config import SourceConfig
from lakeloader.engine import base as E
from lakeloader.engine.deltars import DeltaRsEngine
from tests.spark.test_apply import ORDERS, order, silver_rows, user_columns, write_export
from tools.cdcgen import dataworks as dw

FILE_SIZE = 64 * 1024
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("note", pa.string()), *E.METADATA_FIELDS])
LOADED = datetime(2026, 11, 21, tzinfo=UTC)


def change_set(keys: list[int], version: int) -> pa.Table:
    """Upserts of `keys` at `version` (its ordering key), in the given order."""
    n = len(keys)
    columns = {
        "id": keys,
        "note": [f"note {version} of key {k:08d} " * 3 for k in keys],
        E.SEQ: [version] * n,
        E.SEQ2: list(range(n)),
        E.OP: ["INSERT"] * n,
        E.EVENT_TIME: [LOADED] * n,
        E.SOURCE_FILE: ["f"] * n,
        E.SOURCE_LINE: list(range(n)),
        E.POSITION: [None] * n,
        E.LOADED_AT: [LOADED] * n,
    }
    table = pa.table(columns, schema=SCHEMA)
    return table.append_column(E.ACTION, pa.array([E.UPSERT] * n))


def files(uri: str) -> set[str]:
    return set(DeltaTable(uri).file_uris())


@pytest.fixture
def shuffled_table(tmp_path) -> tuple[DeltaRsEngine, str]:
    """20,000 keys written by four merges of shuffled keys: every file spans the whole key range."""
    engine, uri = DeltaRsEngine(), str(tmp_path / "orders")
    engine.create(uri, SCHEMA, {}, {}, FILE_SIZE)
    keys = list(range(20_000))
    random.Random(3).shuffle(keys)
    for part in range(4):
        engine.merge(uri, change_set(keys[part * 5_000 : (part + 1) * 5_000], 1), ["id"], E.ORDERING_COLUMNS, {})
    return engine, uri


def test_recluster_writes_key_ordered_files_of_the_target_size_and_keeps_every_row(shuffled_table):
    engine, uri = shuffled_table
    before = engine.read(uri).sort_by("id")
    assert not engine.clustered(uri, "id", FILE_SIZE)

    written = engine.recluster(uri, ["id"], FILE_SIZE, {"test": "1"})

    assert engine.clustered(uri, "id", FILE_SIZE)
    assert written == len(files(uri)) >= 8
    assert engine.read(uri).sort_by("id").equals(before)
    assert DeltaTable(uri).metadata().configuration[E.FILE_SIZE_PROPERTY] == str(FILE_SIZE)


def test_a_merge_of_recent_keys_after_recluster_rewrites_only_the_newest_files(shuffled_table):
    engine, uri = shuffled_table
    engine.recluster(uri, ["id"], FILE_SIZE, {})
    laid_out = files(uri)

    recent = [*range(19_500, 20_000, 3), *range(20_000, 20_300)]  # updates of the newest keys, and inserts
    engine.merge(uri, change_set(recent, 2), ["id"], E.ORDERING_COLUMNS, {})

    kept = files(uri) & laid_out
    assert len(laid_out - kept) == 1 and len(kept) == len(laid_out) - 1
    assert engine.row_count(uri) == 20_300


def test_a_merge_of_keys_spread_over_the_table_rewrites_every_file(shuffled_table):
    engine, uri = shuffled_table
    engine.recluster(uri, ["id"], FILE_SIZE, {})
    laid_out = files(uri)

    engine.merge(uri, change_set(list(range(0, 20_000, 400)), 2), ["id"], E.ORDERING_COLUMNS, {})

    assert not files(uri) & laid_out


def test_a_composite_key_table_keeps_its_write_order_so_a_merge_of_recent_keys_rewrites_only_the_newest_files(
    tmp_path,
):
    """Eight merges of ascending ids over 1,000 tenants. Z-order on (tenant, id) interleaves the two columns, so
    each file spans a large part of the ids (here the merge below rewrote 5 of 20 files after it); recluster
    only merges small files, so recent ids stay in the newest files."""
    schema = pa.schema([pa.field("tenant", pa.int64()), *SCHEMA])
    engine, uri = DeltaRsEngine(), str(tmp_path / "orders")
    engine.create(uri, schema, {}, {}, FILE_SIZE)

    def tenants_of(ids: list[int], version: int) -> pa.Table:
        tenants = [i * 2_654_435_761 % 2**32 % 1000 for i in ids]  # a key's tenant, scattered over the ids
        return change_set(ids, version).add_column(0, "tenant", pa.array(tenants, pa.int64()))

    for part in range(8):
        engine.merge(uri, tenants_of(list(range(part * 2_500, (part + 1) * 2_500)), 1), ["tenant", "id"],
                     E.ORDERING_COLUMNS, {})  # fmt: skip
    before = engine.read(uri).sort_by("id")

    engine.recluster(uri, ["tenant", "id"], FILE_SIZE, {})
    laid_out = files(uri)
    assert engine.read(uri).sort_by("id").equals(before)
    engine.merge(uri, tenants_of([*range(19_500, 20_000, 3), *range(20_000, 20_300)], 2), ["tenant", "id"],
                 E.ORDERING_COLUMNS, {})  # fmt: skip

    assert len(laid_out) >= 8 and len(laid_out - files(uri)) <= 2
    assert DeltaTable(uri).metadata().configuration[E.FILE_SIZE_PROPERTY] == str(FILE_SIZE)
    assert engine.row_count(uri) == 20_300


def test_a_table_is_clustered_only_at_the_target_size_and_with_disjoint_key_ranges(tmp_path):
    engine, uri = DeltaRsEngine(), str(tmp_path / "t")
    engine.create(uri, SCHEMA, {}, {})
    engine.merge(uri, change_set([1, 2, 3], 1), ["id"], E.ORDERING_COLUMNS, {})
    assert engine.clustered(uri, "id", FILE_SIZE) is False  # one file, but the table aims at delta-rs' default size
    engine.recluster(uri, ["id"], FILE_SIZE, {})
    assert engine.clustered(uri, "id", FILE_SIZE) is True
    write_deltalake(uri, change_set([4, 5], 2).drop_columns([E.ACTION]), mode="append")  # 4..5: disjoint
    assert engine.clustered(uri, "id", FILE_SIZE) is True
    write_deltalake(uri, change_set([0, 9], 3).drop_columns([E.ACTION]), mode="append")  # 0..9 spans the others
    assert engine.clustered(uri, "id", FILE_SIZE) is False


@pytest.mark.parametrize(
    ("every", "hour", "due"),
    [(24, datetime(2026, 11, 21, 0, tzinfo=UTC), True), (24, datetime(2026, 11, 21, 5, tzinfo=UTC), False),
     (6, datetime(2026, 11, 21, 18, tzinfo=UTC), True), (1, datetime(2026, 11, 21, 5, tzinfo=UTC), True),
     (0, datetime(2026, 11, 21, 0, tzinfo=UTC), False)],
)  # fmt: skip
def test_recluster_hours_are_the_multiples_of_recluster_every_hours(tmp_path, every, hour, due):
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(tmp_path), lake_root=str(tmp_path),
        recluster_every_hours=every,
    )  # fmt: skip
    assert recluster_due(source, hour) is due


def test_apply_reclusters_its_tables_at_the_recluster_hours_and_leaves_the_rows_as_loaded(spark, tmp_path):
    """Two hours of 3,000 inserts plus updates of every seventh key so far, reclustered every 2 hours."""
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(tmp_path / "exports"),
        lake_root=str(tmp_path / "lake"), silver_file_size_mb=1, recluster_every_hours=2,
        column_types={"shop.orders": {"amount": "double"}},  # DataWorks DOUBLE is exact text unless configured
    )  # fmt: skip
    first = datetime(2026, 11, 21, 0, tzinfo=UTC)
    expected: dict[int, dict] = {}
    sequence = 1
    for offset in range(2):
        hour = first + timedelta(hours=offset)
        at = hour + timedelta(minutes=10)
        lines = []
        for key in range(offset * 3_000, (offset + 1) * 3_000):
            expected[key] = order(key, float(key), "new")
            lines += dw.insert(ORDERS, sequence, at, expected[key])
            sequence += 1
        for key in range(0, (offset + 1) * 3_000, 7):
            expected[key] = order(key, float(key) + 1, f"updated in hour {offset}")
            lines += dw.update(ORDERS, sequence, at, order(key, 0.0, "?"), expected[key], one_message=True)
            sequence += 1
        write_export(tmp_path / "exports", f"{hour:%Y%m%d%H}/orders.json", lines, hour)

    reports = run_hours(spark, source, [first, first + timedelta(hours=1)], emit=lambda *_: None)

    applied = [r["tables"]["shop.orders"] for r in reports if r["step"] == "apply"]
    assert ["recluster_files" in table for table in applied] == [True, False]  # 00:00 is a recluster hour, 01:00 not
    loaded = [
        {k: v for k, v in row.items() if k != "created"} for row in user_columns(silver_rows(source, "shop", "orders"))
    ]
    assert sorted(loaded, key=lambda r: r["id"]) == [
        {k: v for k, v in expected[key].items() if k != "created"} for key in sorted(expected)
    ]
