"""Machinery every format parser shares: JSON envelopes, op tables, typed images, rejection reasons.

A parser is a function `(lines, source) -> DataFrame` that returns CHANGE_SCHEMA's columns plus
`reject_reason` (NULL for a good message) and `text` (the original line). `lakeloader.parse.step` splits the
result into bronze and quarantine, so every line ends up in exactly one of them.
All of it is Spark SQL expressions: no Python UDFs on the message path.

The shape of a parser: parse the line (`parse_json`), select the *intermediate columns* below from the
message, then `finish` adds the rejection reason and selects the canonical row.

    envelope_error  why the line is no message at all (from parse_json), else NULL
    raw_op, kind, op                       the wire op, its kind (OpTable.kind) and canonical op
    db, schema_name, table, ddl, seq, seq2, event_time, primary_key
    raw_before, raw_after                  the images as sent: map<string,string> of value text
    typed                                  the declared columns: array<struct<name, conv, type>>
    before, after                          the images as canonical text (with_canonical_images)

Column types: a format resolves each declared column to a *converter key* (which function turns the
wire text into canonical text) and a Spark SQL type. Converters get the value and the declared Spark
type, because parametrised types (decimal(p,s)) are only known per message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.parse import canonical as C
from lakeloader.spark import EPOCH_MICROS, EXACT_NUMBERS, JSON_PROBLEM

REJECT_REASON = "reject_reason"
# the export's framing of a message (lakeloader.parse.framing): parsers pass these through untouched
UNWRAP_ERROR, TOMBSTONE, MESSAGE_BYTES = "unwrap_error", "tombstone", "message_bytes"
FRAMING_COLUMNS = (UNWRAP_ERROR, TOMBSTONE, MESSAGE_BYTES)  # message_bytes: a rejected message's bytes as read
CORRUPT = "_corrupt_record"

Converter = Callable[[Column, Column], Column]
"""(value text, declared Spark type) -> canonical text, or NULL when the value does not fit the type."""

STRING_ARRAY = T.ArrayType(T.StringType())
CANONICAL_TIMESTAMP = "yyyy-MM-dd HH:mm:ss.SSSSSS"
BAD_VALUES = "value does not match its declared type in column(s): "

# --------------------------------------------------------------------------------------------------------------
# Reading messages
# --------------------------------------------------------------------------------------------------------------


def exact_numbers(text: Column) -> Column:
    """JSON text with every number token turned into a string token holding the same digits.

    Spark's JSON reader renders a number it reads into a string field through a double when it has a
    fraction or an exponent ("1.10" -> "1.1", "1E+2" -> "100.0", 40-digit fractions rounded) and drops the
    sign of "-0". Quoting the numbers first keeps the text exactly as sent.

    One scan in the JVM (jvm/src/lakeloader/jvm/ExactNumbers.java, registered by lakeloader.spark): string tokens
    are skipped whole, so digits inside strings are never touched. Text that is no valid JSON (an unterminated
    string) stops the quoting there; `from_json` rejects it anyway.
    """
    return F.call_function(EXACT_NUMBERS, text)


def parse_json(lines: DataFrame, schema: T.StructType | T.MapType) -> DataFrame:
    """Adds `j` (the parsed message) and `envelope_error` (why the line is not a JSON object, or NULL).

    Numbers keep their exact text (`exact_numbers`), so every scalar field of `schema` should be a string
    and converted with try_cast where a number is meant: a bad value then rejects the message instead of
    blanking the whole record.

    A message one of whose objects holds a name twice is not parsed (`j` is NULL): JSON leaves its meaning open,
    Spark's reader would keep one of a field's values silently, and an image's map with the name twice would fail
    the job where any expression rebuilds it. Nor is a line with text after its JSON value: the reader would read
    the first of two messages written on one line and lose the second (jvm/src/lakeloader/jvm/JsonProblems.java).
    """
    message = F.col("text")
    lines = lines.withColumn(PROBLEM, F.call_function(JSON_PROBLEM, message))
    text = exact_numbers(F.when(F.col(PROBLEM).isNull(), message))
    if isinstance(schema, T.MapType):
        parsed, corrupt = F.from_json(text, schema, STRICT), F.lit(False)  # type: ignore[arg-type]  # a MapType works
    else:
        with_corrupt = T.StructType([*schema.fields, T.StructField(CORRUPT, T.StringType())])
        parsed = F.from_json(text, with_corrupt, {**STRICT, "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
        corrupt = F.col(f"j.{CORRUPT}").isNotNull()
    return (
        lines.withColumn("j", parsed)
        .withColumn(
            "envelope_error",
            F.when(F.trim(message) == "", F.lit("empty line"))
            .when(F.col(PROBLEM).isNotNull(), F.col(PROBLEM))
            .when(F.col("j").isNull() | corrupt, _why_not_read(text, schema)),
        )
        .drop(PROBLEM)
    )


# JSON as RFC 8259 has it: Spark's reader takes NaN and Infinity tokens (and would keep their text) and strings in
# single quotes by default
STRICT = {"allowNonNumericNumbers": "false", "allowSingleQuotes": "false"}
NOT_AN_OBJECT = "malformed JSON: not a JSON object"
OTHER_STRUCTURE = "malformed message: not the format's structure at: "


def _why_not_read(text: Column, schema: T.StructType | T.MapType) -> Column:
    """Why `from_json` read no message from `text`: no JSON object at all, or (a struct `schema`) an object whose
    named top-level fields hold another kind of JSON value than the format has there (a string for an object, an
    object for an array). Evaluated only for the lines that failed (a CASE branch)."""
    if isinstance(schema, T.MapType):
        return F.lit(NOT_AN_OBJECT)
    raw = F.from_json(text, T.StructType([T.StructField(f.name, T.StringType()) for f in schema.fields]), STRICT)
    nested = [f for f in schema.fields if not isinstance(f.dataType, T.StringType)]
    read = {f.name: F.from_json(raw[f.name], f.dataType) for f in nested}  # type: ignore[arg-type]  # maps work
    mistyped = F.concat_ws(
        ", ", *(F.when(raw[name].isNotNull() & value.isNull(), name) for name, value in read.items())
    )
    return F.when(mistyped == "", F.lit(NOT_AN_OBJECT)).otherwise(F.concat(F.lit(OTHER_STRUCTURE), mistyped))


PROBLEM = "_json_problem"


# --------------------------------------------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpTable:
    """A format's operation codes (case-sensitive) by kind; data ops map to canonical ops."""

    data: Mapping[str, str]
    ddl: tuple[str, ...] = ()
    heartbeat: tuple[str, ...] = ()
    control: tuple[str, ...] = field(default=())

    def kind(self, op: Column) -> Column:
        """data / ddl / heartbeat / control, NULL for an op the format does not define."""
        result = F.when(op.isin(*self.data), F.lit(C.DATA))
        for kind, ops in ((C.DDL, self.ddl), (C.HEARTBEAT, self.heartbeat), (C.CONTROL, self.control)):
            if ops:
                result = result.when(op.isin(*ops), F.lit(kind))
        return result

    def canonical(self, op: Column) -> Column:
        """The canonical op of a data op; other ops stay as sent."""
        result = None
        for wire_op, canonical_op in self.data.items():
            result = (F.when if result is None else result.when)(op == wire_op, F.lit(canonical_op))
        assert result is not None  # a format maps at least one data op
        return result.otherwise(op)


