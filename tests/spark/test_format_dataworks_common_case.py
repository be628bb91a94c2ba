"""DataWorks JSON's common case, read by a JVM function (jvm/src/lakeloader/jvm/DataWorksMessages.java), against
the Spark SQL parser that reads every other message and stays the reference: on thousands of generated messages,
most of them mutated where a producer or a damaged export could differ (values of every wire type and of none,
missing, extra, repeated and reordered fields, every op, configured types of every family), both give the same
rows, column for column, quarantine reasons included."""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from common_case_support import (
    RAW,
    assert_same_rows,
    damaged,
    drop_field,
    generated_lines,
    json_line,
    parsed_both_ways,
    set_to_token,
)

from lakeloader.parse.formats import dataworks
from tools.cdcgen import dataworks as dw
from tools.cdcgen import wire

EVERY_TYPE = ("LONG", "DOUBLE", "BOOLEAN", "STRING", "DATE", "BYTES", "GEOMETRY")  # and one DataWorks lacks
NAMES = ("id", "price", "ok", "label", "day", "raw", "shape")
TABLE = dw.TableSpec("shop", "every_type", tuple(zip(NAMES, EVERY_TYPE, strict=True)), ("id",))
KEYLESS = dw.TableSpec("shop", "keyless", (("#alibaba_rds_row_id#", "LONG"), ("note", "STRING")), None)
ORACLE = dw.TableSpec("ORCL", "oracle_rows", (("ID", "LONG"), ("rowid", "STRING")), None)
TABLES = (TABLE, KEYLESS, ORACLE, wire.TYPED.spec)
OPS = ("INSERT", "UPDATE_AFTER", "UPDATE_AFTER", "UPDATE_BEFOR", "UPDATE", "DELETE", "MHEARTBEAT", "ALTER", "GTID")

# raw JSON tokens a producer (or damage) may put anywhere: numbers in every spelling, strings that look like
# other types, the boundaries of LONG and of a DATE's milliseconds, structures where scalars belong
TOKENS = (
    "null", "true", "false", "0", "-0", "7", "-12", "1.10", "-0.0", "1E+2", "2.5e-3", "1e400",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "253402300799999", "253402300800000", "1795181823000", "-1000", "123456789012345678901234567890",
    '""', '" 12"', '"12"', '"abc"', '"NaN"', '"Infinity"', '"aGVsbG8="', '"aGVsbG8"', '"a b"', '"2020-01-01"',
    '"true"', '"1e5"', '"\\u0000"', '"café ☕"', '"\\ud834\\udd1e"', "[]", "{}", '{"a":1}', "[1,2]",
)  # fmt: skip
SEQUENCES = (
    "-5", '" 42 "', '"1.5"', '"x"', "18446744073709551616", "null", '"\\t7"', "999999999999999999",
    '"-1000000000000000000"',  # the JVM reader reads 18 digits at most: the edge
)  # fmt: skip
DOUBLES = ("1.10", "-0", "12345678901234567890.123456789")


def _value(rng: random.Random, kind: str) -> object:
    if rng.random() < 0.08:
        return None
    if kind == "LONG":
        return rng.choice([0, 1, -7, 2**63 - 1, -(2**63), rng.randrange(-(10**12), 10**12)])
    if kind == "DOUBLE":
        return rng.choice([0.5, -2.25, 1e300, 3, *(RAW + d for d in DOUBLES)])
    if kind == "BOOLEAN":
        return rng.random() < 0.5
    if kind == "DATE":
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=rng.randrange(0, 253402300799999))
        return rng.choice([moment, 0, 253402300799999])
    if kind == "BYTES":
        return rng.choice([b"", b"\x00\xff", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))])
    return rng.choice(["plain", "", "café ☕", 'quote " and \\', "𝄞", "12", "中文", str(rng.random())])


def _message(rng: random.Random, seq: int) -> dict:
    spec = rng.choice(TABLES)
    op = rng.choice(OPS)

    def image() -> dict:
        return {name: _value(rng, kind) for name, kind in spec.columns}

    before = image() if op in ("UPDATE_AFTER", "UPDATE_BEFOR", "UPDATE", "DELETE") else None
    after = image() if op in ("INSERT", "UPDATE_AFTER", "UPDATE") and rng.random() < 0.9 else None
    if op == "UPDATE" and rng.random() < 0.3:
        before = None
    ddl = "ALTER TABLE every_type ADD COLUMN x INT" if op == "ALTER" else None
    at = datetime(2026, 11, 21, 5, tzinfo=UTC) + timedelta(seconds=seq)
    message = json.loads(dw.message(spec, op, seq, at, before, after, ddl))
    if spec is ORACLE:
        message["schema"]["source"]["dbType"] = "Oracle"
        message["schema"]["source"]["schemaName"] = rng.choice(["HR", "ORCL", None])
    return message


