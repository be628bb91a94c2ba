"""Hostile input never stops an hour and nothing leaves the lake (issue 14): any table name maps to a path inside
its zone, names that cannot be stored and bytes that are not text are quarantined with the reason and the
original bytes, a message over the size limit is quarantined unparsed, and a table that cannot be applied is
held back while the others commit."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake
from format_support import report, run, source_for, write_export, write_export_file

from lakeloader.audit.reconcile import compare, silver_frame
from lakeloader.cli.source_summary import collect
from lakeloader.core import zones
from lakeloader.core.format_registry import FORMATS
from lakeloader.core.lake_index import silver_table_ids
from lakeloader.core.storage import LocalStore
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw
from tools.cdcgen import wire

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
AT = H5 + timedelta(minutes=10)
COLUMNS = (("id", "LONG"), ("v", "STRING"))
HOSTILE_TABLES = [
    "my table",
    "o'quote\"",
    "a/b\\c",
    "..",
    "%41%2F",
    "new\nline",
    "订单",
    "🎉",
    "x" * 300,
    "UPPER~0123456789abcdef",
]


def spec(db: str, table: str) -> dw.TableSpec:
    return dw.TableSpec(db, table, COLUMNS, ("id",))


def insert(db: str, table: str, seq: int, row_id: int = 1) -> str:
    return dw.insert(spec(db, table), seq, AT, {"id": row_id, "v": f"{table[:8]}-{row_id}"})[0]


# ----------------------------------------------------------------------------------------------------- pure rules


def test_plain_names_keep_their_directory_and_every_other_name_gets_one_safe_distinct_segment() -> None:
    for plain in ("orders", "Order_Items-2", "tenant.db", "_tmp", "a~b"):
        assert zones.name_segment(plain) == plain
    assert zones.silver_table_dir("src", "shop", "orders") == "silver/src/shop/orders"
    names = [*HOSTILE_TABLES, "", ".", "../../x", "a\x00b", "\udcff", "_delta_log"]
    segments = [zones.name_segment(n) for n in names]
    assert len(set(segments)) == len(names)
    for segment in segments:
        assert segment.isascii() and len(segment.encode()) <= 200
        assert all(c.isalnum() or c in "_.~-" for c in segment) and set(segment) != {"."}
        assert zones.inside_lake(f"silver/src/{segment}/t") == f"silver/src/{segment}/t"
    assert zones.name_segment("订单") == "~" + zones.name_segment("订单").split("~")[1]
    assert zones.name_segment("my table").startswith("my_table~")
    assert zones.name_segment("_delta_log").startswith("delta_log~")  # Delta's log directory: never a table's


def test_keys_outside_the_lake_are_refused_by_the_one_check_and_by_the_stores(tmp_path: Path) -> None:
    for bad in ("../x", "silver/../../x", "/etc/passwd", "silver/./x", "a//b", "a\\..\\b", "a\x00b", ""):
        with pytest.raises(zones.OutsideLake):
            zones.inside_lake(bad)
    lake = LocalStore(str(tmp_path / "lake"))
    with pytest.raises(zones.OutsideLake):
        lake.write_bytes("../escaped", b"x")
    with pytest.raises(zones.OutsideLake):
        lake.move_tree("silver/src/a", "archive/../../outside")
    assert not (tmp_path / "escaped").exists()
    # DROP TABLE's archive of a db named ../../x stays under archive/<source>/
    assert zones.archive_dir("src", "../../x", "t", (5, 0)).startswith("archive/src/")
    assert zones.archive_dir("src", "../../x", "t", (5, 0)).count("/") == 4


# ----------------------------------------------------------------------------------------------- one hour, end to end


def test_hostile_names_load_inside_the_lake_and_unstorable_names_and_bytes_are_quarantined(spark, tmp_path) -> None:
    source = source_for("dataworks_json", tmp_path)
    lines = [insert("shop", "orders", 1)]
    lines += [insert("shop", table, 10 + i) for i, table in enumerate(HOSTILE_TABLES)]
    lines.append(insert("../../x", "t", 40))
    bad = [
        insert("shop", "", 50),  # empty table name
        dw.insert(dw.TableSpec("shop", "r", (("id", "LONG"), ("_CDC_seq", "LONG")), ("id",)), 51, AT, {"id": 1})[0],
        dw.insert(dw.TableSpec("shop", "c", (("id", "LONG"), ("ID", "LONG")), ("id",)), 52, AT, {"id": 1})[0],
    ]
    invalid_utf8 = insert("shop", "orders", 60, 2).encode().replace(b"orders-2", b"orders-\xff\xfe")
    trailing_nul = insert("shop", "orders", 61, 3).encode() + b"\x00"
    content = ("\n".join(lines + bad) + "\n").encode() + invalid_utf8 + b"\n" + trailing_nul + b"\n"
    write_export_file(source, "m.json", content, H5)

    reports = run(spark, source, [H5])

    apply = report(reports, "apply", H5)
    assert apply["held_back"] == {}
    lake = LocalStore(source.lake_root)
    names = silver_table_ids(lake, source.name)
    assert set(names.values()) == {("shop", "orders"), ("../../x", "t"), *[("shop", t) for t in HOSTILE_TABLES]}
    silver_root = (Path(source.lake_root) / "silver" / source.name).resolve()
    for db, table in names.values():
        path = (Path(source.lake_root) / zones.silver_table_dir(source.name, db, table)).resolve()
        assert path.is_relative_to(silver_root) and path.parent.parent == silver_root
        row = DeltaRsEngine().read(str(path)).to_pylist()
        assert [(r["id"], r["v"]) for r in row] == [(1, f"{table[:8]}-1")]
    assert not (tmp_path / "x").exists()

    quarantine = pq.read_table(Path(source.lake_root) / zones.bronze_quarantine_dir(source.name, H5)).to_pylist()
    by_line = {r["origin_line"]: r for r in quarantine}
    first_bad = len(lines) + 1
    assert by_line[first_bad]["reason"] == "empty table name: a table cannot be stored under it"
    assert by_line[first_bad + 1]["reason"].startswith("column name(s) reserved for the loader's metadata")
    assert by_line[first_bad + 1]["reason"].endswith("_CDC_seq")
    assert by_line[first_bad + 2]["reason"] == (
        "column names that differ only by case (Delta column names are case-insensitive): ID, id"
    )
    assert by_line[first_bad + 3]["reason"] == "message is not valid UTF-8 text"
    assert by_line[first_bad + 3]["message_bytes"] == invalid_utf8
    assert "\ufffd" in by_line[first_bad + 3]["message"]
    assert by_line[first_bad + 4]["reason"] == (
        "message holds a control character JSON does not allow unescaped (byte 0x00)"
    )
    assert by_line[first_bad + 4]["message_bytes"] == trailing_nul
    assert len(quarantine) == 5
    orders = DeltaRsEngine().read(str(Path(source.lake_root) / zones.silver_table_dir(source.name, "shop", "orders")))
    assert orders.num_rows == 1


def test_a_table_or_database_named_delta_log_loads_under_a_hashed_directory_and_the_status_counts_it(
    spark, tmp_path
) -> None:
    # `_delta_log` is a legal MySQL name; as a directory delta-rs took it for a table's log: the table was held back
    # at every run, its parent looked like a broken Delta table and `lakeloader status` failed on it
    source = source_for("dataworks_json", tmp_path)
    write_export(
        source, "h5.json", [insert("hdb", "good", 1), insert("hdb", "_delta_log", 2), insert("_delta_log", "t", 3)], H5
    )

    apply = report(run(spark, source, [H5]), "apply", H5)

    assert apply["held_back"] == {}
    assert sorted(apply["tables"]) == ["_delta_log.t", "hdb._delta_log", "hdb.good"]
    lake = LocalStore(source.lake_root)
    assert sorted(silver_table_ids(lake, source.name).values()) == [
        ("_delta_log", "t"),
        ("hdb", "_delta_log"),
        ("hdb", "good"),
    ]
    silver = Path(source.lake_root) / "silver" / source.name
    assert not list(silver.glob("**/_delta_log/**/_delta_log"))  # no log directory inside another's
    assert not (silver / "_delta_log").exists() and not (silver / "hdb" / "_delta_log").exists()
    for db, table, v in (("hdb", "_delta_log", "_delta_l-1"), ("_delta_log", "t", "t-1")):
        rows = DeltaRsEngine().read(str(Path(source.lake_root) / zones.silver_table_dir(source.name, db, table)))
        assert [(r["id"], r["v"]) for r in rows.to_pylist()] == [(1, v)]
    assert collect(source, [H5], lake)["rows"] == {"_delta_log.t": 1, "hdb._delta_log": 1, "hdb.good": 1}


def test_the_status_counts_the_rows_of_a_table_whose_database_name_holds_a_dot(spark, tmp_path) -> None:
    # OceanBase's `tenant.db1`: the status split 'tenant.db1.orders' at its first dot and showed 0 rows
    source = source_for("dataworks_json", tmp_path)
    lines = [insert("tenant.db1", "orders", 1), insert("tenant.db1", "orders", 2, 2), insert("tenant", "db1", 3)]
    write_export(source, "h5.json", lines, H5)

    run(spark, source, [H5])

    lake = LocalStore(source.lake_root)
    assert collect(source, [H5], lake)["rows"] == {"tenant.db1.orders": 2, "tenant.db1": 1}
    # reports written before they named each table's (db, table): the split whose table exists
    for step in ("parse", "apply"):
        key = zones.run_report_key(source.name, H5, step)
        written = json.loads(lake.read_bytes(key))
        written.pop("table_ids", None)
        for entry in written["tables"].values():
            entry.pop("db", None), entry.pop("table", None)
        lake.write_bytes(key, json.dumps(written).encode())
    assert collect(source, [H5], lake)["rows"] == {"tenant.db1.orders": 2, "tenant.db1": 1}


def test_changes_spelling_a_column_only_by_case_otherwise_go_to_the_apply_quarantine_and_the_table_loads(
    spark, tmp_path
) -> None:
    # Delta takes `qty` and `QTY` as one column: adding the second failed, and held the table back at every run
    def row(seq: int, row_id: int, qty: str) -> str:
        table = dw.TableSpec("shop", "items", (("id", "LONG"), (qty, "LONG")), ("id",))
        return dw.insert(table, seq, AT, {"id": row_id, qty: row_id})[0]

    source = source_for("dataworks_json", tmp_path)
    write_export(source, "h5.json", [row(1, 1, "qty"), row(2, 2, "QTY"), row(3, 3, "qty")], H5)
    write_export(source, "h6.json", [row(4, 4, "Qty"), row(5, 5, "qty")], H6)

    applied = [report(run(spark, source, [hour]), "apply", hour) for hour in (H5, H6)]

    assert [a["held_back"] for a in applied] == [{}, {}]
    reason = "column(s) differing only by case from the table's (Delta column names are case-insensitive): "
    assert [a["rejection_reasons"] for a in applied] == [
        {reason + "QTY (the table's qty)": 1},
        {reason + "Qty (the table's qty)": 1},
    ]
    items = DeltaRsEngine().read(str(Path(source.lake_root) / zones.silver_table_dir(source.name, "shop", "items")))
    assert sorted((r["id"], r["qty"]) for r in items.to_pylist()) == [(1, 1), (3, 3), (5, 5)]
    quarantined = DeltaRsEngine().read(str(Path(source.lake_root) / zones.apply_quarantine_dir(source.name)))
    assert sorted((r["origin_file"], r["origin_line"], r["row"]) for r in quarantined.to_pylist()) == [
        ("h5.json", 2, '{"QTY": "2", "id": "2"}'),
        ("h6.json", 1, '{"Qty": "4", "id": "4"}'),
    ]


@pytest.mark.parametrize("fmt", [f for f in wire.WRITERS if f != "dts_avro"])
def test_a_message_whose_object_holds_a_name_twice_is_quarantined_and_the_others_parse(parse_messages, fmt) -> None:
    # JSON leaves a repeated name's meaning open; an image's map holding it twice once failed the whole hour
    insert = wire.Change(wire.ITEMS, wire.INSERT, 1, None, {"id": 1, "name": "a", "qty": 1})
    update = wire.Change(wire.ITEMS, wire.UPDATE, 2, {"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "b", "qty": 2})
    repeated = [line.replace('"b"', '"b","name":"c"', 1) for line in wire.WRITERS[fmt](update)]
    assert any('"name":"c"' in line for line in repeated)
    source = source_for(fmt, **wire.settings(fmt, (wire.ITEMS,)))

    lines = [*wire.WRITERS[fmt](insert), *repeated]
    rows = parse_messages(source, lines, f"{wire.ITEMS.name}-topic/0/000001.json")  # DebeziumSmt's: a topic's

    outcomes = [(r["outcome"], r["reject_reason"]) for r in rows if '"name":"c"' in (r["text"] or "")]
    assert outcomes == [("quarantined", 'ambiguous JSON: an object holds a name twice: "name"')]
    assert rows[0]["outcome"] == "data" and rows[0]["after"]["name"] == "a"


def test_a_table_that_cannot_be_applied_is_held_back_while_the_others_commit_and_a_later_run_applies_it(
    spark, tmp_path
) -> None:
    source = source_for("dataworks_json", tmp_path)
    write_export(source, "h5.json", [insert("shop", t, 1 + i) for i, t in enumerate(("a", "poisoned", "b"))], H5)
    poisoned = Path(source.lake_root) / zones.silver_table_dir(source.name, "shop", "poisoned")
    (poisoned / "_delta_log").mkdir(parents=True)
    (poisoned / "_delta_log" / "00000000000000000000.json").write_text("not a delta log\n")

    apply = report(run(spark, source, [H5]), "apply", H5)

    assert sorted(apply["tables"]) == ["shop.a", "shop.b"]
    held = apply["held_back"]["shop.poisoned"]
    assert held["changes"] == 1 and held["error"]
    ledger = json.loads((Path(source.lake_root) / "state" / source.name / "held_back.json").read_text())
    assert [(e["table"], e["hours"]) for e in ledger] == [("poisoned", ["2026-11-21T05"])]

    shutil.rmtree(poisoned)  # fixed
    write_export(source, "h6.json", [insert("shop", "a", 10, 2)], H6)
    apply = report(run(spark, source, [H6]), "apply", H6)

    assert apply["held_back"] == {}
    assert apply["tables"]["shop.poisoned"]["rows"] == 1
    assert json.loads((Path(source.lake_root) / "state" / source.name / "held_back.json").read_text()) == []
    rows = DeltaRsEngine().read(str(poisoned)).to_pylist()
    assert [(r["id"], r["v"]) for r in rows] == [(1, "poisoned-1")]


def test_a_50_mb_line_is_quarantined_as_too_large_unparsed_and_the_hour_loads_at_default_driver_memory(
    spark, tmp_path
) -> None:
    source = source_for("dataworks_json", tmp_path)
    huge = insert("shop", "orders", 2, 2).replace('"orders-2"', '"' + "y" * (50 * 2**20) + '"')
    write_export(source, "m.json", [insert("shop", "orders", 1, 1), huge, insert("shop", "orders", 3, 3)], H5)

    reports = run(spark, source, [H5])

    assert report(reports, "apply", H5)["tables"]["shop.orders"]["rows"] == 2
    reason = f"message too large: {len(huge.encode())} bytes (max_message_bytes {source.max_message_bytes})"
    assert report(reports, "parse", H5)["quarantine_reasons"] == {reason: 1}
    quarantine = pq.read_table(Path(source.lake_root) / zones.bronze_quarantine_dir(source.name, H5)).to_pylist()
    assert [(q["origin_line"], q["reason"], q["message"]) for q in quarantine] == [(2, reason, "")]


def test_reconciliation_compares_columns_named_with_a_dot_or_a_backtick(spark, tmp_path) -> None:
    schema = pa.schema([("a.b", pa.int64()), ("x`y", pa.string()), ("`", pa.string())])
    engine = DeltaRsEngine()
    expected_uri, actual_uri = str(tmp_path / "expected"), str(tmp_path / "actual")
    for uri, value in ((expected_uri, "v"), (actual_uri, "tampered")):
        engine.create(uri, schema, {}, {})
        rows = pa.table({"a.b": [1, 2], "x`y": ["v", value], "`": ["q", "q"]}, schema=schema)
        write_deltalake(uri, rows, mode="append")
    expected, actual = silver_frame(spark, engine, expected_uri), silver_frame(spark, engine, actual_uri)
    assert expected.columns == ["a.b", "x`y", "`"]
    assert compare(expected, expected, ["a.b"], expected.columns)["ok"]
    result = compare(expected, actual, ["a.b"], expected.columns)
    assert (result["ok"], result["differing_keys"]) == (False, 1)
    assert result["sample"] == [{"key": {"a.b": "2"}, "problem": "values differ"}]


def test_the_runner_reports_each_step_as_soon_as_it_is_done(monkeypatch, tmp_path) -> None:
    import lakeloader.apply.step
    import lakeloader.parse.step
    from lakeloader.cli import local_runner as runner

    events: list[str] = []

    class Landed:
        def summary(self) -> dict:
            return {"copied": 1}

    def step(name: str, result):
        def run(*_args, **_kwargs):
            events.append(f"ran {name}")
            return result

        return run

    monkeypatch.setattr(runner, "land_hour", step("land", Landed()))
    monkeypatch.setattr(lakeloader.parse.step, "run_parse", step("parse", {"lines": 2}))
    monkeypatch.setattr(lakeloader.apply.step, "run_apply", step("apply", {"tables": {}}))
    runner.run_hours(None, source_for("dataworks_json", tmp_path), [H5], emit=lambda line: events.append(line[:16]))
    assert events == ["ran land", '{"step": "land",', "ran parse", '{"step": "parse"', "ran apply", '{"step": "apply"']


@pytest.mark.parametrize("fmt", [f for f in wire.WRITERS if f != "dts_avro"])
def test_an_empty_column_name_and_a_string_in_single_quotes_are_quarantined(parse_messages, fmt) -> None:
    # no database has a column without a name (one loaded as a Delta column named ""), and JSON's strings are in
    # double quotes (Spark's reader takes single quotes by default)
    change = wire.Change(wire.ITEMS, wire.INSERT, 1, None, {"id": 1, "name": "abc", "qty": 1})
    plain = wire.WRITERS[fmt](change)
    nameless = [line.replace('"qty"', '""') for line in plain]
    quoted = [line.replace('"abc"', "'abc'") for line in plain]
    assert all('""' in line for line in nameless) and all("'abc'" in line for line in quoted)
    source = source_for(fmt, **wire.settings(fmt, (wire.ITEMS,)))

    rows = parse_messages(source, plain + nameless + quoted, f"{wire.ITEMS.name}-topic/0/000001.json")

    empty_name = "empty column name: no database has such a column, nor can a table store one"
    assert [r["reject_reason"] for r in rows] == [None] * len(plain) + [empty_name] * len(nameless) + [
        "malformed JSON: not a JSON object"
    ] * len(quoted)


@pytest.mark.parametrize("fmt", [f for f in wire.WRITERS if FORMATS[f].json])
def test_an_escaped_lone_surrogate_is_quarantined_and_an_escaped_pair_loads(parse_messages, fmt) -> None:
    # JSON readers turn "\ud800" alone into '?' (a value changed without a word); no database's UTF-8 text holds
    # one. A pair (an emoji as ASCII-only writers escape it) is one character
    change = wire.Change(wire.ITEMS, wire.INSERT, 1, None, {"id": 1, "name": "abc", "qty": 1})
    plain = wire.WRITERS[fmt](change)
    pair = [line.replace('"abc"', '"a\\ud83d\\ude00c"') for line in plain]
    lone = [line.replace('"abc"', '"a\\ud800c"') for line in plain]
    low = [line.replace('"abc"', '"a\\uDC00c"') for line in plain]
    source = source_for(fmt, **wire.settings(fmt, (wire.ITEMS,)))

    rows = parse_messages(source, pair + lone + low, f"{wire.ITEMS.name}-topic/0/000001.json")

    reason = "message holds an escaped UTF-16 surrogate that is not half of a pair: "
    assert [r["reject_reason"] for r in rows] == [None] * len(pair) + [reason + "\\ud800"] * len(lone) + [
        reason + "\\uDC00"
    ] * len(low)
    assert {r["after"]["name"] for r in rows[: len(pair)] if r["after"]} == {"a\U0001f600c"}


@pytest.mark.parametrize("fmt", [f for f in wire.WRITERS if f != "dts_avro"])
def test_a_time_beyond_a_timestamps_range_never_fails_the_run(parse_messages, fmt) -> None:
    # milliseconds or seconds since 1970 past 2^63 microseconds once overflowed Spark's conversion and failed the hour;
    # short of that, a time past year 9999 (or before year 1) loaded, and failed whoever read the table in Python
    change = wire.Change(wire.ITEMS, wire.INSERT, 1, None, {"id": 1, "name": "a", "qty": 1})
    seconds = str(change.millis // 1000)  # every time the writers send starts with it: seconds, ms, ms + 5 ...
    hostile = ("9223372036854775807", "-9223372036854775807", "9223372036854776", "9223372036855")
    beyond_9999 = ("253402300800", "253402300800000", "-62135596800001", "-62135596801")  # seconds, ms; and before 1
    lines = [
        re.sub(rf"{seconds}[0-9]*", huge, line) for huge in hostile + beyond_9999 for line in wire.WRITERS[fmt](change)
    ]
    assert all(seconds not in line for line in lines)
    source = source_for(fmt, **wire.settings(fmt, (wire.ITEMS,)))

    rows = parse_messages(source, lines, f"{wire.ITEMS.name}-topic/0/000001.json")  # Python datetimes: years 1-9999

    assert len(rows) == len(lines)
    assert all(r["event_time"] is None or 1 <= r["event_time"].year <= 9999 for r in rows)
