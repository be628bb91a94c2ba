"""OMS Default JSON's common case, read by a JVM function (jvm/src/lakeloader/jvm/OmsMessages.java), against the
Spark SQL parser that reads every other message and stays the reference: on thousands of generated messages,
most of them mutated where a producer or a damaged export could differ (values of every JSON kind, missing,
extra, repeated and reordered fields, every record type, keys and times of every spelling, configured tables),
both give the same rows, column for column, quarantine reasons included."""

from __future__ import annotations

import random

import pytest
from common_case_support import (
    RAW,
    assert_same_rows,
    damaged,
    drop_field,
    generated_lines,
    json_line,
    parsed_both_ways,
    reorder_and_cut,
    set_to_token,
)

from lakeloader.parse.formats import oms_default, oms_extend

TABLES = {  # table -> (columns, key as record_primary_key sends it)
    "items": (("id", "name", "qty", "price"), "id"),
    "pairs": (("a", "b", "note"), "a\u0001b"),
    "keyless": (("note", "n"), None),
    "Mixed": (("ID", "_cdc_x", "Note"), "ID"),
}
RECORD_TYPES = ("INSERT", "UPDATE", "UPDATE", "DELETE", "HEARTBEAT", "DDL", "insert", "REPLACE", None)

# raw JSON tokens a producer (or damage) may put anywhere: numbers in every spelling, strings that look like
# numbers, structures where scalars belong
TOKENS = (
    "null", "true", "false", "0", "-0", "7", "-12", "1.10", "-0.0", "1E+2", "2.5e-3", "1e400",
    "9223372036854775808", "123456789012345678901234567890123456789012", '""', '" 12"', '"12"', '"abc"',
    '"1700000000.5"', '"1700000000"', '"-5"', '"12\\n"', '"\\t9"', '"\\u0000"', '"café ☕"', '"\\ud834\\udd1e"',
    "[]", "{}", '{"a":1}', "[1,2]",
)  # fmt: skip
NUMBERS = ("1.10", "-0", "12345678901234567890.123456789", "1E+2")
# (the JVM reader reads sequences of up to 18 digits: 18 and 19 digits are the edge)
TIMES = ('"1700000000"', '" 5"', '"x"', '"1e3"', "-3", '"12.5.5"', "null", "1700000000.5", '"-999999999999999999.5"')
CHECKPOINTS = ('"1700000001"', '"2.5"', '"pk:7"', "null", '"-1"', '"1\\n"', '"1000000000000000000"')
SEQUENCES = ('" 42 "', '"1.5"', '"x"', '""', "18446744073709551616", "null", "-3", '"\\t7"', "999999999999999999")


def _value(rng: random.Random) -> object:
    kind = rng.randrange(10)
    if kind == 0:
        return None
    if kind < 4:
        return rng.choice([0, 1, -7, 2**63 - 1, rng.randrange(-(10**12), 10**12)])
    if kind == 4:
        return rng.choice([0.5, -2.25, 1e300])
    if kind == 5:
        return RAW + rng.choice(NUMBERS)
    return rng.choice(["plain", "", "café ☕", 'quote " and \\', "𝄞", "12", "中文", str(rng.random())])


