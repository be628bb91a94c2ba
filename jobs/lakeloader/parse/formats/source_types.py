"""The one mapping from a source column declaration (MySQL, Oracle/OceanBase, OMS's type names) to a Spark SQL
type and the converter key that reads its values: used by the data path (Canal `mysqlType`, DTS Avro's
declarations, OMS `schemaType`/`schema.column` types: lakeloader.parse.formats.mysql_types and ob_types) and by the
DDL path (lakeloader.apply.ddl.types), so that a column added by DDL gets the type its values then arrive with.

The rules are data (`RULES`), evaluated two ways from the same table: `spark_type_of` in Python (DDL, tests)
and `resolve` as a Spark SQL expression over a declaration column (messages; no Python on the message path).
A declaration is read as: its first word (the base type), its parameters `(p[,s])`, UNSIGNED, and whether it
says `time zone`. Names are matched case-insensitively.

    TINYINT(1), BOOL, BOOLEAN            boolean (MySQL's BOOL is TINYINT(1); values 1/0, true/false; any other
                                         value is rejected: configure `column_types` tinyint for such columns)
    TINYINT / SMALLINT / MEDIUMINT / INT tinyint / smallint / int / int; UNSIGNED: smallint / int / int / bigint
    BIGINT, SERIAL                       bigint; UNSIGNED and SERIAL: decimal(20,0)
    INT64 (OMS)                          bigint
    YEAR                                 int
    FLOAT, FLOAT(p <= 24), FLOAT(M,D)    float (FLOAT(p > 24) is a DOUBLE: double); BINARY_FLOAT float
    DOUBLE, DOUBLE PRECISION, REAL       double; BINARY_DOUBLE double (finite values only, but Oracle's
                                         BINARY_FLOAT and BINARY_DOUBLE also hold NaN and +-Infinity)
    DECIMAL/NUMERIC/FIXED/DEC/NUMBER     decimal(p,s) when 1 <= p <= 38 and 0 <= s <= p (DECIMAL(p) and
                                         DECIMAL(p,0) are decimal(p,0) at every p); otherwise, and without a
                                         precision, string holding the exact number text: a declaration
                                         without precision (DTS and OMS leave it out) may hold any DECIMAL(65,30)
    DATE                                 date
    DATETIME                             timestamp_ntz (a wall clock)
    TIMESTAMP, ZONED_DATETIME, ... WITH [LOCAL] TIME ZONE   timestamp (an instant, UTC)
    TIME                                 string 'HH:mm:ss[.f]' (it may exceed 24 hours)
    BINARY, VARBINARY, *BLOB, spatial types, RAW, LONG RAW, BFILE, BYTES   binary
    BIT                                  binary (Base64, OMS), or decimal(20,0) where the source sends its
                                         number (open-source Canal)
    CHAR, VARCHAR, *TEXT, JSON, ENUM, SET, VARCHAR2, CLOB, ROWID, INTERVAL ... and anything else   string
    Oracle (tenant or dialect):          INTEGER decimal(38,0) (NUMBER(38)); FLOAT string (a NUMBER with binary
                                         precision: exact text); DATE and TIMESTAMP timestamp_ntz (no zone)

`signedness_unknown`: formats that name a type without saying whether it is UNSIGNED (OMS's type names, DTS
Avro's protocol numbers) read every integer as possibly unsigned, so the type holds both ranges.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.parse.formats.common import extracted_int, let

BINARY_TYPES = (
    "binary",
    "varbinary",
    "tinyblob",
    "blob",
    "mediumblob",
    "longblob",
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
    "raw",
    "bfile",
    "bytes",
)
TIMESTAMP_TYPES = ("timestamp", "zoned_datetime", "timestamptz", "timestampltz")  # the last two: sqlglot's names
DECIMAL_TYPES = ("decimal", "numeric", "fixed", "dec", "number")
EXACT_TEXT = "string"

_BASE = r"^\s*([a-z0-9_]+)"
_PRECISION = r"^\s*[a-z0-9_ ]+\(\s*(\d+)"
_SCALE = r"^\s*[a-z0-9_ ]+\(\s*\d+\s*,\s*(-?\d+)"


@dataclass(frozen=True)
class Declared:
    """A parsed declaration; each field is a Python value (`parse`) or a Spark Column (`resolve`), so one rule
    reads both. `precision` is -1 when the declaration has none, `scale` 0."""

    text: Any
    base: Any
    unsigned: Any
    precision: Any
    scale: Any
    two_parameters: Any
    oracle: Any

    def base_in(self, *names: str) -> Any:
        return self.base.isin(*names) if isinstance(self.base, Column) else self.base in names

    def says(self, words: str) -> Any:
        return self.text.contains(words) if isinstance(self.text, Column) else words in self.text


@dataclass(frozen=True)
class Rule:
    """When `applies` (a predicate over Declared), the column has converter key `conv` and Spark type `type`;
    'decimal(p,s)' in `type` is filled in with the declaration's precision and scale."""

    applies: Callable[[Declared], Any]
    conv: str | None
    type: str


