"""DTS Avro: Base64 lines of Avro-encoded DTS records (written here with fastavro against the project's copy of
dts_record.avsc) become exactly the expected canonical rows; every value branch converts to exact canonical
text; bad lines are quarantined with their reasons; changes over two hours land in silver exactly."""

from __future__ import annotations

import base64
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import fastavro
from format_support import run, silver_rows, silver_schema, source_for, write_export

from lakeloader.core.config import SourceConfig
from tools.cdcgen.wire import record_schema

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
T0 = int(H5.timestamp()) + 60  # sourceTimestamp: seconds
NS = "com.alibaba.dts.formats.avro."

# MySQL column type numbers
TINY, LONG, DOUBLE, TIMESTAMP, LONGLONG, DATE, TIME, DATETIME, YEAR, VARCHAR = 1, 3, 5, 7, 8, 10, 11, 12, 13, 15
JSON, DECIMAL, BLOB, VAR_STRING, GEOMETRY = 245, 246, 252, 253, 255


def source(tmp_path=None, **settings) -> SourceConfig:
    return source_for("dts_avro", tmp_path, **settings)


def integer(text: str) -> tuple[str, dict]:
    return (NS + "Integer", {"precision": 11, "value": text})


def chars(data: bytes, charset: str = "utf8mb4") -> tuple[str, dict]:
    return (NS + "Character", {"charset": charset, "value": data})


def text(value: str) -> tuple[str, dict]:
    return chars(value.encode())


def decimal(value: str, precision: int, scale: int) -> tuple[str, dict]:
    return (NS + "Decimal", {"value": value, "precision": precision, "scale": scale})


def date_time(**parts: int) -> tuple[str, dict]:
    names = ("year", "month", "day", "hour", "minute", "second", "millis")
    return (NS + "DateTime", {name: parts.get(name) for name in names})


EMPTY = "NULL"  # the EmptyObject enum


def record(
    operation: str,
    object_name: str | None = "shop.orders",
    fields: list[tuple[str, int]] | None = None,
    before: list | str | None = None,
    after: list | str | None = None,
    record_id: int = 1,
    timestamp: int = T0,
    source_type: str = "MySQL",
    tags: dict[str, str] | None = None,
) -> dict:
    return {
        "version": 1,
        "id": record_id,
        "sourceTimestamp": timestamp,
        "sourcePosition": f"{record_id}@mysql-bin.000001",
        "safeSourcePosition": "",
        "sourceTxid": "0",
        "source": {"sourceType": source_type, "version": "8.0.32"},
        "operation": operation,
        "objectName": object_name,
        "processTimestamps": None,
        "tags": tags or {},
        "fields": [{"name": name, "dataTypeNumber": number} for name, number in fields] if fields else None,
        "beforeImages": before,
        "afterImages": after,
    }


def avro(message: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, record_schema(), message)
    return out.getvalue()


def line(message: dict) -> str:
    return base64.b64encode(avro(message)).decode("ascii")


ORDER_FIELDS = [("id", LONG), ("name", VARCHAR), ("price", DECIMAL)]