# --------------------------------------------------------------------------------------------------------------
# Values: converters from wire text to canonical text
# --------------------------------------------------------------------------------------------------------------


def keep_text(v: Column, _type: Column) -> Column:
    return v


def checked_cast(spark_type: str) -> Converter:
    """Keep the text when it casts to `spark_type`, NULL otherwise (NULL marks the value invalid)."""
    return lambda v, _type: F.when(v.try_cast(spark_type).isNotNull(), v)


def checked_finite(spark_type: str) -> Converter:
    """Keep the text when it casts to a finite `spark_type` (float or double), NULL otherwise: MySQL's FLOAT and
    DOUBLE hold no NaN or infinity, so 'NaN', 'Infinity' and text beyond their range ('1e400', a FLOAT's
    '3.5e38'), which a cast makes infinite, are no value of theirs."""

    def convert(v: Column, _type: Column) -> Column:
        number = v.try_cast(spark_type)
        return F.when(~F.isnan(number) & (F.abs(number) != F.lit(float("inf"))), v)

    return convert


def base64_text(binary: Column) -> Column:
    """Canonical text of bytes: Base64 on one line (Spark's base64 breaks lines every 76 characters)."""
    return F.regexp_replace(F.base64(binary), r"[\r\n]", "")


def checked_base64(v: Column, _type: Column | None = None) -> Column:
    return F.when(F.try_to_binary(v, F.lit("base64")).isNotNull(), v)


def epoch_millis_to_timestamp_text(v: Column, _type: Column | None = None) -> Column:
    return F.date_format(timestamp_of_millis(v.try_cast("bigint")), "yyyy-MM-dd HH:mm:ss.SSS")


def integer_text(v: Column) -> Column:
    """An ordering key from integer text (e.g. a sequence id sent as a string): decimal(38,0), NULL when
    `v` is not a whole number (try_cast alone would round '1.5')."""
    return F.when(v.rlike(r"^\s*-?[0-9]{1,38}\s*$"), F.trim(v).try_cast(C.SEQ_TYPE))


def extracted_int(text: Column, pattern: str, group: int) -> Column:
    """The int that a regular expression's group of digits holds; NULL where the pattern does not match.

    Not `try_cast` of the empty match alone: inside a lambda (interpreted), Spark casts an empty string by
    throwing and catching an exception whose message it formats first, about 100 times the cost of the match."""
    return F.nullif(F.regexp_extract(text, pattern, group), F.lit("")).try_cast("int")


# The epoch numbers of the instants from 0001-01-01 to 9999-12-31 UTC, the years a date or time's text has (four
# digits) and Python's datetime holds. Beyond a bigint's microseconds Spark's timestamp_millis and
# timestamp_seconds fail the job (long overflow); before that they give years Spark writes as '+10000-01-01' or
# '0000-12-31', which a reader of the table in Python cannot convert.
_FIRST_SECONDS, _LAST_SECONDS = -62_135_596_800, 253_402_300_799
_FIRST_MILLIS, _LAST_MILLIS = _FIRST_SECONDS * 1000, _LAST_SECONDS * 1000 + 999


def timestamp_of_millis(millis: Column) -> Column:
    """Epoch milliseconds (a bigint) -> timestamp; NULL outside years 1-9999 (a hostile time never fails a run)."""
    return F.timestamp_millis(F.when(millis.between(_FIRST_MILLIS, _LAST_MILLIS), millis))


