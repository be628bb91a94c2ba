"""SharePlex JSON: the OMS and DTS document examples and quarantine cases become exactly the expected canonical
rows; inserts, deletes, partial-image updates and configured column types land in silver exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from format_support import FIXTURES, lines_of, run, silver_rows, source_for, write_export

from lakeloader.core.config import SourceConfig

SHAREPLEX = FIXTURES / "shareplex_json"
H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)


def source(**settings) -> SourceConfig:
    return source_for("shareplex_json", **settings)


def shareplex(op: str, scn: int, data: dict | None = None, key: dict | None = None, **meta) -> str:
    message = {
        "meta": {"op": op, "table": "shop.orders", "scn": str(scn), "seq": 1, "time": "2026-11-21T05:10:00"} | meta,
        "data": data,
    }
    return json.dumps(message | ({"key": key} if key is not None else {}))


def test_oms_examples_become_canonical_rows(parse_messages):
    number = json.loads(lines_of(SHAREPLEX / "oms_examples.jsonl")[0], parse_float=str)["data"]["col5"]
    insert, update, delete, ddl = parse_messages(source(), lines_of(SHAREPLEX / "oms_examples.jsonl"))

    assert [(r["outcome"], r["op"], r["raw_op"]) for r in (insert, update, delete, ddl)] == [
        ("data", "INSERT", "ins"),
        ("data", "UPDATE", "upd"),
        ("data", "DELETE", "del"),
        ("ddl", "DDL", "ddl"),
    ]
    assert (insert["db"], insert["table"], insert["schema_name"]) == ("mock_database", "mock_table", None)
    assert (insert["seq"], insert["seq2"], insert["event_time"]) == (
        Decimal(123456789),
        1,
        datetime(2020, 11, 25, 0, 1, 2),
    )
    assert insert["after"] == {
        "col1": "2020-11-25 00:01:02",
        "col2": "hello world",
        "col3": "INTERVAL '3' DAY",
        "col4": "1.2222",
        "col5": number,  # the document's 700-digit number, its digits as sent
        "col6": "129",
        "col7": "00:01:02",
        "col8": "1",
        "col9": "2020-11-25 00:01:02.012345 Asia/Shanghai",
        "col10": "2147483646",
        "col11": "9223372036854775806",
        "col12": "aGVsbG8gd29ybGQ=",
        "col13": "INTERVAL '4' YEAR",
        "col14": "3",
        "col15": "2020-11-25",
        "col16": number,
        "col17": "10223372036854775806",
        "col18": "1606233662.012345",
    }
    assert insert["columns"] == [{"name": f"col{n}", "type": "string"} for n in range(1, 19)]
    assert insert["primary_key"] is None and insert["after_partial"] is False
    # the update's data holds only the changed column; its key holds the row before
    assert update["before"] == insert["after"]
    assert update["after"] == insert["after"] | {"col": "hello world 2020"}
    assert update["after_partial"] is True
    assert delete["before"] == insert["after"] and delete["after"] is None
    # "scn": "null" (sent only with sequenceEnabled): ordered by its time, in microseconds
    assert (ddl["db"], ddl["table"]) == ("connector_test", "all_mysql_type_test")
    assert (ddl["seq"], ddl["seq2"]) == (0, 1_671_206_009_000_000)
    assert ddl["ddl"].startswith("alter table connector_test.all_mysql_type_test add column c90 varchar(30)")
    assert ddl["event_time"] == datetime(2022, 12, 16, 15, 53, 29)


def test_dts_examples_as_printed_and_completed(parse_messages):
    printed = parse_messages(source(), lines_of(SHAREPLEX / "dts_examples.jsonl"))
    update, delete = parse_messages(source(), lines_of(SHAREPLEX / "dts_examples_completed.jsonl"))

    insert = printed[0]
    assert (insert["op"], insert["db"], insert["table"], insert["after"]) == (
        "INSERT",
        "CL_BIZ1",
        "MIO_LOG",
        {"MIO_LOG_ID": "32539737"},
    )
    assert (insert["seq"], insert["seq2"], insert["event_time"]) == (
        Decimal(14589063118712),
        1,
        datetime(2017, 6, 16, 14, 24, 34),
    )
    # the document elides part of the update's meta with "…." and leaves a trailing comma in the delete's
    assert [r["reject_reason"] for r in printed[1:]] == ["malformed JSON: not a JSON object"] * 2
    assert update["before"] == {
        "MIO_LOG_ID": "32537893",
        "PLNMIO_REC_ID": "31557806",
        "POL_CODE": None,
        "CNTR_TYPE": None,
        "CNTR_NO": "1171201606syui26",
    }
    assert update["after"] == update["before"] | {"CNTR_NO": "1171201606"}
    assert (update["op"], update["after_partial"], update["seq"], update["seq2"]) == (
        "UPDATE",
        True,
        Decimal(14589063118790),
        2,
    )
    assert delete["op"] == "DELETE" and delete["before"]["MIO_LOG_ID"] == "32539739" and delete["after"] is None


def test_dts_op_spellings(parse_messages):
    lines = [
        shareplex("INSERT", 10, {"id": "1"}),
        shareplex("UPDATE BEFORE", 11, {"id": "1", "name": "a"}),
        shareplex("UPDATE AFTER", 11, {"name": "b"}, key={"id": "1"}),
        shareplex("upd", 12, {"name": "c"}),  # no key: only an after-image
        shareplex("Delete", 13, {"id": "1", "name": "c"}),
        shareplex("TRUNCATE", 14),
        shareplex("DROP COLUMN", 15, sql=None),
    ]

    rows = parse_messages(source(), lines)

    assert [(r["kind"], r["op"], r["before"], r["after"], r["after_partial"]) for r in rows] == [
        ("data", "INSERT", None, {"id": "1"}, False),
        ("data", "UPDATE_BEFORE", {"id": "1", "name": "a"}, None, False),
        ("data", "UPDATE_AFTER", None, {"id": "1", "name": "b"}, True),
        ("data", "UPDATE_AFTER", None, {"name": "c"}, True),
        ("data", "DELETE", {"id": "1", "name": "c"}, None, False),
        ("ddl", "TRUNCATE", None, None, False),
        ("ddl", "DROP COLUMN", None, None, False),
    ]
    assert all(r["reject_reason"] is None for r in rows)


def test_bad_messages_are_quarantined_with_their_reason(parse_messages):
    lines = [
        "{oops",
        json.dumps({"meta": {"table": "shop.orders", "scn": "1"}, "data": {"id": "1"}}),
        shareplex("merge", 1, {"id": "1"}),
        shareplex("ins", 1, {"id": "1"}, table="orders"),
        shareplex("ins", 1, {"id": "1"}, table=None),
        shareplex("ins", "12a", {"id": "1"}),
        shareplex("ins", 1, {"id": "1"}, seq="first"),
        shareplex("ins", 1, {}),
        shareplex("del", 1, None),
    ]

    rows = parse_messages(source(), lines)

    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows] == [
        (1, "quarantined", "malformed JSON: not a JSON object"),
        (2, "quarantined", "missing meta.op"),
        (3, "quarantined", "unknown meta.op 'merge'"),
        (4, "quarantined", "missing meta.table (as db.table)"),
        (5, "quarantined", "missing meta.table (as db.table)"),
        (6, "quarantined", "meta.scn is not a number"),
        (7, "quarantined", "meta.seq is not a number"),
        (8, "quarantined", "ins message without data"),
        (9, "quarantined", "del message without data"),
    ]


def test_inserts_deletes_and_partial_updates_land_in_silver_exactly(spark, tmp_path):
    config = source_for(
        "shareplex_json",
        tmp_path,
        primary_keys={"shop.orders": ("id",)},  # SharePlex messages name no key
        column_types={"shop.orders": {"id": "bigint", "price": "decimal(10,2)"}},
    )

    def row(id_: int, name: str, price: float) -> dict:
        return {"id": id_, "name": name, "price": price}

    hour5 = [
        shareplex("ins", 100, row(1, "ann", 10.5)),
        shareplex("ins", 101, row(2, "bob", 7)),
        shareplex("ins", 102, row(3, "cy", 1.25)),
        shareplex("upd", 103, {"price": 12.0}, key=row(1, "ann", 10.5)),  # only the changed column
        shareplex("del", 104, row(2, "bob", 7)),
    ]
    hour6 = [
        shareplex("upd", 200, {"name": "cyd", "price": 2.5}, key=row(3, "cy", 1.25)),
        shareplex("upd", 201, {"name": "ann2"}),  # no key, no id: quarantined
        json.dumps({"meta": {"op": "ddl", "table": "shop.orders", "scn": "202"}, "sql": {"ddl": "ALTER TABLE x"}}),
        shareplex("upd", 99, {"name": "stale"}, key=row(1, "ann", 10.5)),  # older than the row
    ]
    write_export(config, "orders/sp-0005.json", hour5, H5)
    write_export(config, "orders/sp-0006.json", hour6, H5 + timedelta(hours=1))

    reports = run(spark, config, [H5, H5 + timedelta(hours=1)])

    assert silver_rows(config, "shop", "orders") == [
        {"id": 1, "name": "ann", "price": Decimal("12.00")},
        {"id": 3, "name": "cyd", "price": Decimal("2.50")},
    ]
    parse6 = next(r for r in reports if r["step"] == "parse" and r["hour"] == "2026-11-21T06")
    assert parse6["outcomes"] == {"data": 2, "ddl": 1, "heartbeat": 0, "control": 0, "excluded": 0, "quarantined": 1}
    assert parse6["quarantine_reasons"] == {"primary key column(s) missing from the image: id": 1}


def test_messages_without_a_scn_apply_in_the_order_of_their_time(spark, tmp_path):
    """OMS sends `meta.scn` only when the source enables sequences (seed 002; its DDL example has "null"): such
    messages, with the scn absent, null or "null", order by `meta.time` and then their export position, not by
    `meta.seq`, which restarts in every transaction; a TRUNCATE among them applies at its place."""
    config = source_for("shareplex_json", tmp_path, primary_keys={"shop.orders": ("id",)})

    def without_scn(op: str, data: dict | None, seq: int, second: int, scn: object = "null", **fields) -> str:
        time = f"2026-11-21T05:10:{second:02}"
        meta = {"op": op, "table": "shop.orders", "seq": seq, "time": time, "scn": scn}
        return json.dumps({"meta": {k: v for k, v in meta.items() if v is not ...}, "data": data} | fields)

    write_export(
        config,
        "orders/sp-0.json",
        [
            without_scn("ins", {"id": "3", "name": "kept"}, 1, 9),  # exported first, changed last
            without_scn("ins", {"id": "1", "name": "gone"}, 1, 1),
            without_scn("ddl", {}, 2, 2, sql={"ddl": "TRUNCATE TABLE shop.orders"}),
            without_scn("ins", {"id": "2", "name": "first"}, 1, 3, scn=None),  # a second transaction: seq restarts
            without_scn("upd", {"name": "second"}, 2, 3, scn=..., key={"id": "2", "name": "first"}),
        ],
    )

    reports = run(spark, config)

    assert silver_rows(config, "shop", "orders") == [{"id": "2", "name": "second"}, {"id": "3", "name": "kept"}]
    parse = next(r for r in reports if r["step"] == "parse")
    assert (parse["outcomes"]["data"], parse["outcomes"]["ddl"], parse["outcomes"]["quarantined"]) == (4, 1, 0)
    apply = next(r for r in reports if r["step"] == "apply")
    assert apply["ddl"] == {"applied": 1}


def test_ddl_without_a_scn_takes_its_place_in_the_file_among_changes_with_one(spark, tmp_path):
    # seed 002: OMS's SharePlex DDL example has "scn": "null", its data messages a scn; the ADD COLUMN's DEFAULT
    # fills the row inserted before it, and the DROP follows both inserts
    config = source_for("shareplex_json", tmp_path, primary_keys={"shop.orders": ("id",)})
    meta = {"op": "ddl", "table": "shop.orders", "scn": "null", "seq": 1, "time": "2026-11-21T05:10:00"}
    ddl = [
        json.dumps({"meta": meta, "data": {}, "sql": {"ddl": text}})
        for text in (
            "ALTER TABLE shop.orders ADD COLUMN c VARCHAR(10) DEFAULT 'd'",
            "ALTER TABLE shop.orders DROP COLUMN name",
        )
    ]
    write_export(
        config,
        "orders/sp-0.json",
        [
            shareplex("ins", 1671205980000001, {"id": "1", "name": "a"}),
            ddl[0],
            shareplex("ins", 1671205980000003, {"id": "2", "name": "b", "c": "own"}),
            ddl[1],
        ],
    )

    run(spark, config)

    assert silver_rows(config, "shop", "orders") == [{"id": "1", "c": "d"}, {"id": "2", "c": "own"}]


@pytest.mark.parametrize("hours", [[H5, H5 + timedelta(hours=1)], [H5 + timedelta(hours=1), H5]])
def test_ddl_without_a_scn_opening_its_file_follows_the_changes_of_the_hour_before(spark, tmp_path, hours):
    # the statement first in the next hour's export: after the insert the hour before sent, before the one after it
    config = source_for("shareplex_json", tmp_path, primary_keys={"shop.orders": ("id",)})
    meta = {"op": "ddl", "table": "shop.orders", "scn": "null", "seq": 1, "time": "2026-11-21T05:59:59"}
    truncate = json.dumps({"meta": meta, "data": {}, "sql": {"ddl": "TRUNCATE TABLE shop.orders"}})
    write_export(config, "orders/sp-0005.json", [shareplex("ins", 1671205980000001, {"id": "1", "name": "a"})], H5)
    write_export(
        config,
        "orders/sp-0006.json",
        [truncate, shareplex("ins", 1671205980000003, {"id": "2", "name": "b"})],
        H5 + timedelta(hours=1),
    )

    run(spark, config, hours)

    assert silver_rows(config, "shop", "orders") == [{"id": "2", "name": "b"}]
