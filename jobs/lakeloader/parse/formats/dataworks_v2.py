"""DataWorks 2.0 JSON as OceanBase Migration Service writes it (seed 002, "Dataworks JSON message format").

    {"version": "2.0",
     "schema": {"source": {"dbType", "dbVersion", "dbName", "schema", "table"},
                "column": [{"name", "type"}], "pk": [...]},
     "payload": {"before": {"data": {...}}, "after": {"data": {...}}, "op": "...",
                 "timestamp": {"eventTime": ms, "systemTime": ms, "checkpointTime": s},
                 "ddl": {"text": "..."}, "scn": "..."},
     "extend": {...}}

Ops (case-sensitive): INSERT, UPDATE (both images), DELETE; HEARTBEAT (a message with only version and
payload.timestamp); DDL ops CREATE, ALTER, ERASE, QUERY, TRUNCATE, RENAME, CINDEX, DINDEX with ddl.text;
control ops TRANSACTION_BEGIN, TRANSACTION_END, GTID, XACOMMIT, XAROLLBACK. A message whose version is not
"2.0" is rejected (the format is versioned; 1.0 messages belong to `dataworks_json`).

Column types are SQL type names, mapped by `formats.ob_types` (exact decimals, microsecond timestamps:
the 9 fraction digits OMS may send are truncated to the 6 Spark holds).

Ordering: the format has no sequence id. `seq` is `payload.timestamp.eventTime` (milliseconds) and `seq2`
the `scn` ("the SCN that increments"; 0 when absent or not a number, e.g. the "null" of the examples),
so changes order by time and, within a millisecond, by SCN; the export position breaks remaining ties.
SCN first would be wrong for tables whose full-load rows carry no SCN while later changes do.
`extend` (e.g. load_fm) and `dbVersion` are not loaded.

The batch's declarations are resolved once, from its first messages (`ob_types.sampled_resolutions`). The common
case (an insert, update or delete whose images hold exactly the declared columns in order, declared as strings,
integers, floating numbers or decimals, each value plainly of its type) is read by a JVM function in one pass
(lakeloader/jvm/DataWorks2Messages.java); every other message, or every message without `common_case`, by the
Spark SQL expressions of `build`, the reference that function is held to
(tests/spark/test_format_dataworks_v2_common_case.py).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import ob_types, source_types
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    OpTable,
    WireFields,
    common_case_columns,
    configured_converters,
    declare,
    finish,
    integer_text,
    jvm_reading,
    parse_json,
    parsed_with_common_case,
    schema_qualified,
    timestamp_of_millis,
    with_canonical_images,
    with_configured_types,
)
from lakeloader.spark import DATAWORKS2_MESSAGE

VERSION = "2.0"
OPS = OpTable(
    data={"INSERT": C.INSERT, "UPDATE": C.UPDATE, "DELETE": C.DELETE},
    ddl=("CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX"),
    heartbeat=("HEARTBEAT",),
    control=("TRANSACTION_BEGIN", "TRANSACTION_END", "GTID", "XACOMMIT", "XAROLLBACK"),
)
WIRE = WireFields(
    op="payload.op",
    db="schema.source.dbName",
    table="schema.source.table",
    seq_problem="payload.timestamp.eventTime is missing or not a number",
    declarations="schema.column",
)

_STRING = T.StringType()
_IMAGE = T.StructType([T.StructField("data", C.IMAGE_TYPE)])
MESSAGE_SCHEMA = T.StructType(
    [
        T.StructField("version", _STRING),
        T.StructField(
            "schema",
            T.StructType(
                [
                    T.StructField(
                        "source",
                        T.StructType(
                            [T.StructField(n, _STRING) for n in ("dbType", "dbVersion", "dbName", "schema", "table")]
                        ),
                    ),
                    T.StructField("column", T.ArrayType(C.COLUMN_TYPE)),
                    T.StructField("pk", T.ArrayType(_STRING)),
                ]
            ),
        ),
        T.StructField(
            "payload",
            T.StructType(
                [
                    T.StructField("before", _IMAGE),
                    T.StructField("after", _IMAGE),
                    T.StructField("op", _STRING),
                    T.StructField("timestamp", T.StructType([T.StructField("eventTime", _STRING)])),
                    T.StructField("ddl", T.StructType([T.StructField("text", _STRING)])),
                    T.StructField("scn", _STRING),
                ]
            ),
        ),
    ]
)


# what the batch's declarations are sampled from
_DECLARING = T.StructType(
    [
        T.StructField(
            "schema",
            T.StructType(
                [
                    T.StructField("source", T.StructType([T.StructField("dbType", _STRING)])),
                    T.StructField("column", T.ArrayType(C.COLUMN_TYPE)),
                ]
            ),
        )
    ]
)


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine; the common
    case read by the JVM function unless not `common_case` (module docstring)."""
    resolutions = sampled_resolutions(lines)
    if common_case:
        return parsed_with_common_case(lines, _reader(source, resolutions))
    return build(lines, source, resolutions)