def _fits_spark_decimal(d: Declared) -> object:
    return (d.precision >= 1) & (d.precision <= 38) & (d.scale >= 0) & (d.scale <= d.precision)


def rules(bit_as_number: bool) -> list[Rule]:
    """The mapping, first matching rule first. `bit_as_number`: BIT values arrive as their number (open-source
    Canal) instead of Base64 bytes."""
    integer = ("tinyint", "smallint", "mediumint", "int", "integer")
    return [
        Rule(lambda d: d.oracle & d.base_in("integer", "int", "smallint"), "decimal", "decimal(38,0)"),
        Rule(lambda d: d.oracle & d.base_in("float"), "number", EXACT_TEXT),
        Rule(lambda d: d.oracle & d.base_in("date"), "datetime", "timestamp_ntz"),
        Rule(lambda d: d.oracle & d.base_in("timestamp") & _not(d.says("time zone")), "datetime", "timestamp_ntz"),
        Rule(lambda d: d.base_in("bool", "boolean"), "boolean", "boolean"),
        Rule(lambda d: d.base_in("tinyint") & (d.precision == 1), "boolean", "boolean"),
        Rule(lambda d: d.base_in("tinyint") & d.unsigned, "smallint", "smallint"),
        Rule(lambda d: d.base_in("tinyint"), "tinyint", "tinyint"),
        Rule(lambda d: d.base_in("smallint") & d.unsigned, "int", "int"),
        Rule(lambda d: d.base_in("smallint"), "smallint", "smallint"),
        Rule(lambda d: d.base_in("mediumint"), "int", "int"),
        Rule(lambda d: d.base_in("int", "integer") & d.unsigned, "bigint", "bigint"),
        Rule(lambda d: d.base_in(*integer), "int", "int"),
        Rule(lambda d: d.base_in("bigint") & d.unsigned, "decimal", "decimal(20,0)"),
        Rule(lambda d: d.base_in("bigint", "int64"), "bigint", "bigint"),
        Rule(lambda d: d.base_in("serial"), "decimal", "decimal(20,0)"),
        Rule(lambda d: d.base_in("year"), "int", "int"),
        Rule(lambda d: d.base_in("float") & ((d.precision <= 24) | d.two_parameters), "float", "float"),
        Rule(lambda d: d.base_in("binary_float"), "ieee_float", "float"),  # Oracle's: NaN and infinity are values
        Rule(lambda d: d.base_in("binary_double"), "ieee_double", "double"),
        Rule(lambda d: d.base_in("float", "double", "real"), "double", "double"),
        Rule(lambda d: d.base_in(*DECIMAL_TYPES) & _fits_spark_decimal(d), "decimal", "decimal(p,s)"),
        Rule(lambda d: d.base_in(*DECIMAL_TYPES), "number", EXACT_TEXT),
        Rule(lambda d: d.base_in("date"), "date", "date"),
        Rule(lambda d: d.base_in("datetime"), "datetime", "timestamp_ntz"),
        Rule(lambda d: d.base_in(*TIMESTAMP_TYPES), "timestamp", "timestamp"),
        Rule(lambda d: d.base_in("time"), "time", EXACT_TEXT),
        Rule(lambda d: d.base_in(*BINARY_TYPES) | (d.base_in("long") & d.says("long raw")), "binary", "binary"),
        Rule(lambda d: d.base_in("bit"), *(("decimal", "decimal(20,0)") if bit_as_number else ("binary", "binary"))),
    ]


def _not(value: object) -> object:
    return ~value if isinstance(value, Column) else not value


# --------------------------------------------------------------------------------------------------------------
# Python: DDL and tests
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceType:
    conv: str | None  # converter key (None: the text is kept)
    spark_type: str


def parse(declaration: str, oracle: bool = False, signedness_unknown: bool = False) -> Declared:
    text = " ".join(declaration.lower().split())
    base, precision, scale = (re.match(pattern, text) for pattern in (_BASE, _PRECISION, _SCALE))
    return Declared(
        text=text,
        base=base[1] if base else "",
        unsigned=signedness_unknown or re.search(r"\bunsigned\b", text) is not None,
        precision=_int(precision[1], -1) if precision else -1,
        scale=_int(scale[1], 0) if scale else 0,
        two_parameters="," in text,
        oracle=oracle,
    )


def _int(digits: str, default: int) -> int:
    """The digits' int as Spark's `try_cast(... as int)` reads it in `declarations` (`default` beyond an int's
    range), without converting thousands of digits (Python refuses more than 4,300)."""
    if len(digits.lstrip("-").lstrip("0")) > 10:
        return default
    value = int(digits)
    return value if -(2**31) <= value < 2**31 else default


def spark_type_of(
    declaration: str, oracle: bool = False, signedness_unknown: bool = False, bit_as_number: bool = False
) -> SourceType:
    """The converter key and Spark SQL type of a declaration ('decimal(65,30)', 'tinyint(1)', 'NUMBER(10)')."""
    d = parse(declaration, oracle, signedness_unknown)
    for rule in rules(bit_as_number):
        if rule.applies(d):
            spark_type = rule.type.replace("decimal(p,s)", f"decimal({d.precision},{d.scale})")
            return SourceType(rule.conv, spark_type)
    return SourceType(None, EXACT_TEXT)


