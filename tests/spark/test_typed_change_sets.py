"""Change sets collected to the driver for delta-rs: segments typed alike (sharded tables) in one Spark job, each
equal to what typing it alone gives, within the room for held changes; and the tables they load."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from format_support import run, silver_rows, silver_schema, source_for, write_export
from pyspark.sql import functions as F

from lakeloader.apply.key_actions import batch_tables, key_actions, with_order
from lakeloader.apply.step import cached_for_reads_by_table, read_bronze, with_segments
from lakeloader.apply.typed_change_sets import CollectedChangeSets, Typing, typed_change_set
from lakeloader.core.storage import LocalStore
from lakeloader.land.step import land_hour
from lakeloader.parse import canonical as C
from lakeloader.parse.step import run_parse
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
LOADED_AT = datetime(2026, 11, 21, 7, tzinfo=UTC)
SHARD_COLUMNS = (("id", "LONG"), ("n", "LONG"), ("v", "STRING"))
SHARDS = [dw.TableSpec("shop", f"orders_{i}", SHARD_COLUMNS, ("id",)) for i in range(3)]
OTHER = dw.TableSpec("shop", "customers", (("id", "LONG"), ("name", "STRING")), ("id",))


def shard_lines(spec: dw.TableSpec, first_seq: int, at: datetime, rows: int) -> list[str]:
    """Inserts of `rows` keys, then an update of every other one (two changes of a key: one action)."""
    lines, seq = [], first_seq
    for key in range(rows):
        lines += dw.insert(spec, seq, at, {"id": key, "n": key * 10, "v": f"{spec.table}-{key}"})
        seq += 1
    for key in range(0, rows, 2):
        before = {"id": key, "n": key * 10, "v": f"{spec.table}-{key}"}
        lines += dw.update(spec, seq, at, before, {**before, "n": key * 10 + 1}, one_message=True)
        seq += 1
    return lines


@pytest.fixture
def batch(spark, tmp_path):
    """One hour of three shards (3, 4 and 5 keys) and a table of another shape: its cached key actions, its
    table segments and each table's changes."""
    source = source_for("dataworks_json", tmp_path)
    lines = [line for i, spec in enumerate(SHARDS) for line in shard_lines(spec, 100 * i + 1, H5, 3 + i)]
    lines += dw.insert(OTHER, 900, H5, {"id": 1, "name": "Ada"})
    write_export(source, "shop.json", lines, H5)
    land_hour(source, H5)
    run_parse(spark, source, H5)
    data = read_bronze(spark, LocalStore(source.lake_root), source.name, H5).where(F.col("kind") == C.DATA)
    data = with_order(with_segments(data, {}), source.format)
    tables = batch_tables(data, {})
    cached, actions = cached_for_reads_by_table(key_actions(data, tables.shapes, source.format))
    cached.count()  # computed once, as apply's first read computes it
    shapes = sorted(tables.shapes, key=lambda s: s.table)
    yield actions, shapes, {name: count for name, (count, _) in tables.counts.items()}
    cached.unpersist()


GROUPS = itertools.count()


def jobs_of(spark, collect) -> tuple[int, object]:
    """How many Spark jobs `collect()` runs, and what it returns."""
    group = f"typed-change-sets-{next(GROUPS)}"
    spark.sparkContext.setJobGroup(group, group)
    try:
        result = collect()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)), result


def typed_alone(actions, shape, as_text=()) -> pa.Table:
    return typed_change_set(actions, shape, LOADED_AT, as_text).toArrow()


def test_segments_typed_alike_are_collected_in_one_job_each_equal_to_its_segment_typed_alone(spark, batch):
    actions, shapes, changes = batch
    per_collection, _ = jobs_of(spark, lambda: typed_alone(actions, shapes[0]))
    collected = CollectedChangeSets(actions, LOADED_AT, shapes, changes, lambda s: Typing.of(s, ()))

    jobs, tables = jobs_of(spark, lambda: [collected.change_set(s, ()) for s in shapes])

    assert jobs == 2 * per_collection  # the three shards together, the customers table alone
    assert [t.num_rows for t in tables] == [1, 3, 4, 5]  # one action per key
    for shape, table in zip(shapes, tables, strict=True):
        assert table.equals(typed_alone(actions, shape)), shape.name


