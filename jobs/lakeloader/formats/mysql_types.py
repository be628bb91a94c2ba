"""MySQL column types as Canal-style messages declare them (`mysqlType`: 'decimal(8,3) unsigned zerofill',
'varchar(20)', 'int64', 'bigint unsigned') -> struct(conv, type) and the converters of their values.

Unlike OMS's own type names (lakeloader.formats.ob_types), these are the source's real MySQL declarations, so
the mapping follows MySQL's ranges: integers widen where UNSIGNED needs it (TINYINT UNSIGNED -> smallint ...
BIGINT UNSIGNED and SERIAL -> decimal(20,0)); BOOL/BOOLEAN/TINYINT(1) stay tinyint (MySQL stores -128..127 in
them). DECIMAL(p,s) is decimal(p,s) within Spark's 38 digits and exact number text (string) beyond or when the
declaration is impossible; DECIMAL without a precision (DTS and OMS leave it out) is decimal(38,18). FLOAT is
float (FLOAT(p) with p > 24 is double), DOUBLE/REAL double. DATE is date; DATETIME timestamp_ntz (the wall
clock as written); TIMESTAMP timestamp (text read as UTC, or OMS's epoch seconds); TIME string (it may exceed
24 hours); YEAR int. CHAR/VARCHAR/TEXT types, JSON, ENUM and SET are string. BINARY/VARBINARY/BLOB types and
the spatial types are binary, written per the source's `canal_binary_encoding`: 'latin1' (open-source Canal:
one ISO-8859-1 character per byte) or 'base64' (OMS). BIT follows the same choice: Base64 bytes, or
(open-source Canal) its value as a number -> decimal(20,0).
Any other type is string.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakeloader.formats import ob_types
from lakeloader.formats.common import (
    Converter,
    base64_text,
    checked_base64,
    checked_cast,
    checked_date,
    checked_decimal,
    configured_converters,
    let,
)

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
)
UNPARAMETERIZED_DECIMAL = "decimal(38,18)"


def resolve(declared: Column, binary_encoding: str) -> Column:
    """struct(conv, type) for a declared MySQL type (NULL declaration: string). The declaration is bound once:
    a computed one (DTS Avro derives it from the value) would otherwise be copied into every part it feeds."""
    return let(F.lower(F.trim(declared)), lambda text: _resolve_text(text, binary_encoding))


def _resolve_text(text: Column, binary_encoding: str) -> Column:
    parsed = F.struct(
        F.regexp_extract(text, r"^([a-z0-9_]+)", 1).alias("base"),
        text.rlike(r"\bunsigned\b").alias("unsigned"),
        F.regexp_extract(text, r"^[a-z0-9_ ]+\(\s*(\d+)", 1).try_cast("int").alias("precision"),
        F.coalesce(F.regexp_extract(text, r"^[a-z0-9_ ]+\(\s*\d+\s*,\s*(\d+)", 1).try_cast("int"), F.lit(0)).alias(
            "scale"
        ),
        text.contains(",").alias("two_parameters"),
    )
    return let(parsed, lambda d: _resolve_parsed(d, binary_encoding))


def _resolve_parsed(d: Column, binary_encoding: str) -> Column:
    base, unsigned, precision, scale = d["base"], d["unsigned"], d["precision"], d["scale"]

    def to(conv: str | None, spark_type: str | Column) -> Column:
        type_col = spark_type if isinstance(spark_type, Column) else F.lit(spark_type)
        return F.struct(F.lit(conv).cast("string").alias("conv"), type_col.alias("type"))

    def integer(signed: str, wider: str) -> Column:
        return F.when(unsigned, to(wider, wider)).otherwise(to(signed, signed))

    decimal = (
        F.when(precision.isNull(), to("decimal", UNPARAMETERIZED_DECIMAL))
        .when(
            precision.between(1, 38) & (scale <= precision),
            to("decimal", F.format_string("decimal(%d,%d)", precision, scale)),
        )
        .otherwise(to("number", "string"))
    )
    bit = to("binary", "binary") if binary_encoding == "base64" else to("decimal", "decimal(20,0)")
    return (
        F.when(base.isin("tinyint", "bool", "boolean"), integer("tinyint", "smallint"))
        .when(base == "smallint", integer("smallint", "int"))
        .when(base == "mediumint", to("int", "int"))
        .when(base.isin("int", "integer"), integer("int", "bigint"))
        .when(
            base.isin("bigint", "int64"),
            F.when(unsigned, to("decimal", "decimal(20,0)")).otherwise(to("bigint", "bigint")),
        )
        .when(base == "serial", to("decimal", "decimal(20,0)"))
        .when(base == "year", to("int", "int"))
        .when((base == "float") & ((precision <= 24) | precision.isNull() | d["two_parameters"]), to("float", "float"))
        .when(base.isin("float", "double", "real"), to("double", "double"))
        .when(base.isin("decimal", "numeric", "fixed", "dec"), decimal)
        .when(base == "date", to("date", "date"))
        .when(base == "datetime", to("datetime", "timestamp_ntz"))
        .when(base == "timestamp", to("timestamp", "timestamp"))
        .when(base.isin(*BINARY_TYPES), to("binary", "binary"))
        .when(base == "bit", bit)
        .otherwise(to(None, "string"))
    )


def _latin1_binary(v: Column, _type: Column = None) -> Column:
    """Bytes written as one ISO-8859-1 character each (open-source Canal) -> canonical Base64."""
    return F.when(v.rlike(r"^[\x{0}-\x{FF}]*$"), base64_text(F.encode(v, "ISO-8859-1")))


def configured(binary_encoding: str) -> dict[str, Converter]:
    """The converters of columns typed by configuration (`column_types`): values as OMS writes them, binary in
    the source's encoding."""
    return configured_converters(ob_types.SPARK_TYPED_CONVERTERS | {"binary": converters(binary_encoding)["binary"]})


def converters(binary_encoding: str) -> dict[str, Converter]:
    """The converter of each `conv` that `resolve` assigns (other columns keep their text)."""
    return {
        **{name: checked_cast(name) for name in ("tinyint", "smallint", "int", "bigint", "float", "double")},
        "decimal": checked_decimal,
        "number": ob_types.CONVERTERS["number"],
        "date": checked_date,
        "timestamp": ob_types.TIMESTAMP_CONVERTER,
        "datetime": ob_types.DATETIME_CONVERTER,
        "binary": checked_base64 if binary_encoding == "base64" else _latin1_binary,
    }
