"""DataHub TUPLE's common case, read by a JVM function (jvm/src/lakeloader/jvm/DataHubRows.java), against the
Spark SQL parser that reads every other line and stays the reference: on thousands of generated rows, most of them
mutated where a producer or a damaged export could differ (values of every JSON kind, missing, extra, repeated and
reordered fields, every op and flag combination, sequence ids and execute times of every spelling, configured
tables), both give the same rows, column for column, quarantine reasons included."""

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
from format_support import source_for

from lakeloader.land.step import RawFiles
from lakeloader.parse.formats import datahub_tuple
from lakeloader.parse.framing import read_messages

TABLES = {  # table -> columns
    "items": ("id", "name", "qty", "price"),
    "pairs": ("a", "b", "note"),
    "keyless": ("note", "n"),
    "Mixed": ("ID", "_cdc_x", "Note"),
}
KEYS = {"shop.items": ["id"], "shop.pairs": ["a", "b"], "shop.Mixed": ["ID"]}
FLAGS = (("I", "N", "Y"), ("U", "Y", "N"), ("U", "N", "Y"), ("D", "Y", "N"))
BAD_FLAGS = (("I", "Y", "N"), ("U", "Y", "Y"), ("D", "N", "N"), ("X", "N", "Y"), ("i", "N", "Y"), ("U", "y", "N"))
METADATA = datahub_tuple.METADATA

TOKENS = (*common_case_support.TOKENS, '"Y"', '"N"', '"I"')  # and the tokens of this format's fields
TIMES = (
    '"1700000000000"', '"2026-11-21 05:00:00"', '"2026-11-21T05:00:00Z"', '"x"', "-3", "1e3", '" 5"', "null",
    "12345678901234567890", '"12\\n"', "1700000000000.5", '""',
)  # fmt: skip
SEQUENCES = (
    '" 42 "', '"1.5"', '"x"', '""', "18446744073709551616", "null", "-3", "12", '"007"', '"\\t7"',
    "999999999999999999", '"-1000000000000000000"',  # the JVM reader reads 18 digits at most: the edge
)  # fmt: skip


def _message(rng: random.Random, seq: int) -> dict:
    table = rng.choice(list(TABLES))
    image = {name: random_value(rng) for name in TABLES[table]}
    if rng.random() < 0.9:  # the key's columns hold values (a NULL key column is the parser's to reject)
        for name in KEYS.get(f"shop.{table}", []):
            if image[name] is None:
                image[name] = seq
    op, before, after = rng.choice(FLAGS) if rng.random() < 0.9 else rng.choice(BAD_FLAGS)
    metadata = {
        "_sequence_id_": rng.choice([str(10**15 + seq), 10**15 + seq]),
        "_operation_type_": op,
        "_excute_time_": rng.choice([1700000000000 + seq, str(1700000000000 + seq), None]),
        "_source_table_": table,
        "_before_image_": before,
        "_after_image_": after,
    }
    if rng.random() < 0.3:
        return metadata | image
    return image | metadata


def _mutated(rng: random.Random, message: dict) -> dict:
    """The row with one change at a random place: a value replaced by any token, a field dropped, the fields
    reordered, a column added, the sequence id, execute time, table or a flag respelled."""
    columns = [name for name in message if name not in METADATA]
    mutation = rng.randrange(8)
    if mutation == 0 and columns:
        message[rng.choice(columns)] = RAW + rng.choice(TOKENS)
    elif mutation == 1:
        message[rng.choice(METADATA)] = RAW + rng.choice(TOKENS)
    elif mutation == 2:
        message.pop(rng.choice(list(message)))
    elif mutation == 3:
        names = list(message)
        rng.shuffle(names)
        message = {name: message[name] for name in names}
    elif mutation == 4:
        message[rng.choice(["extra", "ID", "id", "_cdc_y", "Id", "_Sequence_Id_"])] = 1
    elif mutation == 5:
        message["_excute_time_"] = RAW + rng.choice(TIMES)
    elif mutation == 6:
        message["_sequence_id_"] = RAW + rng.choice(SEQUENCES)
    else:
        message["_source_table_"] = rng.choice([None, 5, "Items", "unknown", "Mixed", ""])
    return message


