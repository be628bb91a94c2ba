"""DataWorks JSON (versions 0.0.1 and 1.0.0; seeds 000/003, and DataHub BLOB topics in 001).

    {"schema": {"dataColumn": [{"name", "type"}], "primaryKey": [...], "source": {"dbType", "dbVersion",
     "dbName", "schemaName", "tableName"}},
     "payload": {"before": {"dataColumn": {...}}, "after": {...}, "sequenceId": "...", "scn": "...",
                 "op": "...", "timestamp": {"eventTime": ms, ...}, "ddl": {"text": ..., "ddlMeta": ...}},
     "version": "..."}

`op` is case-sensitive; real producers spell the first half of a two-message update UPDATE_BEFOR. A
one-message update is UPDATE_AFTER carrying both images (DataHub BLOB topics also say UPDATE). Heartbeats
(MHEARTBEAT) and transaction markers are kept in bronze as heartbeat/control rows but never loaded; DDL
ops keep `payload.ddl.text` (`ddlMeta`, a serialized Java object, is not read).

Ordering: `sequenceId` alone. Both documents define it as the unique sequence of every record after full
and incremental data are merged, shared only by the two halves of an update, so it is a total order and
`seq2` stays 0. `scn` (Oracle sources only) is not part of the key: it carries no order the sequence
does not already give, full-load records have none, and the documents give it as an opaque string.

Keys: the declared `primaryKey`; for a table without one, the row id column DataWorks adds:
`#alibaba_rds_row_id#` (MySQL), or `rowid` when the source's dbType is Oracle (the Oracle ROWID,
added to every Oracle row as a STRING column).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    OpTable,
    ValueType,
    WireFields,
    checked_base64,
    checked_cast,
    checked_date,
    common_case_columns,
    configured_converters,
    converters_of,
    declare,
    epoch_millis_to_timestamp_text,
    epoch_or_text,
    finish,
    fixed_types,
    integer_text,
    jvm_reading,
    keep_text,
    number_text,
    parse_json,
    parsed_with_common_case,
    schema_qualified,
    spark_type_converters,
    timestamp_of_millis,
    with_canonical_images,
    with_configured_types,
)
from lakeloader.spark import DATAWORKS_MESSAGE

VERSIONS = ("0.0.1", "1.0.0")
"""The versions of the format the documents show (a message without `version` is read too; 2.0 is `dataworks_v2`)."""

ROW_ID_COLUMN = "#alibaba_rds_row_id#"
ORACLE_ROW_ID_COLUMN = "rowid"


def _exact_number(v: Column, _type: Column | None = None) -> Column:
    """A DOUBLE value as the exact number text it was sent with (NaN and +-Infinity, a Java double's other
    values, kept as written); NULL when it is no number."""
    return F.coalesce(number_text(v), F.when(v.isin("NaN", "Infinity", "-Infinity"), v))


def _json_boolean(v: Column, _type: Column | None = None) -> Column:
    """A BOOLEAN value: JSON's true or false, the documents' only valid values (Spark's cast would also take
    "yes", "t" or 1); NULL for any other."""
    return F.when(v.isin("true", "false"), v)


VALUE_TYPES = {
    "LONG": ValueType("bigint", checked_cast("bigint")),
    # DataWorks maps MySQL DECIMAL, BIGINT UNSIGNED, FLOAT and DOUBLE (Oracle NUMBER ...) to DOUBLE but sends the
    # source value's exact text: a Spark double would lose digits (9223372036854775808 -> 9223372036854776000),
    # and no decimal(p,s) holds every such value, so a DOUBLE column keeps that text. `column_types` gives it a
    # numeric type (decimal(p,s): values must fit exactly; double: rounded to the nearest double).
    "DOUBLE": ValueType("string", _exact_number),
    "BOOLEAN": ValueType("boolean", _json_boolean),
    "STRING": ValueType("string", keep_text),
    "DATE": ValueType("timestamp", epoch_millis_to_timestamp_text),
    "BYTES": ValueType("binary", checked_base64),
}

DAY_MILLIS = 86_400_000


def _date(v: Column, _type: Column | None = None) -> Column:
    """A date-configured column: 'YYYY-MM-DD', or a DATE value (epoch milliseconds) at midnight UTC."""
    millis = F.when(v.rlike(r"^-?[0-9]{1,18}$"), v.try_cast("bigint"))
    return F.coalesce(
        checked_date(v),
        F.when(F.pmod(millis, F.lit(DAY_MILLIS)) == 0, F.to_date(timestamp_of_millis(millis)).cast("string")),
    )


# columns typed by configuration (`column_types`): a DATE value is epoch milliseconds, text is read too
CONFIGURED_BY_FAMILY = spark_type_converters(
    timestamp=epoch_or_text(3, "timestamp"), timestamp_ntz=epoch_or_text(3, "timestamp_ntz")
) | {"date": _date}

OPS = OpTable(
    data={
        "INSERT": C.INSERT,
        "UPDATE_BEFOR": C.UPDATE_BEFORE,
        "UPDATE_AFTER": C.UPDATE_AFTER,
        "UPDATE": C.UPDATE,
        "DELETE": C.DELETE,
    },
    ddl=("CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX"),
    heartbeat=("MHEARTBEAT",),
    control=("TRANSACTION_BEGIN", "TRANSACTION_END", "GTID", "XACOMMIT", "XAROLLBACK"),
)
WIRE = WireFields(
    op="payload.op",
    db="schema.source.dbName",
    table="schema.source.tableName",
    seq_problem="payload.sequenceId is missing or not a number",
    declarations="schema.dataColumn",
)

_STRING = T.StringType()
_IMAGE = T.StructType([T.StructField("dataColumn", C.IMAGE_TYPE)])
MESSAGE_SCHEMA = T.StructType(
    [
        T.StructField(
            "schema",
            T.StructType(
                [
                    T.StructField("dataColumn", T.ArrayType(C.COLUMN_TYPE)),
                    T.StructField("primaryKey", T.ArrayType(_STRING)),
                    T.StructField(
                        "source",
                        T.StructType(
                            [
                                T.StructField(n, _STRING)
                                for n in ("dbType", "dbVersion", "dbName", "schemaName", "tableName")
                            ]
                        ),
                    ),
                ]
            ),
        ),
        T.StructField(
            "payload",
            T.StructType(
                [
                    T.StructField("before", _IMAGE),
                    T.StructField("after", _IMAGE),
                    T.StructField("sequenceId", _STRING),
                    T.StructField("scn", _STRING),
                    T.StructField("op", _STRING),
                    T.StructField("timestamp", T.StructType([T.StructField("eventTime", _STRING)])),
                    T.StructField("ddl", T.StructType([T.StructField("text", _STRING)])),
                ]
            ),
        ),
        T.StructField("version", _STRING),
    ]
)


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine.

    The common case (a data change whose images hold its declared columns in order, each value plainly of its
    type) is read by a JVM function in one pass (`read_common_case`); every other message, or every message
    without `common_case`, by the Spark SQL expressions below, the reference that function is held to
    (tests/spark/test_format_dataworks_common_case.py)."""
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def reader(lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader (`read_common_case`) and this parser's output columns from its fields."""
    return CommonCase(
        read_common_case(lines, source), _from_common_case(F.col(COMMON_CASE)), rest=lambda ls: _parsed(ls, source)
    )


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of every message."""
    frame = parse_json(lines, MESSAGE_SCHEMA)
    payload, schema = F.col("j.payload"), F.col("j.schema")
    origin = schema["source"]
    op = payload["op"]
    raw_before, raw_after = payload["before"]["dataColumn"], payload["after"]["dataColumn"]
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        F.col("j.version").alias("version"),
        op.alias("raw_op"),
        OPS.kind(op).alias("kind"),
        _data_op(op, raw_before, raw_after).alias("op"),
        schema_qualified(origin["dbName"], origin["schemaName"], source.unqualified_schemas).alias("db"),
        origin["schemaName"].alias("schema_name"),
        origin["tableName"].alias("table"),
        raw_before.alias("raw_before"),
        raw_after.alias("raw_after"),
        declare(schema["dataColumn"], fixed_types(VALUE_TYPES)).alias("typed"),
        _primary_key(schema).alias("primary_key"),
        payload["ddl"]["text"].alias("ddl"),
        integer_text(payload["sequenceId"]).alias("seq"),
        _event_time(payload["timestamp"]["eventTime"]).alias("event_time"),
    )
    frame = with_configured_types(frame, source.column_types)
    configured = configured_converters(CONFIGURED_BY_FAMILY, source.column_types)
    frame = with_canonical_images(frame, converters_of(VALUE_TYPES) | configured)
    version = F.col("version")
    unsupported = F.concat(F.lit("unsupported version '"), version, F.lit(f"' (expected {' or '.join(VERSIONS)})"))
    return finish(frame, WIRE, before_op=[(~version.isin(*VERSIONS), unsupported)])


def read_common_case(lines: DataFrame, source: SourceConfig) -> Column:
    """Each line as lakeloader/jvm/DataWorksMessages.java reads it: the common case's fields
    (`lakeloader.spark.DATAWORKS_COMMON_CASE`), NULL for any other message. It is given the session's time zone
    (DATE values are rendered in it), the source's configured column types and unqualified schemas and this module's
    tables (wire types, data ops, row id columns), so that they are written once."""
    settings = {
        "time_zone": lines.sparkSession.conf.get("spark.sql.session.timeZone"),
        "column_types": source.column_types,
        "wire_types": {wire: value_type.spark_type for wire, value_type in VALUE_TYPES.items()},
        "data_ops": dict(OPS.data),
        "row_ids": [ROW_ID_COLUMN, ORACLE_ROW_ID_COLUMN],  # as `_primary_key` tries them
        "unqualified_schemas": list(source.unqualified_schemas),
        "versions": list(VERSIONS),
    }
    return jvm_reading(DATAWORKS_MESSAGE, settings)


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields (which read the sequence as `integer_text`
    would), with the parser's own expression where it passes a field on as sent (the event time)."""
    passed = ("raw_op", "op", "db", "schema_name", "table", "before", "after", "primary_key")
    return common_case_columns(common, passed) | {
        "seq": common["seq"].cast(C.SEQ_TYPE),
        "event_time": _event_time(common["event_time"]),
    }


def _event_time(text: Column) -> Column:
    """payload.timestamp.eventTime (epoch milliseconds) as a timestamp; NULL unless a positive number."""
    millis = text.try_cast("bigint")
    return F.when(millis > 0, timestamp_of_millis(millis))


def _data_op(op: Column, before: Column, after: Column) -> Column:
    """The canonical op: an update message carrying both images is one UPDATE, whatever it is called;
    an UPDATE with one image is the half of a two-message update that image says."""
    both = before.isNotNull() & after.isNotNull()
    return (
        F.when(op.isin("UPDATE_AFTER", "UPDATE") & both, F.lit(C.UPDATE))
        .when(op == "UPDATE", F.when(after.isNotNull(), F.lit(C.UPDATE_AFTER)).otherwise(C.UPDATE_BEFORE))
        .otherwise(OPS.canonical(op))
    )


def _primary_key(schema: Column) -> Column:
    """The declared primary key; for a table without one, the row id column when the message has it."""
    declared = schema["primaryKey"]

    def has(name: str) -> Column:
        return F.exists(schema["dataColumn"], lambda c: c["name"] == name)

    oracle = F.lower(schema["source"]["dbType"]).contains("oracle")
    return (
        F.when(F.size(declared) > 0, declared)
        .when(has(ROW_ID_COLUMN), F.array(F.lit(ROW_ID_COLUMN)))
        .when(oracle & has(ORACLE_ROW_ID_COLUMN), F.array(F.lit(ORACLE_ROW_ID_COLUMN)))
    )
