"""SQL column types of the source dialects (MySQL, Oracle, OceanBase) -> Spark SQL types (which type changes
are safe widenings: `lakeloader.ddl.widening`)."""

from __future__ import annotations

import re

from sqlglot import exp

T = exp.DataType.Type

_FIXED = {
    T.BOOLEAN: "boolean",
    T.BIT: "boolean",
    T.TINYINT: "int",
    T.UTINYINT: "int",
    T.SMALLINT: "int",
    T.USMALLINT: "int",
    T.MEDIUMINT: "int",
    T.UMEDIUMINT: "int",
    T.INT: "int",
    T.YEAR: "int",
    T.UINT: "bigint",
    T.BIGINT: "bigint",
    T.UBIGINT: "decimal(20,0)",
    T.FLOAT: "double",
    T.DOUBLE: "double",
    T.DATE: "date",
    T.DATETIME: "timestamp_ntz",
    T.DATETIME64: "timestamp_ntz",
    T.TIMESTAMP: "timestamp",
    T.TIMESTAMPTZ: "timestamp",
    T.TIMESTAMPLTZ: "timestamp",
    T.BINARY: "binary",
    T.VARBINARY: "binary",
    T.BLOB: "binary",
    T.LONGBLOB: "binary",
    T.MEDIUMBLOB: "binary",
    T.TINYBLOB: "binary",
}


def spark_type(data_type: exp.DataType) -> str:
    """The Spark SQL type a silver column of this source type gets; strings for everything textual or
    without an exact Spark equivalent (TIME, JSON, ENUM, SET, intervals, spatial types)."""
    kind = data_type.this
    if kind in _FIXED:
        return _FIXED[kind]
    if kind in (T.DECIMAL, T.UDECIMAL, T.BIGDECIMAL):
        return _decimal(data_type)
    return "string"


def _decimal(data_type: exp.DataType) -> str:
    """DECIMAL(p,s) and Oracle NUMBER: exact decimals; Oracle NUMBER(p) with p <= 18 as bigint, and
    NUMBER without precision (any number) as decimal(38,10)."""
    params = [int(e.name) for e in data_type.expressions if e.name.lstrip("-").isdigit()]
    if not params:
        return "decimal(38,10)"
    precision, scale = params[0], params[1] if len(params) > 1 else 0
    precision = min(precision, 38)
    if scale == 0 and precision <= 18:
        return "bigint"
    return f"decimal({precision},{max(0, min(scale, precision))})"


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
