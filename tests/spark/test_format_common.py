"""Shared format machinery: exact number text, decimal fit, epoch conversion, OMS type resolution; the size of
every format's optimized parse plan."""

from __future__ import annotations

import random
import re
from decimal import Decimal

import pytest
from format_support import source_for, write_export_file
from pyspark.sql import functions as F

from lakeloader.core.config import SUPPORTED_FORMATS
from lakeloader.land.step import RawFiles
from lakeloader.parse.formats import ob_types
from lakeloader.parse.formats.common import (
    checked_cast,
    checked_date,
    checked_decimal,
    configured_converters,
    decimal_fits,
    epoch_micros,
    exact_numbers,
    extracted_int,
    integer_text,
    keep_text,
    with_canonical_images,
    with_configured_types,
)
from lakeloader.parse.framing import read_messages
from lakeloader.parse.step import classify
from tools.cdcgen import wire


def evaluate(spark, expression, *values):
    """The expression over a one-column frame `v` holding `values`, as a list."""
    frame = spark.createDataFrame([(v,) for v in values], "v string")
    return [row[0] for row in frame.select(expression(F.col("v"))).collect()]


def test_numbers_keep_their_exact_text_and_strings_are_untouched(spark):
    line = (
        '{"a": 1.10, "b": -0.5e-3, "c": 10223372036854775806, "d": "x: 1.5, \\"y\\": 2",'
        ' "e": [1, 2.50], "f": {"g": 0.000000000000000000000000000000000000000000123}, "h": true, "i": null}'
    )
    (quoted,) = evaluate(spark, exact_numbers, line)
    assert quoted == (
        '{"a": "1.10", "b": "-0.5e-3", "c": "10223372036854775806", "d": "x: 1.5, \\"y\\": 2",'
        ' "e": ["1", "2.50"], "f": {"g": "0.000000000000000000000000000000000000000000123"}, "h": true, "i": null}'
    )


def test_numbers_after_non_numeric_values_and_negative_zero_keep_their_text(spark):
    # one quoting pass over the whole message: a '-' that starts no number (-Infinity) must not stop it
    line = '{"a": -Infinity, "b": -0, "c": NaN, "d": 1E+2, "e": "-1.5", "f": -0.0}'
    (quoted,) = evaluate(spark, exact_numbers, line)
    assert quoted == '{"a": -Infinity, "b": "-0", "c": NaN, "d": "1E+2", "e": "-1.5", "f": "-0.0"}'


def test_quoting_a_long_message_quotes_every_number(spark):
    line = '{"a": [' + ",".join(['"x\\"y 1.5"', "1.25"] * 50_000) + "]}"
    (quoted,) = evaluate(spark, exact_numbers, line)
    assert quoted == '{"a": [' + ",".join(['"x\\"y 1.5"', '"1.25"'] * 50_000) + "]}"


def test_an_unterminated_string_stays_invalid_json_after_quoting(spark):
    (parsed,) = evaluate(spark, lambda v: F.from_json(exact_numbers(v), "map<string,string>"), '{"a": "x 1.5}')
    assert parsed is None


def test_invalid_json_numbers_stay_invalid_after_quoting(spark):
    # a leading zero is not JSON; quoting must not turn it into a valid string
    (quoted,) = evaluate(spark, exact_numbers, '{"a": 01}')
    assert quoted == '{"a": "0""1"}'


DECIMAL_5_2_FITS = dict(
    [
        ("123.45", True),
        ("-123.45", True),
        ("1234.5", False),  # four integer digits in decimal(5,2)
        ("1.234", False),  # three fraction digits
        ("1.230", True),  # trailing zeros do not count
        ("000123.4", True),  # leading zeros do not count
        ("1.2345E+2", True),  # 123.45
        ("1.2345E+3", False),  # 1234.5
        ("12345E-2", True),  # 123.45
        ("0", True),
        ("0.000", True),
        ("abc", False),
        ("", False),
        ("1.2.3", False),
    ]
)


def test_decimal_fit_counts_significant_digits(spark):
    fits = evaluate(spark, lambda v: decimal_fits(v, F.lit("decimal(5,2)")), *DECIMAL_5_2_FITS)
    assert dict(zip(DECIMAL_5_2_FITS, fits, strict=True)) == DECIMAL_5_2_FITS


def _fits_by_python(text: str, precision: int, scale: int) -> bool:
    """The reference: Python's Decimal reads the text; its significant digits must fit decimal(p,s)."""
    parts = re.fullmatch(r"[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE][+-]?[0-9]{1,6})?", text)
    if parts is None or not (parts[1] or parts[2]):
        return False
    number = Decimal(text)
    if number == 0:
        return True
    _, digits, exponent = number.normalize().as_tuple()
    assert isinstance(exponent, int)
    return max(0, -exponent) <= scale and max(0, len(digits) + exponent) <= precision - scale


