"""DataWorks 2.0 as OMS writes it (`dataworks_v2`, seed 002): examples, types, ordering, quarantine, end to end."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from format_support import FIXTURES, parse_files, parse_lines, run, silver_rows, source_for, write_export

V2 = FIXTURES / "dataworks_v2"
H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
DDL_TEXT = "alter table connector_test.all_mysql_type_test add column c90 varchar(30) default \"test\" comment 'test'"
COLUMNS = [("id", "bigint"), ("name", "varchar(20)"), ("price", "DECIMAL(10,2)"), ("ts", "datetime")]


def v2(op: str, before=None, after=None, event=1700000000000, scn=None, **changes) -> str:
    message = {
        "version": "2.0",
        "schema": {
            "source": {"dbType": "ob_mysql", "dbVersion": None, "dbName": "shop", "schema": None, "table": "items"},
            "column": [{"name": n, "type": t} for n, t in COLUMNS],
            "pk": ["id"],
        },
        "payload": {
            "before": {"data": before} if before is not None else None,
            "after": {"data": after} if after is not None else None,
            "op": op,
            "timestamp": {"eventTime": event},
            "ddl": None,
            "scn": scn,
        },
        "extend": {"load_fm": "test"},
    }
    for path, value in changes.items():  # e.g. version="1.0", payload__op=None
        *parents, leaf = path.split("__")
        node = message
        for parent in parents:
            node = node[parent]
        node[leaf] = value
    return json.dumps(message)


def test_document_examples_as_printed(spark):
    rows = parse_files(spark, source_for("dataworks_v2"), V2 / "doc_examples.jsonl", V2 / "heartbeat.jsonl")
    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("quarantined", "primary key column(s) missing from the image: pkName1, pkName12"),
        ("quarantined", "primary key column(s) missing from the image: pkName1, pkName2"),
        ("quarantined", "primary key column(s) missing from the image: pkName1, pkName2"),
        ("ddl", None),
        ("heartbeat", None),
    ]
    ddl, heartbeat = rows[3:]
    assert (ddl["op"], ddl["db"], ddl["table"], ddl["ddl"]) == (
        "ALTER",
        "connector_test",
        "all_mysql_type_test",
        DDL_TEXT,
    )
    assert (ddl["seq"], ddl["event_time"]) == (Decimal(1671177209000), datetime(2022, 12, 16, 7, 53, 29))
    assert (heartbeat["op"], heartbeat["event_time"]) == ("HEARTBEAT", datetime(2021, 5, 8, 7, 7, 39))


def test_examples_become_typed_canonical_rows(spark):
    insert, update, delete, _ = parse_files(spark, source_for("dataworks_v2"), V2 / "consistent.jsonl")

    assert [(r["outcome"], r["op"]) for r in (insert, update, delete)] == [
        ("data", "INSERT"),
        ("data", "UPDATE"),
        ("data", "DELETE"),
    ]
    assert (insert["db"], insert["schema_name"], insert["table"], insert["primary_key"]) == (
        "db",
        None,
        "tab",
        ["int8", "int16"],
    )
    assert insert["columns"] == [
        {"name": "int8", "type": "smallint"},  # TINYINT: signedness unknown
        {"name": "int16", "type": "int"},
        {"name": "int32", "type": "bigint"},
        {"name": "int64", "type": "bigint"},
        {"name": "float32", "type": "float"},
        {"name": "float64", "type": "double"},
        {"name": "bigInt", "type": "decimal(20,0)"},
        {"name": "boolean", "type": "boolean"},
        {"name": "string", "type": "string"},
        {"name": "bytes", "type": "binary"},
        {"name": "decimal", "type": "string"},
        {"name": "localDate", "type": "date"},
        {"name": "localTime", "type": "string"},
        {"name": "localDateTime", "type": "timestamp_ntz"},
        {"name": "timestamp", "type": "timestamp"},
        {"name": "zonedDateTime", "type": "timestamp"},
        {"name": "intervalDayToSecond", "type": "string"},
        {"name": "intervalYearToMonth", "type": "string"},
    ]
    after = insert["after"]
    sent = re.search(r'"decimal":([0-9.]+),', (V2 / "consistent.jsonl").read_text())[1]
    assert after["decimal"] == after["float64"] == sent  # every digit as sent (1000+ of them)
    assert {k: v for k, v in after.items() if k not in ("decimal", "float64")} == {
        "int8": "3",
        "int16": "129",
        "int32": "2147483646",
        "int64": "9223372036854775806",
        "float32": "1.2222",
        "bigInt": "10223372036854775806",
        "boolean": "true",
        "string": "hello world",
        "bytes": "aGVsbG8gd29ybGQ=",
        "localDate": "2020-11-25",
        "localTime": "00:01:02",
        "localDateTime": "2020-11-25 00:01:02.000000",
        "timestamp": "2020-11-24 16:01:02.012345",
        "zonedDateTime": "2020-11-24 16:01:02.012345",  # Asia/Shanghai -> UTC
        "intervalDayToSecond": "INTERVAL '3' DAY",
        "intervalYearToMonth": "INTERVAL '4' YEAR",
    }
    assert update["before"]["string"] == "hello world" and update["after"]["string"] == "hello world 2020"
    assert delete["before"]["int32"] == "2147483646" and delete["after"] is None
    assert (insert["seq"], insert["seq2"], insert["event_time"]) == (
        Decimal(1647581000000),
        0,  # scn "null"
        datetime(2022, 3, 18, 5, 23, 20),
    )


def test_ops_ordering_key_and_quarantine(spark, tmp_path):
    row = {"id": 1, "name": "a", "price": "1.50", "ts": "1590315269000.123456789"}
    lines = [
        v2("INSERT", after=row, scn="1234567"),
        v2("TRANSACTION_BEGIN"),
        v2("QUERY", payload__ddl={"text": "update items set name = 'b'"}),
        v2("INSERT", after=row, version="1.0"),
        v2("INSERT", after=row, version=None),
        v2("MHEARTBEAT"),
        v2(None, after=row),
        v2("UPDATE", after=row),
        v2("INSERT", after=row | {"price": "1.505"}),
        v2("INSERT", after=row, event=None),
        v2("INSERT", after=row, schema__source__table=None),
        v2("INSERT", after=row | {"note": "not declared"}),
    ]
    rows = parse_lines(spark, source_for("dataworks_v2"), tmp_path, lines)
    assert [(r["outcome"], r["op"], r["reject_reason"]) for r in rows] == [
        ("data", "INSERT", None),
        ("control", "TRANSACTION_BEGIN", None),
        ("ddl", "QUERY", None),
        ("quarantined", "INSERT", "unsupported version '1.0' (expected 2.0)"),
        ("quarantined", "INSERT", "missing version"),
        ("quarantined", "MHEARTBEAT", "unknown op 'MHEARTBEAT'"),
        ("quarantined", "", "missing payload.op"),
        ("quarantined", "UPDATE", "UPDATE message without the image it needs"),
        ("quarantined", "INSERT", "value does not match its declared type in column(s): price"),
        ("quarantined", "INSERT", "payload.timestamp.eventTime is missing or not a number"),
        ("quarantined", "INSERT", "missing schema.source.table"),
        ("quarantined", "INSERT", "column(s) not declared in schema.column: note"),
    ]
    insert, _, query = rows[:3]
    assert (insert["seq"], insert["seq2"]) == (Decimal(1700000000000), Decimal(1234567))
    # a 13-digit epoch in milliseconds with 9 fraction digits, truncated to microseconds
    assert insert["after"]["ts"] == "2020-05-24 10:14:29.000123"
    assert query["ddl"] == "update items set name = 'b'"


def test_loads_end_to_end_ordered_by_event_time_then_scn(spark, tmp_path):
    source = source_for("dataworks_v2", tmp_path)

    def item(id_: int, name: str, price: str) -> dict:
        return {"id": id_, "name": name, "price": price, "ts": "2024-01-02 03:04:05.5 +01:00"}

    write_export(
        source,
        "items/0.json",
        [
            v2("INSERT", after=item(1, "one", "1.00"), event=1700000000000, scn="100"),
            v2("INSERT", after=item(2, "two", "2.00"), event=1700000000000, scn="101"),
            v2("HEARTBEAT"),
            # same millisecond: the scn, not the line, orders these two updates
            v2("UPDATE", before=item(1, "one", "1.00"), after=item(1, "uno", "1.50"), event=1700000001000, scn="103"),
            v2("UPDATE", before=item(1, "one", "1.00"), after=item(1, "eins", "1.25"), event=1700000001000, scn="102"),
            v2("DELETE", before=item(2, "two", "2.00"), event=1700000002000, scn="104"),
            v2("ALTER", payload__ddl={"text": "alter table items add column note text"}, event=1700000003000),
        ],
    )

    run(spark, source)

    (row,) = silver_rows(source, "shop", "items", metadata=True)
    assert row.pop("_cdc_loaded_at") is not None
    assert row == {
        "id": 1,
        "name": "uno",
        "price": Decimal("1.50"),
        "ts": datetime(2024, 1, 2, 3, 4, 5, 500000),  # a DATETIME keeps its wall clock; the zone id is ignored
        "_cdc_seq": Decimal(1700000001000),
        "_cdc_seq2": Decimal(103),
        "_cdc_op": "UPDATE",
        "_cdc_event_time": datetime(2023, 11, 14, 22, 13, 21, tzinfo=UTC),
        "_cdc_source_file": "items/0.json",
        "_cdc_source_line": 4,
        "_cdc_position": "1f2026-11-21T05." + b"items/0.json".hex().upper() + ".00000000000000000004.0000000000",
        "note": None,  # added by the ALTER at its place in the sequence
    }


def test_a_truncate_without_scn_follows_the_changes_its_file_sent_before_it_in_its_millisecond(spark, tmp_path):
    # seed 002's DDL messages carry "scn": "null", data messages an scn; all of one millisecond here
    source = source_for("dataworks_v2", tmp_path)
    row = {"id": 1, "name": "a", "price": "1.50", "ts": "1590315269000"}
    truncate = v2("TRUNCATE", payload__ddl={"text": "truncate table items"}, scn="null")
    lines = [v2("INSERT", after=row, scn="1001"), truncate, v2("INSERT", after=row | {"id": 2}, scn="1003")]
    write_export(source, "items/0.json", lines)

    run(spark, source)

    assert [r["id"] for r in silver_rows(source, "shop", "items")] == [2]


@pytest.mark.parametrize("hours", [[H5, H5 + timedelta(hours=1)], [H5 + timedelta(hours=1), H5]])
def test_a_truncate_opening_its_file_among_changes_without_scn_applies_at_its_place(spark, tmp_path, hours):
    # the MySQL examples' "scn": "null" on every message: statement and changes of one millisecond tie, and their
    # export position orders them across the hour's end
    source = source_for("dataworks_v2", tmp_path)
    row = {"id": 1, "name": "a", "price": "1.50", "ts": "1590315269000"}
    truncate = v2("TRUNCATE", payload__ddl={"text": "truncate table items"}, scn="null")
    write_export(source, "items/0005.json", [v2("INSERT", after=row, scn="null")], H5)
    write_export(
        source, "items/0006.json", [truncate, v2("INSERT", after=row | {"id": 2}, scn="null")], H5 + timedelta(hours=1)
    )

    run(spark, source, hours)

    assert [r["id"] for r in silver_rows(source, "shop", "items")] == [2]