def test_insert_update_delete_ddl_heartbeat_and_control_records_become_canonical_rows(parse_messages):
    ddl = "ALTER TABLE orders ADD COLUMN note varchar(20)"
    lines = [
        record("INSERT", fields=ORDER_FIELDS, after=[integer("1"), text("ann"), decimal("9.50", 10, 2)], record_id=11),
        record(
            "UPDATE",
            fields=ORDER_FIELDS,
            before=[integer("1"), text("ann"), decimal("9.50", 10, 2)],
            after=[integer("1"), text("anne"), EMPTY],
            record_id=12,
        ),
        record("DELETE", fields=ORDER_FIELDS, before=[integer("1"), text("anne"), EMPTY], record_id=13),
        record("DDL", before=ddl, after=ddl, record_id=14),
        record("HEARTBEAT", object_name=None, record_id=15),
        record("COMMIT", object_name=None, record_id=16),
        record("INIT", object_name="tenant.shop.orders", fields=[("id", LONG)], after=[integer("2")], record_id=17),
        record("DDL", object_name="shop", after="CREATE TABLE users (id int)", record_id=18),  # names the db only
    ]

    rows = parse_messages(source(), [line(m) for m in lines], "m.avro.b64")

    assert [(r["outcome"], r["kind"], r["op"], r["raw_op"], r["db"], r["table"]) for r in rows] == [
        ("data", "data", "INSERT", "INSERT", "shop", "orders"),
        ("data", "data", "UPDATE", "UPDATE", "shop", "orders"),
        ("data", "data", "DELETE", "DELETE", "shop", "orders"),
        ("ddl", "ddl", "DDL", "DDL", "shop", "orders"),
        ("heartbeat", "heartbeat", "HEARTBEAT", "HEARTBEAT", None, None),
        ("control", "control", "COMMIT", "COMMIT", None, None),
        ("data", "data", "INSERT", "INIT", "tenant.shop", "orders"),
        ("ddl", "ddl", "DDL", "DDL", "shop", None),
    ]
    assert [(r["before"], r["after"]) for r in rows] == [
        (None, {"id": "1", "name": "ann", "price": "9.50"}),
        ({"id": "1", "name": "ann", "price": "9.50"}, {"id": "1", "name": "anne", "price": None}),
        ({"id": "1", "name": "anne", "price": None}, None),
        (None, None),
        (None, None),
        (None, None),
        (None, {"id": "2"}),
        (None, None),
    ]
    assert [r["ddl"] for r in rows] == [None, None, None, ddl, None, None, None, "CREATE TABLE users (id int)"]
    assert [r["seq"] for r in rows] == [Decimal(n) for n in range(11, 19)]
    assert {(r["seq2"], r["event_time"], r["primary_key"], r["reject_reason"]) for r in rows} == {
        (0, datetime(2026, 11, 21, 5, 1), None, None)
    }
    columns = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"}]
    assert rows[0]["columns"] == [*columns, {"name": "price", "type": "decimal(10,2)"}]
    # the delete's NULL price gives no precision: the batch's latest value does
    assert rows[2]["columns"] == [*columns, {"name": "price", "type": "decimal(10,2)"}]
    assert [rows[i]["columns"] for i in (3, 4, 5, 7)] == [None, None, None, None]


def value_record(pairs: list[tuple[str, int, object]], source_type: str = "MySQL") -> str:
    fields = [(name, number) for name, number, _ in pairs]
    return line(record("INSERT", fields=fields, after=[value for _, _, value in pairs], source_type=source_type))