def _mutated(rng: random.Random, message: dict) -> dict:
    """The message with one change at a random place: a value replaced by any token, a field dropped, an image's
    columns reordered or cut, a column added to an image, the declaration's names or types changed."""
    payload, schema = _dict(message.get("payload")), _dict(message.get("schema"))
    images = [_dict(_dict(payload.get(i)).get("dataColumn")) for i in ("before", "after")]
    images = [image for image in images if image]
    mutation = rng.randrange(9)
    if mutation == 0 and images:
        set_to_token(rng, rng.choice(images), TOKENS)
    elif mutation == 1:
        set_to_token(
            rng, rng.choice([payload, schema, _dict(schema.get("source")), _dict(payload.get("timestamp"))]), TOKENS
        )
    elif mutation == 2:
        drop_field(rng, rng.choice([message, payload, schema]))
    elif mutation == 3 and images:
        image = rng.choice(images)
        names = list(image)
        rng.shuffle(names)
        kept = names[: rng.randrange(1, len(names) + 1)]
        image_items = [(n, image[n]) for n in kept]
        image.clear()
        image.update(image_items)
    elif mutation == 4 and images:
        rng.choice(images)[rng.choice(["extra", "ID", "id"])] = 1
    elif mutation == 5 and isinstance(schema.get("dataColumn"), list) and schema["dataColumn"]:
        column = _dict(rng.choice(schema["dataColumn"]))
        column[rng.choice(["name", "type"])] = rng.choice(["LONG", "id", "_cdc_x", "ID", None, "long", "label"])
    elif mutation == 6:
        schema["primaryKey"] = rng.choice([[], ["ID"], ["missing"], ["id", "id"], None, [None]])
    elif mutation == 7:
        payload["op"] = rng.choice(["INSERT", "UPDATE", "DELETE", "insert", "UNKNOWN", "TRUNCATE", "QUERY"])
    else:
        payload["sequenceId"] = RAW + rng.choice(SEQUENCES)
    return message


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, *SEQUENCES, *DOUBLES))
    return damaged(rng, text, "op", '{"dataColumn":{')


def _both_ways(spark, tmp_path, lines: list[str], **settings) -> tuple[list[dict], list[dict], int]:
    return parsed_both_ways(
        spark, tmp_path, lines, "dataworks_json", dataworks.parse, dataworks.read_common_case, **settings
    )


# every family a configured type can have, over columns of every wire type (those the function reads and those it
# leaves to Spark SQL: decimals, dates, timestamps, booleans, binary)
CONFIGURED = {
    "shop.every_type": {"id": "bigint", "price": "double", "label": "string"},  # types the function reads
    "shop.keyless": {"note": "binary", "#alibaba_rds_row_id#": "string"},
    "ORCL.oracle_rows": {"ID": "decimal(20,0)", "rowid": "timestamp_ntz"},
    f"{wire.DB}.{wire.TYPED.name}": {"ratio": "float", "small": "smallint", "price": "decimal(10,2)", "id": "tinyint"}
    | {"day": "date", "flag": "boolean", "instant": "timestamp", "label": "string"},
}


@pytest.mark.parametrize(
    "settings", [{}, {"column_types": CONFIGURED}], ids=["declared types", "configured types of every family"]
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings):
    lines = generated_lines(41, 2500, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many messages (fewer where the configured types are
    # ones it leaves to Spark SQL), and the rest were of every outcome
    assert taken > 90
    reasons = {r["reject_reason"] for r in spark_sql if r["reject_reason"]}
    assert len(reasons) > 10
    assert {r["kind"] for r in spark_sql} >= {"data", "ddl", "heartbeat", "control"}


def test_dates_are_left_to_the_spark_sql_parser_outside_utc(spark, tmp_path):
    rng = random.Random(5)
    lines = [json.dumps(_message(rng, seq)) for seq in range(1, 200)]
    spark.conf.set("spark.sql.session.timeZone", "Asia/Shanghai")
    try:
        with_jvm, spark_sql, _ = _both_ways(spark, tmp_path, lines)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert with_jvm == spark_sql
    days = {r["after"]["day"] for r in spark_sql if r["after"] and r["after"].get("day")}
    assert "1970-01-01 08:00:00.000" in days  # epoch 0 in the session's zone, as the Spark SQL parser renders it


def test_a_plain_message_is_taken_by_the_jvm_function(spark, tmp_path):
    at = datetime(2026, 11, 21, 5, tzinfo=UTC)
    row = {"id": 7, "price": 1.5, "ok": True, "label": "x", "day": at, "raw": b"hi", "shape": "POINT(1 2)"}
    line = dw.insert(TABLE, 12, at, row)[0]

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["after"] == {
        "id": "7",
        "price": "1.5",
        "ok": "true",
        "label": "x",
        "day": "2026-11-21 05:00:00.000",
        "raw": base64.b64encode(b"hi").decode(),
        "shape": "POINT(1 2)",
    }
