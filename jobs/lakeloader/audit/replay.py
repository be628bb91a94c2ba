"""Replay a validated plan (see lakeloader.audit.replay_plan): reapply bronze hours, or rebuild tables from scratch.

- reapply: the apply step itself (`lakeloader.apply.step.run_apply`) for each hour in order, so a replay merges
  exactly as the hourly run did; rows already up to date stay as they are.
- rebuild: per table, the replica the whole bronze change log implies (`lakeloader.audit.rebuilt_state`: written by the
  apply step's own code, DDL and truncations included, as the reconciliation builds it), streamed batch by
  batch into one overwrite commit of the silver table with delta-rs (the driver never holds the table).
  The table keeps its description (the recorded key); its schema becomes the replica's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict

from pyspark.sql import SparkSession

from lakeloader.apply import step as A
from lakeloader.apply.silver import KEY_PROPERTY
from lakeloader.audit.rebuilt_state import replica
from lakeloader.audit.replay_plan import REAPPLY
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.lake_index import silver_table_ids
from lakeloader.core.lock import writes_source
from lakeloader.core.storage import Store, open_store
from lakeloader.engine.base import TableEngine
from lakeloader.engine.factory import engine_for


class RebuiltTable(TypedDict):
    """One table a rebuild replaced: its rows before and after, its location and its recorded key."""

    rows_before: int
    rows: int
    uri: str
    key: list[str] | None


class ReplayReport(TypedDict):
    """The replay report (`audit/<source>/replay/<label>.json`): `hours` (each reapplied hour's per-table counts)
    for a reapply, `tables` for a rebuild."""

    source: str
    label: str
    started_at: str
    plan: dict[str, Any]
    hours: NotRequired[dict[str, dict[str, Any]]]
    tables: NotRequired[dict[str, RebuiltTable]]


def reapply(spark: SparkSession, source: SourceConfig, first: datetime, last: datetime) -> list[A.ApplyReport]:
    return [A.run_apply(spark, source, hour) for hour in zones.hour_range(first, last)]


def rebuild(
    spark: SparkSession, source: SourceConfig, tables: list[str] | None, lake: Store, label: str
) -> dict[str, RebuiltTable]:
    """Replace each table (all of the source when None) with its replica rebuilt from the whole change log."""
    engine = engine_for(source)
    results: dict[str, RebuiltTable] = {}
    with replica(spark, source, lake, "rebuild", label) as scratch:
        built = silver_table_ids(scratch, source.name)
        missing = sorted(set(tables or ()) - set(built))
        if missing:
            raise ValueError(f"no changes of {', '.join(missing)} in the bronze change log: nothing to rebuild from")
        for name in tables or sorted(built):
            key = zones.silver_table_dir(source.name, *built[name])
            results[name] = _replace_table(engine, lake.child(key), scratch.child(key), source.name)
    return results


def _replace_table(engine: TableEngine, uri: str, replica_uri: str, source: str) -> RebuiltTable:
    """One overwrite commit of `uri` with the replica's rows, streamed batch by batch (the driver never holds
    the table); an existing table keeps its properties (the recorded key)."""
    existed = engine.exists(uri)
    before = engine.row_count(uri) if existed else 0
    engine.replace_with(uri, replica_uri, {"lakeloader.source": source, "lakeloader.step": "rebuild"})
    key = engine.properties(replica_uri).get(KEY_PROPERTY)
    return {"rows_before": before, "rows": engine.row_count(uri), "uri": uri, "key": json.loads(key) if key else None}


@writes_source("replay")
def run_replay(
    spark: SparkSession, source: SourceConfig, plan: dict[str, Any], label: str, lake: Store | None = None
) -> ReplayReport:
    """Carry out the plan and write its report to audit/<source>/replay/<label>.json."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    started = datetime.now(UTC).replace(microsecond=0).isoformat()
    report: ReplayReport = {"source": source.name, "label": label, "started_at": started, "plan": plan}
    if plan["mode"] == REAPPLY:
        first, last = (zones.parse_hour(h) for h in plan["hours"])
        report["hours"] = {r["hour"]: r["tables"] for r in reapply(spark, source, first, last)}
    else:
        report["tables"] = rebuild(spark, source, plan["tables"], lake, label)
    lake.write_bytes(zones.replay_report_key(source.name, label), json.dumps(report, indent=1, default=str).encode())
    return report