def test_every_value_branch_converts_to_exact_canonical_text(parse_messages):
    wall_clock = date_time(year=2026, month=11, day=21, hour=13, minute=0, second=1, millis=5000)[1]
    mysql = [
        ("tiny", TINY, integer("255")),  # TINYINT UNSIGNED fits: widened to smallint
        ("big", LONGLONG, integer("18446744073709551615")),
        ("utf", VARCHAR, text("héllo ✓")),
        ("latin", VARCHAR, chars(b"caf\xe9 \x80", "latin1")),  # MySQL latin1 is Windows-1252
        ("gbk", VAR_STRING, chars("中文".encode("gbk"), "gbk")),
        ("bin", VAR_STRING, chars(b"\x00\xff", "binary")),
        ("amount", DECIMAL, decimal("-12.345", 10, 3)),
        ("huge", DECIMAL, decimal("1234567890123456789012345678901234567890.5", 41, 1)),
        ("ratio", DOUBLE, (NS + "Float", {"value": 0.1, "precision": 22, "scale": 0})),
        ("created", TIMESTAMP, (NS + "Timestamp", {"timestamp": T0, "millis": 7000})),
        ("updated", DATETIME, date_time(year=2026, month=11, day=21, hour=13, minute=4, second=5, millis=120000)),
        ("day", DATE, date_time(year=2026, month=2, day=28)),
        ("span", TIME, date_time(hour=838, minute=59, second=59)),
        ("yr", YEAR, date_time(year=2026)),
        ("zoned", TIMESTAMP, (NS + "TimestampWithTimeZone", {"value": wall_clock, "timezone": "+08:00"})),
        ("zoned_region", TIMESTAMP, (NS + "TimestampWithTimeZone", {"value": wall_clock, "timezone": "Asia/Shanghai"})),
        ("blob", BLOB, (NS + "BinaryObject", {"type": "BLOB", "value": b"\x01\x02"})),
        ("note", BLOB, (NS + "TextObject", {"type": "TEXT", "value": "long text"})),
        ("doc", JSON, (NS + "TextObject", {"type": "JSON", "value": '{"a": 1}'})),
        ("shape", GEOMETRY, (NS + "BinaryGeometry", {"type": "POINT", "value": b"\x01\x01\x00"})),
        ("shape_text", GEOMETRY, (NS + "TextGeometry", {"type": "POINT", "value": "POINT(1 2)"})),
        ("gone", VARCHAR, EMPTY),
        ("none", LONG, None),
    ]
    postgres = [
        ("n", 20, integer("-9223372036854775809")),
        ("f", 701, (NS + "Float", {"value": 1e300, "precision": 53, "scale": 0})),
        ("ts", 1114, date_time(year=1999, month=12, day=31, hour=23, minute=59, second=59, millis=999000)),
        ("d", 1082, date_time(year=1999, month=12, day=31)),
        ("c", 25, text("x")),
    ]

    mysql_row, postgres_row = parse_messages(source(), [value_record(mysql), value_record(postgres, "PostgreSQL")])

    assert mysql_row["reject_reason"] is None
    assert mysql_row["after"] == {
        "tiny": "255",
        "big": "18446744073709551615",
        "utf": "héllo ✓",
        "latin": "café €",
        "gbk": "中文",
        "bin": "AP8=",
        "amount": "-12.345",
        "huge": "1234567890123456789012345678901234567890.5",
        "ratio": "0.1",
        "created": "2026-11-21 05:01:00.007000",
        "updated": "2026-11-21 13:04:05.120000",
        "day": "2026-02-28",
        "span": "838:59:59",
        "yr": "2026",
        "zoned": "2026-11-21 05:00:01.005000",
        "zoned_region": "2026-11-21 05:00:01.005000",
        "blob": "AQI=",
        "note": "long text",
        "doc": '{"a": 1}',
        "shape": "AQEA",
        "shape_text": "POINT(1 2)",
        "gone": None,
        "none": None,
    }
    assert {c["name"]: c["type"] for c in mysql_row["columns"]} == {
        "tiny": "smallint",
        "big": "decimal(20,0)",
        "utf": "string",
        "latin": "string",
        "gbk": "string",
        "bin": "binary",
        "amount": "decimal(10,3)",
        "huge": "string",
        "ratio": "double",
        "created": "timestamp",
        "updated": "timestamp_ntz",
        "day": "date",
        "span": "string",
        "yr": "int",
        "zoned": "timestamp",
        "zoned_region": "timestamp",
        "blob": "binary",
        "note": "string",
        "doc": "string",
        "shape": "binary",
        "shape_text": "string",
        "gone": "string",
        "none": "bigint",
    }
    # other sources: the type numbers are not MySQL's, the value's branch types the column
    assert postgres_row["reject_reason"] is None
    assert postgres_row["after"] == {
        "n": "-9223372036854775809",
        "f": "1e+300",
        "ts": "1999-12-31 23:59:59.999000",
        "d": "1999-12-31",
        "c": "x",
    }
    assert [c["type"] for c in postgres_row["columns"]] == [
        "decimal(38,0)",
        "double",
        "timestamp_ntz",
        "date",
        "string",
    ]


def test_bad_lines_are_quarantined_with_their_reason_and_good_ones_still_load(parse_messages):
    insert = record("INSERT", fields=[("id", TINY)], after=[integer("1")])
    lines = [
        line(insert),
        "",
        "not Base64!",
        base64.b64encode(avro(insert)[:-2]).decode(),
        base64.b64encode(avro(insert) + b"\x00\x00").decode(),
        base64.b64encode(b"\xff" * 12).decode(),
        line(record("INSERT", fields=[("id", TINY), ("name", VARCHAR)], after=[integer("1")])),
        line(record("UPDATE", fields=[("id", TINY)], before=[integer("1"), integer("2")], after=[integer("1")])),
        line(record("INSERT", object_name=None, fields=[("id", TINY)], after=[integer("1")])),
        line(record("INSERT", object_name="orders", fields=[("id", TINY)], after=[integer("1")])),
        line(record("INSERT", after=[integer("1")])),
        line(record("UPDATE", fields=[("id", TINY)], after=[integer("1")])),
        line(record("INSERT", fields=[("id", TINY)], after=[integer("70000")])),
        line(
            record(
                "INSERT",
                fields=[("at", DATETIME)],
                after=[date_time(year=0, month=0, day=0, hour=0, minute=0, second=0)],
            )
        ),
        line(record("INSERT", fields=[("name", VARCHAR)], after=[chars(b"\xff", "utf8mb4")])),
        line(record("INSERT", fields=[("name", VARCHAR)], after=[chars(b"x", "klingon")])),
    ]

    rows = parse_messages(source(), lines)

    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("data", None),
        ("quarantined", "empty line"),
        ("quarantined", "not Base64"),
        ("quarantined", "not a DTS Avro record: truncated"),
        ("quarantined", "not a DTS Avro record: 2 bytes after the record"),
        ("quarantined", "not a DTS Avro record: invalid int encoding"),  # bytes that are no record
        ("quarantined", "afterImages has 1 value(s) for 2 field(s)"),
        ("quarantined", "beforeImages has 2 value(s) for 1 field(s)"),
        ("quarantined", "missing objectName"),
        ("quarantined", "objectName 'orders' is not db.table"),
        ("quarantined", "data record without fields"),
        ("quarantined", "UPDATE message without the image it needs"),
        ("quarantined", "value does not match its declared type in column(s): id"),
        ("quarantined", "value does not match its declared type in column(s): at"),
        ("quarantined", "Character bytes do not decode in their charset in column(s): name"),
        ("quarantined", "Character bytes do not decode in their charset in column(s): name"),
    ]
    assert [r["origin_line"] for r in rows] == list(range(1, 17))


