"""Replay a validated plan (see lakeloader.replay_plan): reapply bronze hours, or rebuild tables from scratch.

- reapply: the apply step itself (`lakeloader.apply.run_apply`) for each hour in order, so a replay merges
  exactly as the hourly run did; rows already up to date stay as they are.
- rebuild: per table, the final state of the whole bronze change log (apply's own functions, as the
  reconciliation computes it), written by Spark as Parquet to a staging directory, then streamed batch by
  batch into one overwrite commit of the silver table with delta-rs (the driver never holds the table).
  The table keeps its description (the recorded key); its schema becomes the latest declared one.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, write_deltalake
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeloader import apply as A
from lakeloader import zones
from lakeloader.config import SourceConfig
from lakeloader.engine import base as E
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.ordering import TableShape
from lakeloader.reconcile import expected_state
from lakeloader.replay_plan import REAPPLY
from lakeloader.silver import KEY_PROPERTY
from lakeloader.storage import Store, delta_storage_options, open_store, spark_path


def reapply(spark: SparkSession, source: SourceConfig, first: datetime, last: datetime) -> list[dict]:
    return [A.run_apply(spark, source, hour) for hour in zones.hour_range(first, last)]


def rebuild(spark: SparkSession, source: SourceConfig, tables: list[str] | None, lake: Store) -> dict[str, dict]:
    """Replace each table (all of the source when None) with the state its whole change log implies."""
    storage_options = delta_storage_options(source.lake_root, source.s3_endpoint_url)
    engine = DeltaRsEngine(storage_options)
    shapes, actions = expected_state(spark, source, lake, engine)
    chosen = [s for s in shapes if tables is None or s.name in tables]
    missing = sorted(set(tables or ()) - {s.name for s in shapes})
    if missing:
        raise ValueError(f"no changes of {', '.join(missing)} in the bronze change log: nothing to rebuild from")
    loaded_at = datetime.now(UTC).replace(microsecond=0)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # what Delta stores
    results = {}
    actions = actions.persist(StorageLevel.MEMORY_AND_DISK) if chosen else actions
    try:
        for shape in chosen:
            rows = (
                A.typed_change_set(actions, shape, loaded_at)
                .where(F.col(E.ACTION) == E.UPSERT)
                .drop(*E.STAGING_COLUMNS, E.RANK)
            )
            staging = lake.child(zones.rebuild_staging_dir(source.name, shape.db, shape.table))
            rows.write.mode("overwrite").parquet(spark_path(staging))
            uri = lake.child(zones.silver_table_dir(source.name, shape.db, shape.table))
            rows = _staged(staging, source.s3_endpoint_url)
            results[shape.name] = _replace_table(uri, rows, shape, storage_options, source.name)
            if "://" not in staging:
                shutil.rmtree(staging, ignore_errors=True)
    finally:
        if chosen:
            actions.unpersist()
    return results


def _replace_table(uri: str, rows: ds.Dataset, shape: TableShape, storage_options, source: str) -> dict:
    engine = DeltaRsEngine(storage_options)
    existed = engine.exists(uri)
    description = (
        DeltaTable(uri, storage_options=storage_options).metadata().description
        if existed
        else json.dumps({KEY_PROPERTY: json.dumps(shape.key)}, sort_keys=True)
    )
    before = engine.row_count(uri) if existed else 0
    write_deltalake(
        uri,
        rows.scanner().to_reader(),
        mode="overwrite",
        schema_mode="overwrite",
        description=description,
        storage_options=storage_options,
        commit_properties=CommitProperties(custom_metadata={"lakeloader.source": source, "lakeloader.step": "rebuild"}),
    )
    return {"rows_before": before, "rows": engine.row_count(uri), "uri": uri, "key": shape.key}


def _staged(location: str, endpoint_url: str | None) -> ds.Dataset:
    """The Parquet files Spark staged, as a pyarrow dataset (read batch by batch)."""
    if location.startswith("s3://"):
        from pyarrow import fs

        return ds.dataset(location[len("s3://") :], format="parquet", filesystem=fs.S3FileSystem(
            endpoint_override=endpoint_url))  # fmt: skip
    return ds.dataset(location, format="parquet")


def run_replay(spark: SparkSession, source: SourceConfig, plan: dict, label: str, lake: Store | None = None) -> dict:
    """Carry out the plan and write its report to audit/<source>/replay/<label>.json."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    started = datetime.now(UTC).replace(microsecond=0).isoformat()
    if plan["mode"] == REAPPLY:
        first, last = (zones.parse_hour(h) for h in plan["hours"])
        applied = reapply(spark, source, first, last)
        outcome = {"hours": {r["hour"]: r["tables"] for r in applied}}
    else:
        outcome = {"tables": rebuild(spark, source, plan["tables"], lake)}
    report = {"source": source.name, "label": label, "started_at": started, "plan": plan, **outcome}
    lake.write_bytes(zones.replay_report_key(source.name, label), json.dumps(report, indent=1, default=str).encode())
    return report
