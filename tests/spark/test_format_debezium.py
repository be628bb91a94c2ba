"""Debezium JSON: the OMS document examples (with and without the schema envelope), a real Debezium message and
quarantine cases become exactly the expected canonical rows; a small scenario lands in silver exactly."""

from __future__ import annotations

import base64
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from format_support import FIXTURES, lines_of, run, silver_rows, source_for, write_export

from lakeloader.core.config import SourceConfig

DEBEZIUM = FIXTURES / "debezium_json"
PAIMON = FIXTURES / "peers" / "paimon" / "debezium" / "table"
H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
OMS_HEX_255 = "69" + "00" * 254  # c19 in the examples: BINARY(255) holding "i"


def source(**settings) -> SourceConfig:
    return source_for("debezium_json", **settings)


SCHEMA_FIELDS = [
    {"field": "id", "type": "int32"},
    {"field": "price", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "2", "connect.decimal.precision": "10"}},
    {"field": "name", "type": "string"},
    {"field": "sold_at", "type": "int64", "name": "io.debezium.time.Timestamp"},
    {"field": "day", "type": "int32", "name": "io.debezium.time.Date"},
    {"field": "at", "type": "int64", "name": "io.debezium.time.MicroTime"},
    {"field": "photo", "type": "bytes"},
]  # fmt: skip


def debezium(op: str, before: dict | None, after: dict | None, ts_ms: int = 1795237800000, **source_fields) -> str:
    """A Debezium MySQL event on shop.orders with its schema envelope."""
    schema = {
        "type": "struct",
        "fields": [
            {"field": "before", "type": "struct", "fields": SCHEMA_FIELDS},
            {"field": "after", "type": "struct", "fields": SCHEMA_FIELDS},
        ],
    }
    origin = {"connector": "mysql", "name": "dbserver1", "ts_ms": ts_ms, "db": "shop", "table": "orders"}
    payload = {"op": op, "before": before, "after": after, "source": origin | source_fields, "ts_ms": ts_ms + 5}
    return json.dumps({"schema": schema, "payload": payload})


def test_oms_examples_are_typed_by_their_envelope(parse_messages):
    insert, update, delete = parse_messages(source(), lines_of(DEBEZIUM / "oms_examples.jsonl"))

    assert [(r["op"], r["raw_op"], r["reject_reason"]) for r in (insert, update, delete)] == [
        ("INSERT", "c", None),
        ("UPDATE", "u", None),
        ("DELETE", "d", None),
    ]
    assert (insert["db"], insert["table"], insert["primary_key"]) == ("test", "table_name", None)
    assert (insert["seq"], insert["seq2"], insert["event_time"]) == (
        Decimal(1668491621000),
        0,  # pos "703223@166849****" is not a number
        datetime(2022, 11, 15, 5, 53, 41),
    )
    types = {c["name"]: c["type"] for c in insert["columns"]}
    assert [c["name"] for c in insert["columns"]] == [f"c{n:02d}" for n in range(1, 27)]
    assert insert["after"] == {
        "c01": "2",  # int32
        "c02": "12312",  # BIGINT: a string in OMS
        "c03": "1241.41000",  # DECIMAL: a string in OMS, trailing zeros kept
        "c04": "YQ==",  # bytes, Base16 "61" -> Base64
        "c05": "11",
        "c06": "141",
        "c07": "4241",
        "c08": "412124124",
        "c09": "2.11111",
        "c10": "2.4212412",
        "c11": "a",
        "c12": "b",
        "c13": "c",
        "c14": "d",
        "c15": "ZQ==",
        "c16": "f",
        "c17": "Zw==",
        "c18": "aA==",
        "c19": base64.b64encode(bytes.fromhex(OMS_HEX_255)).decode(),
        "c20": "ag==",
        "c21": "2022-11-15T05:12:11Z",  # TIMESTAMP: a string
        "c22": "19311",  # DATE: days, an int32 (the envelope names no logical type)
        "c23": "36060000000",  # TIME: microseconds
        "c24": "1668489131000",  # DATETIME: milliseconds, declared a string
        "c25": "2022",
        "c26": "aw==",
    }
    assert types == {
        **{f"c{n:02d}": "binary" for n in (4, 15, 17, 18, 19, 20, 26)},
        **{f"c{n:02d}": "string" for n in (2, 3, 11, 12, 13, 14, 16, 21, 24)},
        "c01": "int",
        "c05": "smallint",
        "c06": "smallint",
        "c07": "int",
        "c08": "bigint",
        "c09": "double",
        "c10": "double",
        "c22": "int",
        "c23": "bigint",
        "c25": "int",
    }
    assert update["before"]["c11"] == "a" and update["after"]["c11"] == "aa" and update["after"]["c01"] == "1"
    assert (update["seq"], update["event_time"]) == (Decimal(1668495861000), datetime(2022, 11, 15, 7, 4, 21))
    assert delete["before"]["c11"] == "aa" and delete["after"] is None
    assert delete["seq"] == Decimal(1668496109000)


