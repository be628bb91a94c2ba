"""OMS Default (`oms_default`) and DefaultExtendColumnType (`oms_default_extend_column_type`), seed 002."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from format_support import (
    FIXTURES,
    parse_files,
    parse_lines,
    report,
    run,
    silver_rows,
    silver_schema,
    source_for,
    write_export,
)

from lakeloader.core import zones

DEFAULT = FIXTURES / "oms_default"
EXTEND = FIXTURES / "oms_default_extend_column_type"
DDL_TEXT = "alter table connector_test.all_mysql_type_test add column c90 varchar(30) default \"test\" comment 'test'"
DOC_IMAGE = {
    "col1": "3",
    "col2": "129",
    "col3": "2147483646",
    "col4": "9223372036854775806",
    "col5": "10223372036854775806",
    "col6": "1.2222",
    "col7": "9.999999",
    "col8": "hello world",
    "col9": "aGVsbG8gd29ybGQ=",
    "col10": "9.99999999999",
    "col11": "2020-11-25",
    "col12": "00:01:02",
    "col13": "2020-11-25 00:01:02",
    "col14": "1606233662.012345",
}


def oms(record_type: str, post=None, prev=None, light=None, **meta) -> str:
    """An OMS Default message; `light` adds __light_type ({column: type}) to the images it has."""
    metadata = {"db": "tenant.shop", "table_name": "orders", "record_primary_key": "id", "timestamp": "1700000000"}
    metadata |= meta
    if light is not None:
        types = {name: {"schemaType": t} for name, t in light.items()}
        post, prev = ({**image, "__light_type": types} if image is not None else None for image in (post, prev))
    message = {"allMetaData": metadata, "prevStruct": prev, "postStruct": post, "recordType": record_type}
    return json.dumps({k: v for k, v in message.items() if v is not None or k != "recordType"})


def test_default_document_examples_as_printed(spark):
    rows = parse_files(spark, source_for("oms_default"), DEFAULT / "doc_examples.jsonl")
    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("quarantined", "malformed JSON: not a JSON object"),  # trailing comma in the image
        ("quarantined", "malformed JSON: not a JSON object"),
        ("quarantined", "primary key column(s) missing from the image: id1, id2"),
        ("ddl", None),
    ]


def test_default_examples_become_canonical_rows(spark):
    insert, update, delete, ddl = parse_files(spark, source_for("oms_default"), DEFAULT / "consistent.jsonl")

    assert [(r["outcome"], r["op"], r["raw_op"]) for r in (insert, update, delete, ddl)] == [
        ("data", "INSERT", "INSERT"),
        ("data", "UPDATE", "UPDATE"),
        ("data", "DELETE", "DELETE"),
        ("ddl", "DDL", "DDL"),
    ]
    assert (insert["db"], insert["table"], insert["schema_name"]) == ("tenant.database", "table_name", None)
    assert insert["primary_key"] == ["col1", "col2"]
    assert insert["after"] == DOC_IMAGE and insert["before"] is None
    assert insert["columns"] == [{"name": name, "type": "string"} for name in DOC_IMAGE]  # Default has no types
    assert update["before"]["col8"] == "hello world" and update["after"]["col8"] == "hello world 2020"
    assert update["after"]["col7"] == "9.999999999999"  # exact digits, not a double's rendering
    assert delete["before"]["col7"] == "9.99999999" and delete["after"] is None
    assert (insert["seq"], insert["seq2"], insert["event_time"]) == (
        Decimal(1609344671),
        0,
        datetime(2020, 12, 30, 16, 11, 11),
    )
    assert (ddl["db"], ddl["table"], ddl["ddl"]) == ("connector_test", "all_mysql_type_test", DDL_TEXT)
    assert (ddl["seq"], ddl["event_time"], ddl["after"]) == (
        Decimal(1671177057),
        datetime(2022, 12, 16, 7, 50, 57),
        None,
    )


def test_default_columns_typed_from_configuration(spark):
    types = {"col1": "bigint", "col5": "decimal(20,0)", "col6": "float", "col7": "decimal(7,6)", "col9": "binary"}
    types |= {"col11": "date", "col13": "timestamp", "col14": "timestamp", "col8": "string"}
    source = source_for("oms_default", column_types={"tenant.database.table_name": types})
    insert = parse_files(spark, source, DEFAULT / "consistent.jsonl")[0]
    assert insert["reject_reason"] is None
    assert {c["name"]: c["type"] for c in insert["columns"]} == {name: types.get(name, "string") for name in DOC_IMAGE}
    assert {k: insert["after"][k] for k in ("col7", "col11", "col13", "col14")} == {
        "col7": "9.999999",
        "col11": "2020-11-25",
        "col13": "2020-11-25 00:01:02.000000",  # DATETIME text (UTC)
        "col14": "2020-11-24 16:01:02.012345",  # TIMESTAMP as epoch seconds
    }


def test_default_ordering_heartbeats_full_sync_and_quarantine(spark, tmp_path):
    source = source_for("oms_default", column_types={"tenant.shop.orders": {"day": "date"}})
    row = {"id": 1, "day": "2024-01-02"}
    lines = [
        oms("INSERT", row, storeDataSequence="170000000000007"),
        oms("INSERT", row, timestamp=None, checkpoint="id=1"),  # full synchronization: no timestamp
        oms("HEARTBEAT", timestamp=None, checkpoint="1700000005", db=None, table_name=None, record_primary_key=None),
        oms("ROW", row),
        oms("INSERT", row, timestamp="soon"),
        oms("INSERT", row, storeDataSequence="seven"),
        oms("INSERT", row, table_name=None),
        oms("INSERT", row, db=None),
        oms("INSERT", {"id": 1, "day": "0000-00-00"}),
        oms("UPDATE", row),
        oms(None, row),
    ]
    rows = parse_lines(spark, source, tmp_path, lines)
    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("data", None),
        ("data", None),
        ("heartbeat", None),
        ("quarantined", "unknown recordType 'ROW'"),
        ("quarantined", "allMetaData.timestamp is not a number of seconds"),
        ("quarantined", "allMetaData.storeDataSequence is not a number"),
        ("quarantined", "missing allMetaData.table_name"),
        ("quarantined", "missing allMetaData.db"),
        ("quarantined", "value does not match its declared type in column(s): day"),
        ("quarantined", "UPDATE message without the image it needs"),
        ("quarantined", "missing recordType"),
    ]
    sequenced, full_sync, heartbeat = rows[:3]
    assert (sequenced["seq"], sequenced["seq2"]) == (Decimal(1700000000), Decimal(170000000000007))
    assert (full_sync["seq"], full_sync["seq2"], full_sync["event_time"]) == (0, 0, None)
    assert heartbeat["event_time"] == datetime(2023, 11, 14, 22, 13, 25)  # from the checkpoint


def test_extend_document_examples_as_printed(spark):
    rows = parse_files(spark, source_for("oms_default_extend_column_type"), EXTEND / "doc_examples.jsonl")
    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        *[("quarantined", "primary key column(s) missing from the image: id1, id2")] * 3,
        ("ddl", None),
    ]


def test_extend_examples_are_typed_by_light_type(spark):
    insert, update, delete, ddl = parse_files(
        spark, source_for("oms_default_extend_column_type"), EXTEND / "consistent.jsonl"
    )

    assert [(r["outcome"], r["op"]) for r in (insert, update, delete, ddl)] == [
        ("data", "INSERT"),
        ("data", "UPDATE"),
        ("data", "DELETE"),
        ("ddl", "DDL"),
    ]
    assert insert["columns"] == [
        {"name": "int8", "type": "smallint"},  # TINYINT: signedness unknown
        {"name": "int16", "type": "int"},
        {"name": "int32", "type": "bigint"},
        {"name": "int64", "type": "bigint"},
        {"name": "bigInt", "type": "decimal(20,0)"},
        {"name": "float32", "type": "float"},
        {"name": "float64", "type": "double"},
        {"name": "string", "type": "string"},
        {"name": "bytes", "type": "binary"},
        {"name": "decimal", "type": "string"},  # DECIMAL without precision: the exact text
        {"name": "localDate", "type": "date"},
        {"name": "localTime", "type": "string"},
        {"name": "localDateTime", "type": "timestamp_ntz"},
        {"name": "timestamp_in_long", "type": "timestamp"},
    ]
    tiny = "9.99999999999999909326625337248461995470488734032045693707225049331647881341002217023668530611028595"
    after = insert["after"]
    assert "__light_type" not in after and after["decimal"].startswith(tiny) and after["decimal"].endswith("125E-308")
    assert {k: v for k, v in after.items() if k not in ("decimal", "float64")} == {
        "int8": "3",
        "int16": "129",
        "int32": "2147483646",
        "int64": "9223372036854775806",
        "bigInt": "10223372036854775806",
        "float32": "1.2222",
        "string": "hello world",
        "bytes": "aGVsbG8gd29ybGQ=",
        "localDate": "2020-11-25",
        "localTime": "00:01:02",
        "localDateTime": "2020-11-25 00:01:02.000000",
        "timestamp_in_long": "2020-11-24 16:01:02.012345",
    }
    assert insert["primary_key"] == ["int8", "int16"] and (insert["db"], insert["table"]) == ("database", "table")
    assert update["after"]["string"] == "hello world 2020" and update["before"]["string"] == "hello world"
    assert delete["columns"] == insert["columns"] and delete["before"]["bigInt"] == "10223372036854775806"
    assert (ddl["ddl"], ddl["columns"], ddl["after"]) == (DDL_TEXT, None, None)


def test_extend_oracle_tenant_types_and_bad_values(spark, tmp_path):
    source = source_for("oms_default_extend_column_type")
    light = {"id": "NUMBER(10)", "price": "NUMBER(10,2)", "born": "DATE", "rate": "FLOAT", "note": "VARCHAR2(20)"}
    row = {"id": "7", "price": "12.50", "born": "2020-11-25 10:00:00", "rate": "0.1234567890123456789", "note": "x"}
    lines = [
        oms("INSERT", row, light=light, dbType="OB_ORACLE", record_primary_key="id"),
        oms("INSERT", row | {"price": "123456789.5"}, light=light, dbType="OB_ORACLE", record_primary_key="id"),
        oms("INSERT", row, light=light | {"born": "DATE"}, dbType="OB_MYSQL", record_primary_key="id"),
    ]
    oracle, too_wide, mysql_date = parse_lines(spark, source, tmp_path, lines)
    assert {c["name"]: c["type"] for c in oracle["columns"]} == {
        "id": "decimal(10,0)",
        "price": "decimal(10,2)",
        "born": "timestamp_ntz",
        "rate": "string",
        "note": "string",
    }
    assert oracle["after"] == {
        "id": "7",
        "price": "12.50",
        "born": "2020-11-25 10:00:00.000000",
        "rate": "0.1234567890123456789",
        "note": "x",
    }
    assert too_wide["reject_reason"] == "value does not match its declared type in column(s): price"
    assert mysql_date["reject_reason"] == "value does not match its declared type in column(s): born"


def test_default_loads_end_to_end(spark, tmp_path):
    source = source_for(
        "oms_default",
        tmp_path,
        tables=("tenant.shop.orders",),
        column_types={"tenant.shop.orders": {"id": "bigint", "total": "decimal(10,2)", "paid_at": "timestamp"}},
    )

    def at(second: int, **meta) -> dict:
        return {"timestamp": str(1700000000 + second), **meta}

    write_export(
        source,
        "orders/0.json",
        [
            oms("INSERT", {"id": 1, "total": "10.00", "paid_at": None}, **at(0)),
            oms("INSERT", {"id": 2, "total": "20.00", "paid_at": None}, **at(0)),
            oms("INSERT", {"id": 3, "total": "30.00", "paid_at": None}, **at(1)),
            oms("HEARTBEAT", **at(2)),
            oms(
                "UPDATE",
                {"id": 1, "total": "12.50", "paid_at": "1700000003.25"},
                {"id": 1, "total": "10.00", "paid_at": None},
                **at(3),
            ),
            oms("DELETE", None, {"id": 2, "total": "20.00", "paid_at": None}, **at(3)),
            oms("INSERT", {"id": 9}, table_name="other", **at(3)),  # not in the include list
            oms("DDL", {"ddl": "alter table orders add column note text"}, **at(4)),
        ],
    )

    reports = run(spark, source)

    assert silver_rows(source, "tenant.shop", "orders") == [
        {
            "id": 1,
            "total": Decimal("12.50"),
            "paid_at": datetime(2023, 11, 14, 22, 13, 23, 250000, tzinfo=UTC),
            "note": None,
        },
        {"id": 3, "total": Decimal("30.00"), "paid_at": None, "note": None},
    ]
    assert silver_schema(source, "tenant.shop", "orders") == {  # the ALTER added `note` after the data
        "id": "int64",
        "total": "decimal128(10, 2)",
        "paid_at": "timestamp[us, tz=UTC]",
        "note": "string",
    }
    assert report(reports, "parse")["outcomes"] == {
        "data": 5,
        "ddl": 1,
        "heartbeat": 1,
        "control": 0,
        "excluded": 1,
        "quarantined": 0,
    }


def test_extend_loads_end_to_end(spark, tmp_path):
    source = source_for("oms_default_extend_column_type", tmp_path)
    light = {"id": "INT", "name": "VARCHAR(20)", "amount": "DECIMAL(8,3)", "born": "DATE", "flag": "BOOL"}

    def row(id_: int, name: str, amount: str, flag: int) -> dict:
        return {"id": id_, "name": name, "amount": amount, "born": "1990-01-31", "flag": flag}

    write_export(
        source,
        "people/0.json",
        [
            oms("INSERT", row(1, "ann", "1.5", 1), light=light, table_name="people"),
            oms("INSERT", row(2, "bob", "2", 0), light=light, table_name="people"),
            oms("UPDATE", row(2, "bobby", "2.125", 1), row(2, "bob", "2", 0), light=light, table_name="people"),
            oms("DELETE", None, row(1, "ann", "1.5", 1), light=light, table_name="people"),
            oms("INSERT", row(3, "cy", "3", 0), light=light, table_name="people"),
        ],
    )

    run(spark, source)

    assert silver_rows(source, "tenant.shop", "people") == [
        {"id": 2, "name": "bobby", "amount": Decimal("2.125"), "born": datetime(1990, 1, 31).date(), "flag": True},
        {"id": 3, "name": "cy", "amount": Decimal("3.000"), "born": datetime(1990, 1, 31).date(), "flag": False},
    ]


H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)


@pytest.mark.parametrize("hours", [[H5, H6], [H6, H5], [H5, H6, H5]])
def test_ddl_without_store_data_sequence_opening_its_file_follows_its_seconds_changes_of_the_hour_before(
    spark, tmp_path, hours
):
    """A statement first in its file (the next hour's export) whose storeDataSequence is null comes after the
    changes of its second sent in the hour before and before those after it in its file, whatever order the hours
    run in: the TRUNCATE empties the row inserted before it, the DEFAULT fills it (also when only a later second
    follows the statement, or nothing), the RENAME TABLE takes it to the new name."""
    tables = ("t_trunc", "t_add", "t_late", "t_alone", "t_ren", "t_ren2")
    source = source_for("oms_default", tmp_path, column_types={f"tenant.shop.{t}": {"id": "bigint"} for t in tables})

    def change(table: str, n: int, row: dict, second: int = 1700000000) -> str:
        sequence = str(second * 100000 + n)
        return oms("INSERT", row, table_name=table, storeDataSequence=sequence, timestamp=str(second))

    def ddl(table: str, text: str) -> str:
        return oms("DDL", {"ddl": text}, table_name=table, record_primary_key=None, storeDataSequence=None)

    write_export(
        source,
        "topic/0005.json",
        [
            change("t_trunc", 1, {"id": 1, "a": "before"}),
            change("t_add", 2, {"id": 1, "a": "x"}),
            change("t_late", 3, {"id": 1, "a": "x"}),
            change("t_ren", 4, {"id": 1, "a": "x"}),
            change("t_alone", 5, {"id": 1, "a": "x"}),
        ],
        H5,
    )
    opening = {
        "t_trunc": [ddl("t_trunc", "truncate table shop.t_trunc"), change("t_trunc", 6, {"id": 2, "a": "after"})],
        "t_add": [
            ddl("t_add", "alter table shop.t_add add column c varchar(30) default 'dflt'"),
            change("t_add", 8, {"id": 2, "a": "y", "c": "own"}),
        ],
        "t_late": [
            ddl("t_late", "alter table shop.t_late add column c varchar(30) default 'dflt'"),
            change("t_late", 1, {"id": 2, "a": "y", "c": "own"}, second=1700000001),
        ],
        "t_ren": [ddl("t_ren", "rename table shop.t_ren to shop.t_ren2"), change("t_ren2", 10, {"id": 2, "a": "y"})],
        "t_alone": [ddl("t_alone", "alter table shop.t_alone add column c varchar(30) default 'dflt'")],
    }
    for table, lines in opening.items():
        write_export(source, f"topic/0006-{table}.json", lines, H6)

    run(spark, source, hours)

    assert silver_rows(source, "tenant.shop", "t_trunc") == [{"id": 2, "a": "after"}]
    filled = [{"id": 1, "a": "x", "c": "dflt"}, {"id": 2, "a": "y", "c": "own"}]
    assert silver_rows(source, "tenant.shop", "t_add") == silver_rows(source, "tenant.shop", "t_late") == filled
    assert silver_rows(source, "tenant.shop", "t_alone") == [{"id": 1, "a": "x", "c": "dflt"}]
    assert silver_rows(source, "tenant.shop", "t_ren2") == [{"id": 1, "a": "x"}, {"id": 2, "a": "y"}]
    assert not (Path(source.lake_root) / zones.silver_table_dir(source.name, "tenant.shop", "t_ren")).exists()


def test_ddl_without_store_data_sequence_takes_its_place_in_the_file_among_changes_of_its_second(spark, tmp_path):
    # seed 002: a DDL message's storeDataSequence is null, its data messages' is set; all of one second here. The
    # TRUNCATE follows id 1 and precedes id 2, the DEFAULT fills the row inserted before it, the DROP follows the
    # insert giving b
    source = source_for(
        "oms_default",
        tmp_path,
        column_types={f"tenant.shop.{t}": {"id": "bigint", "b": "bigint"} for t in ("t_trunc", "t_add", "t_drop")},
    )

    def change(table: str, n: int, row: dict) -> str:
        return oms("INSERT", row, table_name=table, storeDataSequence=str(1700000000_00000 + n))

    def ddl(table: str, text: str) -> str:
        return oms("DDL", {"ddl": text}, table_name=table, record_primary_key=None)

    write_export(
        source,
        "topic/0.json",
        [
            change("t_trunc", 1, {"id": 1, "a": "before"}),
            ddl("t_trunc", "truncate table shop.t_trunc"),
            change("t_trunc", 3, {"id": 2, "a": "after"}),
            change("t_add", 4, {"id": 1, "a": "x"}),
            ddl("t_add", "alter table shop.t_add add column c varchar(30) default 'dflt'"),
            change("t_add", 6, {"id": 2, "a": "y", "c": "own"}),
            change("t_drop", 7, {"id": 1, "a": "x", "b": 1}),
            ddl("t_drop", "alter table shop.t_drop drop column b"),
        ],
    )

    run(spark, source)

    assert silver_rows(source, "tenant.shop", "t_trunc") == [{"id": 2, "a": "after"}]
    assert silver_rows(source, "tenant.shop", "t_add") == [
        {"id": 1, "a": "x", "c": "dflt"},
        {"id": 2, "a": "y", "c": "own"},
    ]
    assert silver_rows(source, "tenant.shop", "t_drop") == [{"id": 1, "a": "x"}]
