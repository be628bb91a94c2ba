"""SQL column types of the source dialects (MySQL, Oracle, OceanBase) in DDL -> Spark SQL types (by the mapping
the data path shares, lakeloader.parse.formats.source_types; which type changes are safe widenings:
`lakeloader.apply.ddl.widening`)."""

from __future__ import annotations

import re

from sqlglot import exp

from lakeloader.parse.formats import source_types


def spark_type(data_type: exp.DataType, dialect: str = "mysql", declared: str | None = None) -> str:
    """The Spark SQL type a silver column of this source type gets: the declaration as the source dialect
    writes it ('TINYINT(1)', 'DECIMAL(65, 30)', Oracle 'NUMBER(10)'), typed by the one mapping that the message
    path uses too (lakeloader.parse.formats.source_types), so a column added by DDL has the type its values arrive
    with. BIT is binary, as OMS sends it (open-source Canal sends BIT values as numbers: decimal(20,0)).

    `declared`: the type as the statement wrote it. Oracle's is typed from that text, since sqlglot's
    rendering loses a distinction Oracle makes (BINARY_FLOAT comes back as FLOAT, a binary-precision NUMBER)."""
    if dialect == "oracle" and declared:
        return source_types.spark_type_of(declared, oracle=True).spark_type
    declaration = data_type.sql(dialect="oracle" if dialect == "oracle" else "mysql")
    return source_types.spark_type_of(declaration, oracle=dialect == "oracle").spark_type


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def arrow_type(spark_type_name: str):
    """The Arrow type delta-rs stores for a Spark SQL type name (as the apply job's change sets carry it)."""
    import pyarrow as pa

    simple = {
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "double": pa.float64(),
        "float": pa.float32(),
        "string": pa.string(),
        "binary": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"),
        "smallint": pa.int16(),
        "tinyint": pa.int8(),
    }
    if spark_type_name in simple:
        return simple[spark_type_name]
    if match := _DECIMAL.fullmatch(spark_type_name.replace(" ", "")):
        return pa.decimal128(int(match[1]), int(match[2]))
    raise ValueError(f"no Arrow type for Spark type {spark_type_name!r}")


def spark_type_of_arrow(arrow) -> str:
    """The inverse of `arrow_type`, for comparing a silver column's type with a declared one."""
    import pyarrow as pa

    if pa.types.is_decimal(arrow):
        return f"decimal({arrow.precision},{arrow.scale})"
    for name in (
        "boolean",
        "int",
        "bigint",
        "double",
        "float",
        "string",
        "binary",
        "date",
        "smallint",
        "tinyint",
    ):
        if arrow == arrow_type(name):
            return name
    if pa.types.is_timestamp(arrow):  # any unit: a zone makes it an instant
        return "timestamp" if arrow.tz else "timestamp_ntz"
    if pa.types.is_large_string(arrow) or pa.types.is_string_view(arrow):
        return "string"
    if pa.types.is_large_binary(arrow) or pa.types.is_binary_view(arrow):
        return "binary"
    return str(arrow)