def _message(rng: random.Random, seq: int) -> dict:
    table = rng.choice(list(TABLES))
    columns, key = TABLES[table]
    record_type = rng.choice(RECORD_TYPES)

    def image() -> dict:
        return {name: _value(rng) for name in columns}

    before = image() if record_type in ("UPDATE", "DELETE") or rng.random() < 0.05 else None
    after = image() if record_type in ("INSERT", "UPDATE", "insert", "REPLACE") and rng.random() < 0.95 else None
    if record_type == "DDL":
        after = {"ddl": "ALTER TABLE items ADD COLUMN x INT"}
    if key and rng.random() < 0.9:  # the key's columns hold values (a NULL key column is the parser's to reject)
        for name in key.split("\u0001"):
            for im in (before, after):
                if im is not None and name in im and im[name] is None:
                    im[name] = seq
    metadata = {
        "checkpoint": str(1700000000 + seq),
        "record_primary_key": key,
        "record_primary_value": "x",
        "source_identity": None,
        "dbType": "OB_MYSQL",
        "storeDataSequence": rng.choice([str(1700000000000 + seq), 1700000000000 + seq, None]),
        "table_name": table,
        "db": rng.choice(["tenant.shop", "shop", "shop"]),
        "timestamp": rng.choice([str(1700000000 + seq), str(1700000000 + seq), None, f"{1700000000 + seq}.25"]),
        "uniqueId": "u",
        "transId": "",
        "clusterId": None,
        "ddlType": None,
    }
    return {"prevStruct": before, "postStruct": after, "allMetaData": metadata, "recordType": record_type}


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _mutated(rng: random.Random, message: dict) -> dict:
    """The message with one change at a random place: a value replaced by any token, a field dropped or renamed,
    an image's columns reordered or cut, a column added to an image, the key or the times respelled."""
    meta = _dict(message.get("allMetaData"))
    images = [image for image in (_dict(message.get("prevStruct")), _dict(message.get("postStruct"))) if image]
    mutation = rng.randrange(9)
    if mutation == 0 and images:
        set_to_token(rng, rng.choice(images), TOKENS)
    elif mutation == 1:
        set_to_token(rng, rng.choice([message, meta]), TOKENS)
    elif mutation == 2:
        drop_field(rng, rng.choice([message, meta]))
    elif mutation == 3 and images:
        reorder_and_cut(rng, rng.choice(images))
    elif mutation == 4 and images:
        rng.choice(images)[rng.choice(["extra", "ID", "id", "_cdc_y", "Id"])] = 1
    elif mutation == 5:
        meta["record_primary_key"] = rng.choice(
            ["", "ID", "missing", "id\u0001id", "id\u0001", None, "note", "a\u0001B"]
        )
    elif mutation == 6:
        meta["timestamp"] = RAW + rng.choice(TIMES)
        meta["checkpoint"] = RAW + rng.choice(CHECKPOINTS)
    elif mutation == 7:
        meta["storeDataSequence"] = RAW + rng.choice(SEQUENCES)
    else:
        message["recordType"] = rng.choice(["INSERT", "UPDATE", "DELETE", "HEARTBEAT", "Delete", "ROW"])
    return message


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, *NUMBERS, *TIMES, *CHECKPOINTS, *SEQUENCES))
    return damaged(rng, text, "recordType", '"postStruct":{')


def _both_ways(spark, tmp_path, lines: list[str], **settings) -> tuple[list[dict], list[dict], int]:
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "oms_default",
        oms_default.parse,
        lambda _lines, source: oms_default.read_common_case(source),
        **settings,
    )


# every family a configured type can have (those the function reads and those it leaves to Spark SQL), in
# every table
CONFIGURED = {
    "shop.items": {"id": "bigint", "qty": "tinyint", "price": "double", "name": "string"},
    "tenant.shop.items": {"id": "int", "qty": "smallint", "price": "float"},
    "shop.pairs": {"a": "decimal(10,2)", "b": "date", "note": "boolean"},
    "tenant.shop.keyless": {"note": "timestamp", "n": "binary"},
    "shop.Mixed": {"ID": "timestamp_ntz", "Note": "BIGINT", "_cdc_x": "bigint"},
}


