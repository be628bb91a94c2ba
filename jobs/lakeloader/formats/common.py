"""Machinery every format parser shares: numbered lines, JSON envelopes, typed images, rejection reasons.

A parser is a function `(lines, source) -> DataFrame` that returns CHANGE_SCHEMA's columns plus
`reject_reason` (NULL for a good message) and `text` (the original line). `lakeloader.parse` splits the
result into bronze and quarantine, so every line ends up in exactly one of them.
All of it is Spark SQL expressions: no Python UDFs on the message path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.canonical import CHANGE_SCHEMA

REJECT_REASON = "reject_reason"
CORRUPT = "_corrupt_record"


@dataclass(frozen=True)
class ValueType:
    """How one wire-format type maps to a Spark SQL type, and how its JSON text becomes canonical text."""

    spark_type: str
    to_canonical: Callable[[Column], Column]


def checked_cast(spark_type: str) -> Callable[[Column], Column]:
    """Keep the text when it casts to `spark_type`, NULL otherwise (NULL marks the value invalid)."""
    return lambda v: F.when(v.try_cast(spark_type).isNotNull(), v)


def epoch_millis_to_timestamp_text(v: Column) -> Column:
    return F.date_format(F.timestamp_millis(v.try_cast("bigint")), "yyyy-MM-dd HH:mm:ss.SSS")


def checked_base64(v: Column) -> Column:
    return F.when(F.try_to_binary(v, F.lit("base64")).isNotNull(), v)


def parse_json(lines: DataFrame, schema: T.StructType) -> DataFrame:
    """Adds `j` (the parsed message) and `envelope_error` (why the line is not a JSON object, or NULL)."""
    with_corrupt = T.StructType([*schema.fields, T.StructField(CORRUPT, T.StringType())])
    parsed = F.from_json("text", with_corrupt, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    return lines.withColumn("j", parsed).withColumn(
        "envelope_error",
        F.when(F.trim("text") == "", F.lit("empty line")).when(
            F.col("j").isNull() | F.col(f"j.{CORRUPT}").isNotNull(), F.lit("malformed JSON: not a JSON object")
        ),
    )


def first_reason(*checks: tuple[Column, str | Column]) -> Column:
    """The first failing check's message (checks are (condition that means 'bad', message))."""
    return F.coalesce(
        *[F.when(bad, message if isinstance(message, Column) else F.lit(message)) for bad, message in checks]
    )


def canonical_image(image: Column, declared: Column, value_types: dict[str, ValueType]) -> Column:
    """Map each value of `image` to canonical text using the column's declared wire type.

    `declared` is a map column name -> wire type. Unknown wire types and undeclared columns keep their
    text (as strings). An invalid value becomes NULL, which `invalid_columns` then reports.
    """

    def convert(name: Column, value: Column) -> Column:
        wire_type = F.element_at(declared, name)
        result = None
        for type_name, value_type in value_types.items():
            branch = value_type.to_canonical(value)
            result = (
                F.when(wire_type == type_name, branch)
                if result is None
                else result.when(wire_type == type_name, branch)
            )
        return value if result is None else result.otherwise(value)

    return F.transform_values(image, convert)


def invalid_columns(image: Column, canonical: Column) -> Column:
    """Names of columns whose value was present in `image` but did not convert (empty for no image)."""
    invalid = F.filter(
        F.map_keys(image),
        lambda name: F.element_at(image, name).isNotNull() & F.element_at(canonical, name).isNull(),
    )
    return F.coalesce(invalid, F.array().cast(T.ArrayType(T.StringType())))


def declared_columns(columns: Column, value_types: dict[str, ValueType]) -> Column:
    """An array of (name, wire type) structs with each wire type replaced by its Spark SQL type."""

    def spark_type(column: Column) -> Column:
        wire_type = column["type"]
        result = None
        for type_name, value_type in value_types.items():
            result = (F.when if result is None else result.when)(wire_type == type_name, F.lit(value_type.spark_type))
        return F.struct(column["name"].alias("name"), result.otherwise(F.lit("string")).alias("type"))

    return F.transform(columns, spark_type)


def as_canonical(frame: DataFrame, **columns: Column) -> DataFrame:
    """Select CHANGE_SCHEMA's columns (with their types) from expressions, plus rejection and text.

    Columns not given are NULL; the origin and batch columns come from the numbered lines.
    """
    given = {name: F.col(name) for name in ("source", "origin_file", "origin_line", "batch_hour")}
    given = given | {"origin_index": F.lit(0)} | columns
    selected = [
        given.get(field.name, F.lit(None)).cast(field.dataType).alias(field.name) for field in CHANGE_SCHEMA.fields
    ]
    return frame.select(*selected, F.col(REJECT_REASON), F.col("text"))