def test_the_room_for_held_changes_bounds_how_many_segments_one_job_collects(spark, batch):
    actions, shapes, changes = batch
    shards = [s for s in shapes if s.table.startswith("orders_")]
    room = changes[("shop", "orders_1")]  # orders_1 fits beside orders_0, orders_2 does not
    per_collection, _ = jobs_of(spark, lambda: typed_alone(actions, shards[0]))
    collected = CollectedChangeSets(actions, LOADED_AT, shards, changes, lambda s: Typing.of(s, ()), room)

    jobs, tables = jobs_of(spark, lambda: [collected.change_set(s, ()) for s in shards])

    assert jobs == 2 * per_collection
    for shape, table in zip(shards, tables, strict=True):
        assert table.equals(typed_alone(actions, shape)), shape.name


def test_a_segment_with_more_changes_than_the_room_is_collected_alone_and_leaves_the_others_waiting(spark, batch):
    actions, shapes, changes = batch
    orders_0, orders_1, orders_2 = shapes[1:]
    room = changes[("shop", "orders_1")]  # orders_2 has more changes than that
    per_collection, _ = jobs_of(spark, lambda: typed_alone(actions, orders_0))
    order = [orders_2, orders_0, orders_1]
    collected = CollectedChangeSets(actions, LOADED_AT, order, changes, lambda s: Typing.of(s, ()), room)

    taken = [jobs_of(spark, lambda s=s: collected.change_set(s, ())) for s in order]

    # orders_2 alone (it would have taken orders_0 along), then orders_0 and orders_1 in one collection
    assert [jobs for jobs, _ in taken] == [per_collection, per_collection, 0]
    for shape, (_, table) in zip(order, taken, strict=True):
        assert table.equals(typed_alone(actions, shape)), shape.name


def test_a_segment_typed_otherwise_at_its_turn_than_when_collected_is_typed_again(spark, batch):
    actions, shapes, changes = batch
    collected = CollectedChangeSets(actions, LOADED_AT, shapes, changes, lambda s: Typing.of(s, ()))
    orders_0, orders_1 = shapes[1], shapes[2]
    collected.change_set(orders_0, ())  # collects orders_1 with it, typed with no column as text

    table = collected.change_set(orders_1, {"n"})

    assert table.schema.field("n").type == pa.string()
    assert table.equals(typed_alone(actions, orders_1, {"n"}))


def test_shards_load_each_as_typed_by_its_own_table_when_one_holds_a_column_as_text(spark, tmp_path):
    """orders_1 was loaded when `n` was text; an hour later every shard declares it LONG: orders_1 keeps the
    text the source sent, the others type it, each from the same batch."""
    source = source_for("dataworks_json", tmp_path)
    as_text = dw.TableSpec("shop", "orders_1", (("id", "LONG"), ("n", "STRING"), ("v", "STRING")), ("id",))
    write_export(source, "h5.json", dw.insert(as_text, 1, H5, {"id": 7, "n": "seven", "v": "x"}), H5)
    lines = [line for i, spec in enumerate(SHARDS) for line in shard_lines(spec, 100 * i + 10, H6, 2)]
    write_export(source, "h6.json", lines, H6)

    run(spark, source, [H5, H6])

    assert silver_schema(source, "shop", "orders_1")["n"] == "string"
    assert silver_rows(source, "shop", "orders_1") == [
        {"id": 0, "n": "1", "v": "orders_1-0"},
        {"id": 1, "n": "10", "v": "orders_1-1"},
        {"id": 7, "n": "seven", "v": "x"},
    ]
    for table in ("orders_0", "orders_2"):
        assert silver_schema(source, "shop", table)["n"] == "int64"
        assert silver_rows(source, "shop", table) == [
            {"id": 0, "n": 1, "v": f"{table}-0"},
            {"id": 1, "n": 10, "v": f"{table}-1"},
        ]