def _number_texts(rng: random.Random, n: int) -> list[str]:
    """Number texts as sources write them, and malformed ones: signs, leading and trailing zeros, exponents."""
    texts = []
    for _ in range(n):
        sign = rng.choice(["", "", "-", "+"])
        whole = rng.choice(["", "0", "00"]) + "".join(rng.choices("0123456789", k=rng.randint(0, 8)))
        fraction = rng.choice(["", "."]) + "".join(rng.choices("0123456789", k=rng.randint(0, 6)))
        exponent = rng.choice(["", "", "", f"e{rng.randint(-9, 9)}", f"E+{rng.randint(0, 9)}", "e"])
        text = sign + whole + (fraction if fraction.startswith(".") else "") + exponent
        texts.append(rng.choice([text, text, text, text + "x", "-" + text, text.replace(".", "..")]))
    return texts


def test_decimal_fit_agrees_with_python_decimal_for_generated_texts_and_types(spark):
    rng = random.Random(17)
    types = [(5, 2), (20, 0), (38, 10), (3, 3)]
    rows = [(text, f"decimal({p},{s})") for text in _number_texts(rng, 500) for p, s in types]
    frame = spark.createDataFrame(rows, "v string, t string")
    fits = [row[0] for row in frame.select(decimal_fits(F.col("v"), F.col("t"))).collect()]
    expected = [_fits_by_python(text, *(int(x) for x in spark_type[8:-1].split(","))) for text, spark_type in rows]
    mismatches = [(row, got, want) for row, got, want in zip(rows, fits, expected, strict=True) if got != want]
    assert mismatches == []
    assert 0.2 < sum(expected) / len(expected) < 0.8  # both outcomes are well represented


def test_extracted_int_is_the_groups_number_or_null_where_the_pattern_does_not_match(spark):
    precision = evaluate(
        spark,
        lambda v: extracted_int(v, r"^decimal\((-?[0-9]+),", 1),
        "decimal(20,0)",
        "decimal(-3,",
        "varchar(20)",
        "",
    )
    assert precision == [20, -3, None, None]


def test_epoch_text_becomes_microseconds_truncating_beyond(spark):
    seconds = evaluate(spark, lambda v: epoch_micros(v, 6), "1606233662.012345", "-1.5", "12", "1.1234567", "x", "1e3")
    assert seconds == [1606233662012345, -1500000, 12000000, 1123456, None, None]
    assert evaluate(spark, lambda v: epoch_micros(v, 3), "1590315269000.123456789") == [1590315269000123]


def test_ordering_keys_must_be_whole_numbers(spark):
    assert [str(v) if v is not None else None for v in evaluate(spark, integer_text, "42", "-1", " 7 ", "1.5", "")] == [
        "42",
        "-1",
        "7",
        None,
        None,
    ]


OMS_TYPES = [
    ("TINYINT", False, "smallint", "smallint"),  # OMS names no signedness
    ("int(11) unsigned", False, "bigint", "bigint"),
    ("INT64", False, "bigint", "bigint"),
    ("BIGINT", False, "decimal(20,0)", "decimal"),
    ("DECIMAL", False, "string", "number"),
    ("decimal(10, 2)", False, "decimal(10,2)", "decimal"),
    ("NUMBER(12)", True, "decimal(12,0)", "decimal"),
    ("DECIMAL(65,30)", False, "string", "number"),
    ("FLOAT", False, "float", "float"),
    ("FLOAT", True, "string", "number"),
    ("INTEGER", True, "decimal(38,0)", "decimal"),
    ("DOUBLE", False, "double", "double"),
    ("BOOLEAN", False, "boolean", "boolean"),
    ("varchar(20)", False, "string", None),
    ("VAR_STRING", False, "string", None),
    ("BLOB", False, "binary", "binary"),
    ("bit(1)", False, "binary", "binary"),
    ("DATE", False, "date", "date"),
    ("DATE", True, "timestamp_ntz", "datetime"),
    ("TIMESTAMP", True, "timestamp_ntz", "datetime"),
    ("TIMESTAMP", False, "timestamp", "timestamp"),
    ("TIME", False, "string", "time"),
    ("datetime(6)", False, "timestamp_ntz", "datetime"),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", True, "timestamp", "timestamp"),
    ("ZONED_DATETIME", False, "timestamp", "timestamp"),
    ("INTERVAL_DAY_TO_SECOND", False, "string", None),
    ("GEOMETRY", False, "binary", "binary"),
]


