"""Debezium events (DebeziumFlatten; Debezium JSON with or without the schema envelope), their common case read by a
JVM function (jvm/src/lakeloader/jvm/DebeziumEvents.java), against the Spark SQL parser that reads every other
message and stays the reference: on thousands of generated events, most of them mutated where a producer or a
damaged export could differ (values of every JSON kind, missing, extra, repeated and reordered fields, every op,
times and positions of every spelling, schemas declaring every Kafka Connect type, logical types, reordered, cut
and repeated columns, schema-qualified tables, configured keys and types), both give the same rows, column for
column, quarantine reasons included."""

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

from lakeloader.parse.formats import debezium, debezium_flatten

TABLES = {"items": ("id", "name", "qty", "price"), "pairs": ("a", "b", "note"), "keyless": ("note", "n")}
KEYS = {"shop.items": ["id"], "shop.pairs": ["a", "b"]}
OPS = ("c", "r", "u", "u", "d", "t", "m", "HEARTBEAT", "x", None)

TOKENS = (*common_case_support.TOKENS, '"c"', '"u"')  # and the tokens of this format's fields
TIMES = (
    '"1700000000000"', '" 5"', '"x"', "0", "-3", "1e3", "1700000000000.5", "null", "9223372036854775807", '"\\t7"',
    "999999999999999999",  # the JVM reader reads 18 digits at most: the edge
)  # fmt: skip
POSITIONS = (
    '"12@1700000000"', "42", '"x"', "null", '"007"', "123456789012345678901234567890123", '"999999999999999999@1"',
    '"1000000000000000000"', '"7\\n"',
)  # fmt: skip
SCHEMAS = (
    "null",
    '{"type":"struct","fields":[{"field":"after","type":"struct","fields":[{"field":"id","type":"int64"}]}]}',
    "{}",
    '"x"',
    '{"fields":null}',
    '{"fields":[{"field":"after","fields":[]}]}',
)
# the Kafka Connect types a schema may declare a column with (a logical name refines some)
CONNECT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "double", "string", "boolean", "bytes")
LOGICAL = ("io.debezium.time.Date", "io.debezium.data.Json", "org.apache.kafka.connect.data.Decimal", None)


def _schema(rng: random.Random, event: dict) -> dict:
    """A schema envelope declaring the event's table's columns (as the before and after structs, or one of them),
    mostly with plain types, sometimes reordered, cut, repeated, or with a logical type."""
    table = _dict(event.get("source")).get("table")
    names = list(TABLES.get(table, ("id", "x")) if isinstance(table, str) else ("id",))
    if rng.random() < 0.15:
        rng.shuffle(names)
    if rng.random() < 0.1:
        names = names[:-1] if rng.random() < 0.5 else [*names, names[0]]

    def column(name: str) -> dict:
        declared = {"field": name, "type": rng.choice(("string",) * 12 + CONNECT_TYPES), "optional": True}
        if rng.random() < 0.1:
            declared["name"] = rng.choice(LOGICAL)
            declared["parameters"] = {"scale": "2", "connect.decimal.precision": "10"}
        return declared

    columns = [column(name) for name in names]
    structs = [{"field": side, "type": "struct", "fields": columns} for side in ("before", "after")]
    return {"type": "struct", "fields": rng.choice([structs, structs[:1], structs[1:], structs[::-1]])}


def _event(rng: random.Random, seq: int) -> dict:
    table = rng.choice(list(TABLES))
    op = rng.choice(OPS)

    def image() -> dict:
        values = {name: random_value(rng) for name in TABLES[table]}
        if rng.random() < 0.9:  # the key's columns hold values (a NULL key column is the parser's to reject)
            for name in KEYS.get(f"shop.{table}", []):
                values[name] = values[name] if values[name] is not None else seq
        return values

    before = image() if op in ("u", "d") or rng.random() < 0.05 else None
    after = image() if op in ("c", "r", "u") and rng.random() < 0.95 else None
    source = {
        "version": "2.4",
        "connector": "mysql",
        "name": rng.choice(["server1", "OMS"]),
        "ts_ms": rng.choice([1700000000000 + seq, str(1700000000000 + seq), None]),
        "db": "shop",
        "table": table,
        "pos": rng.choice([seq, f"{seq}@1700000000", None]),
        "file": rng.choice(["mysql-bin.000003", "mysql-bin.000004", "binlog.123456789", "mysql-bin", None]),
    }
    if rng.random() < 0.1:
        source["schema"] = rng.choice([None, "public", "shop", ""])
    return {"op": op, "before": before, "after": after, "source": source, "ts_ms": 1700000000005 + seq}


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _mutated(rng: random.Random, event: dict) -> dict:
    """The event with one change at a random place: a value replaced by any token, a field dropped, an image's
    columns reordered or cut, a column added to an image, the op, times or position respelled."""
    source = _dict(event.get("source"))
    images = [image for image in (_dict(event.get("before")), _dict(event.get("after"))) if image]
    mutation = rng.randrange(8)
    if mutation == 0 and images:
        set_to_token(rng, rng.choice(images), TOKENS)
    elif mutation == 1:
        set_to_token(rng, rng.choice([event, source]), TOKENS)
    elif mutation == 2:
        drop_field(rng, rng.choice([event, source]))
    elif mutation == 3 and images:
        reorder_and_cut(rng, rng.choice(images))
    elif mutation == 4 and images:
        rng.choice(images)[rng.choice(["extra", "ID", "Id", "_cdc_y"])] = 1
    elif mutation == 5:
        source["ts_ms"] = RAW + rng.choice(TIMES)
        event["ts_ms"] = RAW + rng.choice(TIMES)
    elif mutation == 6:
        source["pos"] = RAW + rng.choice(POSITIONS)
    else:
        event["op"] = rng.choice(OPS)
    return event


