"""Apply step: one hour of the canonical change log -> one Delta table per source table (silver).

1. Order and deduplicate the hour's changes into one action per (table, key) (`lakeloader.ordering`).
2. Per table, type the images' canonical text into the table's columns and add the `_cdc_*` metadata.
3. Write each table's change set with `lakeloader.silver`: truncation, tombstones, then a merge in which
   an action applies only when its ordering key is newer than the row's, so replays and out-of-order
   hours leave tables as they are.

Collected to the driver: table shapes (column names and types), TRUNCATE marks and, one table at a
time, that table's deduplicated change set as Arrow (what delta-rs merges).
See docs/semantics.md for the rules.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeloader import canonical as C
from lakeloader import zones
from lakeloader.config import SourceConfig
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.ordering import TableShape, key_actions, table_shapes
from lakeloader.silver import SilverTable, apply_change_set, recorded_key, truncate
from lakeloader.storage import Store, delta_storage_options, open_store, spark_path


def read_bronze(spark: SparkSession, lake: Store, source: str, hour: datetime) -> DataFrame:
    return spark.read.schema(C.CHANGE_SCHEMA).parquet(spark_path(lake.child(zones.bronze_changes_dir(source, hour))))


def typed_change_set(actions: DataFrame, shape: TableShape, loaded_at: datetime) -> DataFrame:
    """One table's actions with its columns typed from canonical text, the _cdc_* metadata, and the
    staging columns the writer needs (action, rank, partial, present columns)."""

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
        F.col("rank").cast("int").alias(E.RANK),
        F.col("partial").alias(E.PARTIAL),
        F.when(F.col("partial"), F.map_keys("image")).alias(E.PRESENT),
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

    bronze = read_bronze(spark, lake, source.name, hour)
    data = bronze.where(F.col("kind") == C.DATA)
    configured = {name: list(key) for name, key in source.primary_keys.items()}
    shapes = [_keyed(engine, lake, source.name, shape, configured) for shape in table_shapes(data, configured)]
    truncations = truncate_marks(bronze)
    changes_per_table = {(r["db"], r["table"]): r["count"] for r in data.groupBy("db", "table").count().collect()}
    actions = key_actions(data, shapes).persist(StorageLevel.MEMORY_AND_DISK) if shapes else None
    retention = timedelta(hours=source.tombstone_retention_hours)
    tables: dict[str, dict] = {}
    for name in sorted(set(truncations) - {shape.name for shape in shapes}):  # a TRUNCATE without data
        db, table_name = name.split(".", 1)
        uri = lake.child(zones.silver_table_dir(source.name, db, table_name))
        if engine.exists(uri):
            table = SilverTable(uri, "", recorded_key(engine, uri) or [], commit_info)
            tables[name] = {"changes": 0, "actions": 0, "truncated": truncate(engine, table, truncations[name])}
    try:
        for shape in shapes:
            table = SilverTable(
                silver_uri(lake, source.name, shape),
                lake.child(zones.tombstones_dir(source.name, shape.db, shape.table)),
                shape.key,
                commit_info,
            )
            change_set = typed_change_set(actions, shape, loaded_at).toArrow()
            result = apply_change_set(engine, table, change_set, truncations.get(shape.name), loaded_at, retention)
            tables[shape.name] = {
                "changes": changes_per_table[(shape.db, shape.table)],
                "actions": change_set.num_rows,
                **{k: v for k, v in asdict(result).items() if k != "version"},
                "rows": engine.row_count(table.uri),
                "version": result.version,
                "uri": table.uri,
            }
    finally:
        if actions is not None:
            actions.unpersist()
    report = {"source": source.name, "hour": hour_text, "tables": tables}
    lake.write_bytes(zones.run_report_key(source.name, hour, "apply"), json.dumps(report, indent=1).encode())
    return report


def silver_uri(lake: Store, source: str, shape: TableShape) -> str:
    return lake.child(zones.silver_table_dir(source, shape.db, shape.table))


def _keyed(engine: TableEngine, lake: Store, source: str, shape: TableShape, configured: dict) -> TableShape:
    """An existing silver table keeps the key it was created with, unless the configuration sets one."""
    if shape.name in configured:
        return shape
    return replace(shape, key=recorded_key(engine, silver_uri(lake, source, shape)) or shape.key)


def truncate_marks(bronze: DataFrame) -> dict[str, tuple[Decimal, Decimal]]:
    """The latest TRUNCATE's ordering key per table in the batch (a small collect)."""
    rows = (
        bronze.where((F.col("op") == C.TRUNCATE) & F.col("seq").isNotNull())
        .groupBy("db", "table")
        .agg(F.max(F.struct("seq", "seq2")).alias("mark"))
        .collect()
    )
    return {f"{r['db']}.{r['table']}": (r["mark"]["seq"], r["mark"]["seq2"]) for r in rows}