def test_millis_counts_microseconds_as_the_dts_sdk_reads_it(parse_messages):
    # Alibaba's DTS subscription SDK: UnixTimestamp.setMicro(millis), a DateTime's nanoseconds millis * 1000
    def clock(micros: int | None) -> tuple[str, dict]:
        return date_time(year=2026, month=11, day=21, hour=10, minute=20, second=30, millis=micros)

    values = [
        ("ts", TIMESTAMP, (NS + "Timestamp", {"timestamp": T0, "millis": 654321})),
        ("dt", DATETIME, clock(123)),
        ("dt5", DATETIME, clock(5000)),
        ("t", TIME, date_time(hour=1, minute=2, second=3, millis=5000)),
        ("zoned", TIMESTAMP, (NS + "TimestampWithTimeZone", {"value": clock(123)[1], "timezone": "+08:00"})),
    ]
    beyond = [("dt", DATETIME, clock(1_000_000))]

    row, bad = parse_messages(source(), [value_record(values), value_record(beyond)])

    assert row["after"] == {
        "ts": "2026-11-21 05:01:00.654321",
        "dt": "2026-11-21 10:20:30.000123",
        "dt5": "2026-11-21 10:20:30.005000",
        "t": "01:02:03.005000",
        "zoned": "2026-11-21 02:20:30.000123",
    }
    assert bad["reject_reason"] == "value does not match its declared type in column(s): dt"


def test_a_time_with_negative_parts_is_a_negative_time_as_the_dts_sdk_reads_it(parse_messages):
    """Alibaba's SDK marks a DateTime negative when any part is (DateTime.setHour and the others) and writes '-'
    with the parts' magnitudes: MySQL's TIME '-01:02:03.5' (its range is -838:59:59 to 838:59:59). A date and time
    with a negative part is no value."""
    values = [
        ("t", TIME, date_time(hour=-1, minute=-2, second=-3, millis=-500000)),
        ("t_hour", TIME, date_time(hour=-838, minute=59, second=59)),
        ("t_zero", TIME, date_time(hour=0, minute=0, second=-1)),
    ]
    dated = [("dt", DATETIME, date_time(year=2026, month=11, day=21, hour=-1, minute=2, second=3))]

    row, bad = parse_messages(source(), [value_record(values), value_record(dated)])

    assert row["after"] == {"t": "-01:02:03.500000", "t_hour": "-838:59:59", "t_zero": "-00:00:01"}
    assert bad["reject_reason"] == "value does not match its declared type in column(s): dt"


def test_the_key_is_the_primary_entry_of_the_pk_uk_info_tag_unless_one_is_configured(parse_messages):
    """DTS names a table's keys in the record's tag pk_uk_info (as real records show: {"PRIMARY":["id"]}); its
    unique keys key nothing (their columns may be NULL), and a configured key wins."""
    fields, after = ORDER_FIELDS, [integer("1"), text("ann"), decimal("9.50", 10, 2)]

    def tagged(info: str | None, record_id: int) -> str:
        tags = {"thread_id": "7"} | ({} if info is None else {"pk_uk_info": info})
        return line(record("INSERT", fields=fields, after=after, record_id=record_id, tags=tags))

    infos = ['{"PRIMARY":["id"],"uk_name":["name"]}', '{"PRIMARY":["ID","Name"]}', '{"uk_name":["name"]}', "{}", None]
    lines = [tagged(info, n) for n, info in enumerate(infos, 1)]

    rows = parse_messages(source(), lines, "m.avro.b64")
    configured = parse_messages(source(primary_keys={"shop.orders": ("name",)}), lines[:1], "c.avro.b64")

    assert [r["primary_key"] for r in rows] == [["id"], ["id", "name"], None, None, None]
    assert [r["outcome"] for r in rows] == ["data"] * 5
    assert configured[0]["primary_key"] == ["name"]


