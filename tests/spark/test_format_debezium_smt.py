"""DebeziumSmt: the OMS document examples and quarantine cases become exactly the expected canonical rows, the
table named by the export's topic directory; upserts and deletes over two hours land in silver exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from format_support import FIXTURES, lines_of, run, silver_rows, silver_schema, source_for, write_export

from lakeloader.core.config import SourceConfig

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)


def source(tmp_path=None, **settings) -> SourceConfig:
    settings = {"topic_tables": {"orders-topic": "shop.orders"}} | settings
    return source_for("debezium_smt", tmp_path, **settings)


def smt(deleted: str | None, **fields) -> str:
    return json.dumps(fields | ({"__deleted": deleted} if deleted is not None else {}))


def test_oms_examples_become_upserts_and_deletes_of_the_topics_table(parse_messages):
    lines = lines_of(FIXTURES / "debezium_smt" / "oms_examples.jsonl")
    rows = parse_messages(source(), lines, "orders-topic/0/000001.json")

    fields = {"field1": "after_value1", "field2": "after_value2"}
    assert [(r["outcome"], r["op"], r["raw_op"], r["before"], r["after"]) for r in rows] == [
        ("data", "UPDATE_AFTER", "false", None, fields),  # the transform without delete rewriting
        ("data", "UPDATE_AFTER", "false", None, fields),
        ("data", "UPDATE_AFTER", "false", None, fields),
        ("data", "DELETE", "true", fields, None),
    ]
    assert {(r["db"], r["table"], r["kind"], r["reject_reason"]) for r in rows} == {("shop", "orders", "data", None)}
    assert {(r["seq"], r["seq2"], r["event_time"], r["primary_key"]) for r in rows} == {
        (Decimal(2026112105), 0, None, None)  # the batch hour 2026-11-21T05
    }
    assert {r["origin_file"] for r in rows} == {"orders-topic/0/000001.json"}
    assert rows[0]["columns"] == [{"name": "field1", "type": "string"}, {"name": "field2", "type": "string"}]


def test_configured_keys_and_types_apply_and_a_tenant_qualified_db_is_kept(parse_messages):
    config = source(
        topic_tables={"t": "tenant1.shop.orders"},
        primary_keys={"tenant1.shop.orders": ("id",)},
        column_types={"tenant1.shop.orders": {"id": "bigint", "price": "decimal(10,2)"}},
    )

    (row,) = parse_messages(config, ['{"id": 7, "price": 1.50, "note": "x", "__deleted": "false"}'], "t/000001.json")

    assert (row["outcome"], row["db"], row["table"], row["primary_key"]) == ("data", "tenant1.shop", "orders", ["id"])
    assert row["after"] == {"id": "7", "price": "1.50", "note": "x"}
    assert row["columns"] == [
        {"name": "id", "type": "bigint"},
        {"name": "price", "type": "decimal(10,2)"},
        {"name": "note", "type": "string"},
    ]


def test_bad_messages_and_unmapped_files_are_quarantined_with_their_reason(parse_messages):
    config = source(primary_keys={"shop.orders": ("id",)}, column_types={"shop.orders": {"id": "bigint"}})
    good = smt("false", id=1)
    lines = [
        "null",
        smt("maybe", id=1),
        json.dumps({"__deleted": "true"}),
        smt("false", name="no key"),
        smt("false", id="seven"),
    ]

    rows = parse_messages(config, lines, "orders-topic/0/000001.json")
    top_level = parse_messages(config, [good], "000001.json")
    unmapped = parse_messages(config, [good], "users-topic/000001.json")

    assert [(r["outcome"], r["reject_reason"]) for r in rows + top_level + unmapped] == [
        ("quarantined", "malformed JSON: not a JSON object"),
        ("quarantined", '__deleted must be "true" or "false", got \'maybe\''),
        ("quarantined", "message without fields"),
        ("quarantined", "primary key column(s) missing from the image: id"),
        ("quarantined", "value does not match its declared type in column(s): id"),
        ("quarantined", "the export file is not inside a topic directory"),
        ("quarantined", "no table configured for topic 'users-topic' (topic_tables)"),
    ]


def test_upserts_and_deletes_over_two_hours_land_in_silver_exactly(spark, tmp_path):
    config = source(tmp_path, primary_keys={"shop.orders": ("id",)}, column_types={"shop.orders": {"id": "bigint"}})
    h6 = H5 + timedelta(hours=1)
    write_export(config, "orders-topic/0/0000.json", [smt("false", id=1, name="ann"), smt(None, id=2, name="bob")], H5)
    write_export(
        config, "orders-topic/0/0001.json", [smt("false", id=1, name="anne"), smt("true", id=2, name="bob")], H5
    )
    write_export(
        config, "orders-topic/0/0002.json", [smt("false", id=3, name="cy"), smt("false", id=1, name="ann b.")], h6
    )

    run(spark, config, [h6, H5])  # out of order: the later hour still wins
    run(spark, config, [H5, h6])  # and rerunning both changes nothing

    assert silver_rows(config, "shop", "orders") == [{"id": 1, "name": "ann b."}, {"id": 3, "name": "cy"}]
    assert silver_schema(config, "shop", "orders") == {"id": "int64", "name": "string"}


def test_format_auto_recognises_messages_with_deleted_flags(parse_messages):
    lines = lines_of(FIXTURES / "debezium_smt" / "oms_examples.jsonl")
    auto = source_for("auto", topic_tables={"orders-topic": "shop.orders"})

    own = parse_messages(source(), lines, "orders-topic/0/000001.json")
    detected = parse_messages(auto, lines, "orders-topic/0/000001.json")

    # the first example has no `__deleted`: a bare row of fields has no shape to recognise
    assert [r["reject_reason"] for r in detected][:1] == ["format auto: the message matches no supported wire format"]
    assert [(r["op"], r["after"], r["before"]) for r in detected[1:]] == [
        (r["op"], r["after"], r["before"]) for r in own[1:]
    ]


def test_a_date_of_days_beyond_year_9999_is_quarantined_not_a_failed_run(parse_messages):
    config = source(column_types={"shop.orders": {"id": "bigint", "day": "date"}})
    days = [2_932_896, -719_162, 2_932_897, -719_163, 1_856_431_813, -2_147_483_648]
    lines = [smt("false", id=n, day=day) for n, day in enumerate(days)]

    rows = parse_messages(config, lines, "orders-topic/000001.json")

    bad = "value does not match its declared type in column(s): day"
    assert [(r["after"]["day"] if r["after"] else None, r["reject_reason"]) for r in rows] == [
        ("9999-12-31", None),
        ("0001-01-01", None),
        *[(None, bad)] * 4,
    ]


def test_configured_datetime_is_epoch_milliseconds_whatever_its_size(parse_messages):
    """OMS writes a DATETIME as epoch milliseconds (seed 002): 1971-12-26T02:30:53 is a 11-digit number, which a
    magnitude guess would read as seconds (the year 3952)."""
    config = source(column_types={"shop.orders": {"id": "bigint", "at": "timestamp_ntz", "day": "date"}})
    values = [(1, "62562653000", "700"), (2, "-1000", "-1"), (3, "1700000000123", "19675")]
    lines = [smt("false", id=n, at=at, day=day) for n, at, day in values]

    rows = parse_messages(config, lines, "orders-topic/000001.json")

    assert [(r["after"]["at"], r["after"]["day"], r["reject_reason"]) for r in rows] == [
        ("1971-12-26 02:30:53.000000", "1971-12-02", None),
        ("1969-12-31 23:59:59.000000", "1969-12-31", None),
        ("2023-11-14 22:13:20.123000", "2023-11-14", None),
    ]