def _line(rng: random.Random, message: dict) -> str:
    text = json_line(rng, message, (*TOKENS, *common_case_support.NUMBERS, *TIMES, *SEQUENCES))
    return damaged(rng, text, "_operation_type_", "{")


def _both_ways(spark, tmp_path, lines: list[str], **settings) -> tuple[list[dict], list[dict], int]:
    return parsed_both_ways(
        spark,
        tmp_path,
        lines,
        "datahub_tuple",
        datahub_tuple.parse,
        lambda _lines, source: datahub_tuple.read_common_case(source),
        **({"db": "shop", "primary_keys": KEYS} | settings),
    )


# every family a configured type can have (those the function reads and those it leaves to Spark SQL)
CONFIGURED = {
    "shop.items": {"id": "bigint", "qty": "tinyint", "price": "double", "name": "string"},
    "shop.pairs": {"a": "decimal(10,2)", "b": "date", "note": "boolean"},
    "shop.keyless": {"note": "timestamp", "n": "binary"},
    "shop.Mixed": {"ID": "timestamp_ntz", "Note": "BIGINT", "_cdc_x": "int"},
}
NARROWER = {"shop.items": {"id": "int", "qty": "smallint", "price": "float"}, "shop.keyless": {"n": "tinyint"}}


@pytest.mark.parametrize(
    "settings",
    [{}, {"column_types": CONFIGURED}, {"column_types": NARROWER}],
    ids=["no configured types", "configured types of every family", "narrower integer and float types"],
)
def test_the_jvm_common_case_gives_the_rows_the_spark_sql_parser_gives(spark, tmp_path, settings):
    lines = generated_lines(47, 2500, _message, _mutated, _line)

    with_jvm, spark_sql, taken = _both_ways(spark, tmp_path, lines, **settings)

    assert_same_rows(with_jvm, spark_sql, lines)
    # the comparison means something: the function took many rows (fewer where the configured types are ones it
    # leaves to Spark SQL), and the rest were of every outcome
    assert taken > 100
    reasons = {r["reject_reason"] for r in spark_sql if r["reject_reason"]}
    assert len(reasons) > 8
    loaded_ops = {r["op"] for r in spark_sql if not r["reject_reason"]}
    assert loaded_ops >= {"INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"}


def test_a_plain_row_is_taken_by_the_jvm_function(spark, tmp_path):
    line = (
        '{"id":7,"name":"b","price":12345678901234567890.123456789,"_sequence_id_":"42","_operation_type_":"U",'
        '"_excute_time_":1700000000123,"_source_table_":"items","_before_image_":"N","_after_image_":"Y"}'
    )

    (with_jvm,), (spark_sql,), taken = _both_ways(spark, tmp_path, [line])

    assert taken == 1
    assert with_jvm == spark_sql
    assert with_jvm["after"] == {"id": "7", "name": "b", "price": "12345678901234567890.123456789"}
    assert (with_jvm["op"], with_jvm["seq"], with_jvm["primary_key"]) == ("UPDATE_AFTER", 42, ["id"])
    assert with_jvm["event_time"].isoformat() == "2023-11-14T22:13:20.123000"


def test_csv_lines_are_left_to_the_spark_sql_parser(spark, tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(
        "id,_sequence_id_,_operation_type_,_excute_time_,_source_table_,_before_image_,_after_image_\n"
        "7,42,I,1700000000123,items,N,Y\n",
        encoding="utf-8",
    )
    source = source_for("datahub_tuple", db="shop", primary_keys=KEYS)
    messages = read_messages(spark, RawFiles([f"file://{path}"]), source, "2026-11-21T05")

    rows = [r.asDict(recursive=True) for r in datahub_tuple.parse(messages, source).orderBy("origin_line").collect()]
    taken = messages.where(datahub_tuple.read_common_case(source).isNotNull()).count()

    assert taken == 0
    assert [(r["op"], r["after"], r["reject_reason"]) for r in rows] == [
        ("CSV_HEADER", None, None),
        ("INSERT", {"id": "7"}, None),
    ]