def test_payload_without_envelope_loads_every_column_as_written(parse_messages):
    (insert,) = parse_messages(source(), lines_of(DEBEZIUM / "oms_payload_only.jsonl"))

    assert insert["reject_reason"] is None and insert["op"] == "INSERT"
    assert {c["type"] for c in insert["columns"]} == {"string"}
    assert insert["after"] | {"c19": None} == {
        **{f"c{n:02d}": value for n, value in [(1, "2"), (2, "12312"), (3, "1241.41000"), (4, "61"), (5, "11")]},
        **{f"c{n:02d}": value for n, value in [(6, "141"), (7, "4241"), (8, "412124124"), (9, "2.11111")]},
        **{f"c{n}": value for n, value in [(10, "2.4212412"), (11, "a"), (12, "b"), (13, "c"), (14, "d")]},
        **{f"c{n}": value for n, value in [(15, "65"), (16, "f"), (17, "67"), (18, "68"), (19, None), (20, "6A")]},
        **{f"c{n}": value for n, value in [(21, "2022-11-15T05:12:11Z"), (22, "19311"), (23, "36060000000")]},
        **{f"c{n}": value for n, value in [(24, "1668489131000"), (25, "2022"), (26, "6B")]},
    }
    assert insert["after"]["c19"] == OMS_HEX_255


