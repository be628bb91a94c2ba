"""Tables without any key (no declared or configured primary key, no row id): multisets of rows.

Two identical inserts give two rows; a delete removes one matching row; an update removes one row with its
before-image and adds one with its after-image. A row's identity is its content: `_cdc_row` is a hash of
its non-NULL values, and `_cdc_occurrence` numbers the copies (1..n) of one content. The silver key of
such a table is (`_cdc_row`, `_cdc_occurrence`).

How many copies of a content exist cannot be derived from one batch, and adding a batch's +1/-1 to the
table's current count would count a rerun twice. So each batch recomputes, for every content it touches,
the count from the content's whole history in the change log (every bronze hour): in the total order
(lakeloader.apply.key_actions), +1 per insert, -1 per delete (never below zero), a message delivered twice counted
once (same message identity: topic offset, or file and line; never the content), two identical changes
counted twice. That count depends only on the log, so reruns and hours in any
order give the same table. Changes older than the table's last TRUNCATE do not count; a batch that
truncates a table recomputes every content changed since.

The silver write then upserts copies 1..n and deletes the copies above n that the table holds
(`lakeloader.apply.silver`), unconditionally: the count is authoritative, so no ordering key or tombstone
is compared. Cost: a batch touching a keyless table reads that table's history from the whole log.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply.ddl.points import change_point, point_literal
from lakeloader.apply.key_actions import POSITION
from lakeloader.apply.table_identity import per_table, table_id, table_id_literal
from lakeloader.engine import base as E
from lakeloader.parse import canonical as C

ROW_ID, OCCURRENCE = "_cdc_row", "_cdc_occurrence"
KEY = [ROW_ID, OCCURRENCE]
COLUMNS = [(ROW_ID, "string"), (OCCURRENCE, "int")]
# the total order (lakeloader.apply.key_actions), then the step's part of its message (an UPDATE's -1 before its +1)
ORDER = ("seq", "seq2", POSITION, "part")
# a step delivered twice: same message (ordering.message_identity, never the content), same part
IDENTITY = ("db", "table", "identity", "part")


def row_id(image: Column) -> Column:
    """The identity of a row's content: a hash of its non-NULL values, whatever their order in the image."""
    entries = F.array_sort(F.map_entries(F.map_filter(image, lambda _, v: v.isNotNull())))
    return F.sha2(F.to_json(entries), 256)


def steps(changes: DataFrame) -> DataFrame:
    """Each data change as +1/-1 steps of row contents: (db, table, row, image, delta, part, ordering, origin).

    `changes` carry `identity` and `position` (lakeloader.apply.key_actions.with_order): a delete does not rank before
    an insert or update of the same sequence; the export position orders them."""
    minus = F.struct(F.col("before").alias("image"), F.lit(-1).alias("delta"), F.lit(0).alias("part"))
    plus = F.struct(F.col("after").alias("image"), F.lit(1).alias("delta"), F.lit(1).alias("part"))
    op = F.col("op")
    expanded = (
        F.when(op.isin(C.INSERT, C.UPDATE_AFTER), F.array(plus))
        .when(op == C.UPDATE, F.array(minus, plus))
        .when(op.isin(C.DELETE, C.UPDATE_BEFORE), F.array(minus))
    )
    origin = ["seq", "seq2", POSITION, "identity", "batch_hour", "event_time", "origin_file", "origin_line"]
    return (
        changes.select("db", "table", "op", "origin_index", *origin, F.explode(expanded).alias("s"))
        .select("db", "table", "op", "origin_index", *origin, "s.image", "s.delta", "s.part")
        .withColumn("row", row_id(F.col("image")))
    )