def reader(lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader given the batch's declarations (`read_common_case`) and this parser's output
    columns from its fields."""
    return _reader(source, sampled_resolutions(lines))


def _reader(source: SourceConfig, resolutions: source_types.Resolutions) -> CommonCase:
    return CommonCase(
        read_common_case(source, resolutions),
        _from_common_case(F.col(COMMON_CASE)),
        rest=lambda ls: build(ls, source, resolutions),
    )


def sampled_resolutions(lines: DataFrame) -> source_types.Resolutions:
    """The declarations of the batch's first messages, resolved once (`ob_types.sampled_resolutions`)."""
    schema = F.from_json(F.col("text"), _DECLARING)["schema"]
    sent = lines.select(schema.alias("schema"))
    oracle = ob_types.is_oracle_tenant(F.col("schema.source.dbType"))
    return ob_types.sampled_resolutions(sent, F.col("schema.column.type"), oracle)


def read_common_case(source: SourceConfig, resolutions: source_types.Resolutions) -> Column:
    """Each line as lakeloader/jvm/DataWorks2Messages.java reads it: the common case's fields
    (`lakeloader.spark.DATAWORKS2_COMMON_CASE`), NULL for any other message. It is given the source's configured
    column types, this module's data ops and version, and the batch's declarations whose values keep their text."""
    settings = {
        "column_types": source.column_types,
        "data_ops": dict(OPS.data),
        "version": VERSION,
        "declared_types": ob_types.kept_as_sent(resolutions),
        "unqualified_schemas": list(source.unqualified_schemas),
    }
    return jvm_reading(DATAWORKS2_MESSAGE, settings)


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields (which read the SCN as `integer_text` would, 0
    for none), with the parser's own expressions where it passes a field on as sent (the event time)."""
    passed = ("raw_op", "op", "db", "schema_name", "table", "before", "after", "primary_key")
    event_millis = common["event_time"].try_cast("bigint")
    return common_case_columns(common, passed) | {
        "seq": event_millis.cast(C.SEQ_TYPE),
        "seq2": common["scn"].cast(C.SEQ_TYPE),
        "event_time": _event_time(event_millis),
    }


def _event_time(event_millis: Column) -> Column:
    return F.when(event_millis > 0, timestamp_of_millis(event_millis))


def build(lines: DataFrame, source: SourceConfig, resolutions: source_types.Resolutions) -> DataFrame:
    """The Spark SQL parse (`message`: what to parse when not each line's text, `common.parse_json`)."""
    frame = parse_json(lines, MESSAGE_SCHEMA)
    payload, schema = F.col("j.payload"), F.col("j.schema")
    op, version = payload["op"], F.col("j.version")
    event_millis = payload["timestamp"]["eventTime"].try_cast("bigint")
    origin = schema["source"]
    oracle = ob_types.is_oracle_tenant(origin["dbType"])
    resolve = ob_types.table_resolver(resolutions, oracle)
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        version.alias("version"),
        op.alias("raw_op"),
        OPS.kind(op).alias("kind"),
        OPS.canonical(op).alias("op"),
        schema_qualified(origin["dbName"], origin["schema"], source.unqualified_schemas).alias("db"),
        origin["schema"].alias("schema_name"),
        origin["table"].alias("table"),
        payload["before"]["data"].alias("raw_before"),
        payload["after"]["data"].alias("raw_after"),
        declare(schema["column"], resolve).alias("typed"),
        F.when(F.size(schema["pk"]) > 0, schema["pk"]).alias("primary_key"),
        payload["ddl"]["text"].alias("ddl"),
        event_millis.cast(C.SEQ_TYPE).alias("seq"),
        integer_text(payload["scn"]).alias("seq2"),
        _event_time(event_millis).alias("event_time"),
    )
    frame = with_configured_types(frame, source.column_types)
    configured = configured_converters(ob_types.SPARK_TYPED_CONVERTERS, source.column_types)
    frame = with_canonical_images(frame, ob_types.CONVERTERS | configured)
    version_problem = F.concat(F.lit("unsupported version '"), F.col("version"), F.lit(f"' (expected {VERSION})"))
    return finish(
        frame,
        WIRE,
        before_op=[
            (F.col("version").isNull(), "missing version"),
            (F.col("version") != VERSION, version_problem),
        ],
    )