def test_real_debezium_message_keeps_every_value_exact(parse_messages):
    (row,) = parse_messages(source(), lines_of(PAIMON / "schema" / "alltype" / "debezium-data-1.txt"))

    assert (row["op"], row["raw_op"], row["reject_reason"]) == ("INSERT", "r", None)  # snapshot read
    assert (row["seq"], row["seq2"], row["event_time"]) == (0, 0, None)  # a snapshot row: ts_ms 0, pos 0
    types, values = {c["name"]: c["type"] for c in row["columns"]}, row["after"]
    expected = {
        "_id": ("int", "1"),
        "pt": ("decimal(2,1)", "1.1"),
        "_bit1": ("boolean", "true"),
        "_tinyint1": ("smallint", "1"),
        "_tinyint_unsigned": ("smallint", "2"),
        "_smallint_unsigned": ("int", "2000"),
        "_mediumint_unsigned": ("int", "200000"),
        "_int_unsigned": ("bigint", "2000000"),
        "_bigint": ("bigint", "10000000000"),
        "_bigint_unsigned": ("decimal(38,0)", "20000000000"),  # Decimal without a precision
        "_serial": ("decimal(38,0)", "40000000000"),
        "_float": ("double", "1.5"),
        "_real": ("double", "1.000001"),
        "_double_precision_unsigned_zerofill": ("double", "3.000333"),
        "_numeric": ("decimal(8,3)", "12345.110"),  # the digits as sent
        "_fixed": ("string", "123456789876543212345678987654321.110"),  # precision 40: beyond Spark's decimals
        "_decimal": ("decimal(8,0)", "11111"),
        "_big_decimal": ("decimal(38,10)", "2222222222222222300000001111.1234567890"),
        "_date": ("date", "2023-03-23"),  # 19439 days
        "_datetime": ("timestamp_ntz", "2023-03-23 14:30:05.000000"),  # Timestamp, ms
        "_datetime3": ("timestamp_ntz", "2023-03-23 14:30:05.123000"),
        "_datetime6": ("timestamp_ntz", "2023-03-23 14:30:05.123456"),  # MicroTimestamp
        "_datetime_p2": ("timestamp_ntz", "2023-03-24 14:30:05.120000"),
        "_timestamp": ("timestamp", "2023-03-23 22:00:10.123456"),  # ZonedTimestamp
        "_timestamp0": ("timestamp", "2023-03-23 07:10:00.000000"),
        "_char": ("string", "Paimon"),
        "_json": ("string", '{"a": "b"}'),
        "_enum": ("string", "value1"),
        "_set": ("string", "a,b"),
        "_year": ("int", "2023"),
        "_time": ("string", "10:13:23.000000"),  # MicroTime 36803000000
    }
    assert {name: (types[name], values[name]) for name in expected} == expected
    binaries = {name: base64.b64decode(values[name]) for name, kind in types.items() if kind == "binary"}
    assert binaries["_bin"] == b"bytes" + bytes(5) and binaries["_varbin"] == b"more bytes"
    assert binaries["_longblob"] == b"LONGBLOB  bytes test data"
    assert binaries["_bit"] == bytes.fromhex("c707000000000000")
    assert binaries["_point"] == bytes.fromhex("0101000000000000000000f03f000000000000f03f")  # WKB of POINT(1 1)
    assert len(types) == len(values) == 78


def test_changes_of_one_second_across_a_binlog_rotation_keep_their_order(spark, tmp_path):
    """MySQL's binlog positions restart in each file: an update of the row at offset 154 of mysql-bin.000004 comes
    after one at offset 1073741000 of mysql-bin.000003, both within one second (MySQL's `ts_ms` has seconds)."""
    config = source_for("debezium_json", tmp_path, primary_keys={"shop.orders": ("id",)})
    row = {"id": 1, "price": 1.0, "name": "a", "sold_at": 1795237800123, "day": 20778, "at": 1, "photo": None}
    lines = [
        debezium("c", None, row, ts_ms=1795237799000, file="mysql-bin.000003", pos=1073740000),
        debezium("u", row, row | {"name": "b"}, file="mysql-bin.000003", pos=1073741000),
        debezium("u", row | {"name": "b"}, row | {"name": "c"}, file="mysql-bin.000004", pos=154),
    ]
    write_export(config, "orders/0.json", lines[::-1])  # in any export order

    run(spark, config)

    assert [r["name"] for r in silver_rows(config, "shop", "orders")] == ["c"]