def timestamp_of_micros(micros: Column) -> Column:
    """Epoch microseconds (a bigint) -> timestamp; NULL outside years 1-9999."""
    first, last = _FIRST_SECONDS * 1_000_000, _LAST_SECONDS * 1_000_000 + 999_999
    return F.timestamp_micros(F.when(micros.between(first, last), micros))


def timestamp_of_seconds(seconds: Column) -> Column:
    """Epoch seconds (a bigint) -> timestamp; NULL outside years 1-9999."""
    return F.timestamp_seconds(F.when(seconds.between(_FIRST_SECONDS, _LAST_SECONDS), seconds))


def timestamp_text(ts: Column) -> Column:
    """Canonical text of a timestamp (UTC) or timestamp_ntz (the wall clock): microseconds, what Spark and
    Delta hold; NULL (not a value) outside years 1-9999, which no date-time text of the formats reaches."""
    return F.when(F.year(ts).between(1, 9999), F.date_format(ts, CANONICAL_TIMESTAMP))


def date_text(date: Column) -> Column:
    """Canonical text of a date ('yyyy-MM-dd'); NULL outside years 1-9999, as `timestamp_text`."""
    return F.when(F.year(date).between(1, 9999), date.cast("string"))


def epoch_micros(v: Column, fraction_digits: int) -> Column:
    """Epoch text ('1606233662.012345', '-1.5', '1590315269000.123456789') -> microseconds (bigint).

    `fraction_digits` is how many digits of the fraction make a microsecond: 6 for seconds, 3 for
    milliseconds, 0 for microseconds. Digits beyond a microsecond are truncated. NULL when `v` is
    not a plain number or overflows. A JVM function (lakeloader/jvm/EpochMicros.java): the regular expression is
    matched once, where Spark SQL expressions matched it again for each part at each use of the result.
    """
    return F.call_function(EPOCH_MICROS, v, F.lit(fraction_digits))


_DECIMAL_TEXT = r"^[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,6}))?$"


def decimal_fits(v: Column, spark_type: Column) -> Column:
    """Whether number text (plain or scientific) fits decimal(p,s) exactly (`spark_type` 'decimal(p,s)'): at most
    p-s integer digits and s fraction digits once leading and trailing zeros are discounted. No rounding is
    accepted.

    One regular expression checks the text; its parts are cut with plain string functions, once (`let`: this runs
    per value inside a lambda, where Spark repeats a shared subexpression at each use). Extracting each part
    with a regular expression, at each use, was most of a decimal column's parse time."""
    lowered = F.lower(v)
    unsigned = F.ltrim(F.substring_index(lowered, "e", 1), F.lit("+-"))  # the sign's validity: `matches`
    parts = F.struct(
        F.substring_index(unsigned, ".", 1).alias("int"),
        F.when(unsigned.contains("."), F.substring_index(unsigned, ".", -1)).otherwise(F.lit("")).alias("fraction"),
        F.when(lowered.contains("e"), F.substring_index(lowered, "e", -1).try_cast("int"))
        .otherwise(F.lit(0))
        .alias("exponent"),
        v.rlike(_DECIMAL_TEXT).alias("matches"),
    )
    precision = F.substring_index(F.substring_index(spark_type, "(", -1), ",", 1).try_cast("int")
    scale = F.substring_index(F.substring_index(spark_type, ",", -1), ")", 1).try_cast("int")

    def fits(p: Column) -> Column:
        digits = F.concat(p["int"], p["fraction"])
        leading = F.length(digits) - F.length(F.ltrim(digits, F.lit("0")))
        significant_end = F.length(F.rtrim(digits, F.lit("0")))  # digits up to the last non-zero one
        point = F.length(p["int"]) + p["exponent"]  # position of the decimal point in `digits`
        integer_digits = F.greatest(point - leading, F.lit(0))
        fraction_digits = F.greatest(significant_end - point, F.lit(0))
        well_formed = p["matches"] & (F.length(digits) > 0)
        all_zero = significant_end == 0
        return well_formed & (all_zero | ((integer_digits <= precision - scale) & (fraction_digits <= scale)))

    return let(parts, fits)


