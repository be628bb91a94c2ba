"""Parse: DataWorks JSON messages from the vendor documents and real captures -> canonical change rows."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import tools.cdcgen
from lakeloader.apply.step import read_bronze
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.lake_index import bronze_hours
from lakeloader.core.storage import open_store
from lakeloader.land.step import land_hour
from lakeloader.parse import canonical as C
from lakeloader.parse.numbered_lines import read_numbered_lines
from lakeloader.parse.step import classify, run_parse

FIXTURES = Path(tools.cdcgen.__file__).parent / "seed_examples"
PAIMON = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "paimon" / "aliyun" / "table" / "event"
HOUR = datetime(2026, 11, 21, 5, tzinfo=UTC)


def source(**overrides) -> SourceConfig:
    return SourceConfig(name="shop", format="dataworks_json", export_uri="/unused", lake_root="/unused", **overrides)


def parse_files(spark, *files: Path, **overrides) -> list[dict]:
    lines = read_numbered_lines(spark, [f"file://{f}" for f in files], "shop", "2026-11-21T05")
    rows = classify(lines, source(**overrides)).orderBy("origin_file", "origin_line").collect()
    return [row.asDict(recursive=True) for row in rows]


def test_seed_000_examples_become_canonical_rows(spark):
    rows = parse_files(spark, FIXTURES / "seed_000.jsonl")
    assert [(r["outcome"], r["op"], r["raw_op"]) for r in rows] == [
        ("heartbeat", "MHEARTBEAT", "MHEARTBEAT"),
        ("data", "INSERT", "INSERT"),
        ("data", "UPDATE_BEFORE", "UPDATE_BEFOR"),
        ("data", "UPDATE_AFTER", "UPDATE_AFTER"),
        ("data", "UPDATE", "UPDATE_AFTER"),
        ("data", "DELETE", "DELETE"),
    ]
    heartbeat, insert, before_half, after_half, one_message, delete = rows
    assert heartbeat["event_time"] == datetime(2021, 5, 8, 7, 7, 39)
    assert heartbeat["table"] is None and heartbeat["reject_reason"] is None
    assert (insert["db"], insert["table"]) == ("pkset_test", "pkset_test_no_pk")
    assert insert["after"] == {"name": "name11", "job": "job11", "sex": "man", "#alibaba_rds_row_id#": "15"}
    assert insert["before"] is None
    assert insert["primary_key"] == ["#alibaba_rds_row_id#"]  # no declared key: the row id serves
    assert insert["columns"] == [
        {"name": "name", "type": "string"},
        {"name": "job", "type": "string"},
        {"name": "sex", "type": "string"},
        {"name": "#alibaba_rds_row_id#", "type": "bigint"},
    ]
    assert insert["seq"] == Decimal("1620457642589000000") and insert["seq2"] == 0
    assert insert["event_time"] == datetime(2021, 5, 8, 7, 11, 36)
    assert before_half["before"]["sex"] == "man" and before_half["after"] is None
    assert after_half["after"]["sex"] == "woman" and after_half["before"] is None
    assert before_half["seq"] == after_half["seq"] == Decimal("1620457642589000001")
    assert one_message["before"]["sex"] == "man" and one_message["after"]["sex"] == "woman"
    assert delete["before"]["sex"] == "woman" and delete["seq"] == Decimal("1620457642589000002")
    assert [r["origin_line"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert {r["origin_file"] for r in rows} == {f"file:{FIXTURES / 'seed_000.jsonl'}"}


def test_seed_001_blob_examples_including_ddl(spark):
    rows = parse_files(spark, FIXTURES / "seed_001.jsonl")
    assert [(r["outcome"], r["op"]) for r in rows] == [
        ("data", "INSERT"),
        ("data", "UPDATE_BEFORE"),
        ("data", "UPDATE_AFTER"),
        ("data", "DELETE"),
        ("heartbeat", "MHEARTBEAT"),
        ("ddl", "ALTER"),
    ]
    insert, _, after_half, _, _, alter = rows
    assert insert["primary_key"] == ["id", "name"]
    assert insert["after"] == {"name": "joe", "comment": "comment", "id": "1"}
    assert after_half["after"]["comment"] == "com1"
    assert (alter["db"], alter["table"], alter["seq"]) == ("yunshi_db", "t_shiyu_nopk", Decimal("1605339516000000035"))
    assert alter["ddl"] == "alter table t_shiyu_nopk add column holo text"


def test_paimon_captures_with_doubles_sent_as_strings(spark):
    rows = parse_files(
        spark, PAIMON / "event-insert.txt", PAIMON / "event-update-in-one.txt", PAIMON / "event-delete.txt"
    )
    by_op = {r["op"]: r for r in rows}
    assert set(by_op) == {"INSERT", "UPDATE", "DELETE"}
    insert = by_op["INSERT"]
    # full-load rows carry sequenceId "-1" and eventTime -1: they sort before every incremental change
    assert insert["seq"] == Decimal(-1) and insert["event_time"] is None
    assert insert["after"] == {"id": "2", "val": "1.100000", "name": "a", "create_time": "2024-11-15 08:58:34.000"}
    assert {c["name"]: c["type"] for c in insert["columns"]} == {
        "id": "bigint",
        "val": "string",  # a DOUBLE keeps the exact text it was sent with
        "name": "string",
        "create_time": "timestamp",
    }
    assert by_op["UPDATE"]["before"]["val"] == "1.100000" and by_op["UPDATE"]["after"]["val"] == "2.200000"
    assert by_op["DELETE"]["before"]["id"] == "1"
    assert all(r["reject_reason"] is None for r in rows)


def test_bytes_booleans_and_dates_become_canonical_text(spark, tmp_path):
    message = {
        "schema": {
            "dataColumn": [
                {"name": "id", "type": "LONG"},
                {"name": "ok", "type": "BOOLEAN"},
                {"name": "bin", "type": "BYTES"},
                {"name": "ts", "type": "DATE"},
                {"name": "x", "type": "DOUBLE"},
            ],
            "primaryKey": ["id"],
            "source": {"dbName": "d", "tableName": "t", "schemaName": "s"},
        },
        "payload": {
            "after": {"dataColumn": {"id": 7, "ok": True, "bin": "aGVsbG8=", "ts": 1590315269123, "x": 2.5}},
            "sequenceId": "12",
            "op": "INSERT",
            "timestamp": {"eventTime": 1590315269000},
        },
        "version": "1.0.0",
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(message) + "\n")
    (row,) = parse_files(spark, path)
    assert row["after"] == {"id": "7", "ok": "true", "bin": "aGVsbG8=", "ts": "2020-05-24 10:14:29.123", "x": "2.5"}
    assert row["schema_name"] == "s"


def test_malformed_and_unknown_messages_are_quarantined_with_reasons(spark, tmp_path):
    good = (FIXTURES / "seed_001.jsonl").read_text().splitlines()[0]
    insert = json.loads(good)
    no_seq = json.loads(good)
    no_seq["payload"]["sequenceId"] = "12a"
    bad_value = json.loads(good)
    bad_value["payload"]["after"]["dataColumn"]["id"] = "one"
    no_after = json.loads(good)
    no_after["payload"]["after"] = None
    no_table = json.loads(good)
    no_table["schema"]["source"]["tableName"] = None
    no_key = json.loads(good)
    del no_key["payload"]["after"]["dataColumn"]["name"]
    lower_case_op = json.loads(good)
    lower_case_op["payload"]["op"] = "insert"
    lines = [
        json.dumps(insert),
        "not json at all",
        "",
        "[1, 2]",
        '{"payload": {}}',
        json.dumps(lower_case_op),
        json.dumps(no_seq),
        json.dumps(bad_value),
        json.dumps(no_after),
        json.dumps(no_table),
        json.dumps(no_key),
    ]
    path = tmp_path / "mixed.json"
    path.write_text("\n".join(lines) + "\n")
    rows = parse_files(spark, path)
    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows] == [
        (1, "data", None),
        (2, "quarantined", "malformed JSON: not a JSON object"),
        (3, "quarantined", "empty line"),
        (4, "quarantined", "malformed JSON: not a JSON object"),
        (5, "quarantined", "missing payload.op"),
        (6, "quarantined", "unknown op 'insert'"),
        (7, "quarantined", "payload.sequenceId is missing or not a number"),
        (8, "quarantined", "value does not match its declared type in column(s): id"),
        (9, "quarantined", "INSERT message without the image it needs"),
        (10, "quarantined", "missing schema.source.tableName"),
        (11, "quarantined", "primary key column(s) missing from the image: name"),
    ]


def test_tables_outside_the_include_list_are_excluded_not_lost(spark):
    rows = parse_files(spark, FIXTURES / "seed_001.jsonl", tables=("yunshi_db.t_shiyu_nopk",))
    assert [r["outcome"] for r in rows] == ["excluded"] * 4 + ["heartbeat", "ddl"]


def test_line_numbers_are_exact_across_gzip_files_and_split_chunks(spark, tmp_path):
    good = (FIXTURES / "seed_001.jsonl").read_text().splitlines()[0]
    plain = tmp_path / "big.json"
    plain.write_text("\n".join(good.replace('"joe"', f'"row{i}"') for i in range(3000)) + "\n")
    packed = tmp_path / "small.json.gz"
    packed.write_bytes(gzip.compress(("garbage\n" + good + "\n").encode()))
    spark.conf.set("spark.sql.files.maxPartitionBytes", "65536")  # several chunks for the plain file
    try:
        lines = read_numbered_lines(spark, [f"file://{plain}", f"file://{packed}"], "shop", "h")
        numbered = {(r["origin_file"].rsplit("/", 1)[-1], r["origin_line"]): r["text"] for r in lines.collect()}
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert len(numbered) == 3002
    assert all(f'"row{i - 1}"' in numbered[("big.json", i)] for i in range(1, 3001))
    assert numbered[("small.json.gz", 1)] == "garbage"
    assert numbered[("small.json.gz", 2)] == good


def test_a_few_small_files_read_one_scan_each_number_their_lines_as_the_chunked_reading_does(spark, tmp_path):
    """With their sizes known, files Spark reads in one chunk are numbered without a shuffle (a scan and a
    partition each): the same lines and numbers as the chunked reading, for blank lines, CRLF, gzip and an
    empty file; a file larger than a chunk can be is read chunked."""
    good = (FIXTURES / "seed_001.jsonl").read_text().splitlines()[0]
    files = {
        "a.json": ("\n".join([good, "", "x", good]) + "\n").encode(),
        "b.json": (b"one\r\ntwo\r\n\r\nthree"),
        "c.json.gz": gzip.compress(("garbage\n" + good + "\n").encode()),
        "empty.json": b"",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    paths = [f"file://{tmp_path / name}" for name in files]
    sizes = {f"file://{tmp_path / name}": len(content) for name, content in files.items()}

    def numbered(frame) -> list[tuple]:
        return sorted((r["origin_file"].rsplit("/", 1)[-1], r["origin_line"], r["text"]) for r in frame.collect())

    per_file = read_numbered_lines(spark, paths, "shop", "h", sizes)
    chunked = read_numbered_lines(spark, paths, "shop", "h")

    assert "Exchange" not in per_file._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" in chunked._jdf.queryExecution().executedPlan().toString()
    assert numbered(per_file) == numbered(chunked)
    assert numbered(per_file)[:4] == [("a.json", 1, good), ("a.json", 2, ""), ("a.json", 3, "x"), ("a.json", 4, good)]
    assert [(n, line, text) for n, line, text in numbered(per_file) if n == "b.json"] == [
        ("b.json", 1, "one"),
        ("b.json", 2, "two"),
        ("b.json", 3, ""),
        ("b.json", 4, "three"),
    ]
    spark.conf.set("spark.sql.files.openCostInBytes", "8")  # a.json is now larger than a chunk may be
    try:
        assert "Exchange" in read_numbered_lines(spark, paths, "shop", "h", sizes)._jdf.queryExecution().toString()
    finally:
        spark.conf.unset("spark.sql.files.openCostInBytes")


def landed(tmp_path: Path, text: str, **overrides) -> SourceConfig:
    """A source whose one export file, holding `text`, is landed in HOUR."""
    exports, lake = tmp_path / "exports", tmp_path / "lake"
    seed = exports / "topic-0" / "00001.json.gz"
    seed.parent.mkdir(parents=True)
    seed.write_bytes(gzip.compress(text.encode()))
    os.utime(seed, (HOUR.timestamp() + 60, HOUR.timestamp() + 60))
    config = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(exports), lake_root=str(lake), **overrides
    )
    land_hour(config, HOUR)
    return config


def test_run_parse_writes_bronze_quarantine_and_counts_that_add_up(spark, tmp_path):
    config = landed(tmp_path, (FIXTURES / "seed_000.jsonl").read_text() + "oops\n")
    lake = tmp_path / "lake"

    report = run_parse(spark, config, HOUR)

    assert report["lines"] == 7
    assert report["outcomes"] == {
        "data": 5,
        "ddl": 0,
        "heartbeat": 1,
        "control": 0,
        "excluded": 0,
        "quarantined": 1,
    }
    assert report["tables"] == {"pkset_test.pkset_test_no_pk": {"data": 5}}
    assert report["quarantine_reasons"] == {"malformed JSON: not a JSON object": 1}
    bronze = spark.read.parquet(str(lake / "bronze/shop/changes/dt=2026-11-21/hour=05"))
    assert bronze.count() == 6
    assert {r["origin_file"] for r in bronze.collect()} == {"topic-0/00001.json.gz"}
    (quarantined,) = spark.read.parquet(str(lake / "bronze/shop/quarantine/dt=2026-11-21/hour=05")).collect()
    assert (quarantined["origin_file"], quarantined["origin_line"], quarantined["message"]) == (
        "topic-0/00001.json.gz",
        7,
        "oops",
    )
    recorded = json.loads((lake / "audit/shop/runs/dt=2026-11-21/hour=05/parse.json").read_text())
    assert recorded == report
    assert run_parse(spark, config, HOUR) == report  # rerun reproduces the hour


def test_run_parse_puts_each_row_in_one_place_only_and_leaves_no_scratch(spark, tmp_path):
    config = landed(tmp_path, (FIXTURES / "seed_000.jsonl").read_text() + "oops\n", tables=["other.table"])
    lake = tmp_path / "lake"

    report = run_parse(spark, config, HOUR)

    assert report["outcomes"] == {
        "data": 0,
        "ddl": 0,
        "heartbeat": 1,
        "control": 0,
        "excluded": 5,
        "quarantined": 1,
    }
    assert report["tables"] == {"pkset_test.pkset_test_no_pk": {"excluded": 5}}
    bronze = pq.read_table(lake / zones.bronze_changes_dir("shop", HOUR)).to_pylist()
    assert [(r["kind"], r["reason"], r["message"], r["message_bytes"]) for r in bronze] == [
        ("heartbeat", None, None, None)
    ]
    quarantine = pq.read_table(lake / zones.bronze_quarantine_dir("shop", HOUR))
    assert quarantine.column_names == C.QUARANTINE_SCHEMA.names
    assert quarantine.to_pylist()[0]["message_bytes"] == b"oops"
    assert not (lake / zones.work_dir("shop", "parse", zones.format_hour(HOUR))).exists()


def test_an_hour_without_bronze_rows_reads_as_empty_and_is_listed_as_parsed(spark, tmp_path):
    config = landed(tmp_path, "oops\n")
    lake = open_store(str(tmp_path / "lake"))

    report = run_parse(spark, config, HOUR)

    assert report["outcomes"]["quarantined"] == 1
    assert read_bronze(spark, lake, "shop", HOUR).count() == 0
    assert bronze_hours(lake, "shop") == [HOUR]


@pytest.mark.parametrize("fmt", ["dataworks_json"])
def test_every_configured_format_has_a_parser(fmt):
    from lakeloader.core import format_registry as registry
    from lakeloader.core.config import SUPPORTED_FORMATS

    assert all(callable(registry.parser(name)) for name in SUPPORTED_FORMATS)
    assert fmt in SUPPORTED_FORMATS
