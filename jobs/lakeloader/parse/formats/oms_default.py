"""OceanBase Migration Service "Default" JSON (seed 002, "Default JSON message format").

    {"prevStruct": {col: value}, "postStruct": {col: value},
     "allMetaData": {"checkpoint", "record_primary_key", "record_primary_value", "source_identity", "dbType",
                     "storeDataSequence", "table_name", "db", "timestamp", "uniqueId", "transId", "clusterId",
                     "ddlType"},
     "recordType": "INSERT/UPDATE/DELETE/HEARTBEAT/DDL"}

recordType: INSERT (postStruct), UPDATE (prevStruct and postStruct, full images), DELETE (prevStruct),
HEARTBEAT (no image), DDL (postStruct.ddl holds the statement; allMetaData.ddlType, e.g. ALTER_TABLE, is
not carried: the text says it). Anything else is rejected.

db: `allMetaData.db` as sent, which for OceanBase sources is `tenant.database` (for others, the database);
configuration names such tables `tenant.database.table`. table: `allMetaData.table_name`.
Key: `record_primary_key`, column names joined by \\u0001 (none for a table without a key).
`record_primary_value` is not read: the key's values are taken from the image like every column.

Ordering: `seq` is `allMetaData.timestamp` (whole seconds of the change, "available only for incremental
synchronization"), `seq2` is `storeDataSequence` ("used for sorting": a timestamp followed by a sequence
number, only sent when the source enables it; 0 otherwise). Ordering by (timestamp, storeDataSequence)
equals ordering by storeDataSequence when both are there and still works when it is not. Full-
synchronization records carry no timestamp: they get seq 0 and sort before every incremental change.
event_time is the timestamp, else a numeric `checkpoint` (the synchronization timestamp in seconds during
incremental synchronization; a primary-key position during full synchronization).

The Default format carries no column types: columns load as strings unless the source's `column_types`
configures them (Spark SQL types; values are read as OMS writes them, see `formats.ob_types`).
DefaultExtendColumnType (`formats.oms_extend`) is this format plus `__light_type` and reuses `build`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import ob_types
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    Converter,
    OpTable,
    WireFields,
    common_case_columns,
    configured_converters,
    configured_types,
    declare_names,
    epoch_micros,
    finish,
    image_names,
    integer_text,
    jvm_reading,
    parse_json,
    parsed_with_common_case,
    spark_typed,
    timestamp_of_micros,
    with_canonical_images,
    with_configured_types,
)
from lakeloader.spark import OMS_MESSAGE

KEY_SEPARATOR = "\u0001"
OPS = OpTable(data={"INSERT": C.INSERT, "UPDATE": C.UPDATE, "DELETE": C.DELETE}, ddl=("DDL",), heartbeat=("HEARTBEAT",))
WIRE = WireFields(
    op="recordType",
    db="allMetaData.db",
    table="allMetaData.table_name",
    seq_problem="allMetaData.timestamp is not a number of seconds",
    op_label="recordType",
)
META_FIELDS = (
    "checkpoint",
    "record_primary_key",
    "record_primary_value",
    "source_identity",
    "dbType",
    "storeDataSequence",
    "table_name",
    "db",
    "timestamp",
    "uniqueId",
    "transId",
    "clusterId",
    "ddlType",
)
MESSAGE_SCHEMA = T.StructType(
    [
        T.StructField("prevStruct", C.IMAGE_TYPE),
        T.StructField("postStruct", C.IMAGE_TYPE),
        T.StructField("allMetaData", T.StructType([T.StructField(n, T.StringType()) for n in META_FIELDS])),
        T.StructField("recordType", T.StringType()),
    ]
)
_SECONDS = r"^-?[0-9]+(\.[0-9]*)?$"

Declaration = Callable[[Column], tuple[Column, dict[str, Converter]]]
"""How a variant types its columns: image column names -> (typed columns, converters by key). It may use the
columns `db`, `table`, `db_type` and `sent_before`/`sent_after` (the images as sent)."""


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine.

    The common case (a data change whose images hold the same columns, every value a string or a number plainly
    of its column's type) is read by a JVM function in one pass (`read_common_case`); every other
    message, or every message without `common_case`, by the Spark SQL expressions of `build`, the reference that
    function is held to (tests/spark/test_format_oms_common_case.py)."""
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of Default messages: columns typed by the source's `column_types` (else strings)."""

    def declaration(names: Column) -> tuple[Column, dict[str, Converter]]:
        types = configured_types(source.column_types, F.col("db"), F.col("table"))
        return declare_names(names, types, spark_typed), ob_types.SPARK_TYPED_CONVERTERS

    return build(lines, declaration)


