"""SharePlex JSON's common case, read by a JVM function (jvm/src/lakeloader/jvm/SharePlexMessages.java), against
the Spark SQL parser that reads every other message and stays the reference: on thousands of generated messages,
most of them mutated where a producer or a damaged export could differ (values of every JSON kind, missing,
extra, repeated and reordered fields, every op in every spelling, updates with and without `key`, table names,
scn and seq of every spelling, configured keys and types), both give the same rows, column for column, quarantine
reasons included."""

from __future__ import annotations

import random

import common_case_support
import pytest
from common_case_support import (
    RAW,
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

from lakeloader.parse.formats import shareplex

TABLES = {"items": ("id", "name", "qty", "price"), "pairs": ("a", "b", "note"), "keyless": ("note", "n")}
KEYS = {"shop.items": ["id"], "shop.pairs": ["a", "b"]}
# ops in every spelling, one whose upper case is INSERT only outside ASCII (a dotless i)
OPS = ("ins", "upd", "upd", "del", "INSERT", "UPDATE", "DELETE", " Upd ", "UPDATE BEFORE", "UPDATE AFTER", "ddl",
       "TRUNCATE", "x", "\u0131nsert", None)  # fmt: skip

TOKENS = (*common_case_support.TOKENS, '"upd"')  # and the tokens of this format's fields
SCNS = (
    '" 42 "', '"1.5"', '"x"', '""', "18446744073709551616", "null", "-3", "12", '"\\t7"',
    "999999999999999999", '"-1000000000000000000"',  # the JVM reader reads 18 digits at most: the edge
)  # fmt: skip
TABLE_NAMES = ('"shop"', '".items"', '"shop."', '"shop.items.x"', '"shop.items\\n"', '"sh\\nop.items"', "7", "null")


def _message(rng: random.Random, seq: int) -> dict:
    table = rng.choice(list(TABLES))
    columns = TABLES[table]
    op = rng.choice(OPS)

    def image(names: tuple[str, ...]) -> dict:
        values = {name: random_value(rng) for name in names}
        if rng.random() < 0.9:  # the key's columns hold values (a NULL key column is the parser's to reject)
            for name in KEYS.get(f"shop.{table}", []):
                if name in values and values[name] is None:
                    values[name] = seq
        return values

    message: dict = {
        "meta": {
            "op": op,
            "table": f"shop.{table}",
            "scn": rng.choice([str(seq), seq]),
            "seq": rng.choice([1, "2", None]),
            "time": rng.choice(["2026-11-21T05:00:01Z", "2026-11-21 05:00:01", "x", None]),
            "rowid": "AAA",
        }
    }
    is_update = isinstance(op, str) and op.strip().upper() in ("UPD", "UPDATE")
    if is_update:
        changed = tuple(rng.sample(columns, rng.randrange(1, len(columns) + 1)))
        message["data"] = image(changed)
        if rng.random() < 0.85:
            message["key"] = image(columns)
    elif rng.random() < 0.97:
        message["data"] = image(columns)
    if op in ("ddl", "TRUNCATE"):
        message["sql"] = {"ddl": "ALTER TABLE items ADD x INT"}
    return message


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _mutated(rng: random.Random, message: dict) -> dict:
    """The message with one change at a random place: a value replaced by any token, a field dropped, an image's
    columns reordered or cut, a column added to an image, the table, scn or seq respelled, a `sql` added."""
    meta = _dict(message.get("meta"))
    images = [image for image in (_dict(message.get("data")), _dict(message.get("key"))) if image]
    mutation = rng.randrange(8)
    if mutation == 0 and images:
        set_to_token(rng, rng.choice(images), TOKENS)
    elif mutation == 1:
        set_to_token(rng, rng.choice([message, meta]), TOKENS)
    elif mutation == 2:
        drop_field(rng, rng.choice([message, meta]))
    elif mutation == 3 and images:
        reorder_and_cut(rng, rng.choice(images), least=0)
    elif mutation == 4 and images:
        rng.choice(images)[rng.choice(["extra", "ID", "Id", "_cdc_y"])] = 1
    elif mutation == 5:
        meta["table"] = RAW + rng.choice(TABLE_NAMES)
    elif mutation == 6:
        meta[rng.choice(["scn", "seq"])] = RAW + rng.choice(SCNS)
    else:
        message["sql"] = rng.choice([None, {}, {"ddl": None}, {"ddl": "x"}])
    return message


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, *common_case_support.NUMBERS, *SCNS, *TABLE_NAMES))
    return damaged(rng, text, "meta", '"data":{')


def _both_ways(spark, tmp_path, lines: list[str], **settings):
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "shareplex_json",
        shareplex.parse,
        lambda _lines, source: shareplex.read_common_case(source),
        **({"primary_keys": KEYS} | settings),
    )


CONFIGURED = {
    "shop.items": {"id": "bigint", "qty": "tinyint", "price": "double", "name": "string"},
    "shop.pairs": {"a": "decimal(10,2)", "b": "date", "note": "boolean"},
    "shop.keyless": {"note": "timestamp", "n": "smallint"},
}


@pytest.mark.parametrize(
    ("settings", "least_taken"),
    [({}, 300), ({"column_types": CONFIGURED}, 30)],
    ids=["no configured types", "configured types of every family"],
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings, least_taken):
    lines = generated_lines(61, 2500, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many messages (fewer where the configured types are ones
    # it leaves to Spark SQL), and the rest were of every outcome
    assert taken >= least_taken
    reasons = {r["reject_reason"] for r in spark_sql if r["reject_reason"]}
    assert len(reasons) > 8
    loaded = {r["op"] for r in spark_sql if not r["reject_reason"]}
    assert loaded >= {"INSERT", "UPDATE", "UPDATE_AFTER", "UPDATE_BEFORE", "DELETE"}


def test_an_update_is_taken_with_its_key_as_before_and_data_laid_over_it(spark, tmp_path):
    line = (
        '{"meta":{"op":"upd","table":"shop.items","scn":"42","seq":1,"time":"2026-11-21T05:00:01Z"},'
        '"data":{"price":12345678901234567890.123456789,"name":"b"},"key":{"id":7,"name":"a","qty":1,"price":1.10}}'
    )

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["before"] == {"id": "7", "name": "a", "qty": "1", "price": "1.10"}
    assert with_jvm["after"] == {"id": "7", "name": "b", "qty": "1", "price": "12345678901234567890.123456789"}
    assert (with_jvm["op"], with_jvm["after_partial"], with_jvm["seq"], with_jvm["seq2"]) == ("UPDATE", True, 42, 1)
