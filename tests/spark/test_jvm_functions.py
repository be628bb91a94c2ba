"""The project's JVM functions (jvm/src, registered by `lakeloader.spark`) against the regular expressions they
replaced, which stay here as their reference: the same output on many random texts of the characters that
matter, so a change to either side's rules shows up."""

from __future__ import annotations

import random
import re

from pyspark.sql import functions as F

from lakeloader.parse.formats.common import epoch_micros, exact_numbers
from lakeloader.spark import JSON_PROBLEM, JSON_TEXT_PROBLEM, JVM_FUNCTIONS, VALID_UTF8

# The regular expression that quoted the numbers before ExactNumbers did (5-7 times slower). Each match consumes,
# possessively, everything up to the next number (whole string tokens included), then the number, which the
# replacement quotes; \G chains the matches.
_JSON_NUMBER = r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?"
_NO_NUMBER = r'(?:[^"0-9\-]++|-(?![0-9])|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+'
_NEXT_NUMBER = rf"\G({_NO_NUMBER})({_JSON_NUMBER})"
# what JSON text is made of, and what breaks it: escapes, line terminators, characters outside the BMP
_JSON_PIECES = [
    *'"\\-0159.eE+ :,{}[]aN\n',
    "\u2028",
    "\u0085",
    "é",
    "😀",
    "1.10",
    "-0",
    "1E+2",
    "Infinity",
    '\\"',
    "00",
]
# The regular expression that found the control characters JSON forbids unescaped before JsonTextProblem did:
# bytes 0x00-0x1F other than tab, line feed and carriage return (JSON's whitespace)
_CONTROL = "[\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F]"
# The Spark SQL expressions epoch_micros was before EpochMicros (each part cut by its own match of the pattern)
_EPOCH = r"^(-?)([0-9]+)(?:\.([0-9]*))?$"
_EPOCH_PIECES = [*"0123456789", "-", ".", " ", "\n", "e", "+", "1606233662", "9223372036854775807", "٣"]
_TEXT_PIECES = [*(chr(c) for c in range(0x20)), "a", " ", "é", "\u0085", "\u2028", "😀", "\x7f"]


def random_texts(pieces: list[str], seed: int, count: int = 30_000) -> list[str | None]:
    rng = random.Random(seed)
    return [*("".join(rng.choices(pieces, k=rng.randint(0, 40))) for _ in range(count)), None]


def test_every_jvm_function_is_registered_in_the_session(spark):
    registered = {f.name for f in spark.catalog.listFunctions() if f.isTemporary}
    assert set(JVM_FUNCTIONS) <= registered


def test_the_jvm_quoting_equals_the_regular_expression_it_replaced_on_random_text(spark):
    frame = spark.createDataFrame([(t,) for t in random_texts(_JSON_PIECES, 17)], "v string")
    quoted = frame.select(
        "v", exact_numbers(F.col("v")).alias("jvm"), F.regexp_replace("v", _NEXT_NUMBER, '$1"$2"').alias("regex")
    )
    differ = quoted.where(~F.col("jvm").eqNullSafe(F.col("regex"))).limit(5).collect()
    assert differ == []
    assert quoted.where(F.col("jvm") != F.col("v")).count() > 10_000  # most texts hold a number to quote


def test_the_jvm_control_character_equals_the_regular_expression_it_replaced_on_random_text(spark):
    # few pieces per text, so that many texts hold no control character
    texts = [t[:3] if t is not None and i % 2 else t for i, t in enumerate(random_texts(_TEXT_PIECES, 23))]
    frame = spark.createDataFrame([(t,) for t in texts], "v string")
    control = F.hex(F.regexp_extract("v", f"({_CONTROL})", 1))
    regex = F.when(F.col("v").rlike(_CONTROL), F.format_string(f"{CONTROL}%s)", control))
    found = frame.select(
        "v", F.call_function(JSON_TEXT_PROBLEM, F.col("v").cast("binary")).alias("jvm"), regex.alias("regex")
    )
    differ = found.where(~F.col("jvm").eqNullSafe(F.col("regex"))).limit(5).collect()
    assert differ == []
    counts = found.groupBy(F.col("jvm").isNull().alias("none")).count().collect()
    assert all(row["count"] > 1_000 for row in counts) and len(counts) == 2  # both outcomes well represented


CONTROL = "message holds a control character JSON does not allow unescaped (byte 0x"
LONE_SURROGATE = "message holds an escaped UTF-16 surrogate that is not half of a pair: "
_ESCAPE_PIECES = ["a", '"', "\\", "\\\\", "\\n", "\\u0041", "\\ud83d", "\\ude00", "\\uDBFF", "\\uDC00", "\\ud8", "é"]


def lone_surrogate(text: str) -> str | None:
    """The first escape of a UTF-16 surrogate that is not half of a pair, as JSON's grammar reads the escapes: one
    escape after another, a high half (D800-DBFF) paired only by a low half (DC00-DFFF) right after it."""
    escapes = [(m.start(), m.group(1)) for m in re.finditer(r"\\(u[0-9a-fA-F]{4}|.)", text, re.DOTALL)]
    pending = None
    for start, escape in escapes:
        unit = int(escape[1:], 16) if escape.startswith("u") and len(escape) == 5 else None
        if pending is not None:
            paired = unit is not None and 0xDC00 <= unit <= 0xDFFF and start == pending[0] + 6
            if not paired:
                return pending[1]
            pending, unit = None, None
            continue
        if unit is not None and 0xD800 <= unit <= 0xDBFF:
            pending = (start, "\\" + escape)
        elif unit is not None and 0xDC00 <= unit <= 0xDFFF:
            return "\\" + escape
    return None if pending is None else pending[1]