def test_changes_over_two_hours_land_in_silver_exactly(spark, tmp_path):
    config = source(tmp_path, primary_keys={"shop.orders": ("id",)})
    h6 = H6
    fields = [*ORDER_FIELDS, ("created", DATETIME), ("tag", VAR_STRING)]

    def row(order_id: int, name: str, price: str | None, minute: int, tag: bytes | None = b"\x00\x01") -> list:
        created = date_time(year=2026, month=11, day=21, hour=5, minute=minute, second=0, millis=250000)
        price_value = decimal(price, 10, 2) if price else EMPTY
        return [integer(str(order_id)), text(name), price_value, created, chars(tag, "binary") if tag else EMPTY]

    def change(operation: str, record_id: int, before=None, after=None) -> str:
        return line(record(operation, fields=fields, before=before, after=after, record_id=record_id))

    write_export(
        config,
        "dts/0000.b64",
        [
            change("INIT", 1, after=row(1, "ann", "9.50", 1)),
            change("INSERT", 2, after=row(2, "bob", "1.00", 2)),
            change("UPDATE", 3, before=row(1, "ann", "9.50", 1), after=row(1, "anne", "10.25", 3)),
            change("INSERT", 4, after=row(4, "dee", None, 5, None)),  # the last change: NULL price and tag
            line(record("COMMIT", object_name=None, record_id=5)),
        ],
        H5,
    )
    write_export(
        config,
        "dts/0001.b64",
        [change("DELETE", 6, before=row(2, "bob", "1.00", 2)), change("INSERT", 7, after=row(3, "cy", "0.05", 4))],
        h6,
    )

    run(spark, config, [h6, H5])  # out of order: the later ids still win
    run(spark, config, [H5, h6])  # and rerunning both changes nothing

    def created(minute: int) -> datetime:  # a DATETIME: the wall clock, without zone
        return datetime(2026, 11, 21, 5, minute, 0, 250000)

    assert silver_rows(config, "shop", "orders") == [
        {"id": 1, "name": "anne", "price": Decimal("10.25"), "created": created(3), "tag": b"\x00\x01"},
        {"id": 3, "name": "cy", "price": Decimal("0.05"), "created": created(4), "tag": b"\x00\x01"},
        {"id": 4, "name": "dee", "price": None, "created": created(5), "tag": None},
    ]
    # the NULLs of the hour's last change do not re-type price and tag: other records' values typed them
    assert silver_schema(config, "shop", "orders") == {
        "id": "int64",
        "name": "string",
        "price": "decimal128(10, 2)",
        "created": "timestamp[us]",
        "tag": "binary",
    }


def test_columns_an_hour_of_nulls_left_untyped_take_the_type_of_the_first_values(spark, tmp_path):
    # DECIMAL's precision and scale and BLOB-or-TEXT travel with values: an hour with only NULLs there makes text
    # columns, which hold no value until a later hour's values type them
    config = source(tmp_path, primary_keys={"shop.orders": ("id",)})
    fields = [("id", LONG), ("amount", DECIMAL), ("data", BLOB)]
    first = record("INSERT", fields=fields, after=[integer("1"), EMPTY, EMPTY], record_id=1)
    then = [integer("2"), decimal("12.3450", 10, 4), (NS + "BinaryObject", {"type": "BLOB", "value": b"\x00\xff"})]
    write_export(config, "dts/0000.b64", [line(first)])
    write_export(config, "dts/0001.b64", [line(record("INSERT", fields=fields, after=then, record_id=2))], H6)

    run(spark, config, [H5, H6])

    assert silver_schema(config, "shop", "orders") == {"id": "int64", "amount": "decimal128(10, 4)", "data": "binary"}
    assert silver_rows(config, "shop", "orders") == [
        {"id": 1, "amount": None, "data": None},
        {"id": 2, "amount": Decimal("12.3450"), "data": b"\x00\xff"},
    ]
