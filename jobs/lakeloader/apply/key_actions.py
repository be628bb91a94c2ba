"""Order and deduplicate one batch of changes: the last action per (table, key), in Spark SQL.

Each data change becomes key actions: an upsert of its after-image's key and/or a delete of its
before-image's key (an update that moves a row to a new key does both). The first half of a two-message
update (UPDATE_BEFORE) is a delete of rank 0, so its second half (same sequence, rank 1) overrides it.

Per (table, key) the actions are ordered by the one total order of docs/semantics.md, (seq, seq2, position):
`position` is a string that sorts as (rank, exporter's order), see `position`; the last action decides.
A message delivered twice in the batch (same `message_identity`) counts once.

Partial after-images (only the changed columns) are folded in order onto the
image before them (in the JVM, `_folded`), so two partial updates of one key in a batch keep both changes; a
partial image with no full image before it in the batch stays partial and is merged column by column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lakeloader.apply.ddl.widening import widest
from lakeloader.core.format_registry import FORMATS, may_send_partial_images
from lakeloader.engine import base as E
from lakeloader.parse import canonical as C
from lakeloader.spark import collect_together, jvm_instance

BEFORE_HALF_RANK, DEFAULT_RANK = 0, 1
POSITION = "position"
_INDEX_DIGITS, _NUMBER_DIGITS = 10, 20
KEY_TYPE = "array<string>"  # a key's values, in the key's column order, as canonical text
KEY_COLUMNS = ("db", "table", "segment", "key")  # what one key action is decided for
# a hash of KEY_COLUMNS, grouped and sorted by first: the sorts then mostly compare its 8 bytes (the sort's prefix)
# instead of a database and table name every change shares and the key's array of strings
KEY_HASH = "_key_hash"


def position(rank: Column | int = DEFAULT_RANK, by_sequence: Column | None = None) -> Column:
    """A change's place after its (seq, seq2), as a string that sorts in the total order (docs/semantics.md):
    its rank (0: the before-half of a two-message update, so that its after-half outranks it wherever each
    lands), then the exporter's order: the topic offset when known (`o<offset>.<index>`: a re-delivery of a
    message sorts equal to it); where the sequence identifies the message (`by_sequence`, see
    `message_identity`) only the row within the message (`s<index>`: a re-delivery in a later file or hour
    sorts equal to it, so it never counts as newer); else (`f<hour>.<file>.<line>.<index>`) the landing hour,
    export file, line and row within the message. The file name is written in hex followed by '.', which
    sorts below every hex digit, so names compare exactly as strings do (a prefix first) whatever characters
    they hold."""
    rank = F.lit(rank) if isinstance(rank, int) else rank
    index = F.lpad(F.col("origin_index").cast("string"), _INDEX_DIGITS, "0")
    offset = F.lpad(F.col("origin_offset").cast("string"), _NUMBER_DIGITS, "0")
    line = F.lpad(F.col("origin_line").cast("string"), _NUMBER_DIGITS, "0")
    exporter = _exporter(F.lit(False) if by_sequence is None else by_sequence)
    place = (
        F.when(exporter == "o", F.concat(offset, F.lit("."), index))
        .when(exporter == "s", index)
        .otherwise(
            F.concat(F.col("batch_hour"), F.lit("."), F.hex(F.col("origin_file")), F.lit("."), line, F.lit("."), index)
        )
    )
    return F.concat(rank.cast("string"), exporter, place)


def _exporter(by_sequence: Column) -> Column:
    """Which exporter's order places a change (`position`): "o" by topic offset, "s" by sequence, "f" by file."""
    return F.when(F.col("origin_offset").isNotNull(), F.lit("o")).when(by_sequence, F.lit("s")).otherwise(F.lit("f"))


def position_order(rank: Column, by_sequence: Column) -> list[Column]:
    """Columns that, compared in turn, sort exactly as `position(rank, by_sequence)` does, from the typed fields
    instead of their text: sorting by them spares building the text of every change (only the kept ones get
    theirs). The fields an exporter's order does not use are null for every change of that order, so they never
    decide. (Separate columns rather than one struct of them: a struct is built for every change and carried
    through the window's shuffle and sort beside the fields it copies.)"""
    exporter = _exporter(by_sequence)
    by_file = exporter == "f"
    return [
        rank,
        exporter,
        F.col("origin_offset"),
        F.when(by_file, F.col("batch_hour")),
        F.when(by_file, F.col("origin_file")),
        F.when(by_file, F.col("origin_line")),
        F.col("origin_index"),
    ]


