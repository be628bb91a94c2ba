"""The one total order (docs/semantics.md): equal sequences across hours, offsets from file names and
envelopes, re-deliveries counted once, keyless tables ordered by export position and counted by message."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta

from format_support import (
    parse_files,
    parse_lines,
    report,
    run,
    silver_rows,
    source_for,
    write_export,
    write_export_file,
)

from tools.cdcgen import layouts, wire

H5 = wire.BASE
H6, H7, H8 = (H5 + timedelta(hours=h) for h in (1, 2, 3))
ITEMS, EVENTS = wire.ITEMS, wire.EVENTS


def row(key: int, name: str, qty: int = 1) -> dict:
    return {"id": key, "name": name, "qty": qty}


def canal(*changes: wire.Change) -> list[str]:
    return [line for change in changes for line in wire.canal_json(change)]


def test_equal_sequences_in_consecutive_hours_apply_in_export_order(spark, tmp_path):
    """Canal `es` and `id` shared by three updates of one row in three hours, and by a delete and the insert
    an hour before it: the last hour's change wins, whatever order the hours are loaded in."""
    tick = 100  # every change below carries the same es (ms) and id
    updates = [wire.Change(ITEMS, wire.UPDATE, n, row(1, f"v{n - 1}"), row(1, f"v{n}"), tick=tick) for n in (2, 3, 4)]
    files = {
        H5: canal(wire.Change(ITEMS, wire.INSERT, 1, None, row(1, "v1"), tick=tick), updates[0]),
        H6: canal(updates[1], wire.Change(ITEMS, wire.INSERT, 5, None, row(2, "gone"), tick=tick)),
        H7: canal(updates[2], wire.Change(ITEMS, wire.DELETE, 6, row(2, "gone"), None, tick=tick)),
    }
    results, reports = [], []
    for n, order in enumerate([[H5, H6, H7, H5], [H7, H5, H6]]):  # (land puts every due file in the first run)
        (tmp_path / f"run{n}").mkdir()
        source = source_for("canal_json", tmp_path / f"run{n}")
        for hour, lines in files.items():
            write_export(source, f"items/part-{hour:%H}.json", lines, hour)
        reports.append(run(spark, source, order))
        results.append(silver_rows(source, wire.DB, ITEMS.name))
    assert results == [[row(1, "v4")], [row(1, "v4")]]
    replayed = [r for r in reports[0] if r["step"] == "apply"][-1]["tables"][f"{wire.DB}.{ITEMS.name}"]
    assert replayed["stale_upserts"] == 1  # the rerun of H5 after H6, H7: its key's last upsert is older


def test_a_file_name_with_its_start_offset_gives_each_message_its_topic_partition_and_offset(spark, tmp_path):
    source = source_for("canal_json")
    path = tmp_path / "topics" / "db1.inventory.orders" / "db1.inventory.orders+3+0000004219.json.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(("\n".join(canal(*wire.keyed_stream(ITEMS, 2)[0])) + "\n").encode()))
    rows = parse_files(spark, source, path)
    positions = [(r["origin_topic"], r["origin_partition"], r["origin_offset"]) for r in rows]
    assert positions == [("db1.inventory.orders", 3, 4219), ("db1.inventory.orders", 3, 4220)]


