"""Apply step: one hour of the canonical change log -> one Delta table per source table (silver).

1. Expand each data change into key actions: upsert the after-image's key, delete the before-image's
   key (an update that moves a row to a new key does both; the first half of a two-message update is a
   delete that its second half, same sequence, overrides).
2. Keep the last action per key, ordered by (seq, seq2), then the after-half over the before-half of one
   update, then origin file and line.
3. Merge each table's actions through the table engine: an action applies only when its ordering key is
   newer than the row's, so replays and out-of-order hours leave tables as they are.

Collected to the driver: table shapes (column names and types) and, one table at a time, that table's
deduplicated change set as Arrow (what delta-rs merges).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeloader import canonical as C
from lakeloader import zones
from lakeloader.config import SourceConfig
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.storage import Store, delta_storage_options, open_store, spark_path

KEY_PROPERTY = "lakeloader.primaryKey"
BEFORE_HALF_RANK, DEFAULT_RANK = 0, 1


@dataclass(frozen=True)
class TableShape:
    """What the batch says about one table: its columns in order with Spark types, and its key."""

    db: str
    table: str
    columns: list[tuple[str, str]]
    key: list[str]

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"


def read_bronze(spark: SparkSession, lake: Store, source: str, hour: datetime) -> DataFrame:
    return spark.read.schema(C.CHANGE_SCHEMA).parquet(spark_path(lake.child(zones.bronze_changes_dir(source, hour))))


def table_shapes(data: DataFrame, key_overrides: dict[str, list[str]]) -> list[TableShape]:
    """Columns (latest declared type, first-declared position) and key of every table in the batch.

    Key precedence: `key_overrides` (configured keys), then the latest declared primary key, then all
    columns (a table with no key at all; multiset semantics come with the semantics issue).
    """
    order = F.struct("seq", "seq2")
    columns = (
        data.select("db", "table", order.alias("order"), F.posexplode("columns").alias("pos", "column"))
        .groupBy("db", "table", F.col("column.name").alias("name"))
        .agg(F.max_by("column.type", "order").alias("type"), F.min("pos").alias("pos"))
        .collect()
    )
    keys = {
        (r["db"], r["table"]): r["key"]
        for r in data.groupBy("db", "table")
        .agg(F.max_by("primary_key", F.when(F.col("primary_key").isNotNull(), order)).alias("key"))
        .collect()
    }
    by_table: dict[tuple[str, str], list] = {}
    for row in columns:
        by_table.setdefault((row["db"], row["table"]), []).append(row)
    shapes = []
    for (db, table), rows in sorted(by_table.items()):
        ordered = [(r["name"], r["type"]) for r in sorted(rows, key=lambda r: (r["pos"], r["name"]))]
        key = key_overrides.get(f"{db}.{table}") or keys.get((db, table)) or [name for name, _ in ordered]
        shapes.append(TableShape(db, table, ordered, list(key)))
    return shapes


def key_actions(data: DataFrame, shapes: list[TableShape]) -> DataFrame:
    """One row per (table, key): the last action on that key in this batch, with its image."""
    key_columns = F.create_map(
        *[item for s in shapes for item in (F.lit(s.name), F.array(*[F.lit(k) for k in s.key]))]
    )[F.concat_ws(".", "db", "table")]

    def key_of(image: Column) -> Column:
        return F.transform(key_columns, lambda k: F.element_at(image, k))

    def action(kind: str, image: str, rank: int) -> Column:
        return F.struct(F.lit(kind).alias("action"), F.col(image).alias("image"), F.lit(rank).alias("rank"))

    upsert, delete = action(E.UPSERT, "after", DEFAULT_RANK), action(E.DELETE, "before", DEFAULT_RANK)
    op = F.col("op")
    expanded = (
        F.when(op.isin(C.INSERT, C.UPDATE_AFTER), F.array(upsert))
        .when((op == C.UPDATE) & (key_of(F.col("before")) == key_of(F.col("after"))), F.array(upsert))
        .when(op == C.UPDATE, F.array(delete, upsert))
        .when(op == C.UPDATE_BEFORE, F.array(action(E.DELETE, "before", BEFORE_HALF_RANK)))
        .when(op == C.DELETE, F.array(delete))
    )
    actions = (
        data.select("*", F.explode(expanded).alias("a"))
        .select(
            "db",
            "table",
            "op",
            "seq",
            "seq2",
            "event_time",
            "origin_file",
            "origin_line",
            "origin_index",
            F.col("a.action").alias(E.ACTION),
            F.col("a.image").alias("image"),
            F.col("a.rank").alias("rank"),
        )
        .withColumn("key", key_of(F.col("image")))
    )
    latest_first = Window.partitionBy("db", "table", "key").orderBy(
        *[F.col(c).desc() for c in ("seq", "seq2", "rank", "origin_file", "origin_line", "origin_index")]
    )
    return actions.withColumn("n", F.row_number().over(latest_first)).where("n = 1").drop("n", "rank")


def typed_change_set(actions: DataFrame, shape: TableShape, loaded_at: datetime) -> DataFrame:
    """One table's actions with its columns typed from canonical text, plus the _cdc_* metadata."""

    def typed(name: str, spark_type: str) -> Column:
        text = F.element_at("image", F.lit(name))
        value = F.unbase64(text) if spark_type == "binary" else text.try_cast(spark_type)
        return value.alias(name)

    return actions.where((F.col("db") == shape.db) & (F.col("table") == shape.table)).select(
        *[typed(name, spark_type) for name, spark_type in shape.columns],
        F.col("seq").alias(E.SEQ),
        F.col("seq2").alias(E.SEQ2),
        F.col("op").alias(E.OP),
        F.col("event_time").alias(E.EVENT_TIME),
        F.col("origin_file").alias(E.SOURCE_FILE),
        F.col("origin_line").alias(E.SOURCE_LINE),
        F.lit(loaded_at).cast("timestamp").alias(E.LOADED_AT),
        E.ACTION,
    )