def message_identity(fmt: str) -> Column:
    """What makes two rows one change delivered twice (never their content): the topic, partition and offset
    when the export gives them; else, in a format whose sequence is unique per record (the registry's
    `sequence_identifies`; full-load rows with a negative sequence excepted), the sequence and op; else the
    export file and line. With the row's index within its message (Canal's `data` rows)."""
    known = F.col("origin_offset").isNotNull()
    by_sequence = identified_by_sequence(fmt)
    by_file = ~known & ~by_sequence

    def when(condition: Column, value: str) -> Column:
        return F.when(condition, F.col(value))

    return F.struct(
        when(known, "origin_topic").alias("topic"),
        when(known, "origin_partition").alias("partition"),
        when(known, "origin_offset").alias("offset"),
        when(by_sequence, "seq").alias("seq"),
        when(by_sequence, "seq2").alias("seq2"),
        when(by_sequence, "op").alias("op"),
        when(by_file, "origin_file").alias("file"),
        when(by_file, "origin_line").alias("line"),
        F.col("origin_index").alias("index"),
    )


def identified_by_sequence(fmt: str) -> Column:
    """Whether a row's sequence identifies its message: no offset known, a format whose sequence is unique per
    record (the registry's `sequence_identifies`), and not a full-load row (negative sequence)."""
    if not FORMATS[fmt].sequence_identifies:
        return F.lit(False)
    return F.col("origin_offset").isNull() & F.coalesce(F.col("seq") >= 0, F.lit(False))


def with_order(data: DataFrame, fmt: str) -> DataFrame:
    """Changes with their `identity` (message_identity) and, for data changes, their `position`."""
    return data.withColumns({"identity": message_identity(fmt), POSITION: change_place(fmt)})


def change_place(fmt: str) -> Column:
    """A data change's `position` (as its `_cdc_position` is written)."""
    rank = F.when(F.col("op") == C.UPDATE_BEFORE, F.lit(BEFORE_HALF_RANK)).otherwise(F.lit(DEFAULT_RANK))
    return position(rank, identified_by_sequence(fmt))


@dataclass(frozen=True)
class TableShape:
    """What the batch says about one table: its columns in order with Spark types, and its key."""

    db: str
    table: str
    columns: list[tuple[str, str]]
    key: list[str]
    segment: int = 0  # the part of the table's batch between two of its DDL statements

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"


@dataclass(frozen=True)
class BatchTables:
    """What a batch holds per table: its shape per segment, and its changes and duplicates (further copies of
    a message in the batch)."""

    shapes: list[TableShape]
    counts: dict[tuple[str, str], tuple[int, int]]


