"""DTS Avro's common case, read by a JVM function (jvm/src/lakeloader/jvm/DtsMessages.java), against the Spark SQL
parser that reads every other line and stays the reference: on thousands of generated records, many of them
mutated where a producer or a damaged export could differ (every value branch, type numbers that fit their values
and ones that do not, NULLs that leave a column's type to the batch, charsets, source types, object names, image
sizes, repeated names, every operation), both give the same rows, column for column, quarantine reasons and the
batch's column types included."""

from __future__ import annotations

import base64
import random

import pytest
from common_case_support import generated_lines, parsed_both_ways
from test_format_dts_avro import (
    BLOB,
    DECIMAL,
    DOUBLE,
    LONG,
    LONGLONG,
    NS,
    VARCHAR,
    avro,
    chars,
    decimal,
    integer,
    line,
    record,
    text,
)

from lakeloader.parse.formats import dts_avro

TABLES = {  # objectName -> fields (name, type number)
    "shop.items": [("id", LONGLONG), ("name", VARCHAR), ("price", DECIMAL), ("ratio", DOUBLE), ("tag", BLOB)],
    "shop.pairs": [("a", LONG), ("b", 1), ("note", 252)],
    "ob.tenant.keyless": [("note", 253), ("n", 0), ("g", 255)],
    "shop.events": [("id", LONG), ("day", 10), ("at", 12), ("ts", 7)],
}
NUMBERS = (0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 245, 246, 252, 253, 254, 255)
OPERATIONS = ("INSERT", "INSERT", "INIT", "UPDATE", "UPDATE", "DELETE", "DDL", "HEARTBEAT", "BEGIN")
OBJECT_NAMES = ("shop", ".items", "shop.", "shop..items", "shop.it\nems", "sh\nop.items", "shop.items\n", None)
INTEGER_TEXTS = ("0", "-0", "007", "127", "128", "-32769", "4294967296", "18446744073709551615", " 5", "1.5", "abc")
DECIMAL_TEXTS = ("12.50", "-0.001", "0", "99999999.99", "1e3", ".5", "123456789012345678901234567890.1", "x")


def _value(rng: random.Random, number: int) -> object:
    """Mostly a value of the branch DTS sends for the type number, else any branch (EmptyObject and NULL too)."""
    if rng.random() < 0.04:
        return rng.choice([None, "NULL", "NONE"])
    if rng.random() < 0.05:
        number = rng.choice(NUMBERS)
    if number in (1, 2, 3, 8, 9, 13, 16):
        return integer(str(rng.randrange(-30000, 30000)) if rng.random() < 0.8 else rng.choice(INTEGER_TEXTS))
    if number in (0, 246):
        value = f"{rng.randrange(-(10**6), 10**6)}.{rng.randrange(100):02d}" if rng.random() < 0.6 else None
        return decimal(
            value or rng.choice(DECIMAL_TEXTS),
            *rng.choice([(10, 2)] * 6 + [(10, 0), (0, 0), (40, 2), (65, 30), (12, 30)]),
        )
    if number in (4, 5):
        value = rng.choice([0.5, -2.25, 1e300, 1e-7, -0.0, 0.1 + 0.2, float("nan"), float("inf")])
        return (
            NS + "Float",
            {"value": value if rng.random() < 0.3 else rng.random() * 100, "precision": 22, "scale": 0},
        )
    if number == 7:
        seconds = rng.choice([1_795_000_000, -5, 0, -62_135_596_801, 253_402_300_800])
        return (NS + "Timestamp", {"timestamp": seconds, "millis": rng.choice([0, 5, 999_999, -1, 1_000_000])})
    if number in (10, 11, 12, 14):
        parts = {"year": 2026, "month": 11, "day": 21, "hour": 5, "minute": 6, "second": 7, "millis": 8}
        if number in (10, 14):
            parts |= {"hour": None, "minute": None, "second": None, "millis": None}
        if rng.random() < 0.3:  # a part missing or out of its range
            name = rng.choice(list(parts))
            parts[name] = rng.choice([None, 0, -1, 13, 24, 31, 60, 1000, 999_999, 1_000_000])
        return (NS + "DateTime", parts)
    if number == 255:
        return rng.choice([(NS + "BinaryGeometry", {"type": "POINT", "value": b"\x01\x02"}),
                           (NS + "TextGeometry", {"type": "POINT", "value": "POINT(1 2)"})])  # fmt: skip
    if number == 252 and rng.random() < 0.5:
        return rng.choice([(NS + "BinaryObject", {"type": "BLOB", "value": b"\x00\xff"}),
                           (NS + "TextObject", {"type": "TEXT", "value": "long text"})])  # fmt: skip
    charset = rng.choice(["utf8mb4"] * 6 + ["binary", "BINARY", "gbk", "latin1", "mystery"])
    data = rng.choice(["plain", "", "café ☕", "12", "中文"]).encode(
        "gbk" if charset == "gbk" else "utf-8", errors="replace"
    )
    return chars(data if rng.random() < 0.9 else b"\xff\xfe", charset)