def run_apply(
    spark: SparkSession,
    source: SourceConfig,
    hour: datetime,
    lake: Store | None = None,
    engine: TableEngine | None = None,
) -> dict:
    """Merge the hour's bronze changes into silver; returns (and records) per-table counts."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    engine = engine or DeltaRsEngine(delta_storage_options(source.lake_root, source.s3_endpoint_url))
    hour_text = zones.format_hour(hour)
    loaded_at = datetime.now(UTC).replace(microsecond=0)
    commit_info = {"lakeloader.source": source.name, "lakeloader.hour": hour_text, "lakeloader.step": "apply"}

    data = read_bronze(spark, lake, source.name, hour).where(F.col("kind") == C.DATA)
    configured = {name: list(key) for name, key in source.primary_keys.items()}
    shapes = [_with_recorded_key(engine, lake, source, shape, configured) for shape in table_shapes(data, configured)]

    changes_per_table = {(r["db"], r["table"]): r["count"] for r in data.groupBy("db", "table").count().collect()}
    actions = key_actions(data, shapes).persist(StorageLevel.MEMORY_AND_DISK) if shapes else None
    tables = {}
    try:
        for shape in shapes:
            uri = lake.child(zones.silver_table_dir(source.name, shape.db, shape.table))
            change_set = typed_change_set(actions, shape, loaded_at).toArrow()
            result = _merge_into(engine, uri, change_set, shape, commit_info)
            tables[shape.name] = {
                "changes": changes_per_table[(shape.db, shape.table)],
                "actions": change_set.num_rows,
                "inserted": result.inserted,
                "updated": result.updated,
                "deleted": result.deleted,
                "rows": engine.row_count(uri),
                "version": result.version,
                "uri": uri,
            }
    finally:
        if actions is not None:
            actions.unpersist()
    report = {"source": source.name, "hour": hour_text, "tables": tables}
    lake.write_bytes(zones.run_report_key(source.name, hour, "apply"), json.dumps(report, indent=1).encode())
    return report


def _with_recorded_key(
    engine: TableEngine, lake: Store, source: SourceConfig, shape: TableShape, configured: dict[str, list[str]]
) -> TableShape:
    """An existing silver table keeps the key it was created with, unless the configuration sets one."""
    uri = lake.child(zones.silver_table_dir(source.name, shape.db, shape.table))
    if shape.name in configured or not engine.exists(uri):
        return shape
    recorded = engine.properties(uri).get(KEY_PROPERTY)
    return replace(shape, key=json.loads(recorded)) if recorded else shape


def _merge_into(
    engine: TableEngine, uri: str, change_set: pa.Table, shape: TableShape, commit_info: dict[str, str]
) -> E.MergeResult:
    """Create the table on first sight, add columns it lacks, then merge."""
    data_schema = pa.schema([f for f in change_set.schema if f.name != E.ACTION])
    if not engine.exists(uri):
        engine.create(uri, data_schema, {KEY_PROPERTY: json.dumps(shape.key)}, commit_info)
    existing = engine.schema(uri)
    missing = [f for f in data_schema if f.name not in existing.names]
    if missing:
        engine.add_columns(uri, missing, commit_info)
        existing = engine.schema(uri)
    target = pa.schema([existing.field(f.name) if f.name in existing.names else f for f in change_set.schema])
    return engine.merge(uri, change_set.cast(target), shape.key, commit_info)