def batch_tables(data: DataFrame, key_overrides: dict[str, list[str]]) -> BatchTables:
    """Columns (the widest of their declared types, `_widest_types`; first-declared position) and key of every
    table and segment in the batch (`data` has a `segment` column; see lakeloader.apply.step), and each table's
    counts, from three small aggregates collected together.

    Key precedence: `key_overrides` (configured or recorded keys), then the table's latest declared
    primary key; none at all is an empty key (a multiset table, `lakeloader.apply.multiset`).
    """
    order = F.struct("seq", "seq2")
    group = ["db", "table", "segment"]
    # a table's messages mostly repeat a few column lists: each distinct list is exploded once, not each row's
    declared = data.groupBy(*group, "columns").agg(F.min(order).alias("order"))
    columns = (
        declared.select(*group, "order", F.posexplode("columns").alias("pos", "column"))
        .groupBy(*group, F.col("column.name").alias("name"), F.col("column.type").alias("type"))
        .agg(F.min("order").alias("first"), F.min("pos").alias("pos"))
    )
    # copies counted per message by a hash aggregate; the key (the latest declared) taken per table apart: with
    # `max_by` of an array in it, the per-message aggregate was a sort aggregate (a million changes: 3.6-4.0 s
    # for the three aggregates, 2.9 s apart)
    copies = data.groupBy("db", "table", "identity").agg(F.count("*").alias("copies"))
    per_table = copies.groupBy("db", "table").agg(
        F.sum("copies").alias("changes"), F.sum(F.col("copies") - 1).alias("duplicates")
    )
    declared_columns, tables, table_keys = collect_together(columns, per_table, latest_declared_keys(data))
    widest = _widest_types(declared_columns)
    keys = {(r["db"], r["table"]): r["key"] for r in table_keys}
    by_segment: dict[tuple[str, str, int], list] = {}
    for row in widest:
        by_segment.setdefault((row["db"], row["table"], row["segment"]), []).append(row)
    shapes = []
    for (db, table, segment), rows in sorted(by_segment.items()):
        # a position two names share: the earlier declared first (of names differing only by case, the one kept)
        ordered = [(r["name"], r["type"]) for r in sorted(rows, key=lambda r: (r["pos"], r["first"], r["name"]))]
        key = key_overrides.get(f"{db}.{table}") or keys.get((db, table)) or []
        shapes.append(TableShape(db, table, ordered, list(key), segment))
    counts = {(r["db"], r["table"]): (r["changes"], r["duplicates"]) for r in tables}
    return BatchTables(shapes, counts)


def latest_declared_keys(data: DataFrame) -> DataFrame:
    """(db, table, key): each table's latest declared primary key (an empty key declares none: a multiset)."""
    keyed_order = F.when(F.col("primary_key").isNotNull(), F.struct("seq", "seq2"))  # max_by passes over NULL
    return data.groupBy("db", "table").agg(F.max_by("primary_key", keyed_order).alias("key"))


def _widest_types(rows: list) -> list[dict]:
    """One row per (db, table, segment, name) from its rows per declared type: the types joined in the order
    they were first declared (`lakeloader.apply.ddl.widening.widest`), so every value of the batch fits; a type with
    no exact join with those before it is left out, and its values that do not fit are rejected
    (`lakeloader.apply.silver`)."""
    by_column: dict[tuple, list] = {}
    for row in sorted(rows, key=_first):
        by_column.setdefault((row["db"], row["table"], row["segment"], row["name"]), []).append(row)
    joined = []
    for (db, table, segment, name), declared in by_column.items():
        spark_type = declared[0]["type"]
        for row in declared[1:]:
            if spark_type is None or row["type"] is None:
                spark_type = spark_type or row["type"]
            else:
                spark_type = widest(spark_type, row["type"]) or spark_type
        position = min(r["pos"] for r in declared)
        first = _first(declared[0])
        joined.append(dict(db=db, table=table, segment=segment, name=name, type=spark_type, pos=position, first=first))
    return joined


def _first(row: Any) -> list[tuple[bool, Any]]:
    """A sort key for the ordering key (seq, seq2) of a column's first declaration, NULLs last."""
    return [(v is None, v or 0) for v in row["first"]]


