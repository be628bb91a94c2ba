"""The parse step's two jobs (lakeloader.parse.step.run_parse): a format's JVM common-case reader over every message,
then the Spark SQL parse of the messages it did not take, read back from where the first job wrote them aside.
Bronze and quarantine hold what the one-DataFrame parse gives (`classify`, held to the Spark SQL parse by the
common-case tests), framing and positions included."""

from __future__ import annotations

import json

import pytest
from format_support import HOUR, source_for, write_export, write_export_file
from test_format_dts_avro import BLOB, LONG, VARCHAR, chars, integer, line, record, text

from lakeloader.core import zones
from lakeloader.core.config import SUPPORTED_FORMATS
from lakeloader.core.format_registry import reader
from lakeloader.core.storage import open_store
from lakeloader.land.step import land_hour, raw_files, read_manifest
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import UNPARSED
from lakeloader.parse.framing import CASE_TWINS, RESERVED_COLUMNS, read_messages
from lakeloader.parse.step import BRONZE, DESTINATION, QUARANTINED, classify, run_parse, staged_rows
from lakeloader.spark import MAX_PARTITION_BYTES
from tools.cdcgen import layouts, wire

_CHANGES = [*wire.keyed_stream(wire.ITEMS, 6)[0], wire.Change(wire.ITEMS, wire.TRUNCATE, 7)]
CANAL = [line for change in _CHANGES for line in wire.canal_json(change)]


def _envelopes() -> bytes:
    """Canal messages in kcat envelopes: plain changes (the reader's), a TRUNCATE, a tombstone, bad envelopes, a
    payload too large and one holding a NUL (the Spark SQL parser's)."""
    positioned = [layouts.Positioned("orders", 2, 40 + i, text) for i, text in enumerate(CANAL)]
    lines = layouts.kcat_file(positioned, base64_payload=False).decode().splitlines()
    lines += [
        json.dumps({"topic": "orders", "partition": 2, "offset": 60, "payload": None}),
        "not json",
        json.dumps({"topic": "orders", "partition": 2, "payload": "{}"}),
        json.dumps({"topic": "orders", "partition": 2, "offset": 61, "payload": CANAL[0] + " " * 1024}),
        json.dumps({"topic": "orders", "partition": 2, "offset": 62, "payload": CANAL[1].replace("items", "i\u0000")}),
    ]
    return ("\n".join(lines) + "\n").encode()


def test_run_parse_stores_what_the_one_dataframe_parse_gives_with_each_job_parsing_its_part(spark, tmp_path):
    source = source_for("canal_json", tmp_path, export_layout="kcat", max_message_bytes=1024)
    write_export_file(source, "orders/part-0.json", _envelopes())
    land_hour(source, HOUR)
    lake = open_store(source.lake_root)

    messages = read_messages(spark, raw_files(lake, read_manifest(lake, source.name, HOUR)), source, "2026-11-21T05")
    common = reader(source.format)(messages, source)
    taken = messages.where(common.reading.isNotNull()).count()
    expected = [r.asDict(recursive=True) for r in staged_rows(classify(messages, source)).collect()]

    report = run_parse(spark, source, HOUR)

    assert (taken, messages.count()) == (6, 12)  # each job parses a part
    bronze, quarantine = (
        [
            r.asDict(recursive=True)
            for r in spark.read.parquet(str(tmp_path / "lake" / zone(source.name, HOUR))).collect()
        ]
        for zone in (zones.bronze_changes_dir, zones.bronze_quarantine_dir)
    )

    def by_line(rows: list[dict], names: list[str]) -> list[dict]:
        return sorted(({n: r[n] for n in names} for r in rows), key=lambda r: (r["origin_line"], r["origin_index"]))

    change_names, quarantine_names = C.CHANGE_SCHEMA.names, [*C.QUARANTINE_SCHEMA.names, "origin_index"]
    assert by_line(bronze, change_names) == by_line([r for r in expected if r[DESTINATION] == BRONZE], change_names)
    assert by_line([r | {"origin_index": 0} for r in quarantine], quarantine_names) == by_line(
        [r for r in expected if r[DESTINATION] == QUARANTINED], quarantine_names
    )
    assert [(r["origin_line"], r["kind"]) for r in bronze if r["kind"] != C.DATA] == [(7, C.DDL), (8, C.CONTROL)]
    assert sorted(r["origin_line"] for r in quarantine) == [9, 10, 11, 12]
    assert all(r[UNPARSED] is None for r in bronze)  # none left unparsed
    assert report["outcomes"]["data"] == 6 and report["outcomes"]["quarantined"] == 4
    assert not (tmp_path / "lake" / zones.work_dir(source.name, "parse", zones.format_hour(HOUR))).exists()