def test_every_op_and_position(parse_messages):
    row = {
        "id": 1,
        "price": 9.99,
        "name": "a",
        "sold_at": 1795237800123,
        "day": 20778,
        "at": 1000001,
        "photo": "AP8=",
    }
    lines = [
        debezium("r", None, row, ts_ms=0),
        debezium("u", None, row | {"name": "b"}, pos=4711),  # the source logged no before-image
        debezium("u", row, row | {"price": -0.5}, file="mysql-bin.000003", pos=4712),
        debezium("d", row, None),
        debezium("t", None, None),
        json.dumps({"payload": {"op": "m", "ts_ms": 1795237800000, "source": {"db": "shop"}}}),
        json.dumps({"payload": {"op": "HEARTBEAT", "ts_ms": 1795237801000, "source": {}}}),
    ]

    rows = parse_messages(source(), lines)

    assert [(r["kind"], r["op"], r["seq"], r["seq2"]) for r in rows] == [
        ("data", "INSERT", 0, 0),
        ("data", "UPDATE_AFTER", 1795237800000, 4711),
        ("data", "UPDATE", 1795237800000, 3 * 10**10 + 4712),  # mysql-bin.000003's offset 4712
        ("data", "DELETE", 1795237800000, 0),
        ("ddl", "TRUNCATE", 1795237800000, 0),
        ("control", "m", 1795237800000, 0),
        ("heartbeat", "HEARTBEAT", 1795237801000, 0),
    ]
    assert rows[0]["after"] == {
        "id": "1",
        "price": "9.99",
        "name": "a",
        "sold_at": "2026-11-21 05:10:00.123000",
        "day": "2026-11-21",
        "at": "00:00:01.000001",
        "photo": "AP8=",
    }
    assert rows[0]["event_time"] is None and rows[3]["event_time"] == datetime(2026, 11, 21, 5, 10)
    assert rows[2]["before"]["price"] == "9.99" and rows[2]["after"]["price"] == "-0.5"
    assert rows[6]["event_time"] == datetime(2026, 11, 21, 5, 10, 1)
    assert all(r["reject_reason"] is None for r in rows)


def test_decimals_in_the_json_converters_base64_form_are_decoded(parse_messages):
    row = {"id": 1, "name": "a", "sold_at": 0, "day": 0, "at": 0, "photo": None}
    lines = [
        debezium("c", None, row | {"price": "MDk="}),  # unscaled 12345 as two's-complement bytes, scale 2
        debezium("c", None, row | {"price": "/38="}),  # -129
        debezium("c", None, row | {"price": 1234}),  # a JSON number is the number itself
        debezium("c", None, row | {"price": "1234"}),  # a string reading as a number: taken as one (documented)
        debezium("c", None, row | {"price": "B4XuENXaRtkA9DagAAAAAA=="}),  # 10^37: too wide for decimal(10,2)
        debezium("c", None, row | {"price": "9.99"}),  # a string reading as a number: taken as one
    ]

    rows = parse_messages(source(), lines)

    assert [r["reject_reason"] or r["after"]["price"] for r in rows] == [
        "123.45",
        "-1.29",
        "1234",
        "1234",
        "value does not match its declared type in column(s): price",
        "9.99",
    ]


def test_bad_messages_are_quarantined_with_their_reason(parse_messages):
    row = {"id": 1, "price": 9.99, "name": "a", "sold_at": 1795237800123, "day": 20778, "at": 0, "photo": None}
    duplicated = json.loads(debezium("c", None, row))
    duplicated["schema"]["fields"][1]["fields"].append({"field": "id", "type": "int64"})
    lines = [
        "",
        json.dumps({"payload": {"after": row, "source": {"table": "orders", "ts_ms": 1}}}),
        debezium("x", None, row),
        debezium("c", None, row, table=None),
        json.dumps({"payload": {"op": "c", "after": row, "source": {"db": "shop", "table": "orders"}}}),
        debezium("c", None, None),
        debezium("d", None, row),
        debezium("c", None, row | {"id": 2**31, "price": 123456789.123, "day": "soon"}),
        json.dumps(duplicated),
        debezium("c", None, row | {"price": float("nan")}),  # json.dumps writes the NaN token JSON does not have
        json.dumps(
            {"payload": {"op": "c", "after": {"id": 3, "n": float("-inf")}, "source": {"db": "s", "table": "t"}}}
        ),
    ]

    rows = parse_messages(source(), lines)

    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows] == [
        (1, "quarantined", "empty line"),
        (2, "quarantined", "missing payload.op"),
        (3, "quarantined", "unknown payload.op 'x'"),
        (4, "quarantined", "missing payload.source.table"),
        (5, "quarantined", "payload.source.ts_ms and payload.ts_ms are missing or not numbers"),
        (6, "quarantined", "c message without the image it needs"),
        (7, "quarantined", "d message without the image it needs"),
        (8, "quarantined", "value does not match its declared type in column(s): id, price, day"),
        (9, "quarantined", "column(s) declared more than once: id"),
        (10, "quarantined", "malformed JSON: not a JSON object"),
        (11, "quarantined", "malformed JSON: not a JSON object"),
    ]