@pytest.mark.parametrize(
    "settings", [{}, {"column_types": CONFIGURED}], ids=["no configured types", "configured types of every family"]
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings):
    lines = generated_lines(43, 2500, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many messages (fewer where the configured types are
    # ones it leaves to Spark SQL, and none naming a column a table cannot store, as Mixed does), and the rest
    # were of every outcome
    assert taken > 150
    reasons = {r["reject_reason"] for r in spark_sql if r["reject_reason"]}
    assert len(reasons) > 8
    assert {r["kind"] for r in spark_sql} >= {"data", "ddl", "heartbeat"}


def test_a_plain_message_is_taken_by_the_jvm_function(spark, tmp_path):
    line = (
        '{"allMetaData":{"db":"shop","table_name":"items","record_primary_key":"id","timestamp":"1700000000"},'
        '"recordType":"UPDATE","prevStruct":{"id":7,"name":"a","price":1.10},'
        '"postStruct":{"id":7,"name":"b","price":12345678901234567890.123456789}}'
    )

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["before"] == {"id": "7", "name": "a", "price": "1.10"}
    assert with_jvm["after"]["price"] == "12345678901234567890.123456789"
    assert (with_jvm["op"], with_jvm["seq"], with_jvm["primary_key"]) == ("UPDATE", 1700000000, ["id"])


# DefaultExtendColumnType: declarations the function reads (their values keep their text), ones it leaves to Spark
# SQL (their values convert), Oracle tenants' meanings, and ones no rule knows
KEPT_TEXT = (
    "INT64",
    "INT",
    "TINYINT",
    "SMALLINT",
    "MEDIUMINT",
    "FLOAT",
    "DOUBLE",
    "VARCHAR(64)",
    "varchar(20)",
    "TEXT",
)
CONVERTED = (
    "BIGINT",
    "DECIMAL(10,2)",
    "DATETIME",
    "TIMESTAMP",
    "DATE",
    "BOOLEAN",
    "BLOB",
    "TIME",
    "NUMBER(10)",
    "mystery",
)
DB_TYPES = ("OB_MYSQL", "OB_MYSQL", "MYSQL", "OB_ORACLE", "oracle", None)
LIGHT_TYPE_SHAPES = ('"INT64"', "null", "{}", '{"schemaType":null}', '{"schemaType":7}', '{"schemaType":"INT","x":1}')


def _extended(rng: random.Random, seq: int) -> dict:
    """A Default message whose images carry `__light_type` (now and then only one of them, or with an entry
    missing or for a column the image lacks), from a tenant of any kind."""
    message = _message(rng, seq)
    message["allMetaData"]["dbType"] = rng.choice(DB_TYPES)
    for image in (message["prevStruct"], message["postStruct"]):
        if isinstance(image, dict) and "ddl" not in image and rng.random() < 0.9:
            declared = {
                name: {"schemaType": rng.choice(KEPT_TEXT if rng.random() < 0.9 else CONVERTED)}
                for name in image
                if rng.random() < 0.9
            }
            if rng.random() < 0.05:
                declared["absent"] = {"schemaType": "INT64"}
            image["__light_type"] = declared
    return message


def _extended_mutated(rng: random.Random, message: dict) -> dict:
    """`_mutated`, or a `__light_type` respelled: an entry of another shape, the field itself a scalar."""
    images = [image for image in (_dict(message.get("prevStruct")), _dict(message.get("postStruct"))) if image]
    declaring = [image for image in images if isinstance(image.get("__light_type"), dict)]
    if not declaring or rng.random() < 0.6:
        return _mutated(rng, message)
    image = rng.choice(declaring)
    if rng.random() < 0.2:
        image["__light_type"] = RAW + rng.choice(TOKENS)
    elif image["__light_type"]:
        image["__light_type"][rng.choice(list(image["__light_type"]))] = RAW + rng.choice(LIGHT_TYPE_SHAPES)
    return message


def _extended_line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, *NUMBERS, *TIMES, *CHECKPOINTS, *SEQUENCES, *LIGHT_TYPE_SHAPES))
    return damaged(rng, text, "recordType", '"postStruct":{')


@pytest.mark.parametrize(
    "settings", [{}, {"column_types": CONFIGURED}], ids=["no configured types", "configured types of every family"]
)
def test_the_jvm_common_case_of_the_extend_column_type_variant_gives_the_rows_the_spark_sql_parser_gives(
    spark, tmp_path, settings
):
    lines = generated_lines(47, 2500, _extended, _extended_mutated, _extended_line)

    with_jvm, spark_sql, taken = parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "oms_default_extend_column_type",
        oms_extend.parse,
        lambda messages, source: oms_extend.read_common_case(source, oms_extend.sampled_resolutions(messages)),
        **settings,
    )

    assert_same_rows(with_jvm, spark_sql, lines)
    # the function took many messages (fewer where the declared or configured types convert their values)
    assert taken > 40
    declared = {c["type"] for r in spark_sql if r["kind"] == "data" and not r["reject_reason"] for c in r["columns"]}
    assert {"bigint", "smallint", "float", "double", "string", "timestamp_ntz"} <= declared
    assert len({r["reject_reason"] for r in spark_sql if r["reject_reason"]}) > 8


def test_a_message_of_the_extend_column_type_variant_is_taken_with_its_declared_types(spark, tmp_path):
    line = (
        '{"allMetaData":{"db":"shop","table_name":"items","record_primary_key":"id","timestamp":"1700000000",'
        '"dbType":"OB_MYSQL"},"recordType":"INSERT","prevStruct":null,"postStruct":{"id":7,"name":"a","qty":3,'
        '"__light_type":{"id":{"schemaType":"INT64"},"name":{"schemaType":"VARCHAR(64)"},'
        '"qty":{"schemaType":"TINYINT"}}}}'
    )

    (with_jvm,), (spark_sql,), taken = parsed_both_ways(
        spark,
        tmp_path,
        [line],
        "oms_default_extend_column_type",
        oms_extend.parse,
        lambda messages, source: oms_extend.read_common_case(source, oms_extend.sampled_resolutions(messages)),
    )

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["after"] == {"id": "7", "name": "a", "qty": "3"}
    assert [(c["name"], c["type"]) for c in with_jvm["columns"]] == [
        ("id", "bigint"),
        ("name", "string"),
        ("qty", "smallint"),
    ]
