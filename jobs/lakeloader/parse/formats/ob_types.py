"""Column types of OceanBase Migration Service (OMS) messages -> Spark SQL types (seed 002).

OMS names column types in DataWorks 2.0 messages (`schema.column[].type`) and in DefaultExtendColumnType
messages (`__light_type.<col>.schemaType`) with SQL type names: the documents' examples use TINYINT,
SMALLINT, INT, INT64, BIGINT, FLOAT, DOUBLE, BOOLEAN, VARCHAR, VAR_STRING, BLOB, DECIMAL, DATE, TIME,
DATETIME, TIMESTAMP, ZONED_DATETIME, INTERVAL_DAY_TO_SECOND, INTERVAL_YEAR_TO_MONTH, and the general
format shows declarations such as `varchar(20)`. They are typed by the one mapping of source declarations,
lakeloader.parse.formats.source_types (the DDL path uses it too), with two OMS particulars: OMS names no
signedness, so each integer gets the type that also holds its UNSIGNED range (TINYINT -> smallint, SMALLINT and
MEDIUMINT -> int, INT -> bigint, BIGINT -> decimal(20,0): the examples send 10223372036854775806; INT64 ->
bigint), and Oracle tenants (dbType containing ORACLE) read DATE and TIMESTAMP as timestamp_ntz, INTEGER as
decimal(38,0) and FLOAT as the exact number text. Values are written as the type mapping tables of seed 002
say: integers and BOOL as numbers (BOOL 1/0), DECIMAL as exact text (without precision, or beyond 38 digits,
the column keeps that text), bytes as Base64, DATE as YYYY-MM-DD, TIME as HH:mm:ss[.nnnnnnnnn] (a string: it
may exceed 24 hours), DATETIME as a wall clock (timestamp_ntz), TIMESTAMP as an instant (timestamp, UTC).

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

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.parse.formats import source_types
from lakeloader.parse.formats.common import (
    Converter,
    checked_base64,
    checked_boolean,
    checked_cast,
    checked_date,
    checked_decimal,
    checked_finite,
    epoch_micros,
    number_text,
    spark_type_converters,
    timestamp_text,
)

MILLIS_THRESHOLD = 10**11


def _timestamp(v: Column, _type: Column | None = None) -> Column:
    """Canonical timestamp text (UTC) from OMS datetime text (with an optional zone id) or epoch numbers."""
    return _from_epoch_or_text(v, "timestamp")


def _datetime(v: Column, _type: Column | None = None) -> Column:
    """Canonical timestamp_ntz text (the wall clock) from OMS datetime text or epoch numbers."""
    return _from_epoch_or_text(v, "timestamp_ntz")


def _from_epoch_or_text(v: Column, text_type: str) -> Column:
    is_number = v.rlike(r"^-?[0-9]+(\.[0-9]*)?$")
    whole = F.abs(F.regexp_extract(v, r"^-?([0-9]+)", 1).try_cast("double"))
    micros = F.when(whole >= MILLIS_THRESHOLD, epoch_micros(v, 3)).otherwise(epoch_micros(v, 6))
    return timestamp_text(F.when(is_number, F.timestamp_micros(micros)).otherwise(v.try_cast(text_type)))


def _time_text(v: Column, _type: Column | None = None) -> Column:
    return F.when(v.rlike(r"^-?[0-9]{1,3}:[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?$"), v)


CONVERTERS: dict[str, Converter] = {
    **{name: checked_cast(name) for name in ("tinyint", "smallint", "int", "bigint")},
    "decimal": checked_decimal,
    "number": number_text,
    "float": checked_finite("float"),
    "double": checked_finite("double"),
    "ieee_float": checked_cast("float"),
    "ieee_double": checked_cast("double"),
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
    """struct(conv, type) for an OMS column type, by the one mapping of lakeloader.parse.formats.source_types;
    `oracle_tenant` (boolean) switches DATE, TIMESTAMP, FLOAT and INTEGER to their Oracle meaning. OMS names
    no signedness, so integers get the type that holds their UNSIGNED range too."""
    return source_types.resolve(wire_type, oracle=oracle_tenant, signedness_unknown=True)


def sampled_resolutions(messages: DataFrame, declarations: Column, oracle_tenant: Column) -> source_types.Resolutions:
    """The declarations of the batch's first messages, resolved once (`source_types.sampled_resolutions`)."""
    return source_types.sampled_resolutions(messages, declarations, oracle=oracle_tenant, signedness_unknown=True)


def table_resolver(resolutions: source_types.Resolutions, oracle_tenant: Column) -> source_types.Resolver:
    """`resolve` answered from `resolutions` where they hold the declaration (`source_types.table_resolver`)."""
    return source_types.table_resolver(resolutions, oracle=oracle_tenant, signedness_unknown=True)


# the Spark types whose converter here keeps the text of a value it accepts (`checked_cast`): with strings and
# decimals, the families a JVM common-case reader reads (jvm/src/lakeloader/jvm/ConfiguredImages.java)
_TEXT_KEPT = {"tinyint", "smallint", "int", "bigint", "float", "double"}


def kept_as_sent(resolutions: source_types.Resolutions) -> dict[str, dict[str, str]]:
    """The resolved declarations whose values keep their text as sent ("plain"/"oracle" -> declaration -> Spark
    type): strings without a converter, the integer and floating types read by `checked_cast` of their name, and
    decimals of at most 38 digits (`checked_decimal`). Any other (dates and times, bytes, exact text of longer
    decimals, Oracle's FLOAT as a number) converts its values."""

    def kept(conv: str | None, spark_type: str) -> bool:
        if conv is None:
            return spark_type == source_types.EXACT_TEXT
        return (conv == spark_type and conv in _TEXT_KEPT) or (conv == "decimal" and spark_type.startswith("decimal("))

    return {
        meaning: {
            text: spark_type for text, (conv, spark_type) in resolutions[oracle].items() if kept(conv, spark_type)
        }
        for meaning, oracle in (("plain", False), ("oracle", True))
    }


def is_oracle_tenant(db_type: Column) -> Column:
    """OB_ORACLE, OB_IN_ORACLE_MODE, ORACLE (any case)."""
    return F.coalesce(F.upper(db_type).contains("ORACLE"), F.lit(False))
