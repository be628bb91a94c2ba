"""SharePlex JSON, as OMS (seed 002) and DTS (seed 004) write it.

    {"meta": {"op": "ins|upd|del|ddl", "table": "db.table", "scn": "...", "seq": n, "time": "...",
              "posttime", "idx", "size", "rowid", "trans", "userid"},
     "data": {column: value}, "key": {column: value}, "sql": {"ddl": "..."}}

`data` is the full row for an insert or delete, and only the changed columns for an update, whose `key`
holds the row before the change. The update's after-image is therefore `key` with `data` laid over it: every
column the message tells us, flagged `after_partial` because nothing in the message says whether that is every
column of the table (the merge then updates only those columns; docs/semantics.md). An update without `key`
carries only its after-half. DTS spells the ops INSERT, UPDATE, DELETE, and also lists TRUNCATE, DROP COLUMN
(kept as DDL, with `sql.ddl` when present) and UPDATE BEFORE / UPDATE AFTER (the two halves of an update);
ops are matched ignoring case.

The messages declare no column types and no primary key: columns are strings unless the source's
`column_types` configures them, and tables need `primary_keys` to be keyed by anything but all their columns
(a message whose image lacks a configured key column is quarantined).
Ordering key: `meta.scn`, then `meta.seq` (the operation's number inside its transaction; 0 when absent). OMS
sends `scn` only when the source enables sequences (seed 002: its printed DDL example has "null"): a message
without one (absent, null or "null") has key (0, `meta.time` in microseconds since the epoch, 0 without a time), so
such messages order by their time and then their export position (not by `meta.seq`, which restarts in every
transaction), before any message with a scn; a DDL message without one among messages with one takes its place in
its file (`lakeloader.apply.ddl.events`).
`posttime`, `idx`, `size`, `rowid`, `trans` and `userid` describe delivery and transactions and are not kept.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import ob_types
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    OpTable,
    WireFields,
    common_case_columns,
    configured_map,
    configured_types,
    declare_names,
    finish,
    image_names,
    integer_text,
    jvm_reading,
    overlay,
    parse_json,
    parsed_with_common_case,
    qualified,
    spark_typed,
    with_canonical_images,
)
from lakeloader.spark import SHAREPLEX_MESSAGE

OPS = OpTable(
    data={
        "INS": C.INSERT,
        "INSERT": C.INSERT,
        "UPD": C.UPDATE,
        "UPDATE": C.UPDATE,
        "DEL": C.DELETE,
        "DELETE": C.DELETE,
        "UPDATE BEFORE": C.UPDATE_BEFORE,
        "UPDATE AFTER": C.UPDATE_AFTER,
    },
    ddl=("DDL", "TRUNCATE", "DROP COLUMN"),
)
WIRE = WireFields(
    op="meta.op",
    db="meta.table (as db.table)",
    table="meta.table (as db.table)",
    seq_problem="meta.scn is not a number",
    op_label="meta.op",
)
META_FIELDS = ("time", "op", "posttime", "idx", "size", "seq", "table", "rowid", "trans", "scn", "userid")
QUALIFIED_TABLE = r"^([^.]+)\.(.+)$"
MESSAGE_SCHEMA = T.StructType(
    [
        T.StructField("meta", T.StructType([T.StructField(name, T.StringType()) for name in META_FIELDS])),
        T.StructField("data", C.IMAGE_TYPE),
        T.StructField("key", C.IMAGE_TYPE),
        T.StructField("sql", T.StructType([T.StructField("ddl", T.StringType())])),
    ]
)


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine.

    The common case (an insert, update or delete, every value a string or a number plainly of its column's type)
    is read by a JVM function in one pass (`read_common_case`); every other message, or every message without
    `common_case`, by the Spark SQL expressions of `_parsed`, the reference that function is held to
    (tests/spark/test_format_shareplex_common_case.py)."""
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def reader(_lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader (`read_common_case`) and this parser's output columns from its fields."""
    return CommonCase(
        read_common_case(source), _from_common_case(F.col(COMMON_CASE)), rest=lambda ls: _parsed(ls, source)
    )


def read_common_case(source: SourceConfig) -> Column:
    """Each line as lakeloader/jvm/SharePlexMessages.java reads it: the common case's fields
    (`lakeloader.spark.SHAREPLEX_COMMON_CASE`), NULL for any other message. It is given the source's settings and
    this module's data ops, so that they are written once."""
    settings = {
        "column_types": source.column_types,
        "primary_keys": source.primary_keys,
        "data_ops": dict(OPS.data),
    }
    return jvm_reading(SHAREPLEX_MESSAGE, settings)


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields (which read the scn and the seq as `integer_text`
    would), with the parser's own expression where it passes a field on as sent (the time)."""
    passed = ("raw_op", "op", "db", "table", "before", "after", "after_partial", "primary_key")
    return common_case_columns(common, passed) | {
        "seq": common["scn"].cast(C.SEQ_TYPE),
        "seq2": common["seq"].cast(C.SEQ_TYPE),
        "event_time": common["time"].try_cast("timestamp"),
    }


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of every message."""
    frame = parse_json(lines, MESSAGE_SCHEMA)
    meta, data, key = F.col("j.meta"), F.col("j.data"), F.col("j.key")
    op_key = F.upper(F.trim(meta["op"]))
    op = F.when(op_key.isin("UPD", "UPDATE") & key.isNull(), F.lit(C.UPDATE_AFTER)).otherwise(OPS.canonical(op_key))
    db = F.nullif(F.regexp_extract(meta["table"], QUALIFIED_TABLE, 1), F.lit(""))
    table = F.nullif(F.regexp_extract(meta["table"], QUALIFIED_TABLE, 2), F.lit(""))
    without_scn = meta["scn"].isNull() | (meta["scn"] == "null")
    time = meta["time"].try_cast("timestamp")
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        meta["op"].alias("raw_op"),
        OPS.kind(op_key).alias("kind"),
        op.alias("op"),
        db.alias("db"),
        table.alias("table"),
        F.element_at(configured_map(source.primary_keys, "array<string>"), qualified(db, table)).alias("primary_key"),
        F.when(op.isin(C.DELETE, C.UPDATE_BEFORE), data).when(op == C.UPDATE, key).alias("raw_before"),
        F.when(op == C.INSERT, data).when(op.isin(C.UPDATE, C.UPDATE_AFTER), overlay(key, data)).alias("raw_after"),
        op.isin(C.UPDATE, C.UPDATE_AFTER).alias("after_partial"),
        F.col("j.sql.ddl").alias("ddl"),
        F.when(without_scn, F.lit(0).cast(C.SEQ_TYPE)).otherwise(integer_text(meta["scn"])).alias("seq"),
        meta["seq"].alias("raw_seq2"),
        F.when(without_scn, F.coalesce(F.unix_micros(time), F.lit(0)).cast(C.SEQ_TYPE))
        .otherwise(integer_text(meta["seq"]))
        .alias("seq2"),
        time.alias("event_time"),
        F.coalesce(F.size(data), F.lit(0)).alias("data_size"),
    )
    names = image_names(F.col("raw_after"), F.col("raw_before"))
    types = configured_types(source.column_types, F.col("db"), F.col("table"))
    frame = frame.withColumn("typed", F.when(F.col("kind") == C.DATA, declare_names(names, types, spark_typed)))
    frame = with_canonical_images(frame, ob_types.SPARK_TYPED_CONVERTERS)
    bad_seq = F.col("raw_seq2").isNotNull() & F.col("seq2").isNull()
    no_data = (F.col("kind") == C.DATA) & (F.col("data_size") == 0)
    return finish(
        frame,
        WIRE,
        after_op=[
            (bad_seq, "meta.seq is not a number"),
            (no_data, F.concat(F.col("raw_op"), F.lit(" message without data"))),
        ],
    )