def test_a_redelivered_offset_named_file_is_a_duplicate_and_never_overrides_a_newer_change(spark, tmp_path):
    """DebeziumSmt (no order in its messages) from Kafka Connect S3 sink files: offset 4219 re-delivered three
    hours later (in an overlapping file) does not override offset 4232, whatever order the hours run in."""
    smt = wire.debezium_smt
    first = [
        *smt(wire.Change(ITEMS, wire.INSERT, 1, None, row(1, "a"))),
        *smt(wire.Change(ITEMS, wire.UPDATE, 2, row(1, "a"), row(1, "old"))),
    ]
    newer = smt(wire.Change(ITEMS, wire.UPDATE, 3, row(1, "old"), row(1, "new")))
    results, reports = [], []
    for n, order in enumerate([[H5, H6, H8], [H8, H6, H5]]):
        (tmp_path / f"run{n}").mkdir()
        source = source_for("debezium_smt", tmp_path / f"run{n}", **wire.settings("debezium_smt", (ITEMS,)))
        topics = "topics/items-topic/partition=0"
        write_export(source, f"{topics}/items-topic+0+0000004218.json", first, H5)  # offsets 4218, 4219
        write_export(source, f"{topics}/items-topic+0+0000004232.json", newer, H6)
        write_export(source, f"{topics}/items-topic+0+0000004219.json", first[1:], H8)  # 4219 again
        write_export(source, f"retry/{topics}/items-topic+0+0000004219.json", first[1:], H8)  # and again
        reports.append(run(spark, source, order))
        results.append(silver_rows(source, wire.DB, ITEMS.name))
    assert results == [[row(1, "new")], [row(1, "new")]]
    late = report(reports[0], "apply", H8)["tables"][f"{wire.DB}.{ITEMS.name}"]
    assert (late["changes"], late["duplicates"], late["stale_upserts"]) == (2, 1, 1)


def test_keyless_update_then_delete_in_one_second_and_identical_changes_count_by_message(spark, tmp_path):
    """Debezium JSON in kcat envelopes, a table without a key, whole-second `ts_ms`: two identical inserts in
    one second are two rows; an update and then a delete of its new row in one second leave no row; the
    same offsets delivered again an hour later and an hour earlier count once."""
    tick = 7
    changes = [
        wire.Change(EVENTS, wire.INSERT, 1, None, row(1, "a"), tick=tick),
        wire.Change(EVENTS, wire.INSERT, 2, None, row(1, "a"), tick=tick),  # identical, genuine
        wire.Change(EVENTS, wire.UPDATE, 3, row(1, "a"), row(2, "b"), tick=tick),
        wire.Change(EVENTS, wire.DELETE, 4, row(2, "b"), None, tick=tick),
    ]
    messages = [
        layouts.Positioned("events", 0, offset, text)
        for offset, change in enumerate(changes)
        for text in wire.debezium_json(change)
    ]
    source = source_for("debezium_json", tmp_path, export_layout="kcat")
    write_export_file(source, "events/a.json", layouts.kcat_file(messages, base64_payload=False), H6)
    write_export_file(
        source, "events/b.json", layouts.kcat_file(messages[1:3], base64_payload=False), H7
    )  # re-delivered later
    write_export_file(
        source, "events/c.json", layouts.kcat_file(messages[:2], base64_payload=False), H5
    )  # ... and earlier
    run(spark, source, [H5, H7, H6, H5])
    assert silver_rows(source, wire.DB, EVENTS.name) == [row(1, "a")]


def test_oms_debezium_pos_orders_changes_of_one_millisecond_by_its_binlog_offset(spark, tmp_path):
    def event(pos: str) -> str:
        origin = {"name": "OMS", "ts_ms": 1668496109000, "db": "shop", "table": "items", "pos": pos}
        return json.dumps({"payload": {"op": "c", "after": {"id": 1}, "source": origin}})

    rows = parse_lines(spark, source_for("debezium_json"), tmp_path, [event("553132@1668496109"), event("17")])
    assert [(r["seq"], r["seq2"]) for r in rows] == [(1668496109000, 553132), (1668496109000, 17)]


