"""DebeziumFlatten: the OMS document examples and quarantine cases become exactly the expected canonical rows;
inserts, an update and a delete over two hours land in silver exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from format_support import FIXTURES, lines_of, run, silver_rows, source_for, write_export

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)


def flat(op: str, before: dict | None, after: dict | None, ts_ms: int = 1795237800000, **source_fields) -> str:
    origin = {"connector": "OB_MYSQL", "name": "OMS", "ts_ms": ts_ms, "db": "shop", "table": "orders"}
    return json.dumps({"op": op, "before": before, "after": after, "source": origin | source_fields, "ts_ms": ts_ms})


def test_oms_examples_load_every_column_as_written(parse_messages):
    lines = lines_of(FIXTURES / "debezium_flatten" / "oms_examples.jsonl")
    insert, update, delete = parse_messages(source_for("debezium_flatten"), lines)

    assert [(r["op"], r["raw_op"], r["reject_reason"]) for r in (insert, update, delete)] == [
        ("INSERT", "c", None),
        ("UPDATE", "u", None),
        ("DELETE", "d", None),
    ]
    assert (insert["db"], insert["table"], insert["seq"], insert["seq2"], insert["event_time"]) == (
        "test",
        "table_name",
        Decimal(1668491621000),
        0,
        datetime(2022, 11, 15, 5, 53, 41),
    )
    assert {c["type"] for c in insert["columns"]} == {"string"} and len(insert["columns"]) == 26
    expected_insert = {"c01": "2", "c03": "1241.41000", "c04": "61", "c10": "2.4212412", "c22": "19311"}
    assert {name: insert["after"][name] for name in expected_insert} == expected_insert
    assert (update["before"]["c11"], update["after"]["c11"]) == ("a", "aa")
    assert update["before"] | {"c11": "aa"} == update["after"]
    assert delete["before"] == update["after"] and delete["after"] is None
    assert delete["seq"] == Decimal(1668496109000)


def test_heartbeats_count_and_bad_messages_are_quarantined_with_their_reason(parse_messages):
    row = {"id": "1", "name": "a"}
    lines = [
        json.dumps({"op": "HEARTBEAT", "ts_ms": 1795237801000}),
        json.dumps({"payload": {"op": "c", "after": row}}),  # the Debezium envelope is another format
        flat("c", None, row, table=None),
        flat("u", None, None),
        "[]",
    ]

    rows = parse_messages(source_for("debezium_flatten"), lines)

    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("heartbeat", None),
        ("quarantined", "missing op"),
        ("quarantined", "missing source.table"),
        ("quarantined", "u message without the image it needs"),
        ("quarantined", "malformed JSON: not a JSON object"),
    ]
    assert rows[0]["event_time"] == datetime(2026, 11, 21, 5, 10, 1)


def test_inserts_update_and_delete_land_in_silver_exactly(spark, tmp_path):
    config = source_for("debezium_flatten", tmp_path)
    t0 = 1795237800000
    write_export(
        config,
        "oms/0005.json",
        [
            flat("c", None, {"id": 1, "name": "ann", "price": 10.5}, ts_ms=t0),
            flat("c", None, {"id": 2, "name": "bob", "price": 7}, ts_ms=t0 + 1000),
            flat(
                "u", {"id": 1, "name": "ann", "price": 10.5}, {"id": 1, "name": "ann", "price": 12.25}, ts_ms=t0 + 2000
            ),
        ],
        H5,
    )
    write_export(
        config,
        "oms/0006.json",
        [flat("d", {"id": 2, "name": "bob", "price": 7}, None, ts_ms=t0 + 3_600_000)],
        H5 + timedelta(hours=1),
    )

    run(spark, config, [H5, H5 + timedelta(hours=1)])

    # no types in the messages: every column is a string, and without a configured key all columns key a row,
    # which the full before-images of updates and deletes match exactly
    assert silver_rows(config, "shop", "orders") == [{"id": "1", "name": "ann", "price": "12.25"}]


def test_configured_types_win_over_the_plain_types_oms_declares_nothing_for(parse_messages):
    """DebeziumFlatten carries no logical type names: DATETIME arrives as epoch ms, DATE as days, bytes as Base16,
    BIGINT UNSIGNED as text. `column_types` types them."""
    event = {
        "op": "c",
        "before": None,
        "after": {"id": 1, "at": 62562653000, "day": -3653, "photo": "00FF", "big": "18446744073709551615"},
        "source": {"name": "OMS", "db": "shop", "table": "t", "ts_ms": 1700000000000},
        "ts_ms": 1700000000000,
    }
    types = {"id": "int", "at": "timestamp_ntz", "day": "date", "photo": "binary", "big": "decimal(20,0)"}
    config = source_for("debezium_flatten", column_types={"shop.t": types})

    (row,) = parse_messages(config, [json.dumps(event)])

    assert row["reject_reason"] is None
    assert {c["name"]: c["type"] for c in row["columns"]} == types
    assert row["after"] == {
        "id": "1",
        "at": "1971-12-26 02:30:53.000000",
        "day": "1960-01-01",
        "photo": "AP8=",
        "big": "18446744073709551615",
    }
