"""DebeziumSmt's common case, read by a JVM function (jvm/src/lakeloader/jvm/DebeziumSmtRows.java), against the
Spark SQL parser that reads every other message and stays the reference: on thousands of generated messages,
most of them mutated where a producer or a damaged export could differ (values of every JSON kind, missing,
extra, repeated and reordered fields, `__deleted` of every spelling, configured keys and types), both give the
same rows, column for column, quarantine reasons included."""

from __future__ import annotations

import random

import common_case_support
import pytest
from common_case_support import (
    RAW,
    assert_same_rows,
    damaged,
    generated_lines,
    json_line,
    parsed_both_ways,
    random_value,
)

from lakeloader.parse.formats import debezium_smt

COLUMNS = ("id", "name", "qty", "price")
TOPIC_FILE = "orders-topic/0/000001.json"
TOPICS = {"topic_tables": {"orders-topic": "shop.orders"}}

TOKENS = (*common_case_support.TOKENS, '"true"', '"false"', '"TRUE"')  # and the tokens of this format's fields


def _message(rng: random.Random, seq: int) -> dict:
    image = {name: random_value(rng) for name in COLUMNS}
    if rng.random() < 0.9:  # the key's columns hold values (a NULL key column is the parser's to reject)
        image["id"] = image["id"] if image["id"] is not None else seq
        image["name"] = image["name"] if image["name"] is not None else f"n{seq}"
    deleted = rng.choice(["false", "false", "true", None, "absent"])
    if deleted == "absent":
        return image
    return image | {"__deleted": deleted} if rng.random() < 0.7 else {"__deleted": deleted} | image


def _mutated(rng: random.Random, message: dict) -> dict:
    """The message with one change at a random place: a value replaced by any token, a field dropped, the fields
    reordered, a column added, every field but `__deleted` dropped."""
    mutation = rng.randrange(6)
    if mutation == 0 and message:
        message[rng.choice(list(message))] = RAW + rng.choice(TOKENS)
    elif mutation == 1 and message:
        message.pop(rng.choice(list(message)))
    elif mutation == 2:
        names = list(message)
        rng.shuffle(names)
        message = {name: message[name] for name in names}
    elif mutation == 3:
        message[rng.choice(["extra", "ID", "Id", "__Deleted", "__op"])] = 1
    elif mutation == 4:
        message["__deleted"] = RAW + rng.choice(TOKENS)
    elif rng.random() < 0.3:
        message = {"__deleted": message.get("__deleted")}
    return message


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, *common_case_support.NUMBERS))
    return damaged(rng, text, "__deleted", "{")


def _both_ways(spark, tmp_path, lines: list[str], name: str = TOPIC_FILE, **settings):
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "debezium_smt",
        debezium_smt.parse,
        debezium_smt.read_common_case,
        name,
        **(TOPICS | settings),
    )


# every family a configured type can have (those the function reads and those it leaves to Spark SQL), and keys
# of one and two columns
CONFIGURED = {"shop.orders": {"id": "bigint", "qty": "tinyint", "price": "double", "name": "string"}}
NARROWER = {"shop.orders": {"id": "int", "qty": "smallint", "price": "float"}}
OTHERS = {"shop.orders": {"id": "decimal(10,2)", "qty": "date", "name": "boolean", "price": "timestamp"}}


@pytest.mark.parametrize(
    ("settings", "least_taken"),
    [
        ({}, 300),
        ({"primary_keys": {"shop.orders": ["id"]}}, 300),
        ({"primary_keys": {"shop.orders": ["id", "name"]}, "column_types": CONFIGURED}, 100),
        ({"primary_keys": {"shop.orders": ["id"]}, "column_types": NARROWER}, 100),
        ({"column_types": OTHERS}, 0),
    ],
    ids=["nothing configured", "a key", "two-column key, types", "narrower types", "types it leaves to Spark SQL"],
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings, least_taken):
    lines = generated_lines(53, 2000, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many messages where it reads the types (fewer where the
    # configured types are ones it leaves to Spark SQL), and the rest were of every outcome
    assert taken >= least_taken
    reasons = {r["reject_reason"] for r in spark_sql if r["reject_reason"]}
    assert len(reasons) > 5
    assert {r["op"] for r in spark_sql if not r["reject_reason"]} >= {"UPDATE_AFTER", "DELETE"}


def test_a_plain_message_is_taken_by_the_jvm_function(spark, tmp_path):
    line = '{"id":7,"name":"b","price":12345678901234567890.123456789,"__deleted":"true"}'

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line], primary_keys={"shop.orders": ["id"]})

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["before"] == {"id": "7", "name": "b", "price": "12345678901234567890.123456789"}
    assert (with_jvm["op"], with_jvm["db"], with_jvm["table"], with_jvm["primary_key"]) == (
        "DELETE",
        "shop",
        "orders",
        ["id"],
    )


def test_a_message_of_a_topic_without_a_table_is_left_to_the_spark_sql_parser(spark, tmp_path):
    line = '{"id":7,"name":"b","__deleted":"false"}'

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line], "users-topic/000001.json")

    assert taken == 0
    assert with_jvm == spark_sql
    assert with_jvm["reject_reason"] == "no table configured for topic 'users-topic' (topic_tables)"
