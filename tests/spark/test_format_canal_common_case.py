"""Canal JSON's common case, read by a JVM function (jvm/src/lakeloader/jvm/CanalMessages.java), against the Spark
SQL parser that reads every other message and stays the reference: on thousands of generated messages, most of
them mutated where a producer or a damaged export could differ (values of every JSON kind, declarations whose
values keep their text and ones that convert, several rows, `old` of every shape, missing, extra, repeated and
reordered fields, every type), both give the same rows, column for column, quarantine reasons included."""

from __future__ import annotations

import random

import pytest
from common_case_support import (
    RAW,
    TOKENS,
    damaged,
    drop_field,
    generated_lines,
    json_line,
    parsed_both_ways,
    random_value,
    reorder_and_cut,
    set_to_token,
)

from lakeloader.parse.formats import canal

TABLES = {  # table -> (columns, pkNames)
    "items": (("id", "name", "qty", "price"), ["id"]),
    "pairs": (("a", "b", "note"), ["a", "b"]),
    "keyless": (("note", "n"), []),
}
KEPT_TEXT = ("bigint", "int(11)", "tinyint", "smallint(6)", "bigint unsigned", "float", "double", "varchar(20)", "text")
CONVERTED = ("decimal(10,2)", "datetime", "timestamp", "date", "tinyint(1)", "blob", "bit(1)", "time", "json")
TYPES = ("INSERT", "INIT", "UPDATE", "UPDATE", "DELETE", "ALTER", "QUERY", "insert", "REPLACE", None)
ES = (
    '"1700000000000"', '" 5 "', '"1.5"', '"x"', "-3", "1e3", "null", "99999999999999999999", '"\\t7"',
    "999999999999999999", '"-1000000000000000000"',  # the JVM reader reads 18 digits at most: the edge
)  # fmt: skip


def _value(rng: random.Random, declaration: str) -> object:
    """Mostly a value as Canal writes one of its declared type (text), else any value."""
    if rng.random() < 0.15:
        return random_value(rng)
    if "int" in declaration:
        return str(rng.choice([0, -7, 127, 128, 2**31, 2**63 - 1, 2**64 - 1, rng.randrange(-(10**6), 10**6)]))
    if declaration in ("float", "double"):
        return rng.choice(["0.5", "-2.25", "1e300", "3", "1.10"])
    if declaration.startswith("decimal"):
        return rng.choice(["12.50", "-0.5", "0", "-0", "12345678.99", "123456789.1", "0.001", "1e2", " 7"])
    return rng.choice(["plain", "", "café ☕", "12", "2020-01-01 00:00:00", None])


def _message(rng: random.Random, seq: int) -> dict:
    table = rng.choice(list(TABLES))
    columns, key = TABLES[table]
    kind = rng.choice(TYPES)
    declared = {name: rng.choice(KEPT_TEXT if rng.random() < 0.9 else CONVERTED) for name in columns}

    def row() -> dict:
        values = {name: _value(rng, declaration) for name, declaration in declared.items()}
        for name in key:
            if values[name] is None and rng.random() < 0.9:
                values[name] = str(seq)
        return values

    rows = [row() for _ in range(rng.choice([1, 1, 1, 1, 2]))]
    old = None
    if kind == "UPDATE" or rng.random() < 0.05:
        old = [{name: _value(rng, declared[name]) for name in columns if rng.random() < 0.4} for _ in rows]
    ddl = kind in ("ALTER", "QUERY")
    return {
        "data": None if ddl else rows,
        "old": old,
        "database": "shop",
        "table": table,
        "type": kind,
        "isDdl": rng.choice([ddl, ddl, str(ddl).lower(), str(ddl).upper()]),
        "es": rng.choice([1700000000000 + seq, str(1700000000000 + seq)]),
        "ts": 1700000000300 + seq,
        "id": rng.choice([seq, str(seq), None, "x", " 4 ", "\t4"]),
        "pkNames": key or rng.choice([None, []]),
        "mysqlType": declared,
        "sql": "ALTER TABLE items ADD COLUMN x INT" if ddl else "",
    }


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _mutated(rng: random.Random, message: dict) -> dict:
    """The message with one change at a random place: a value, a declaration or a field replaced by any token, a
    field dropped, a row's columns reordered or cut, a column added to a row or to `old`, the key or `es`
    respelled."""
    rows = [row for row in message.get("data") or [] if isinstance(row, dict)]
    old = [row for row in message.get("old") or [] if isinstance(row, dict)]
    declared = _dict(message.get("mysqlType"))
    mutation = rng.randrange(9)
    if mutation == 0 and rows:
        set_to_token(rng, rng.choice(rows), TOKENS)
    elif mutation == 1 and declared:
        set_to_token(rng, declared, (*TOKENS, '"mystery"', '"bigint"'))
    elif mutation == 2:
        set_to_token(rng, message, TOKENS)
    elif mutation == 3:
        drop_field(rng, rng.choice([message, declared]))
    elif mutation == 4 and rows:
        reorder_and_cut(rng, rng.choice(rows))
    elif mutation == 5:
        rng.choice([*rows, *old, declared])[rng.choice(["extra", "ID", "id", "_cdc_y"])] = "1"
    elif mutation == 6:
        message["pkNames"] = rng.choice([["ID"], ["missing"], ["id", "id"], [], None, ["note"], RAW + '"id"'])
    elif mutation == 7:
        message["es"] = RAW + rng.choice(ES)
    else:
        message["old"] = rng.choice([None, [], [{}], [{"id": "1"}, {"id": "2"}], RAW + '"x"', [None]])
    return message


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, '"mystery"', '"bigint"', '"id"', '"x"', *ES))
    return damaged(rng, text, "type", '"data":[{')