def _enveloped(rng: random.Random, event: dict) -> dict:
    """Debezium JSON's message: the event alone, or in `payload` beside a schema (null or declaring types), or a
    payload beside top-level fields that it overrides."""
    shape = rng.randrange(8)
    if shape == 0:
        return event
    if shape == 1:
        return {"schema": RAW + "null", "payload": event}
    if shape == 2:
        return {"schema": RAW + rng.choice(SCHEMAS), "payload": event}
    if shape == 3:
        return {"payload": event, "op": "d", "before": None}
    if shape == 4:
        return {"payload": RAW + rng.choice(["null", '"x"', "{}"]), **event}
    return {"schema": _schema(rng, event), "payload": event}


PARSERS = {"debezium_json": (debezium.parse, True), "debezium_flatten": (debezium_flatten.parse, False)}


def _lines(fmt: str, seed: int, count: int) -> list[str]:
    def line(rng: random.Random, event: dict) -> str:
        message = _enveloped(rng, event) if fmt == "debezium_json" else event
        text = json_line(rng, message, (*TOKENS, *common_case_support.NUMBERS, *TIMES, *POSITIONS, *SCHEMAS))
        return damaged(rng, text, "op", '"after":{')

    return generated_lines(seed, count, _event, _mutated, line)


def _both_ways(spark, tmp_path, fmt: str, lines: list[str], **settings):
    parse, envelope = PARSERS[fmt]
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        fmt,
        parse,
        lambda _lines, source: debezium.read_common_case(source, envelope),
        **({"primary_keys": KEYS} | settings),
    )


CONFIGURED = {
    "shop.items": {"id": "bigint", "qty": "tinyint", "price": "double", "name": "string"},
    "shop.pairs": {"a": "decimal(10,2)", "b": "date", "note": "boolean"},
    "shop.keyless": {"note": "timestamp", "n": "smallint"},
}


@pytest.mark.parametrize("fmt", list(PARSERS))
@pytest.mark.parametrize(
    ("settings", "least_taken"),
    [({}, 300), ({"column_types": CONFIGURED}, 15)],
    ids=["no configured types", "configured types of every family"],
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, fmt, settings, least_taken):
    lines = _lines(fmt, 59, 2500)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, fmt, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many messages (few where most configured types are ones it
    # leaves to Spark SQL), and the rest were of every outcome
    assert taken >= least_taken
    reasons = {r["reject_reason"] for r in spark_sql if r["reject_reason"]}
    assert len(reasons) > 8
    assert {r["kind"] for r in spark_sql} >= {"data", "ddl", "heartbeat", "control"}


def test_a_plain_event_is_taken_by_the_jvm_function(spark, tmp_path):
    line = (
        '{"op":"u","before":{"id":7,"name":"a","price":1.10},'
        '"after":{"id":7,"name":"b","price":12345678901234567890.123456789},'
        '"source":{"connector":"mysql","name":"server1","ts_ms":1700000000123,"db":"shop","table":"items",'
        '"pos":"42@1700000000"},"ts_ms":1700000000200}'
    )

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, "debezium_flatten", [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["before"] == {"id": "7", "name": "a", "price": "1.10"}
    assert with_jvm["after"]["price"] == "12345678901234567890.123456789"
    assert (with_jvm["op"], with_jvm["seq"], with_jvm["seq2"], with_jvm["primary_key"]) == (
        "UPDATE",
        1700000000123,
        42,
        ["id"],
    )
