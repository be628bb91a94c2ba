"""DataWorks 2.0 JSON's common case, read by a JVM function (jvm/src/lakeloader/jvm/DataWorks2Messages.java), against
the Spark SQL parser that reads every other message and stays the reference: on thousands of generated messages,
most of them mutated where a producer or a damaged export could differ (values of every JSON kind, declarations
whose values keep their text and ones that convert, Oracle tenants, missing, extra, repeated and reordered fields,
every op and version), both give the same rows, column for column, quarantine reasons included."""

from __future__ import annotations

import random

import pytest
from common_case_support import (
    RAW,
    TOKENS,
    assert_same_rows,
    damaged,
    drop_field,
    generated_lines,
    json_line,
    parsed_both_ways,
    random_value,
    reorder_and_cut,
    set_to_token,
)

from lakeloader.parse.formats import dataworks_v2

TABLES = {  # table -> (columns, primary key)
    "items": (("id", "name", "qty", "price"), ["id"]),
    "pairs": (("a", "b", "note"), ["a", "b"]),
    "keyless": (("note", "n"), []),
}
KEPT_TEXT = ("INT64", "INT", "TINYINT", "SMALLINT", "FLOAT", "DOUBLE", "VARCHAR(64)", "varchar(20)", "TEXT")
CONVERTED = ("BIGINT", "DECIMAL(10,2)", "DATETIME", "TIMESTAMP", "DATE", "BOOLEAN", "BLOB", "TIME", "NUMBER(10)")
OPS = ("INSERT", "UPDATE", "UPDATE", "DELETE", "HEARTBEAT", "ALTER", "TRANSACTION_BEGIN", "insert", "REPLACE", None)
DB_TYPES = ("mysql", "OB_MYSQL", "OB_ORACLE", "oracle", None)
EVENT_TIMES = ('"1700000000000"', '" 5"', '"1.5"', '"x"', "-3", "1e3", "null", "99999999999999999999")
SCNS = (
    '"null"', '"42"', "42", '" 7 "', '"1.5"', "18446744073709551616", "null", '"\\t7"', "999999999999999999",
    '"-1000000000000000000"',  # the JVM reader reads 18 digits at most: the edge
)  # fmt: skip


def _value(rng: random.Random, declaration: str) -> object:
    """Mostly a value of its declared type (integers at their types' bounds too), else any value."""
    if rng.random() < 0.15:
        return random_value(rng)
    if declaration in ("INT64", "INT", "BIGINT"):
        return rng.choice([0, -7, 2**31, 2**63 - 1, rng.randrange(-(10**12), 10**12)])
    if declaration in ("TINYINT", "SMALLINT"):
        return rng.choice([0, 127, 128, -32768, str(rng.randrange(100))])
    if declaration in ("FLOAT", "DOUBLE"):
        return rng.choice([0.5, -2.25, 1e300, 3, RAW + "1.10"])
    return rng.choice(["plain", "", "café ☕", "12", "2020-01-01 00:00:00", None])