def test_the_jvm_finds_each_lone_surrogate_escape_as_json_reads_escapes_on_random_text(spark):
    texts = random_texts(_ESCAPE_PIECES, 29, 20_000)
    frame = spark.createDataFrame([(t,) for t in texts], "v string")
    found = frame.select("v", F.call_function(JSON_TEXT_PROBLEM, F.col("v").cast("binary")).alias("jvm")).collect()

    lone = [None if r["v"] is None else lone_surrogate(r["v"]) for r in found]
    expected = [None if escape is None else LONE_SURROGATE + escape for escape in lone]
    differ = [(r["v"], r["jvm"], e) for r, e in zip(found, expected, strict=True) if r["jvm"] != e]
    assert differ[:5] == []
    assert 1_000 < sum(e is None for e in expected) < 19_000  # both outcomes well represented


# bytes of valid characters of every length, and every kind of invalid sequence: a lone continuation byte, a lead
# byte cut short or followed by ASCII, overlong forms, UTF-16 surrogates, code points above U+10FFFF, bytes UTF-8
# never uses
_BYTE_PIECES = [
    b"a",
    b"{",
    b"\x00",
    "é".encode(),
    "€".encode(),
    "😀".encode(),
    b"\x80",
    b"\xbf",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xfe",
    b"\xff",
]


def test_the_jvm_utf8_check_equals_sparks_is_valid_utf8_on_random_bytes(spark):
    rng = random.Random(29)
    ascii_only = [bytes(rng.choices(range(0x80), k=rng.randint(0, 60))) for _ in range(2_000)]
    mixed = [b"".join(rng.choices(_BYTE_PIECES, k=rng.randint(0, 6))) for _ in range(20_000)]
    frame = spark.createDataFrame([(b,) for b in [*ascii_only, *mixed, None]], "v binary")
    checked = frame.select(
        F.call_function(VALID_UTF8, "v").alias("jvm"), F.is_valid_utf8(F.col("v").cast("string")).alias("spark")
    )
    assert checked.where(~F.col("jvm").eqNullSafe(F.col("spark"))).limit(5).collect() == []
    counts = {row["jvm"]: row["count"] for row in checked.groupBy("jvm").count().collect()}
    assert counts[None] == 1 and counts[True] > 5_000 and counts[False] > 5_000  # both outcomes well represented


def test_a_repeated_name_is_found_in_any_object_as_json_reads_names_and_text_after_the_value_is_refused(spark):
    twice = "ambiguous JSON: an object holds a name twice: "
    after = "malformed JSON: more text after the message's JSON value"
    texts = {
        '{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}': None,  # one name in different objects
        '{"a":1,"b":2,"a":3}': twice + '"a"',
        '{"x":{"n":1,"m":[1,{"k":1,"k":2}]}}': twice + '"k"',
        '{"caf\\u00e9":1,"café":2}': twice + '"café"',  # escapes decoded, as the JSON reader reads the name
        '{"a":1,"A":2}': None,  # names are case-sensitive
        '{"a":1,"a":2': None,  # no valid JSON: the JSON reader reports it
        '{"a":1,"a":2} trailing': twice + '"a"',  # the first problem found
        '{"a":1} {"b":1,"b":2}': after,  # two messages on one line: the reader would read the first only
        '{"a":1}{"a":2}': after,
        '{"a":1} trailing': after,
        '{"a":1} \t ': None,  # white space after the value
        '[{"a":1,"a":2}]': twice + '"a"',
        '1 {"a":1,"a":2}': after,
        "": None,
    }
    frame = spark.createDataFrame([(t,) for t in texts], "v string")
    found = frame.select("v", F.call_function(JSON_PROBLEM, F.col("v")).alias("problem")).collect()
    assert {r["v"]: r["problem"] for r in found} == texts


def _epoch_micros_expressions(v, fraction_digits: int):
    whole = F.regexp_extract(v, _EPOCH, 2).try_cast("bigint")
    micros = F.try_multiply(whole, F.lit(10**fraction_digits))
    if fraction_digits:
        fraction = F.rpad(F.regexp_extract(v, _EPOCH, 3), fraction_digits, "0").substr(1, fraction_digits)
        micros = F.try_add(micros, fraction.cast("bigint"))
    return F.when(v.rlike(_EPOCH), F.when(F.regexp_extract(v, _EPOCH, 1) == "-", -micros).otherwise(micros))


def test_the_jvm_epoch_micros_equals_the_expressions_it_replaced_on_random_text(spark):
    rng = random.Random(31)
    texts = [*("".join(rng.choices(_EPOCH_PIECES, k=rng.randint(0, 6))) for _ in range(20_000)), None]
    frame = spark.createDataFrame([(t,) for t in texts], "v string")
    for digits in (0, 3, 6):
        both = frame.select(
            epoch_micros(F.col("v"), digits).alias("jvm"), _epoch_micros_expressions(F.col("v"), digits).alias("sql")
        )
        assert both.where(~F.col("jvm").eqNullSafe(F.col("sql"))).limit(5).collect() == []
        outcomes = both.select(
            F.count("jvm").alias("numbers"), F.count_if(F.col("jvm").isNull()).alias("nulls")
        ).first()
        assert outcomes["numbers"] > 3_000 and outcomes["nulls"] > 3_000  # both outcomes well represented