def multiset_actions(
    batch: DataFrame,
    log: DataFrame,
    segments: dict[tuple[str, str], int],
    since: dict[tuple[str, str], E.Point],
    truncated: set[tuple[str, str]],
) -> DataFrame:
    """The actions that make the keyless tables' touched contents as many as their history says.

    `batch` and `log` are data changes (the batch's and the whole log's, after renames); `segments` names the
    keyless tables and the segment their actions go to (a count is the state after the whole batch);
    `since` the point of each table's last TRUNCATE; `truncated` the tables this batch truncates. Columns
    as `lakeloader.apply.key_actions.key_actions`, the image holding ROW_ID and OCCURRENCE; a content whose count is 0
    gets one delete of occurrence 0 (no such row exists) so that the writer deletes its copies.
    """
    tables = table_id(F.col("db"), F.col("table")).isin(*map(table_id_literal, segments))
    history = _deduplicated(steps(log.where(tables))).withColumn("rank", F.substring(POSITION, 1, 1).cast("int"))
    if since:
        history = history.where(_not_before(since))
    touched = steps(batch.where(tables)).select("db", "table", "row").distinct().withColumn("touched", F.lit(True))
    history = history.join(touched, ["db", "table", "row"], "left")
    in_truncated = table_id(F.col("db"), F.col("table")).isin(*map(table_id_literal, truncated))
    history = history.where(F.col("touched") | (in_truncated if truncated else F.lit(False)))
    carried = ("delta", "op", "event_time", "rank", "origin_file", "origin_line", "origin_index")
    ordered = F.array_sort(F.collect_list(F.struct(*ORDER, *carried)))
    counted = history.groupBy("db", "table", "row").agg(ordered.alias("steps"), F.first("image").alias("image"))
    count = F.aggregate("steps", F.lit(0), lambda n, step: F.greatest(F.lit(0), n + step["delta"]))
    # the copies left are the content's inserts, so they carry the metadata of the last change that gave the
    # content (a delete or update of another copy leaves them as they were); none left: the last change
    last_upsert = F.element_at(F.filter("steps", lambda step: step["delta"] > 0), -1)
    last = F.when(count > 0, last_upsert).otherwise(F.element_at("steps", -1))
    occurrences = F.explode(F.when(count > 0, F.sequence(F.lit(1), count)).otherwise(F.array(F.lit(0))))
    rows = counted.select("db", "table", "row", "image", last.alias("last"), occurrences.alias("occurrence"))
    return rows.select(
        "db",
        "table",
        per_table({name: F.lit(s) for name, s in segments.items()}).alias("segment"),
        F.array("row", F.col("occurrence").cast("string")).alias("key"),
        F.col("last.op").alias("op"),
        *[F.col(f"last.{name}").alias(name) for name in ("seq", "seq2", "rank", "event_time")],
        *[F.col(f"last.{name}").alias(name) for name in ("origin_file", "origin_line", "origin_index", POSITION)],
        F.when(F.col("occurrence") > 0, F.lit(E.UPSERT)).otherwise(F.lit(E.DELETE)).alias(E.ACTION),
        F.map_concat(
            "image", F.create_map(F.lit(ROW_ID), F.col("row"), F.lit(OCCURRENCE), F.col("occurrence").cast("string"))
        ).alias("image"),
        F.lit(False).alias("partial"),
    )


def _deduplicated(history: DataFrame) -> DataFrame:
    """One step per delivered change: a re-delivery (same IDENTITY) counts once; the copy kept is the first
    delivered, so the row's metadata does not depend on which file Spark reads first. Two identical changes
    are two messages, so they count twice."""
    kept = F.struct("seq", "seq2", POSITION, "op", "event_time", "origin_file", "origin_line", "origin_index")
    delivered = F.struct("batch_hour", "origin_file", "origin_line", "origin_index")
    first = F.min_by(F.struct(kept.alias("kept"), "row", "image", "delta"), delivered).alias("first")
    return (
        history.groupBy(*IDENTITY)
        .agg(first)
        .select(*IDENTITY, "first.kept.*", "first.row", "first.image", "first.delta")
    )


def _not_before(since: dict[tuple[str, str], E.Point]) -> Column:
    """Steps at or after their table's last TRUNCATE (all steps of tables never truncated): in the total order,
    so a step of the truncation's second sent before it is older."""
    mark = per_table({name: point_literal(point) for name, point in since.items()})
    return mark.isNull() | (change_point(F.col("seq"), F.col("seq2"), F.col(POSITION)) >= mark)
