"""What the differential tests of the JVM common-case readers share (tests/spark/test_format_*_common_case.py):
generated messages written as JSON lines with raw tokens spliced in, and one batch parsed with and without the
JVM function."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path

from format_support import source_for
from pyspark.sql import Column, DataFrame

from lakeloader.core.config import SourceConfig
from lakeloader.land.step import RawFiles
from lakeloader.parse.framing import read_messages

RAW = "\u0001raw:"  # a string that `json_line` replaces by the raw JSON token after it

# raw JSON tokens a producer (or damage) may put anywhere: numbers in every spelling, strings that look like
# numbers, structures where scalars belong (each test adds its format's own)
TOKENS = (
    "null", "true", "false", "0", "-0", "7", "-12", "1.10", "-0.0", "1E+2", "2.5e-3", "1e400",
    "9223372036854775808", "123456789012345678901234567890123456789012", '""', '" 12"', '"12"', '"abc"',
    '"-5"', '"12\\n"', '"\\t9"', '"\\u0000"', '"café ☕"', '"\\ud834\\udd1e"',
    "[]", "{}", '{"a":1}', "[1,2]",
)  # fmt: skip
# numbers whose text a float would not keep
NUMBERS = ("1.10", "-0", "12345678901234567890.123456789", "1E+2")


def random_value(rng: random.Random) -> object:
    """A column's value as a producer may send it: NULL, integers (at the integer types' bounds too), floats,
    numbers only their text keeps exactly, strings (some of which look like numbers)."""
    kind = rng.randrange(10)
    if kind == 0:
        return None
    if kind < 4:
        return rng.choice([0, 1, -7, 127, 128, 2**31, 2**63 - 1, rng.randrange(-(10**12), 10**12)])
    if kind == 4:
        return rng.choice([0.5, -2.25, 1e300])
    if kind == 5:
        return RAW + rng.choice(NUMBERS)
    return rng.choice(["plain", "", "café ☕", 'quote " and \\', "𝄞", "12", "-3", "中文", str(rng.random())])


def set_to_token(rng: random.Random, place: dict, tokens: Iterable[str]) -> None:
    """One of the place's fields (when it has any) set to a raw token."""
    if place:
        place[rng.choice(list(place))] = RAW + rng.choice(list(tokens))


def drop_field(rng: random.Random, place: dict) -> None:
    """One of the place's fields (when it has any) dropped."""
    if place:
        place.pop(rng.choice(list(place)))


def reorder_and_cut(rng: random.Random, image: dict, least: int = 1) -> None:
    """The image's columns shuffled and cut to a random number of them (at least `least`)."""
    names = list(image)
    rng.shuffle(names)
    kept = [(name, image[name]) for name in names[: rng.randrange(min(least, len(names)), len(names) + 1)]]
    image.clear()
    image.update(kept)


def json_line(rng: random.Random, message: dict, tokens: Iterable[str]) -> str:
    """The message as one JSON line (non-ASCII escaped or not), each string RAW + token replaced by the token."""
    text = json.dumps(message, ensure_ascii=rng.random() < 0.5, separators=(",", ":"))
    for token in tokens:
        text = text.replace(json.dumps(RAW + token, ensure_ascii=False), token).replace(json.dumps(RAW + token), token)
    return text


def generated_lines(
    seed: int,
    count: int,
    message: Callable[[random.Random, int], dict],
    mutated: Callable[[random.Random, dict], dict],
    line: Callable[[random.Random, dict], str],
) -> list[str]:
    """`count` messages, most of them mutated once or twice, as lines."""
    rng = random.Random(seed)
    lines = []
    for seq in range(1, count + 1):
        generated = message(rng, seq)
        for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
            generated = mutated(rng, generated)
        lines.append(line(rng, generated))
    return lines


def damaged(rng: random.Random, text: str, repeated_field: str, image_opening: str) -> str:
    """The line, one time in eight damaged: a field sent twice, cut short, text after the message, a column sent
    twice in an image (`image_opening` is where its columns start), Spark's corrupt-record field named."""
    damage = rng.randrange(40)
    if damage == 0:
        return text.replace(f'"{repeated_field}":', f'"{repeated_field}":"DELETE","{repeated_field}":', 1)
    if damage == 1:
        return text[: rng.randrange(len(text))]
    if damage == 2:
        return " " + text + " x"
    if damage == 3:
        return text.replace(image_opening, image_opening + '"id":1,', 1)
    if damage == 4:
        return text.replace("{", '{"_corrupt_record":"x",', 1)
    return text


Parse = Callable[[DataFrame, SourceConfig, bool], DataFrame]


def parsed_both_ways(
    spark,
    tmp_path: Path,
    lines: list[str],
    fmt: str,
    parse: Parse,
    common_case: Callable[[DataFrame, SourceConfig], Column],
    name: str = "m.json",
    **settings,
) -> tuple[list[dict], list[dict], int]:
    """The parser's rows with and without the JVM function (`parse`'s third argument), and how many messages the
    function took (`common_case`: its column over the batch's lines), the lines written to a file `name` (a path
    under a landed hour's directory)."""
    path = tmp_path / "hour=05" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = source_for(fmt, **settings)
    messages = read_messages(spark, RawFiles([f"file://{path}"]), source, "2026-11-21T05")

    def rows(with_function: bool) -> list[dict]:
        return [
            r.asDict(recursive=True) for r in parse(messages, source, with_function).orderBy("origin_line").collect()
        ]

    taken = messages.where(common_case(messages, source).isNotNull()).count()
    return rows(True), rows(False), taken


def assert_same_rows(with_jvm: list[dict], spark_sql: list[dict], lines: list[str]) -> None:
    """One row per line both ways, equal column for column (the first differences shown)."""
    assert len(with_jvm) == len(spark_sql) == len(lines)
    differ = [(a, b) for a, b in zip(with_jvm, spark_sql, strict=True) if a != b]
    assert differ[:3] == []