def test_scenario_lands_in_silver_exactly(spark, tmp_path):
    config = source_for("debezium_json", tmp_path, primary_keys={"shop.orders": ("id",)})
    t0 = 1795237800000  # 2026-11-21 05:10 UTC

    def row(id_: int, price: float, name: str) -> dict:
        return {"id": id_, "price": price, "name": name, "sold_at": t0, "day": 20778, "at": 0, "photo": "AAE="}

    hour5 = [
        debezium("c", None, row(1, 10.5, "ann"), ts_ms=t0),
        debezium("c", None, row(2, 7.0, "bob"), ts_ms=t0 + 1000),
        debezium("u", row(1, 10.5, "ann"), row(1, 12.0, "ann"), ts_ms=t0 + 2000),
        debezium("d", row(2, 7.0, "bob"), None, ts_ms=t0 + 3000),
    ]
    hour6 = [
        debezium("u", row(1, 12.0, "ann"), row(3, 12.0, "ann"), ts_ms=t0 + 3_600_000),  # the key changes
        debezium("c", None, row(2, 8.0, "bob"), ts_ms=t0 + 3_601_000),
    ]

    write_export(config, "dbserver1/0005.json", hour5, H5)
    write_export(config, "dbserver1/0006.json", hour6, H5 + timedelta(hours=1))
    run(spark, config, [H5, H5 + timedelta(hours=1)])

    # sold_at is a Debezium Timestamp (a DATETIME): its wall clock, without zone
    common = {"sold_at": datetime(2026, 11, 21, 5, 10), "day": date(2026, 11, 21), "at": "00:00:00.000000"}
    assert silver_rows(config, "shop", "orders") == [
        {"id": 2, "price": Decimal("8.00"), "name": "bob"} | common | {"photo": b"\x00\x01"},
        {"id": 3, "price": Decimal("12.00"), "name": "ann"} | common | {"photo": b"\x00\x01"},
    ]


def test_odd_schemas_never_fail_the_run(parse_messages):
    row = {"id": 1, "price": 9.99, "name": "a", "sold_at": 0, "day": 0, "at": 0, "photo": None}
    no_row_structs = json.loads(debezium("c", None, row))
    no_row_structs["schema"]["fields"] = [{"field": "op", "type": "string"}]
    nameless = json.loads(debezium("c", None, row))
    nameless["schema"]["fields"][1]["fields"][0]["field"] = None
    bad_decimal = json.loads(debezium("c", None, row))
    bad_decimal["schema"]["fields"][1]["fields"][1]["parameters"] = {"scale": "3", "connect.decimal.precision": "0"}

    rows = parse_messages(source(), [json.dumps(m) for m in (no_row_structs, nameless, bad_decimal)])

    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("data", None),
        ("quarantined", "a column is declared without a name"),
        ("data", None),
    ]
    assert {c["type"] for c in rows[0]["columns"]} == {"string"}  # no row schema: as without the envelope
    assert {c["name"]: c["type"] for c in rows[2]["columns"]}["price"] == "string"