def test_the_typed_sort_key_orders_changes_exactly_as_their_position_text(spark):
    """key_actions sorts by the `position_order` columns and writes `position`: both must order any two changes
    alike, for each exporter's order (offset, sequence, file) and file names that are prefixes of each other or not
    ASCII."""
    import random

    from pyspark.sql import functions as F

    from lakeloader.apply.key_actions import position, position_order

    rng = random.Random(17)
    files = ["a", "ab", "a.b", "a/b", "b", "é", "e\u0301", "z" * 40, "Ab", "a b"]
    rows = [
        (
            rng.choice([0, 1]),
            rng.choice([None, rng.randrange(0, 10**12), rng.randrange(0, 30)]),
            rng.random() < 0.3,
            rng.choice(["2026-11-21T05", "2026-11-21T06", "2026-11-22T00"]),
            rng.choice(files),
            rng.randrange(0, 10**9) if rng.random() < 0.3 else rng.randrange(0, 40),
            rng.randrange(0, 12),
        )
        for _ in range(400)
    ]
    frame = spark.createDataFrame(
        rows,
        "rank int, origin_offset long, by_sequence boolean, batch_hour string, origin_file string, "
        "origin_line long, origin_index int",
    ).withColumn("id", F.monotonically_increasing_id())
    by_sequence = F.col("by_sequence")
    order = [c.alias(f"o{i}") for i, c in enumerate(position_order(F.col("rank"), by_sequence))]
    keyed = frame.select("id", position(F.col("rank"), by_sequence).alias("text"), *order)
    by_text = [(r["text"], r["id"]) for r in keyed.orderBy("text", "id").collect()]
    by_order = [(r["text"], r["id"]) for r in keyed.orderBy(*[f"o{i}" for i in range(len(order))], "id").collect()]
    # the same sequence of texts: o never ties two different texts, nor orders them otherwise
    assert [t for t, _ in by_order] == [t for t, _ in by_text]
    assert len({t for t, _ in by_text}) > 300


def test_partial_images_fold_oldest_first_whatever_the_row_order_and_the_first_delivered_copy_decides(spark):
    """A format that sends partial after-images (SharePlex): each key's actions fold in the total order, not in
    the order Spark reads them, and of two copies of the deciding message (one offset, two hours) the one
    delivered first is the one kept."""
    from decimal import Decimal

    from lakeloader.apply.key_actions import TableShape, key_actions

    def change(seq: int, op: str, after: dict | None, partial: bool, hour: str, offset: int, key: int = 1) -> tuple:
        before = {"id": str(key)} if op != "INSERT" else None
        return (
            "shop",
            "items",
            0,
            op,
            Decimal(seq),
            Decimal(0),
            None,
            f"export-{hour}",
            offset,
            0,
            offset,
            hour,
            before,
            after,
            partial,
        )

    h5, h6 = "2026-11-21T05", "2026-11-21T06"
    rows = [
        change(4, "UPDATE", {"id": "1", "qty": "4"}, True, h6, 40),  # the copy delivered second
        change(3, "UPDATE", {"id": "1", "name": "c"}, True, h5, 30),
        change(1, "INSERT", {"id": "1", "name": "a", "qty": "1"}, False, h5, 10),
        change(4, "UPDATE", {"id": "1", "qty": "4"}, True, h5, 40),
        change(2, "UPDATE", {"id": "1", "name": "b", "qty": "2"}, True, h5, 20),
        change(2, "UPDATE", {"id": "2", "qty": "9"}, True, h5, 21, key=2),  # no full image in the batch
        change(1, "DELETE", None, False, h6, 11, key=3),
    ]
    schema = (
        "db string, table string, segment int, op string, seq decimal(38,0), seq2 decimal(38,0), event_time "
        "timestamp, origin_file string, origin_line long, origin_index int, origin_offset long, batch_hour string, "
        "before map<string,string>, after map<string,string>, after_partial boolean"
    )
    data = spark.createDataFrame(rows, schema).repartition(3)
    shape = TableShape("shop", "items", [("id", "bigint"), ("name", "string"), ("qty", "int")], ["id"])
    result = {
        r["key"][0]: (r["_cdc_action"], dict(r["image"] or {}), r["partial"], r["origin_file"], int(r["seq"]))
        for r in key_actions(data, [shape], "shareplex_json").collect()
    }
    assert result == {
        "1": ("upsert", {"id": "1", "name": "c", "qty": "4"}, False, f"export-{h5}", 4),
        "2": ("upsert", {"id": "2", "qty": "9"}, True, f"export-{h5}", 2),
        "3": ("delete", {"id": "3"}, False, f"export-{h6}", 1),
    }