def _record(rng: random.Random, seq: int) -> dict:
    object_name = rng.choice(list(TABLES))
    fields = TABLES[object_name]
    operation = rng.choice(OPERATIONS)
    if operation == "DDL":
        return record("DDL", object_name, after="ALTER TABLE items ADD COLUMN x INT", record_id=seq)
    if operation in ("HEARTBEAT", "BEGIN"):
        return record(operation, None, record_id=seq)

    def image() -> list:
        values = [_value(rng, number) for _, number in fields]
        if fields[0][1] in (LONG, LONGLONG) and rng.random() < 0.9:
            values[0] = integer(str(seq))
        return values

    before = image() if operation in ("UPDATE", "DELETE") or rng.random() < 0.05 else None
    after = image() if operation in ("INSERT", "INIT", "UPDATE") or rng.random() < 0.05 else None
    source_type = rng.choice(["MySQL"] * 6 + ["DRDS", "Oracle", "PostgreSQL"])
    first = fields[0][0]
    info = rng.choice([None] * 6 + [f'{{"PRIMARY":["{first}"]}}'] * 6 + [ f'{{"PRIMARY":["{first.upper()}"]}}',
                       f'{{"PRIMARY":["{first}","missing"]}}', '{"uk":["x"]}', '{"PRIMARY":[]}', '{"PRIMARY":"id"}',
                       "not json"])  # fmt: skip
    tags = {} if info is None else {"pk_uk_info": info}
    return record(operation, object_name, fields, before, after, record_id=seq, source_type=source_type, tags=tags)


def _mutated(rng: random.Random, message: dict) -> dict:
    """The record with one change: a field's type number, a value, an image's size, the object name, a repeated
    field name, an image dropped or a column's values both made NULL (its type is then the batch's)."""
    fields = message.get("fields") or []
    images = [image for image in (message["beforeImages"], message["afterImages"]) if isinstance(image, list)]
    mutation = rng.randrange(7)
    if mutation == 0 and fields:
        rng.choice(fields)["dataTypeNumber"] = rng.choice(NUMBERS)
    elif mutation == 1 and images:
        image = rng.choice(images)
        image[rng.randrange(len(image))] = _value(rng, rng.choice(NUMBERS))
    elif mutation == 2 and images:
        image = rng.choice(images)
        image.pop() if rng.random() < 0.5 else image.append(integer("1"))
    elif mutation == 3:
        message["objectName"] = rng.choice(OBJECT_NAMES)
    elif mutation == 4 and len(fields) > 1:
        fields[1]["name"] = fields[0]["name"]
    elif mutation == 5:
        message[rng.choice(["beforeImages", "afterImages"])] = None
    elif fields:
        i = rng.randrange(len(fields))
        for image in images:
            image[i : i + 1] = [rng.choice([None, "NULL"])] * len(image[i : i + 1])
    return message


def _line(rng: random.Random, message: dict) -> str:
    """The record's Base64 line, one time in thirty damaged: its binary cut short, or no Base64 at all."""
    damage = rng.randrange(60)
    if damage == 0:
        return base64.b64encode(avro(message)[:-1]).decode()
    if damage == 1:
        return "not base64!"
    return line(message)


def _both_ways(spark, tmp_path, lines: list[str], **settings) -> tuple[list[dict], list[dict], int]:
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "dts_avro",
        dts_avro.parse,
        lambda messages, source: dts_avro.read_common_case(messages, source, dts_avro.sampled_resolutions(messages)),
        name="m.avro.b64",
        **settings,
    )


# configured types of every family (those the function reads and those it leaves to Spark SQL), and keys
CONFIGURED = {
    "shop.items": {"id": "bigint", "price": "decimal(12,3)", "name": "string", "tag": "binary"},
    "shop.pairs": {"a": "int", "b": "date", "note": "boolean"},
    "ob.tenant.keyless": {"note": "timestamp", "n": "double"},
}
KEYS = {"shop.items": ["id"], "shop.pairs": ["a", "b"], "ob.tenant.keyless": ["NOTE"]}


@pytest.mark.parametrize(
    "settings",
    [{}, {"column_types": CONFIGURED}, {"primary_keys": KEYS}],
    ids=["no configured types", "configured types of every family", "configured keys"],
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings):
    lines = generated_lines(61, 2500, _record, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert len(with_jvm) == len(spark_sql) == len(lines)
    differ = [(a, b) for a, b in zip(with_jvm, spark_sql, strict=True) if a != b]
    assert differ[:3] == []
    # the comparison means something: the function took many records (fewer where configured types convert or
    # configured keys are spelled otherwise), and the rest were of every outcome
    assert taken > {"column_types": 40, "primary_keys": 200}.get(next(iter(settings), ""), 250)
    assert len({r["reject_reason"] for r in spark_sql if r["reject_reason"]}) > 8
    assert {r["kind"] for r in spark_sql} >= {"data", "ddl", "heartbeat", "control"}


def test_a_column_no_value_types_takes_the_batch_type_from_a_record_the_jvm_function_took(spark, tmp_path):
    fields = [("id", LONG), ("tag", BLOB), ("note", VARCHAR)]
    typed = record("INSERT", "shop.files", fields, after=[integer("1"), chars(b"\x00\x01", "binary"), text("a")])
    untyped = record("UPDATE", "shop.files", fields, before=[integer("2"), None, text("b")],
                     after=[integer("2"), "NULL", text("c")], record_id=2)  # fmt: skip

    (first, second), spark_sql, taken = _both_ways(spark, tmp_path, [line(typed), line(untyped)])

    assert taken == 1  # the record with a NULL in `tag` is the parser's: its type is the batch's
    assert [first, second] == spark_sql
    assert first["after"] == {"id": "1", "tag": "AAE=", "note": "a"}
    assert [(c["name"], c["type"]) for c in second["columns"]] == [
        ("id", "bigint"),
        ("tag", "binary"),
        ("note", "string"),
    ]
    assert (second["op"], second["seq"], second["before"]) == ("UPDATE", 2, {"id": "2", "tag": None, "note": "b"})