IMAGE_DECLARATION = [("id", "int", "int"), ("price", "decimal", "decimal(5,2)"), ("name", "string", "string")]
IMAGE_CONVERTERS = {"int": checked_cast("int"), "decimal": checked_decimal, "string": keep_text}


@pytest.mark.parametrize(
    ("image", "canonical"),
    [
        ({"id": "1", "price": "1.50", "name": "a"}, {"id": "1", "price": "1.50", "name": "a"}),  # the declared order
        ({"id": "x", "price": "1.5", "name": "b"}, {"id": None, "price": "1.5", "name": "b"}),
        ({"name": "c", "id": "x", "price": "9.99"}, {"name": "c", "id": None, "price": "9.99"}),  # reordered
        ({"price": "1234.5"}, {"price": None}),  # partial: 4 integer digits do not fit decimal(5,2)
        ({"id": "2", "extra": "y"}, {"id": "2", "extra": "y"}),  # an undeclared column keeps its text
        ({"id": "3", "price": "0.1", "extra": "z"}, {"id": "3", "price": "0.1", "extra": "z"}),
        (None, None),
    ],
)
def test_image_values_convert_by_their_declared_column_in_any_order(spark, image, canonical):
    def image_map(entries: dict | None):  # a map in the entries' order (a Python dict's reaches Spark reordered)
        if entries is None:
            return F.lit(None).cast("map<string,string>")
        return F.map_from_arrays(F.array(*map(F.lit, entries)), F.array(*map(F.lit, entries.values())))

    declaration = spark.createDataFrame(
        [(IMAGE_DECLARATION,)], "typed array<struct<name:string,conv:string,type:string>>"
    )
    frame = declaration.select(
        "typed", image_map(image).alias("raw_before"), image_map({"id": "7", "price": "x"}).alias("raw_after")
    )
    images = with_canonical_images(frame, IMAGE_CONVERTERS)
    row = images.select("before", "after", F.map_keys("before").alias("names")).first()
    assert row["before"] == canonical
    assert row["names"] == (image and list(image))  # in the image's order
    assert row["after"] == {"id": "7", "price": None}


def test_only_the_configured_type_families_get_a_converter():
    by_family = {"double": checked_cast("double"), "decimal": checked_decimal, "date": keep_text, "int": keep_text}
    column_types = {"db.t1": {"a": "double", "b": "decimal(10,2)"}, "db.t2": {"c": "decimal(38,0)"}}
    assert configured_converters(by_family, column_types) == {
        "configured double": by_family["double"],
        "configured decimal": checked_decimal,
    }
    assert configured_converters(by_family, {}) == {}


def test_configured_types_retype_only_the_declared_columns_of_their_table_and_keep_the_order(spark):
    column_types = {"db.t1": {"b": "decimal(10,2)", "z": "date", "a": "double"}, "db.t2": {}}
    declared = [("a", "LONG", "bigint"), ("b", None, "string"), ("c", "STRING", "string")]
    frame = spark.createDataFrame(
        [("db", table, declared) for table in ("t1", "t2", "t3")] + [("db", "t1", None)],
        "db string, table string, typed array<struct<name:string,conv:string,type:string>>",
    )

    rows = with_configured_types(frame, column_types).collect()

    assert [r["typed"] and [tuple(c) for c in r["typed"]] for r in rows] == [
        [("a", "configured double", "double"), ("b", "configured decimal", "decimal(10,2)"), ("c", "STRING", "string")],
        declared,  # t2 configures nothing, t3 is not named
        declared,
        None,
    ]
    assert with_configured_types(frame, {"db.t2": {}}) is frame


def test_oms_types_resolve_to_spark_types(spark):
    frame = spark.createDataFrame([(wire, oracle) for wire, oracle, _, _ in OMS_TYPES], "v string, oracle boolean")
    resolved = frame.select(ob_types.resolve(F.col("v"), F.col("oracle")).alias("r")).collect()
    assert [(w, o, r["r"]["type"], r["r"]["conv"]) for (w, o, _, _), r in zip(OMS_TYPES, resolved, strict=True)] == [
        tuple(t) for t in OMS_TYPES
    ]


OMS_TIMESTAMPS = dict(
    [
        ("2020-11-25 00:01:02", "2020-11-25 00:01:02.000000"),
        ("2020-11-25 00:01:02.123456789", "2020-11-25 00:01:02.123456"),  # nanoseconds truncated
        ("2020-11-25 00:01:02.012345 Asia/Shanghai", "2020-11-24 16:01:02.012345"),
        ("2020-11-25T00:01:02", "2020-11-25 00:01:02.000000"),  # OMS before V3.3.0
        ("1606233662.012345", "2020-11-24 16:01:02.012345"),  # epoch seconds (MySQL TIMESTAMP)
        ("1606233662", "2020-11-24 16:01:02.000000"),
        ("1590315269000.123456789", "2020-05-24 10:14:29.000123"),  # epoch milliseconds (DataWorks 2.0)
        ("0000-00-00 00:00:00", None),  # OMS passes invalid times through: not a timestamp
        ("soon", None),
    ]
)