def key_actions(data: DataFrame, shapes: list[TableShape], fmt: str) -> DataFrame:
    """One row per (db, table, segment, key): the deciding action, its (folded) image, whether partial.

    `data` holds changes of format `fmt`, ordered by (seq, seq2, `position_order`), which sorts as their
    `position`. Where the format may send partial after-images (`format_registry.may_send_partial_images`) a
    key's history is folded; otherwise the deciding action's image is the result. Columns: db, table, segment,
    key, op, seq, seq2, rank, event_time, origin_file, origin_line, origin_index, position, _cdc_action, image,
    partial.
    """
    keys = {(s.db, s.table): s.key for s in shapes}  # one key per table, whatever its segments
    # the tables by database and key: one CASE branch each, whose test is a set lookup of the table's name
    tables_by_key: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (db, table), key in keys.items():
        tables_by_key.setdefault((db, tuple(key)), []).append(table)

    def key_of(image: Column) -> Column:
        """The image's key values as the table's key names them (a CASE over the databases and keys: compiled
        code, where a lambda over a map of keys is interpreted); null for a table not in `shapes`."""
        by_table = None
        for (db, key), tables in tables_by_key.items():
            this = (F.col("db") == db) & F.col("table").isin(*tables)
            values = F.array(*[F.element_at(image, F.lit(k)) for k in key]).cast(KEY_TYPE)
            by_table = F.when(this, values) if by_table is None else by_table.when(this, values)
        return F.lit(None).cast(KEY_TYPE) if by_table is None else by_table

    def action(kind: str, image: str, rank: int, partial: Column) -> Column:
        return F.struct(
            F.lit(kind).alias("action"),
            F.col(image).alias("image"),
            F.lit(rank).alias("rank"),
            partial.alias("partial"),
        )

    full, partial = F.lit(False), F.col("after_partial")
    upsert, delete = action(E.UPSERT, "after", DEFAULT_RANK, partial), action(E.DELETE, "before", DEFAULT_RANK, full)
    op = F.col("op")
    expanded = (
        F.when(op == C.INSERT, F.array(action(E.UPSERT, "after", DEFAULT_RANK, full)))
        .when(op == C.UPDATE_AFTER, F.array(upsert))
        .when((op == C.UPDATE) & (key_of(F.col("before")) == key_of(F.col("after"))), F.array(upsert))
        .when(op == C.UPDATE, F.array(delete, upsert))
        .when(op == C.UPDATE_BEFORE, F.array(action(E.DELETE, "before", BEFORE_HALF_RANK, full)))
        .when(op == C.DELETE, F.array(delete))
    )
    actions = (
        data.select("*", F.explode(expanded).alias("a"))
        .select(
            "db",
            "table",
            "segment",
            "op",
            "seq",
            "seq2",
            "event_time",
            "origin_file",
            "origin_line",
            "origin_index",
            "origin_offset",
            "batch_hour",
            F.col("a.action").alias(E.ACTION),
            F.col("a.image").alias("image"),
            F.col("a.rank").alias("rank"),
            F.col("a.partial").alias("partial"),
        )
        .withColumn("key", key_of(F.col("image")))
        .withColumn(KEY_HASH, F.xxhash64(*KEY_COLUMNS))
    )
    # the newest action first; copies of one message tie in that order: the first delivered is the one kept,
    # whatever order Spark reads them in
    by_sequence = identified_by_sequence(fmt)
    newer = [F.col("seq"), F.col("seq2"), *position_order(F.col("rank"), by_sequence)]
    delivered = [F.col(c) for c in ("batch_hour", "origin_file", "origin_line")]
    if may_send_partial_images(fmt):
        deciding = _folded(actions, newer, delivered)
    else:
        newest_first = Window.partitionBy(KEY_HASH, *KEY_COLUMNS).orderBy(*[c.desc() for c in newer], *delivered)
        deciding = actions.withColumn("n", F.row_number().over(newest_first)).where("n = 1")
    return deciding.select(
        *KEY_COLUMNS,
        "op",
        "seq",
        "seq2",
        "rank",
        "event_time",
        "origin_file",
        "origin_line",
        "origin_index",
        position(F.col("rank"), by_sequence).alias(POSITION),
        E.ACTION,
        "image",
        "partial",
    )


def _folded(actions: DataFrame, newer: list[Column], delivered: list[Column]) -> DataFrame:
    """Per key, its deciding action (as the window of `key_actions` orders them) with the image of its history
    folded oldest first, in the JVM (`jvm/src/lakeloader/jvm/FoldedHistories.java`): each key's actions sorted
    newest first within one partition, then one pass over them. Event times cross as microseconds: the JVM reads
    the rows as `Row`s, whose timestamps a calendar would otherwise shift (dates before 1582)."""
    spark = actions.sparkSession
    newest_first = (
        actions.withColumn("event_time", F.unix_micros("event_time"))
        .repartition(KEY_HASH)
        .sortWithinPartitions(KEY_HASH, *KEY_COLUMNS, *[c.desc() for c in newer], *delivered)
    )
    histories = jvm_instance(spark, "lakeloader.jvm.FoldedHistories")
    deciding = histories.deciding(newest_first._jdf, [KEY_HASH, *KEY_COLUMNS], E.ACTION, E.DELETE)
    return DataFrame(deciding, spark).withColumn("event_time", F.timestamp_micros("event_time"))
