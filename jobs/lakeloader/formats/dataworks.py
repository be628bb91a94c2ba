"""DataWorks JSON (versions 0.0.1 and 1.0.0; seeds 000/003, and DataHub BLOB topics in 001).

    {"schema": {"dataColumn": [{"name", "type"}], "primaryKey": [...], "source": {"dbType", "dbName",
     "schemaName", "tableName"}},
     "payload": {"before": {"dataColumn": {...}}, "after": {...}, "sequenceId": "...", "scn": "...",
                 "op": "...", "timestamp": {"eventTime": ms, ...}, "ddl": {"text": ...}},
     "version": "..."}

`op` is case-sensitive; real producers spell the first half of a two-message update UPDATE_BEFOR. A
one-message update is UPDATE_AFTER carrying both images (DataHub BLOB topics also say UPDATE). Heartbeats
(MHEARTBEAT) and transaction markers are kept in bronze as heartbeat/control rows but never loaded.
Tables without a primary key carry the row id column `#alibaba_rds_row_id#`, which then serves as key.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader import canonical as C
from lakeloader.config import SourceConfig
from lakeloader.formats.common import (
    REJECT_REASON,
    ValueType,
    as_canonical,
    canonical_image,
    checked_base64,
    checked_cast,
    declared_columns,
    epoch_millis_to_timestamp_text,
    first_reason,
    invalid_columns,
    parse_json,
)

ROW_ID_COLUMN = "#alibaba_rds_row_id#"

VALUE_TYPES = {
    "LONG": ValueType("bigint", checked_cast("bigint")),
    "DOUBLE": ValueType("double", checked_cast("double")),
    "BOOLEAN": ValueType("boolean", checked_cast("boolean")),
    "STRING": ValueType("string", lambda v: v),
    "DATE": ValueType("timestamp", epoch_millis_to_timestamp_text),
    "BYTES": ValueType("binary", checked_base64),
}

DATA_OPS = {
    "INSERT": C.INSERT,
    "UPDATE_BEFOR": C.UPDATE_BEFORE,
    "UPDATE_AFTER": C.UPDATE_AFTER,
    "UPDATE": C.UPDATE,
    "DELETE": C.DELETE,
}
DDL_OPS = ("CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX")
CONTROL_OPS = ("TRANSACTION_BEGIN", "TRANSACTION_END", "GTID", "XACOMMIT", "XAROLLBACK")
HEARTBEAT_OPS = ("MHEARTBEAT",)

_IMAGE = T.StructType([T.StructField("dataColumn", C.IMAGE_TYPE)])
MESSAGE_SCHEMA = T.StructType(
    [
        T.StructField(
            "schema",
            T.StructType(
                [
                    T.StructField("dataColumn", T.ArrayType(C.COLUMN_TYPE)),
                    T.StructField("primaryKey", T.ArrayType(T.StringType())),
                    T.StructField(
                        "source",
                        T.StructType(
                            [T.StructField(n, T.StringType()) for n in ("dbType", "dbName", "schemaName", "tableName")]
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
                    T.StructField("sequenceId", T.StringType()),
                    T.StructField("scn", T.StringType()),
                    T.StructField("op", T.StringType()),
                    T.StructField("timestamp", T.StructType([T.StructField("eventTime", T.LongType())])),
                    T.StructField("ddl", T.StructType([T.StructField("text", T.StringType())])),
                ]
            ),
        ),
        T.StructField("version", T.StringType()),
    ]
)


def parse(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine."""
    frame = parse_json(lines, MESSAGE_SCHEMA)
    payload, schema = F.col("j.payload"), F.col("j.schema")
    op = payload["op"]
    raw_before, raw_after = payload["before"]["dataColumn"], payload["after"]["dataColumn"]
    declared = F.map_from_entries(schema["dataColumn"])
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        op.alias("raw_op"),
        _kind(op).alias("kind"),
        _data_op(op, raw_before, raw_after).alias("op"),
        schema["source"]["dbName"].alias("db"),
        schema["source"]["schemaName"].alias("schema_name"),
        schema["source"]["tableName"].alias("table"),
        raw_before.alias("raw_before"),
        raw_after.alias("raw_after"),
        canonical_image(raw_before, declared, VALUE_TYPES).alias("before"),
        canonical_image(raw_after, declared, VALUE_TYPES).alias("after"),
        _primary_key(schema).alias("primary_key"),
        declared_columns(schema["dataColumn"], VALUE_TYPES).alias("columns"),
        payload["ddl"]["text"].alias("ddl"),
        payload["sequenceId"].alias("raw_seq"),
        payload["sequenceId"].try_cast(C.SEQ_TYPE).alias("seq"),
        F.when(payload["timestamp"]["eventTime"] > 0, F.timestamp_millis(payload["timestamp"]["eventTime"])).alias(
            "event_time"
        ),
    )
    is_data = F.col("kind") == C.DATA
    bad_values = F.array_union(
        invalid_columns(F.col("raw_before"), F.col("before")), invalid_columns(F.col("raw_after"), F.col("after"))
    )
    missing_key = F.filter("primary_key", lambda k: F.coalesce(F.col("after"), F.col("before"))[k].isNull())
    frame = frame.withColumn(
        REJECT_REASON,
        first_reason(
            (F.col("envelope_error").isNotNull(), F.col("envelope_error")),
            (F.col("raw_op").isNull(), "missing payload.op"),
            (F.col("kind").isNull(), F.concat(F.lit("unknown op '"), "raw_op", F.lit("'"))),
            (is_data & F.col("table").isNull(), "missing schema.source.tableName"),
            (is_data & F.col("seq").isNull(), "payload.sequenceId is missing or not a number"),
            (_missing_image(), F.concat(F.col("raw_op"), F.lit(" message without the image it needs"))),
            (
                is_data & (F.size(bad_values) > 0),
                F.concat(
                    F.lit("value does not match its declared type in column(s): "), F.array_join(bad_values, ", ")
                ),
            ),
            (
                is_data & (F.size(missing_key) > 0),
                F.concat(F.lit("primary key column(s) missing from the image: "), F.array_join(missing_key, ", ")),
            ),
        ),
    )
    return as_canonical(
        frame,
        kind=F.coalesce("kind", F.lit(C.DATA)),
        op=F.coalesce("op", "raw_op", F.lit("")),
        raw_op=F.col("raw_op"),
        db=F.col("db"),
        schema_name=F.col("schema_name"),
        table=F.col("table"),
        before=F.col("before"),
        after=F.col("after"),
        after_partial=F.lit(False),
        primary_key=F.col("primary_key"),
        columns=F.col("columns"),
        ddl=F.col("ddl"),
        seq=F.col("seq"),
        seq2=F.lit(0),
        event_time=F.col("event_time"),
    )