def reader(_lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader (`read_common_case`) and this parser's output columns from its fields."""
    return CommonCase(
        read_common_case(source), from_common_case(F.col(COMMON_CASE)), rest=lambda ls: _parsed(ls, source)
    )


def read_common_case(source: SourceConfig, light_types: Mapping[str, Mapping[str, str]] | None = None) -> Column:
    """Each line as lakeloader/jvm/OmsMessages.java reads it: the common case's fields
    (`lakeloader.spark.OMS_COMMON_CASE`), NULL for any other message. It is given the source's configured column
    types and this module's data ops and key separator, so that they are written once; `light_types`
    (DefaultExtendColumnType: `ob_types.kept_as_sent` of the batch's declarations) has it read `__light_type`."""
    settings = {
        "column_types": source.column_types,
        "data_ops": dict(OPS.data),
        "key_separator": KEY_SEPARATOR,
    }
    if light_types is not None:
        settings["light_types"] = light_types
    return jvm_reading(OMS_MESSAGE, settings)


def from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields. It reads the sequences and the time's
    microseconds as `_seq`, `integer_text` and `_event_time` would: with those expressions' regular expressions over
    each row's texts, a million messages' warm parse took 5.2-5.8 s, without 4.9-5.4 (docs/performance.md)."""
    return common_case_columns(common, ("raw_op", "op", "db", "table", "before", "after", "primary_key")) | {
        "seq": common["seq"].cast(C.SEQ_TYPE),
        "seq2": common["seq2"].cast(C.SEQ_TYPE),
        "event_time": timestamp_of_micros(common["event_micros"]),
    }


def _time_text(timestamp: Column, checkpoint: Column) -> Column:
    """The change's time as sent: the timestamp, else a checkpoint that is a number of seconds."""
    return F.coalesce(timestamp, F.when(checkpoint.rlike(_SECONDS), checkpoint))


def _seq(time_text: Column) -> Column:
    """The time's whole seconds; 0 without a time (a full-load record), NULL for a time that is no number."""
    seconds = F.nullif(F.regexp_extract(time_text, r"^(-?[0-9]+)(\.[0-9]*)?$", 1), F.lit(""))
    return F.when(time_text.isNull(), F.lit(0)).otherwise(integer_text(seconds))


def _event_time(time_text: Column) -> Column:
    return timestamp_of_micros(epoch_micros(time_text, 6))


def build(
    lines: DataFrame,
    declaration: Declaration,
    metadata_keys: tuple[str, ...] = (),
    column_types: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """The Default format's parse; the variant says how columns are typed and which image keys are
    metadata rather than columns; `column_types` (configured) wins over the variant's types."""
    frame = parse_json(lines, MESSAGE_SCHEMA)
    meta, op = F.col("j.allMetaData"), F.col("j.recordType")
    kind = OPS.kind(op)
    is_data = kind == C.DATA
    time_text = _time_text(meta["timestamp"], meta["checkpoint"])
    key = meta["record_primary_key"]
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        op.alias("raw_op"),
        kind.alias("kind"),
        OPS.canonical(op).alias("op"),
        meta["db"].alias("db"),
        meta["table_name"].alias("table"),
        meta["dbType"].alias("db_type"),
        F.when(is_data, F.col("j.prevStruct")).alias("sent_before"),
        F.when(is_data, F.col("j.postStruct")).alias("sent_after"),
        F.when(key != "", F.split(key, KEY_SEPARATOR)).alias("primary_key"),
        F.when(kind == C.DDL, F.col("j.postStruct")["ddl"]).alias("ddl"),
        _seq(time_text).alias("seq"),
        meta["storeDataSequence"].alias("raw_seq2"),
        integer_text(meta["storeDataSequence"]).alias("seq2"),
        _event_time(time_text).alias("event_time"),
    )

    def columns_only(image: Column) -> Column:
        return F.map_filter(image, lambda k, _v: ~k.isin(*metadata_keys)) if metadata_keys else image

    frame = frame.withColumns(
        {"raw_before": columns_only(F.col("sent_before")), "raw_after": columns_only(F.col("sent_after"))}
    )
    names = image_names(F.col("raw_after"), F.col("raw_before"))
    typed, converters = declaration(names)
    frame = frame.withColumn("typed", F.when(F.col("kind") == C.DATA, typed))
    frame = with_configured_types(frame, column_types or {})
    configured = configured_converters(ob_types.SPARK_TYPED_CONVERTERS, column_types or {})
    frame = with_canonical_images(frame, converters | configured)
    bad_sequence = (F.col("kind") == C.DATA) & F.col("raw_seq2").isNotNull() & F.col("seq2").isNull()
    return finish(frame, WIRE, after_op=[(bad_sequence, "allMetaData.storeDataSequence is not a number")])