def _message(rng: random.Random, seq: int) -> dict:
    table = rng.choice(list(TABLES))
    columns, key = TABLES[table]
    op = rng.choice(OPS)
    declared = [{"name": name, "type": rng.choice(KEPT_TEXT if rng.random() < 0.9 else CONVERTED)} for name in columns]

    def image() -> dict:
        values = {column["name"]: _value(rng, column["type"]) for column in declared}
        for name in key:
            if values[name] is None and rng.random() < 0.9:
                values[name] = seq
        return {"data": values}

    before = image() if op in ("UPDATE", "DELETE") or rng.random() < 0.05 else None
    after = image() if op in ("INSERT", "UPDATE", "insert", "REPLACE") and rng.random() < 0.95 else None
    return {
        "version": rng.choice(["2.0", "2.0", "2.0", "1.0", None]),
        "schema": {
            "source": {"dbType": rng.choice(DB_TYPES), "dbName": "shop", "schema": rng.choice([None, "s"]),
                       "table": table},
            "column": declared,
            "pk": key,
        },
        "payload": {
            "op": op,
            "before": before,
            "after": after,
            "timestamp": {"eventTime": rng.choice([1700000000000 + seq, str(1700000000000 + seq)])},
            "ddl": {"text": "ALTER TABLE items ADD COLUMN x INT"} if op == "ALTER" else None,
            "scn": rng.choice(["null", str(seq), seq]),
        },
    }  # fmt: skip


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _mutated(rng: random.Random, message: dict) -> dict:
    """The message with one change at a random place: a value, a declaration or a field replaced by any token, a
    field dropped, an image's columns reordered or cut, a column added to an image, the key, the times respelled."""
    schema, payload = _dict(message.get("schema")), _dict(message.get("payload"))
    images = [_dict(_dict(payload.get(side)).get("data")) for side in ("before", "after")]
    images = [image for image in images if image]
    declared = [column for column in schema.get("column") or [] if isinstance(column, dict)]
    mutation = rng.randrange(9)
    if mutation == 0 and images:
        set_to_token(rng, rng.choice(images), TOKENS)
    elif mutation == 1 and declared:
        set_to_token(rng, rng.choice(declared), (*TOKENS, '"mystery"', '"INT64"'))
    elif mutation == 2:
        set_to_token(rng, rng.choice([message, schema, payload, _dict(schema.get("source"))]), TOKENS)
    elif mutation == 3:
        drop_field(rng, rng.choice([message, schema, payload, _dict(schema.get("source"))]))
    elif mutation == 4 and images:
        reorder_and_cut(rng, rng.choice(images))
    elif mutation == 5 and images:
        rng.choice(images)[rng.choice(["extra", "ID", "id", "_cdc_y"])] = 1
    elif mutation == 6:
        schema["pk"] = rng.choice([["ID"], ["missing"], ["id", "id"], [], None, ["note"], RAW + '"id"'])
    elif mutation == 7:
        payload["timestamp"] = {"eventTime": RAW + rng.choice(EVENT_TIMES)}
        payload["scn"] = RAW + rng.choice(SCNS)
    else:
        schema["column"] = [*declared, rng.choice([{"name": "id", "type": "INT64"}, {"type": "INT64"}])]
    return message


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, '"mystery"', '"INT64"', '"id"', *EVENT_TIMES, *SCNS))
    return damaged(rng, text, "version", '"data":{')


def _both_ways(spark, tmp_path, lines: list[str], **settings) -> tuple[list[dict], list[dict], int]:
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "dataworks_v2",
        dataworks_v2.parse,
        lambda messages, source: dataworks_v2.read_common_case(source, dataworks_v2.sampled_resolutions(messages)),
        **settings,
    )


# configured types of every family (those the function reads and those it leaves to Spark SQL)
CONFIGURED = {
    "shop.items": {"id": "bigint", "price": "double", "name": "string"},
    "shop.pairs": {"a": "decimal(10,2)", "b": "date", "note": "boolean"},
    "shop.keyless": {"note": "timestamp", "n": "int"},
}


@pytest.mark.parametrize(
    "settings", [{}, {"column_types": CONFIGURED}], ids=["no configured types", "configured types of every family"]
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings):
    lines = generated_lines(53, 2500, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many messages (fewer where configured types convert, as
    # in two of the three tables), and the rest were of every outcome
    assert taken > (15 if settings else 50)
    assert len({r["reject_reason"] for r in spark_sql if r["reject_reason"]}) > 8
    assert {r["kind"] for r in spark_sql} >= {"data", "ddl", "heartbeat", "control"}
    declared = {
        c["type"] for r in spark_sql if r["kind"] == "data" and not r["reject_reason"] for c in r["columns"] or []
    }
    assert {"bigint", "smallint", "float", "double", "string"} <= declared


def test_a_plain_message_is_taken_by_the_jvm_function(spark, tmp_path):
    line = (
        '{"version":"2.0","schema":{"source":{"dbType":"mysql","dbName":"shop","schema":null,"table":"items"},'
        '"column":[{"name":"id","type":"INT64"},{"name":"name","type":"VARCHAR(64)"},{"name":"qty","type":"FLOAT"}],'
        '"pk":["id"]},"payload":{"op":"UPDATE","before":{"data":{"id":7,"name":"a","qty":1.10}},'
        '"after":{"data":{"id":7,"name":"b","qty":2}},"timestamp":{"eventTime":1700000000123},"ddl":null,'
        '"scn":"null"}}'
    )

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["before"] == {"id": "7", "name": "a", "qty": "1.10"}
    assert (with_jvm["op"], with_jvm["seq"], with_jvm["seq2"], with_jvm["primary_key"]) == (
        "UPDATE",
        1700000000123,
        0,
        ["id"],
    )
    assert [(c["name"], c["type"]) for c in with_jvm["columns"]] == [
        ("id", "bigint"),
        ("name", "string"),
        ("qty", "float"),
    ]