def _kind(op: Column) -> Column:
    return (
        F.when(op.isin(*DATA_OPS), F.lit(C.DATA))
        .when(op.isin(*DDL_OPS), F.lit(C.DDL))
        .when(op.isin(*HEARTBEAT_OPS), F.lit(C.HEARTBEAT))
        .when(op.isin(*CONTROL_OPS), F.lit(C.CONTROL))
    )


def _data_op(op: Column, before: Column, after: Column) -> Column:
    """The canonical op: an update message carrying both images is one UPDATE, whatever it is called."""
    both = before.isNotNull() & after.isNotNull()
    result = F.when(op.isin("UPDATE_AFTER", "UPDATE") & both, F.lit(C.UPDATE))
    result = result.when(op == "UPDATE", F.when(after.isNotNull(), F.lit(C.UPDATE_AFTER)).otherwise(C.UPDATE_BEFORE))
    for wire_op, canonical_op in DATA_OPS.items():
        result = result.when(op == wire_op, F.lit(canonical_op))
    return result.otherwise(op)


def _missing_image() -> Column:
    op, before, after = F.col("op"), F.col("before"), F.col("after")
    needs_after = op.isin(C.INSERT, C.UPDATE_AFTER, C.UPDATE) & after.isNull()
    needs_before = op.isin(C.DELETE, C.UPDATE_BEFORE, C.UPDATE) & before.isNull()
    return (F.col("kind") == C.DATA) & (needs_after | needs_before)


def _primary_key(schema: Column) -> Column:
    """The declared primary key; for a table without one, the row id column when the message has it."""
    declared = schema["primaryKey"]
    has_row_id = F.exists(schema["dataColumn"], lambda c: c["name"] == ROW_ID_COLUMN)
    return F.when(F.size(declared) > 0, declared).when(has_row_id, F.array(F.lit(ROW_ID_COLUMN)))