def number_text(v: Column, _type: Column | None = None) -> Column:
    """Number text kept exactly as sent (plain or scientific), NULL when it is no number."""
    return F.when(v.rlike(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"), v)


def checked_decimal(v: Column, spark_type: Column) -> Column:
    return F.when(decimal_fits(v, spark_type), v)


def checked_date(v: Column, _type: Column | None = None) -> Column:
    """A date's canonical text from 'YYYY-MM-DD'; NULL for any other text and outside years 1-9999 (a year-0 date
    casts, but readers of the table cannot convert it: `date_text`)."""
    return F.when(v.rlike(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), date_text(v.try_cast("date")))


def checked_boolean(v: Column, _type: Column | None = None) -> Column:
    """true/false, also sent as 1/0 (MySQL BOOL is a TINYINT(1))."""
    lowered = F.lower(F.trim(v))
    return F.when(lowered.isin("1", "true"), F.lit("true")).when(lowered.isin("0", "false"), F.lit("false"))


TYPE_FAMILY = r"^([a-z_]+)"
"""A Spark SQL type's family ('decimal' of 'decimal(10,2)'): group 1. Read by Spark where a column is retyped and in
Python where the converters are chosen, so both must read it alike."""


def spark_typed(spark_type: Column) -> Column:
    """struct(conv, type) for a column declared with a Spark SQL type (configured `column_types`): the
    converter key is the type's family ("decimal" for decimal(p,s)); no type means string."""
    family = F.regexp_extract(spark_type, TYPE_FAMILY, 1)
    return F.struct(family.alias("conv"), F.coalesce(spark_type, F.lit("string")).alias("type"))


CONFIGURED = "configured "
"""Prefix of the converter key of a column whose type the source's `column_types` sets over the message's own."""


_CONFIGURED = "_configured"  # the row's table's configured declarations, while `with_configured_types` reads them


def with_configured_types(frame: DataFrame, column_types: Mapping[str, Mapping[str, str]]) -> DataFrame:
    """`typed` with every column that `column_types` names for the row's db.table retyped: a configured type
    always wins over the type the message declares or the format infers. Its converter key is CONFIGURED plus
    the type's family (`configured_converters` supplies them).

    The configured declarations are literals, complete (name, conv, type) and found once per declared column;
    the table's map of them is a column of its own, read by the per-column lambda (where the optimizer would
    otherwise inline its lookup). Reading each column's configured type three times and its family with a
    regular expression, per message, was an eighth of a configured DataWorks source's parse."""
    declarations = configured_declarations(column_types)
    if declarations is None:
        return frame
    retyped = F.transform("typed", lambda c: F.coalesce(F.element_at(F.col(_CONFIGURED), c["name"]), c))
    return (
        frame.withColumn(_CONFIGURED, F.element_at(declarations, qualified(F.col("db"), F.col("table"))))
        .withColumn("typed", F.when(F.col(_CONFIGURED).isNull(), F.col("typed")).otherwise(retyped))
        .drop(_CONFIGURED)
    )


def configured_declarations(column_types: Mapping[str, Mapping[str, str]]) -> Column | None:
    """A literal map 'db.table' -> (column name -> struct(name, conv, type)) of the configured columns, as
    `with_configured_types` declares them; None when nothing is configured."""
    tables: list[Column] = []
    for table, types in column_types.items():
        columns: list[Column] = []
        for name, spark_type in types.items():
            declared = F.struct(
                F.lit(name).alias("name"),
                F.lit(CONFIGURED + _family(spark_type)).alias("conv"),
                F.lit(spark_type).alias("type"),
            )
            columns += [F.lit(name), declared]
        if columns:
            tables += [F.lit(table), F.create_map(*columns)]
    return F.create_map(*tables) if tables else None


def configured_converters(
    by_family: Mapping[str, Converter], column_types: Mapping[str, Mapping[str, str]]
) -> dict[str, Converter]:
    """The converters of the columns a source's `column_types` types (`with_configured_types`), from the format's
    converters by Spark type family (how that format writes such a value). Only the families configured: each
    value's converter is found by testing the keys one by one, and a key no column can have costs every value
    (up to twelve more tests for each configured value)."""
    families = {_family(spark_type) for types in column_types.values() for spark_type in types.values()}
    return {CONFIGURED + family: converter for family, converter in by_family.items() if family in families}


def _family(spark_type: str) -> str:
    """A Spark SQL type's family, as `with_configured_types` reads it ('decimal' for 'decimal(10,2)')."""
    match = re.match(TYPE_FAMILY, spark_type)
    return match.group(1) if match else ""


def epoch_or_text(fraction_digits: int, text_type: str) -> Converter:
    """Canonical timestamp text from an epoch number in one fixed unit (`fraction_digits` as in `epoch_micros`:
    3 for milliseconds, 0 for microseconds; never guessed from the magnitude) or from date-time text read as
    `text_type` (an ISO instant with zone reads in that zone)."""

    def convert(v: Column, _type: Column | None = None) -> Column:
        number = F.timestamp_micros(epoch_micros(F.when(v.rlike(r"^-?[0-9]+$"), v), fraction_digits))
        return timestamp_text(F.when(v.rlike(r"^-?[0-9]+$"), number).otherwise(v.try_cast(text_type)))

    return convert


def spark_type_converters(timestamp: Converter, timestamp_ntz: Converter) -> dict[str, Converter]:
    """Converters keyed by Spark type family, for columns declared with Spark SQL types (configured
    `column_types`); how a timestamp is written is the format's business."""
    return {
        "tinyint": checked_cast("tinyint"),
        "smallint": checked_cast("smallint"),
        "int": checked_cast("int"),
        "bigint": checked_cast("bigint"),
        "float": checked_finite("float"),
        "double": checked_finite("double"),
        "decimal": checked_decimal,
        "boolean": checked_boolean,
        "string": keep_text,
        "binary": checked_base64,
        "date": checked_date,
        "timestamp": timestamp,
        "timestamp_ntz": timestamp_ntz,
    }


# --------------------------------------------------------------------------------------------------------------
# Declared columns and images
# --------------------------------------------------------------------------------------------------------------


def let(value: Column, body: Callable[[Column], Column]) -> Column:
    """`body(value)` with `value` evaluated once, however often `body` uses it.

    Spark evaluates lambda bodies without common-subexpression elimination, and the optimizer inlines a
    column that only a lambda uses into that lambda: an expression used inside a per-column lambda
    would be recomputed for every column and every use. Binding it to a lambda variable avoids both.
    """
    return F.element_at(F.transform(F.array(value), body), 1)


def typed_column(name: Column, resolved: Column) -> Column:
    """struct(name, conv, type) from a name and a resolved struct(conv, type)."""
    return let(resolved, lambda r: F.struct(name.alias("name"), r["conv"].alias("conv"), r["type"].alias("type")))


@dataclass(frozen=True)
class ValueType:
    """How one wire type of a fixed type table maps to a Spark SQL type, and how its text becomes canonical."""

    spark_type: str
    to_canonical: Converter


def fixed_types(value_types: Mapping[str, ValueType]) -> Callable[[Column], Column]:
    """A resolver (wire type -> struct(conv, type)) for a fixed table keyed by wire type name; the
    converter key is the wire type itself, and an unknown wire type keeps its text as a string."""

    def resolve(wire_type: Column) -> Column:
        result = None
        for wire, value_type in value_types.items():
            resolved = F.struct(F.lit(wire).alias("conv"), F.lit(value_type.spark_type).alias("type"))
            result = (F.when if result is None else result.when)(wire_type == wire, resolved)
        assert result is not None  # a fixed table names at least one wire type
        return result.otherwise(F.struct(F.lit(None).cast("string").alias("conv"), F.lit("string").alias("type")))

    return resolve


def converters_of(value_types: Mapping[str, ValueType]) -> dict[str, Converter]:
    return {wire: value_type.to_canonical for wire, value_type in value_types.items()}


def declare(columns: Column, resolve: Callable[[Column], Column]) -> Column:
    """array<struct<name, conv, type>> from an array of {name, type} structs (the wire's declaration);
    `resolve` maps a wire type to struct(conv, type)."""
    return F.transform(columns, lambda column: typed_column(column["name"], resolve(column["type"])))


def declare_names(names: Column, types: Column, resolve: Callable[[Column], Column]) -> Column:
    """Like `declare` for formats whose images name the columns but whose types come from elsewhere:
    `types` is a map name -> wire type (a missing entry resolves like an unknown type: string)."""
    return let(
        types, lambda known: F.transform(names, lambda name: typed_column(name, resolve(F.element_at(known, name))))
    )


def image_names(first: Column, second: Column) -> Column:
    """The column names of two images, the first image's first, each once. Where one image is NULL or both hold
    the same names in the same order (most messages), those names are the answer: a map's keys are distinct, and
    the set operation (hashing every name) is left for the rest."""
    empty = F.array().cast(STRING_ARRAY)
    keys = F.map_keys(first), F.map_keys(second)
    one_list = F.coalesce(keys[0] == keys[1], F.lit(True))  # NULL: an image is NULL
    return F.when(one_list, F.coalesce(*keys, empty)).otherwise(
        F.array_distinct(F.concat(*[F.coalesce(k, empty) for k in keys]))
    )


def repeated_names(typed: Column, distinct: Column | None = None) -> Column:
    """Names declared more than once (a message that does so is rejected; a map of them cannot be built),
    NULL when there are none (the quadratic search only runs for such messages). `distinct`: where the names
    are known to be distinct (no set operation then)."""
    names = F.coalesce(typed["name"], F.array().cast(STRING_ARRAY))
    repeated = F.array_distinct(F.filter(names, lambda n: F.size(F.filter(names, lambda m: m == n)) > 1))
    has_repeats = _has_repeats(names) if distinct is None else ~distinct & _has_repeats(names)
    return F.when(has_repeats, repeated)


def _has_nameless(names: Column) -> Column:
    return F.exists(names, lambda n: n.isNull())


def _has_repeats(names: Column) -> Column:
    return F.size(F.array_distinct(names)) < F.size(names)


def with_canonical_images(frame: DataFrame, converters: Mapping[str, Converter]) -> DataFrame:
    """Adds `before` and `after`: each value of `raw_before`/`raw_after` as canonical text, converted by
    its column's converter (from `typed`).

    Undeclared columns and columns of unknown wire type keep their text (they are strings). An invalid
    value becomes NULL, which `invalid_columns` then reports.
    """
    before, after = (F.coalesce(aligned(raw), raw.isNull()) for raw in (F.col("raw_before"), F.col("raw_after")))
    images = {image: canonical_image(F.col(f"raw_{image}"), converters) for image in ("before", "after")}
    return with_declaration_lookup(frame, ~(before & after)).withColumns(images).drop(LOOKUP)


LOOKUP = "_lookup"


def aligned(image: Column) -> Column:
    """Whether an image holds exactly the declared columns (`typed`), in their order: its values then pair with
    the declarations by position (NULL for a NULL image or declaration)."""
    return F.map_keys(image) == F.col("typed")["name"]


def with_declaration_lookup(frame: DataFrame, needed: Column | None = None) -> DataFrame:
    """Adds LOOKUP, the map name -> declaration (an element of `typed`) that `canonical_image` reads for an image
    not `aligned` with `typed` (only where `needed`, when given). It is a column of its own, referenced by the
    images: an expression used only inside a per-value lambda would be inlined there by the optimizer and rebuilt
    for every value."""
    names = F.col("typed")["name"]
    usable = ~_has_repeats(names) & ~F.coalesce(_has_nameless(names), F.lit(False))
    if needed is not None:
        usable = needed & usable  # tested first: an image aligned with the declarations needs no lookup
    entries = F.transform("typed", lambda c: F.struct(c["name"], c))
    return frame.withColumn(LOOKUP, F.when(usable, F.map_from_entries(entries)))


def canonical_image(raw: Column, converters: Mapping[str, Converter]) -> Column:
    """An image (map of wire text) as canonical text, each value converted by its declared column's converter.

    An image `aligned` with `typed` (the common case: producers write the declared columns in order) pairs its
    values with the declarations by position; any other image looks each name up in the LOOKUP column
    (`with_declaration_lookup`), a map lookup per value that was a third of the conversion's cost."""
    # a converter that keeps the text is the chain's default: a string value needs no comparison
    converting = {key: converter for key, converter in converters.items() if converter is not keep_text}

    def convert(value: Column, declared: Column) -> Column:
        conv, spark_type = declared["conv"], declared["type"]
        result = F.when(conv.isNull(), value)  # a string, the commonest: no converter to look for
        for key, converter in converting.items():
            result = result.when(conv == key, converter(value, spark_type))
        return result.otherwise(value)

    names = F.map_keys(raw)
    declarations = F.when(aligned(raw), F.col("typed")).otherwise(
        F.transform(names, lambda name: F.element_at(F.col(LOOKUP), name))
    )
    return F.map_from_arrays(names, F.zip_with(F.map_values(raw), declarations, convert))


def overlay(base: Column, changes: Column) -> Column:
    """An image (`base`; NULL counts as empty) with the values of `changes` (NULL: none) laid over it, for
    formats that send an update's changed columns apart from the row (Canal `old`, SharePlex `data`)."""
    base = F.coalesce(base, F.create_map().cast(C.IMAGE_TYPE))
    changes = F.coalesce(changes, F.create_map().cast(C.IMAGE_TYPE))
    return F.map_concat(F.map_filter(base, lambda name, _: ~F.array_contains(F.map_keys(changes), name)), changes)


def spark_columns(typed: Column) -> Column:
    """The declared columns as CHANGE_SCHEMA's array<struct<name, type>> with Spark SQL types (zipped from the two
    fields' arrays: generated code, where a lambda building each struct is interpreted)."""
    return F.arrays_zip(typed["name"].alias("name"), typed["type"].alias("type"))


def invalid_columns(image: Column, canonical: Column) -> Column:
    """Names of columns whose value was present in `image` but did not convert (empty for no image).

    `canonical` is `canonical_image(image)`: the same keys, a NULL wherever a value did not convert. So the
    invalid columns are those NULL there but not in `image`: two passes over the values instead of a lookup of
    each name in both maps (an interpreted scan of each map per name). Only for a canonical image holding a NULL:
    most hold none, and filtering the maps builds new ones."""
    invalid = F.array_except(_null_valued(canonical), _null_valued(image))
    empty = F.array().cast(STRING_ARRAY)
    has_null = F.exists(F.map_values(canonical), lambda value: value.isNull())
    return F.when(has_null, F.coalesce(invalid, empty)).otherwise(empty)


def _null_valued(image: Column) -> Column:
    return F.map_keys(F.map_filter(image, lambda _name, value: value.isNull()))


def configured_map(entries: Mapping[str, object], value_type: str) -> Column:
    """A literal map column from configuration (NULL for an empty mapping; element_at of NULL is NULL)."""
    if not entries:
        return F.lit(None).cast(f"map<string,{value_type}>")
    items = []
    for key, value in entries.items():
        if isinstance(value, Mapping):
            literal = F.create_map(*[F.lit(x) for pair in value.items() for x in pair])
        elif isinstance(value, list | tuple):
            literal = F.array(*[F.lit(x) for x in value])
        else:
            literal = F.lit(value)
        items += [F.lit(key), literal]
    return F.create_map(*items).cast(f"map<string,{value_type}>")


def configured_types(column_types: Mapping[str, Mapping[str, str]], db: Column, table: Column) -> Column:
    """The map column -> Spark SQL type that a source's `column_types` gives db.table (NULL when none), for
    formats whose messages carry no types (resolve its entries with `spark_typed`)."""
    return F.element_at(configured_map(column_types, "map<string,string>"), qualified(db, table))


def qualified(db: Column, table: Column) -> Column:
    """'db.table', the key of the per-table configuration."""
    return F.concat_ws(".", db, table)


def split_qualified(name: Column) -> tuple[Column, Column]:
    """'db.table' -> (db, table); the db may hold dots (OceanBase 'tenant.database'), the table is last.
    Both are '' for a name without a dot (NULL for NULL)."""
    return F.regexp_extract(name, r"^(.*)\.[^.]+$", 1), F.regexp_extract(name, r"\.([^.]+)$", 1)


# --------------------------------------------------------------------------------------------------------------
# Rejection and the canonical row
# --------------------------------------------------------------------------------------------------------------

Check = tuple[Column, "str | Column"]


@dataclass(frozen=True)
class WireFields:
    """Where a format keeps the fields the shared checks name in their rejection reasons."""

    op: str
    db: str
    table: str
    seq_problem: str  # the reason given when a data message has no usable ordering key
    op_label: str = "op"  # how "unknown <op_label> 'X'" names the op
    # where a format that declares its columns apart from the images declares them (DataWorks' schema.dataColumn):
    # an image naming a column not declared there contradicts its own message, whose value no type would be known
    # for, so the message is rejected rather than the value dropped; None for formats typing the images' own names
    declarations: str | None = None


def first_reason(*checks: Check) -> Column:
    """The first failing check's message (checks are (condition that means 'bad', message))."""
    return F.coalesce(
        *[F.when(bad, message if isinstance(message, Column) else F.lit(message)) for bad, message in checks]
    )


def listing(prefix: str, names: Column) -> Column:
    return F.concat(F.lit(prefix), F.array_join(names, ", "))


def finish(
    frame: DataFrame,
    wire: WireFields,
    before_op: Sequence[Check] = (),
    after_op: Sequence[Check] = (),
) -> DataFrame:
    """Reject what cannot be loaded (first failing check wins) and select the canonical row.

    `frame` holds the line columns and the intermediate columns (module docstring). The shared checks,
    in order: envelope, `before_op`, op missing / unknown, `after_op`, then for data messages: table,
    db, ordering key, the images the op needs, values against their types, primary key in the image.
    """
    is_data = F.col("kind") == C.DATA
    frame = frame.withColumn("primary_key", key_as_in_image(F.col("primary_key"), F.col("after"), F.col("before")))
    bad_values = F.array_union(
        invalid_columns(F.col("raw_before"), F.col("before")), invalid_columns(F.col("raw_after"), F.col("after"))
    )
    missing_key = F.filter("primary_key", lambda k: F.coalesce(F.col("after"), F.col("before"))[k].isNull())
    # declarations an image is aligned with are an image's names, so distinct
    aligned_image = F.coalesce(aligned(F.col("raw_after")) | aligned(F.col("raw_before")), F.lit(False))
    repeated = repeated_names(F.col("typed"), aligned_image)
    declared: list[Check] = []
    if wire.declarations:
        undeclared = _undeclared()
        not_declared = listing(f"column(s) not declared in {wire.declarations}: ", undeclared)
        declared.append((is_data & (F.size(undeclared) > 0), not_declared))
    reason = first_reason(
        (F.col("envelope_error").isNotNull(), F.col("envelope_error")),
        *before_op,
        (F.col("raw_op").isNull(), f"missing {wire.op}"),
        (F.col("kind").isNull(), F.concat(F.lit(f"unknown {wire.op_label} '"), "raw_op", F.lit("'"))),
        *after_op,
        (repeated.isNotNull(), listing("column(s) declared more than once: ", repeated)),
        (F.coalesce(_has_nameless(F.col("typed")["name"]), F.lit(False)), "a column is declared without a name"),
        (is_data & F.col("table").isNull(), f"missing {wire.table}"),
        (is_data & F.col("db").isNull(), f"missing {wire.db}"),
        (is_data & F.col("seq").isNull(), wire.seq_problem),
        (_missing_image(), F.concat(F.col("raw_op"), F.lit(" message without the image it needs"))),
        (
            is_data & (F.size(bad_values) > 0),
            listing("value does not match its declared type in column(s): ", bad_values),
        ),
        (is_data & (F.size(missing_key) > 0), listing("primary key column(s) missing from the image: ", missing_key)),
        *declared,
    )
    given = {name: F.col(name) for name in ("source", "origin_file", "origin_line", "batch_hour")}
    given |= {name: F.col(name) for name in C.CHANGE_SCHEMA.names if name in frame.columns}
    given |= {
        "kind": F.coalesce("kind", F.lit(C.DATA)),
        "op": F.coalesce("op", "raw_op", F.lit("")),
        "columns": spark_columns(F.col("typed")),
        "after_partial": F.coalesce(F.col("after_partial"), F.lit(False))
        if "after_partial" in frame.columns
        else F.lit(False),
        "seq2": F.coalesce(F.col("seq2"), F.lit(0)) if "seq2" in frame.columns else F.lit(0),
        "origin_index": F.col("origin_index") if "origin_index" in frame.columns else F.lit(0),
    }
    selected = [given.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in C.CHANGE_SCHEMA.fields]
    common_case = [COMMON_CASE] if COMMON_CASE in frame.columns else []
    return frame.select(*selected, reason.alias(REJECT_REASON), F.col("text"), *framing(frame), *common_case)


COMMON_CASE = "_common_case"
"""A message's fields as a JVM function read them in one pass (NULL: not the common case; `common_case_rows`)."""


def jvm_reading(function: str, settings: Mapping[str, object], *found: Column) -> Column:
    """Each line (`text`) as a JVM common-case reader (SQL `function`) reads it, given what the parser `found`
    apart from the message (its table, for a format whose messages name none) and the parser's settings as JSON:
    one text for a session's settings (sorted keys), which the reader parses once."""
    return F.call_function(function, F.col("text"), *found, F.lit(json.dumps(settings, sort_keys=True)))


@dataclass(frozen=True)
class CommonCase:
    """A format's JVM common-case reader over a batch's lines: `reading` (a `jvm_reading`: the fields of each
    message it took, NULL for any other) and the parser's output columns from them (`columns`, over COMMON_CASE and
    the line's own columns; `common_case_columns` gives those every reader gives alike). The columns it does not
    name are the line's (source, positions) or `finish`'s defaults. `shared`: columns of the line that `reading` and
    `columns` both read, computed once before them (each use would otherwise compute it again). `rest`: the format's
    Spark SQL parse of the messages the reader did not take, given what the reader was given of the batch (its
    sampled declarations; DTS Avro's also reads the taken records' declarations)."""

    reading: Column
    columns: Mapping[str, Column]
    rest: Callable[[DataFrame], DataFrame]
    shared: Mapping[str, Column] = field(default_factory=dict)


UNPARSED = "_unparsed"
"""A message the common-case reader did not take, as read (UNPARSED_MESSAGE): the Spark SQL parser's to parse
(NULL for a message the reader took; `common_case_rows`)."""
UNPARSED_MESSAGE = T.StructType(
    [
        T.StructField("text", T.StringType()),
        T.StructField(UNWRAP_ERROR, T.StringType()),
        T.StructField(TOMBSTONE, T.BooleanType()),
        T.StructField(MESSAGE_BYTES, T.BinaryType()),
    ]
)


def common_case_rows(lines: DataFrame, common: CommonCase) -> DataFrame:
    """`finish`'s columns for each of the `lines` the reader took, from its fields alone, and UNPARSED: each other
    message as read (NULL for a taken one; an untaken one's other columns but its line's own mean nothing, its
    UNPARSED places it). No Spark SQL parse is in this plan: the
    parse step writes the untaken messages aside and parses them in a job of their own (lakeloader.parse.step), and
    `parsed_with_common_case` unions them. (Evaluated beside the reader for every message, as it once was, the
    Spark SQL parse of a NULL message cost as much again as the reader: 2-5 s of a million messages.)"""
    with_fields = lines.withColumns(dict(common.shared)).withColumn(COMMON_CASE, common.reading)
    given = {"after_partial": F.lit(False), "seq2": F.lit(0), "origin_index": F.lit(0), **common.columns}
    taken = F.col(COMMON_CASE).isNotNull()

    def column(field: T.StructField) -> Column:
        if field.name in lines.columns:  # the line's own: source, batch hour, positions
            return F.col(field.name)
        return given.get(field.name, F.lit(None)).cast(field.dataType).alias(field.name)

    sent = [
        (F.col(f.name) if f.name in lines.columns else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in UNPARSED_MESSAGE.fields
    ]
    return with_fields.select(
        *[column(field) for field in C.CHANGE_SCHEMA.fields],
        F.when(taken, given[REJECT_REASON]).alias(REJECT_REASON),
        "text",
        *framing(lines),
        F.when(~taken, F.struct(*sent)).cast(UNPARSED_MESSAGE).alias(UNPARSED),  # as nullable as any staged file's
    )


def parsed_with_common_case(lines: DataFrame, common: CommonCase) -> DataFrame:
    """A parser's rows: those of the messages the common-case reader took (`common_case_rows`), and `common.rest`
    (the format's Spark SQL parse, which stays the reference for every message) of the others. The reader runs
    twice here (once to choose each side); the parse step runs it once (lakeloader.parse.step)."""
    taken = common_case_rows(lines, common).where(F.col(UNPARSED).isNull()).drop(UNPARSED)
    untaken = lines.withColumns(dict(common.shared)).where(common.reading.isNull()).drop(*common.shared)
    return taken.unionByName(common.rest(untaken))


def common_case_columns(common: Column, passed: Sequence[str]) -> dict[str, Column]:
    """The output columns every JVM reader gives alike: a data change without a reject reason or DDL, its columns
    zipped from the reader's `names` and `types`, and the fields `passed` on as the reader gives them."""
    return {
        **{name: common[name] for name in passed},
        "kind": F.lit(C.DATA),
        "columns": F.arrays_zip(common["names"].alias("name"), common["types"].alias("type")),
        "ddl": F.lit(None),
        REJECT_REASON: F.lit(None),
    }


def key_as_in_image(key: Column, *images: Column) -> Column:
    """The key's column names as the image spells them: a name the image lacks takes the image's column that
    equals it ignoring case (MySQL column names are case-insensitive: `pkNames` [K1] names column k1)."""
    names = F.coalesce(*[F.map_keys(image) for image in images], F.array().cast(STRING_ARRAY))
    return F.transform(
        key,
        lambda k: F.when(F.array_contains(names, k), k).otherwise(
            F.coalesce(F.try_element_at(F.filter(names, lambda n: F.lower(n) == F.lower(k)), F.lit(1)), k)
        ),
    )


def schema_qualified(db: Column, schema: Column, unqualified: Sequence[str]) -> Column:
    """The database part of a table's name when the message names a schema too: '<database>.<schema>', unless
    the schema is absent, equals the database (ignoring case) or is one of `unqualified` (docs/semantics.md)."""
    plain = (
        schema.isNull()
        | (schema == "")
        | (F.lower(schema) == F.lower(db))
        | F.lower(schema).isin(*[name.lower() for name in unqualified])
    )
    return F.when(db.isNull() | plain, db).otherwise(F.concat(db, F.lit("."), schema))


def framing(frame: DataFrame) -> list[str]:
    """The framing columns `frame` carries (messages read by lakeloader.parse.framing have them)."""
    return [name for name in FRAMING_COLUMNS if name in frame.columns]


def _undeclared() -> Column:
    """Names of the images' columns that `typed` does not declare (empty without a search where each image is
    NULL or `aligned` with it, as a message's images mostly are)."""
    raw = F.col("raw_after"), F.col("raw_before")
    each_aligned = F.coalesce(aligned(raw[0]), raw[0].isNull()) & F.coalesce(aligned(raw[1]), raw[1].isNull())
    empty = F.array().cast(STRING_ARRAY)
    return F.when(each_aligned, empty).otherwise(
        F.coalesce(F.array_except(image_names(*raw), F.coalesce(F.col("typed")["name"], empty)), empty)
    )


def _missing_image() -> Column:
    op, before, after = F.col("op"), F.col("before"), F.col("after")
    needs_after = op.isin(C.INSERT, C.UPDATE_AFTER, C.UPDATE) & after.isNull()
    needs_before = op.isin(C.DELETE, C.UPDATE_BEFORE, C.UPDATE) & before.isNull()
    return (F.col("kind") == C.DATA) & (needs_after | needs_before)