def test_dts_avro_s_second_job_types_a_column_from_a_record_the_first_job_took(spark, tmp_path):
    """A record whose NULL leaves its column's type to the batch is the second job's; the type comes from a record
    of the same hour the first job's reader took (dts_avro's CommonCase.rest)."""
    fields = [("id", LONG), ("tag", BLOB), ("note", VARCHAR)]
    typed = record("INSERT", "shop.files", fields, after=[integer("1"), chars(b"\x00\x01", "binary"), text("a")])
    untyped = record("UPDATE", "shop.files", fields, before=[integer("2"), None, text("b")],
                     after=[integer("2"), "NULL", text("c")], record_id=2)  # fmt: skip
    source = source_for("dts_avro", tmp_path)
    write_export_file(source, "part-0.avro.b64", f"{line(typed)}\n{line(untyped)}\n".encode())
    land_hour(source, HOUR)

    run_parse(spark, source, HOUR)

    bronze = spark.read.parquet(str(tmp_path / "lake" / zones.bronze_changes_dir(source.name, HOUR)))
    first, second = [r.asDict(recursive=True) for r in bronze.orderBy("origin_line").collect()]
    assert first["after"] == {"id": "1", "tag": "AAE=", "note": "a"}
    assert [(c["name"], c["type"]) for c in second["columns"]] == [
        ("id", "bigint"),
        ("tag", "binary"),
        ("note", "string"),
    ]
    assert (second["op"], second["before"]) == ("UPDATE", {"id": "2", "tag": None, "note": "b"})


_RESERVED = wire.Table("reserved", ("id",), (("id", wire.BIGINT), ("_CDC_op", wire.TEXT)))
_TWINS = wire.Table("twins", ("id",), (("id", wire.BIGINT), ("Name", wire.TEXT), ("name", wire.TEXT)))
_NAMED = {
    wire.ITEMS: {"id": 1, "name": "a", "qty": 1},
    _RESERVED: {"id": 2, "_CDC_op": "x"},
    _TWINS: {"id": 3, "Name": "b", "name": "c"},
}


@pytest.mark.parametrize("fmt", [f for f in SUPPORTED_FORMATS if f != "auto"])
def test_a_reader_leaves_columns_a_table_cannot_store_to_the_second_job_which_quarantines_them(spark, tmp_path, fmt):
    """The first job checks no column names (lakeloader.parse.framing.framed's `columns_checked`): every JVM reader
    refuses a message naming a column with the loader's prefix, or two differing only by case."""
    source = source_for(fmt, tmp_path, **wire.settings(fmt, tuple(_NAMED)))
    for seq, (table, values) in enumerate(_NAMED.items(), start=1):
        lines = wire.WRITERS[fmt](wire.Change(table, wire.INSERT, seq, None, values))
        write_export(source, f"{table.name}-topic/part-0.json", lines)
    land_hour(source, HOUR)
    lake = open_store(source.lake_root)
    messages = read_messages(spark, raw_files(lake, read_manifest(lake, source.name, HOUR)), source, "2026-11-21T05")
    common = reader(source.format)(messages, source)
    taken = messages.withColumns(dict(common.shared)).where(common.reading.isNotNull())

    report = run_parse(spark, source, HOUR)

    assert [r["origin_file"] for r in taken.select("origin_file").collect()] == ["items-topic/part-0.json"]
    assert report["outcomes"]["data"] == 1
    assert report["quarantine_reasons"] == {RESERVED_COLUMNS + "_CDC_op": 1, CASE_TWINS + "Name, name": 1}


def test_an_hour_read_in_chunks_even_over_the_cores_keeps_every_line_with_its_number(spark, tmp_path):
    """An hour larger than a chunk per core is read in equal chunks (`splits_even_over_cores`): every message lands
    once, numbered by its line, and the session's chunk size is as it was."""
    changes = wire.keyed_stream(wire.ITEMS, 400)[0]
    lines = [line for change in changes for line in wire.canal_json(change)]
    source = source_for("canal_json", tmp_path)
    write_export(source, "orders/part-0.json", lines)
    land_hour(source, HOUR)
    spark.conf.set(MAX_PARTITION_BYTES, "8192")  # the hour is ten times that or more
    try:
        report = run_parse(spark, source, HOUR)
        assert spark.conf.get(MAX_PARTITION_BYTES) == "8192"
    finally:
        spark.conf.unset(MAX_PARTITION_BYTES)
    bronze = spark.read.parquet(str(tmp_path / "lake" / zones.bronze_changes_dir(source.name, HOUR))).collect()
    assert sum(len(line) + 1 for line in lines) > 10 * 8192
    assert sorted(r["origin_line"] for r in bronze) == list(range(1, len(lines) + 1))
    sent = [json.loads(line)["data"][0]["name"] for line in lines]
    assert all(sent[r["origin_line"] - 1] == (r["after"] or r["before"])["name"] for r in bronze)
    assert report["outcomes"]["data"] == len(lines) and report["lines"] == len(lines)