def test_values_beyond_what_their_logical_type_can_hold_are_quarantined_not_a_failed_run(parse_messages):
    # each once overflowed Spark's arithmetic (or padded a decimal to 2^31 digits) and failed the whole hour
    def event(name: str, value: object, **parameters: str) -> str:
        column = {"field": "v", "type": "int64", "name": name} | ({"parameters": parameters} if parameters else {})
        schema = {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": [column]}]}
        origin = {"connector": "mysql", "name": "dbserver1", "ts_ms": 1795237800000, "db": "shop", "table": "t"}
        return json.dumps({"schema": schema, "payload": {"op": "c", "after": {"v": value}, "source": origin}})

    decimal = "org.apache.kafka.connect.data.Decimal"
    lines = [
        event("io.debezium.time.NanoTimestamp", 92233720368547758070000000),
        event("io.debezium.time.NanoTimestamp", 10**37),
        event("io.debezium.time.Time", 2**63 - 1),
        event("io.debezium.time.MicroTime", 2**63),
        event("io.debezium.time.NanoTime", 10**37),
        event(decimal, "AQ==", scale="2147483647", **{"connect.decimal.precision": "2147483647"}),
        event(decimal, "AQ==", scale="2147483646", **{"connect.decimal.precision": "2147483647"}),
        event("io.debezium.time.MicroTime", 3723000001),  # 01:02:03.000001
        event(decimal, "AQ==", scale="2", **{"connect.decimal.precision": "10"}),  # 0.01
    ]

    rows = parse_messages(source(), lines)

    bad = "value does not match its declared type in column(s): v"
    assert [(r["after"]["v"], r["reject_reason"]) for r in rows] == [
        *[(None, bad)] * 7,
        ("01:02:03.000001", None),
        ("0.01", None),
    ]


def test_plain_event_without_schema_envelope_loads_like_the_enveloped_one(parse_messages):
    """JsonConverter with schemas.enable=false writes the event itself: {before, after, source, op, ts_ms}."""
    row = {"id": 7, "price": "12.50", "name": "ü", "sold_at": 1795237800123, "day": 20778, "at": 0, "photo": None}
    enveloped = [debezium("c", None, row), debezium("u", row, row | {"name": "b"}), debezium("d", row, None)]
    plain = [json.dumps(json.loads(line)["payload"]) for line in enveloped]

    plain_rows = parse_messages(source(primary_keys={"shop.orders": ("id",)}), plain)
    enveloped_rows = parse_messages(source(primary_keys={"shop.orders": ("id",)}), enveloped, "e.json")

    def change(r: dict) -> tuple:
        return r["reject_reason"], r["op"], r["db"], r["table"], r["primary_key"], r["seq"], r["seq2"]

    assert [change(r) for r in plain_rows] == [change(r) for r in enveloped_rows]
    assert change(plain_rows[0]) == (None, "INSERT", "shop", "orders", ["id"], Decimal(1795237800000), 0)
    assert (plain_rows[1]["before"], plain_rows[1]["after"]) == (
        {k: None if v is None else str(v) for k, v in row.items()},
        {k: None if v is None else str(v) for k, v in (row | {"name": "b"}).items()},
    )
    assert {c["type"] for c in plain_rows[0]["columns"]} == {"string"}  # nothing declares a type


DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"


def test_decimal_without_precision_keeps_every_digit(parse_messages):
    """A Decimal whose schema gives only a scale: a whole number is decimal(38,0) (BIGINT UNSIGNED, precise mode),
    a fraction may have any number of integer digits (up to DECIMAL(65,30)) and keeps its exact text."""
    widest = Decimal("-" + "9" * 35 + "." + "9" * 30)
    unscaled = -int("9" * 65)  # widest without its point
    fields = [
        {"field": "id", "type": "int64"},
        {
            "field": "big",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "0"},
        },
        {"field": "d", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "30"}},
    ]
    after = {
        "id": 1,
        "big": base64.b64encode((2**64 - 1).to_bytes(9, "big", signed=True)).decode(),
        "d": base64.b64encode(unscaled.to_bytes(28, "big", signed=True)).decode(),
    }
    schema = {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": fields}]}
    payload = {"op": "c", "after": after, "source": {"db": "shop", "table": "t", "ts_ms": 1}, "ts_ms": 1}

    (row,) = parse_messages(source(), [json.dumps({"schema": schema, "payload": payload})])

    assert row["reject_reason"] is None
    assert {c["name"]: c["type"] for c in row["columns"]} == {"id": "bigint", "big": "decimal(38,0)", "d": "string"}
    assert (row["after"]["big"], row["after"]["d"]) == ("18446744073709551615", str(widest))