def test_oms_timestamps_become_utc_microsecond_text(spark):
    canonical = evaluate(spark, lambda v: ob_types.CONVERTERS["timestamp"](v, F.lit("timestamp")), *OMS_TIMESTAMPS)
    assert dict(zip(OMS_TIMESTAMPS, canonical, strict=True)) == OMS_TIMESTAMPS


def test_oms_datetimes_keep_their_wall_clock_and_epochs_read_as_utc(spark):
    """timestamp_ntz columns: the digits as written; a zone id does not move them (a DATETIME has none)."""
    expected = OMS_TIMESTAMPS | {"2020-11-25 00:01:02.012345 Asia/Shanghai": "2020-11-25 00:01:02.012345"}
    canonical = evaluate(spark, lambda v: ob_types.CONVERTERS["datetime"](v, F.lit("timestamp_ntz")), *expected)
    assert dict(zip(expected, canonical, strict=True)) == expected


# An optimized parse plan of a few dozen kB is normal; composing Columns that reuse a computed value copies it
# into every use, and DTS Avro's per-column typing once grew to 909 kB this way: 3.5 s to optimize every query,
# and the plans the SQL status store retains ran the tests' 1g driver out of heap.
PLAN_CHARS_LIMIT = 100_000


@pytest.mark.parametrize("fmt", SUPPORTED_FORMATS)
def test_each_formats_parse_plan_stays_small_after_optimization(spark, tmp_path, fmt):
    wire_format = "dataworks_json" if fmt == "auto" else fmt
    change = wire.Change(wire.ITEMS, wire.INSERT, 1, None, {"id": 1, "name": "a", "qty": 1})
    source = source_for(fmt, tmp_path, **wire.settings(wire_format, (wire.ITEMS,)))
    write_export_file(source, "part-0.json", "\n".join(wire.WRITERS[wire_format](change)).encode())
    messages = read_messages(spark, RawFiles([f"file://{tmp_path}/exports/part-0.json"]), source, "2026-11-21T05")
    plan = classify(messages, source)._jdf.queryExecution().optimizedPlan().toString()
    assert len(plan) < PLAN_CHARS_LIMIT


def test_a_date_of_year_0_is_no_date_in_every_converter_reading_date_text(spark):
    # Canal, OMS, DTS, DataHub, DataWorks and Debezium text dates and configured `date` columns share `checked_date`
    values = ["0000-01-01", "0000-00-00", "0001-01-01", "2026-02-30", "9999-12-31"]
    converters = [checked_date, ob_types.CONVERTERS["date"], ob_types.SPARK_TYPED_CONVERTERS["date"]]
    for convert in converters:
        assert evaluate(spark, lambda v, c=convert: c(v, F.lit("date")), *values) == [
            None,
            None,
            "0001-01-01",
            None,
            "9999-12-31",
        ]


def test_a_double_or_float_holds_only_finite_numbers_and_oracle_binary_ones_also_nan_and_infinity(spark):
    # MySQL's DOUBLE and FLOAT (Canal, OMS, DTS, configured `double`/`float`) store no NaN, infinity or number
    # beyond their range; Oracle's BINARY_DOUBLE and BINARY_FLOAT store NaN and +-Infinity
    values = ["1e400", "3.5e38", "NaN", "Infinity", "-Infinity", "1.5", "-2.5e-300", "x"]
    for convert in (ob_types.CONVERTERS["double"], ob_types.SPARK_TYPED_CONVERTERS["double"]):
        kept = evaluate(spark, lambda v, c=convert: c(v, F.lit("double")), *values)
        assert kept == [None, "3.5e38", None, None, None, "1.5", "-2.5e-300", None]
    for convert in (ob_types.CONVERTERS["float"], ob_types.SPARK_TYPED_CONVERTERS["float"]):
        kept = evaluate(spark, lambda v, c=convert: c(v, F.lit("float")), *values)
        assert kept == [None, None, None, None, None, "1.5", "-2.5e-300", None]
    kept = evaluate(spark, lambda v: ob_types.CONVERTERS["ieee_double"](v, F.lit("double")), *values)
    assert kept == [*values[:7], None]
    declared = ["binary_double", "binary_float", "double", "float"]
    convs = evaluate(spark, lambda v: ob_types.resolve(v, F.lit(True))["conv"], *declared)
    assert convs == ["ieee_double", "ieee_float", "double", "number"]  # Oracle's FLOAT is a NUMBER
