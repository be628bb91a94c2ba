"""Column types of OceanBase Migration Service (OMS) messages -> Spark SQL types (seed 002).

OMS names column types in DataWorks 2.0 messages (`schema.column[].type`) and in DefaultExtendColumnType
messages (`__light_type.<col>.schemaType`) with SQL type names: the documents' examples use TINYINT,
SMALLINT, INT, INT64, BIGINT, FLOAT, DOUBLE, BOOLEAN, VARCHAR, VAR_STRING, BLOB, DECIMAL, DATE, TIME,
DATETIME, TIMESTAMP, ZONED_DATETIME, INTERVAL_DAY_TO_SECOND, INTERVAL_YEAR_TO_MONTH, and the general
format shows declarations such as `varchar(20)`. Names are matched case-insensitively, with any
`(...)` parameters and UNSIGNED/SIGNED/ZEROFILL stripped; DECIMAL/NUMERIC/NUMBER parameters are kept.

How values are written follows the type mapping tables of seed 002 (MySQL and Oracle tenants):

    TINYINT, SMALLINT, MEDIUMINT, INT, INTEGER, INT64, YEAR -> bigint (the documents' "Long"; bigint
        holds every signed and unsigned value of these)
    BIGINT -> decimal(20,0) (BIGINT UNSIGNED exceeds bigint: the examples send 10223372036854775806)
    DECIMAL, NUMERIC, NUMBER (p,s) or (p) -> decimal(p,s) / decimal(p,0) when 0 <= s <= p <= 38; without
        parameters or beyond Spark's range -> string holding the exact number text ("BigDecimal",
        possibly in scientific notation; checked to be a number)
    FLOAT, BINARY_FLOAT -> float (7 significant digits); DOUBLE, REAL, BINARY_DOUBLE -> double
    BOOL, BOOLEAN -> boolean (sent as 1/0; true/false accepted too)
    CHAR, VARCHAR, VAR_STRING, TEXT types, ENUM, SET, JSON, VARCHAR2, NVARCHAR2, CLOB, NCLOB, ROWID, UROWID,
        INTERVAL_* -> string (Delta has no interval type)
    BIT, BINARY, VARBINARY, BLOB types, RAW, BFILE, BYTES -> binary (sent as Base64)
    DATE -> date (YYYY-MM-DD)
    DATETIME -> timestamp_ntz (a wall clock without zone)
    TIMESTAMP, TIMESTAMP WITH [LOCAL] TIME ZONE, ZONED_DATETIME -> timestamp (an instant, in UTC; below)
    TIME -> string (HH:mm:ss[.nnnnnnnnn], -838:59:59 to 838:59:59 in MySQL; Spark has no time type)
    Oracle tenants (dbType containing ORACLE): DATE and TIMESTAMP -> timestamp_ntz (an Oracle DATE has a
        time of day, neither has a zone), INTEGER -> decimal(38,0) (NUMBER(38)), FLOAT -> string (a NUMBER
        with binary precision)
    anything else -> string, the text as sent

Date-times arrive as text `YYYY-MM-DD HH:mm:ss[.nnnnnnnnn] [zoneId]`: a timestamp_ntz column keeps the wall
clock as written (a zone id, which DATETIME values normally lack, is ignored), a timestamp column reads the
text in its zone (UTC without one). Timestamps also arrive as epoch seconds `sec[.nnnnnnnnn]` (TIMESTAMP of
MySQL tenants), or, in the DataWorks 2.0 format description, as epoch milliseconds with a 13-digit integer
part and 9 fraction digits; an epoch number in a timestamp_ntz column is its UTC wall clock. Epoch numbers of
1e11 or more are milliseconds (as seconds they would lie after the year 5000; as milliseconds, smaller ones
lie before March 1973). Canonical text keeps what Spark holds: microseconds, further digits truncated.
Invalid values (OMS sends zero dates such as 0000-00-00 as they are) do not convert, so their message goes
to quarantine.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakeloader.formats.common import (
    Converter,
    checked_base64,
    checked_boolean,
    checked_cast,
    checked_date,
    checked_decimal,
    epoch_micros,
    let,
    number_text,
    spark_type_converters,
    timestamp_text,
)

MILLIS_THRESHOLD = 10**11

INTEGER_TYPES = ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "INT64", "YEAR")
DECIMAL_TYPES = ("DECIMAL", "NUMERIC", "NUMBER", "DEC", "FIXED")
BINARY_TYPES = (
    "BIT",
    "BINARY",
    "VARBINARY",
    "TINYBLOB",
    "BLOB",
    "MEDIUMBLOB",
    "LONGBLOB",
    "RAW",
    "LONG RAW",
    "BFILE",
    "BYTES",
)
TIMESTAMP_TYPES = (
    "TIMESTAMP",
    "ZONED_DATETIME",
    "TIMESTAMP WITH TIME ZONE",
    "TIMESTAMP WITH LOCAL TIME ZONE",
)


def _timestamp(v: Column, _type: Column = None) -> Column:
    """Canonical timestamp text (UTC) from OMS datetime text (with an optional zone id) or epoch numbers."""
    return _from_epoch_or_text(v, "timestamp")


def _datetime(v: Column, _type: Column = None) -> Column:
    """Canonical timestamp_ntz text (the wall clock) from OMS datetime text or epoch numbers."""
    return _from_epoch_or_text(v, "timestamp_ntz")


def _from_epoch_or_text(v: Column, text_type: str) -> Column:
    is_number = v.rlike(r"^-?[0-9]+(\.[0-9]*)?$")
    whole = F.abs(F.regexp_extract(v, r"^-?([0-9]+)", 1).try_cast("double"))
    micros = F.when(whole >= MILLIS_THRESHOLD, epoch_micros(v, 3)).otherwise(epoch_micros(v, 6))
    return timestamp_text(F.when(is_number, F.timestamp_micros(micros)).otherwise(v.try_cast(text_type)))


def _time_text(v: Column, _type: Column = None) -> Column:
    return F.when(v.rlike(r"^-?[0-9]{1,3}:[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?$"), v)


CONVERTERS: dict[str, Converter] = {
    "bigint": checked_cast("bigint"),
    "decimal": checked_decimal,
    "number": number_text,
    "float": checked_cast("float"),
    "double": checked_cast("double"),
    "boolean": checked_boolean,
    "binary": checked_base64,
    "date": checked_date,
    "time": _time_text,
    "timestamp": _timestamp,
    "datetime": _datetime,
}
TIMESTAMP_CONVERTER, DATETIME_CONVERTER = _timestamp, _datetime
# columns of OMS formats typed by configuration (`column_types`)
SPARK_TYPED_CONVERTERS = spark_type_converters(_timestamp, _datetime)


def resolve(wire_type: Column, oracle_tenant: Column) -> Column:
    """struct(conv, type) for an OMS column type; `oracle_tenant` (boolean) switches DATE, FLOAT and
    INTEGER to their Oracle meaning."""
    upper = F.upper(F.trim(wire_type))
    base = F.regexp_replace(F.regexp_replace(upper, r"\([^)]*\)", ""), r"\s+(UNSIGNED|SIGNED|ZEROFILL)\b", "")
    parsed = F.struct(
        F.regexp_replace(F.trim(base), r"\s+", " ").alias("base"),
        F.regexp_extract(upper, r"\(\s*([0-9]+)", 1).try_cast("int").alias("precision"),
        F.coalesce(F.regexp_extract(upper, r"\(\s*[0-9]+\s*,\s*(-?[0-9]+)\s*\)", 1).try_cast("int"), F.lit(0)).alias(
            "scale"
        ),
    )
    return let(parsed, lambda declared: _resolve_parsed(declared, oracle_tenant))


def _resolve_parsed(declared: Column, oracle_tenant: Column) -> Column:
    base, precision, scale = declared["base"], declared["precision"], declared["scale"]
    fits_spark = precision.between(1, 38) & scale.between(0, 38) & (scale <= precision)

    def to(conv: str, spark_type: str | Column) -> Column:
        type_col = spark_type if isinstance(spark_type, Column) else F.lit(spark_type)
        return F.struct(F.lit(conv).alias("conv"), type_col.alias("type"))

    return (
        F.when(
            base.isin(*DECIMAL_TYPES) & fits_spark, to("decimal", F.format_string("decimal(%d,%d)", precision, scale))
        )
        .when(base.isin(*DECIMAL_TYPES), to("number", "string"))
        .when(oracle_tenant & (base == "INTEGER"), to("decimal", "decimal(38,0)"))
        .when(oracle_tenant & (base == "FLOAT"), to("number", "string"))
        .when(oracle_tenant & base.isin("DATE", "TIMESTAMP"), to("datetime", "timestamp_ntz"))
        .when(base.isin(*INTEGER_TYPES), to("bigint", "bigint"))
        .when(base == "BIGINT", to("decimal", "decimal(20,0)"))
        .when(base.isin("FLOAT", "BINARY_FLOAT"), to("float", "float"))
        .when(base.isin("DOUBLE", "DOUBLE PRECISION", "REAL", "BINARY_DOUBLE"), to("double", "double"))
        .when(base.isin("BOOL", "BOOLEAN"), to("boolean", "boolean"))
        .when(base.isin(*BINARY_TYPES), to("binary", "binary"))
        .when(base == "DATE", to("date", "date"))
        .when(base == "TIME", to("time", "string"))
        .when(base == "DATETIME", to("datetime", "timestamp_ntz"))
        .when(base.isin(*TIMESTAMP_TYPES), to("timestamp", "timestamp"))
        .otherwise(F.struct(F.lit(None).cast("string").alias("conv"), F.lit("string").alias("type")))
    )


def is_oracle_tenant(db_type: Column) -> Column:
    """OB_ORACLE, OB_IN_ORACLE_MODE, ORACLE (any case)."""
    return F.coalesce(F.upper(db_type).contains("ORACLE"), F.lit(False))