def _both_ways(spark, tmp_path, lines: list[str], **settings) -> tuple[list[dict], list[dict], int]:
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "canal_json",
        canal.parse,
        lambda messages, source: canal.read_common_case(source, canal.sampled_resolutions(messages, source)),
        **settings,
    )


def _in_order(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["origin_line"], r["origin_index"]))


# configured types of every family (those the function reads and those it leaves to Spark SQL)
CONFIGURED = {
    "shop.items": {"id": "bigint", "price": "double", "name": "string"},
    "shop.pairs": {"a": "decimal(10,2)", "b": "date", "note": "boolean"},
    "shop.keyless": {"note": "timestamp", "n": "int"},
}


@pytest.mark.parametrize(
    "settings",
    [{}, {"column_types": CONFIGURED}, {"canal_binary_encoding": "base64"}],
    ids=["no configured types", "configured types of every family", "Base64 binary values"],
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings):
    lines = generated_lines(59, 2500, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    # a message of several rows gives as many (each line at least one)
    assert len(with_jvm) == len(spark_sql) > len(lines)
    differ = [(a, b) for a, b in zip(_in_order(with_jvm), _in_order(spark_sql), strict=True) if a != b]
    assert differ[:3] == []
    # the comparison means something: the function took many messages (fewer where configured types convert, as
    # in two of the three tables), and the rest were of every outcome
    assert taken > (5 if "column_types" in settings else 50)
    assert len({r["reject_reason"] for r in spark_sql if r["reject_reason"]}) > 8
    assert {r["kind"] for r in spark_sql} >= {"data", "ddl"}
    assert max(r["origin_index"] for r in spark_sql) == 1  # messages of two rows, read by Spark SQL


def test_a_plain_message_is_taken_by_the_jvm_function(spark, tmp_path):
    line = (
        '{"data":[{"id":"7","name":"b","qty":"2"}],"old":[{"name":"a"}],"database":"shop","table":"items",'
        '"type":"UPDATE","isDdl":false,"es":1700000000123,"ts":1700000000300,"id":9,"pkNames":["id"],'
        '"mysqlType":{"id":"bigint","name":"varchar(20)","qty":"int(11)"},"sql":""}'
    )

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert (with_jvm["before"], with_jvm["after"]) == (
        {"id": "7", "qty": "2", "name": "a"},
        {"id": "7", "name": "b", "qty": "2"},
    )
    assert (with_jvm["op"], with_jvm["seq"], with_jvm["seq2"], with_jvm["primary_key"]) == (
        "UPDATE",
        1700000000123,
        9,
        ["id"],
    )
    assert [(c["name"], c["type"]) for c in with_jvm["columns"]] == [
        ("id", "bigint"),
        ("name", "string"),
        ("qty", "int"),
    ]