# --------------------------------------------------------------------------------------------------------------
# Spark: the message path
# --------------------------------------------------------------------------------------------------------------


def resolve(
    declared: Column,
    oracle: Column | bool = False,
    signedness_unknown: bool = False,
    bit_as_number: bool = False,
) -> Column:
    """struct(conv, type) of a declaration column (NULL: string), the same rules as `spark_type_of`."""
    oracle_col = oracle if isinstance(oracle, Column) else F.lit(oracle)

    def parsed(text: Column) -> Column:
        return F.struct(
            text.alias("text"),
            F.regexp_extract(text, _BASE, 1).alias("base"),
            (F.lit(True) if signedness_unknown else text.rlike(r"\bunsigned\b")).alias("unsigned"),
            F.coalesce(extracted_int(text, _PRECISION, 1), F.lit(-1)).alias("precision"),
            F.coalesce(extracted_int(text, _SCALE, 1), F.lit(0)).alias("scale"),
            text.contains(",").alias("two_parameters"),
            F.coalesce(oracle_col, F.lit(False)).alias("oracle"),
        )

    def from_parsed(p: Column) -> Column:
        d = Declared(*(p[name] for name in Declared.__dataclass_fields__))
        result = None
        for rule in rules(bit_as_number):
            spark_type = (
                F.format_string("decimal(%d,%d)", d.precision, d.scale)
                if rule.type == "decimal(p,s)"
                else F.lit(rule.type)
            )
            value = F.struct(F.lit(rule.conv).cast("string").alias("conv"), spark_type.alias("type"))
            condition = F.coalesce(rule.applies(d), F.lit(False))
            result = F.when(condition, value) if result is None else result.when(condition, value)
        assert result is not None  # there are rules
        return result.otherwise(F.struct(F.lit(None).cast("string").alias("conv"), F.lit(EXACT_TEXT).alias("type")))

    normal = F.regexp_replace(F.lower(F.trim(declared)), r"\s+", " ")
    return let(normal, lambda text: let(parsed(text), from_parsed))


SAMPLE_MESSAGES = 5000
"""How many of a batch's first messages name the declarations `sampled_resolutions` resolves once."""

Resolver = Callable[[Column], Column]
_RESOLVED = "struct<conv:string,type:string>"


Resolutions = dict[bool, dict[str, tuple[str | None, str]]]
"""Declarations resolved once: oracle meaning or not -> declaration text -> (converter key, Spark type)."""


def sampled_resolutions(
    messages: DataFrame,
    declarations: Column,
    oracle: Column | bool = False,
    signedness_unknown: bool = False,
    bit_as_number: bool = False,
) -> Resolutions:
    """`resolve` (with these settings) of the declarations that the first SAMPLE_MESSAGES of `messages` hold
    (`declarations`: array<string> per message; `oracle` read per message as `resolve` reads it): one small Spark
    job, collected."""
    oracle_col = oracle if isinstance(oracle, Column) else F.lit(oracle)
    sample = (
        messages.limit(SAMPLE_MESSAGES)
        .select(F.explode(declarations).alias("text"), F.coalesce(oracle_col, F.lit(False)).alias("oracle"))
        .where(F.col("text").isNotNull())
        .distinct()
    )
    seen = sample.select("text", "oracle", resolve(F.col("text"), F.col("oracle"), signedness_unknown, bit_as_number))
    resolutions: Resolutions = {False: {}, True: {}}
    for text, is_oracle, resolved in seen.collect():
        resolutions[is_oracle][text] = (resolved["conv"], resolved["type"])
    return resolutions


def table_resolver(
    resolutions: Resolutions,
    oracle: Column | bool = False,
    signedness_unknown: bool = False,
    bit_as_number: bool = False,
) -> Resolver:
    """`resolve` answered from `resolutions` (computed by `resolve` itself, so a declaration found there gets the
    rules' answer); one not there is resolved by the rules per value: the same result, slower."""
    oracle_col = oracle if isinstance(oracle, Column) else F.lit(oracle)

    def entries(found: dict[str, tuple[str | None, str]]) -> list[Column]:
        return [
            column
            for text, (conv, spark_type) in found.items()
            for column in (
                F.lit(text),
                F.struct(F.lit(conv).cast("string").alias("conv"), F.lit(spark_type).alias("type")),
            )
        ]

    plain, in_oracle = entries(resolutions[False]), entries(resolutions[True])

    def by_table(declared: Column) -> Column:
        def lookup(found: list[Column]) -> Column:
            return F.element_at(F.create_map(*found), declared) if found else F.lit(None).cast(_RESOLVED)

        looked_up = F.when(F.coalesce(oracle_col, F.lit(False)), lookup(in_oracle)).otherwise(lookup(plain))
        return F.coalesce(looked_up, resolve(declared, oracle, signedness_unknown, bit_as_number))

    return by_table
