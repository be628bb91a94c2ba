"""Reconciliation: check that the lake holds what the exports sent, without trusting the steps' own reports.

- **accounting** (per hour): the hour's landed files are still in the raw zone with the manifest's sizes,
  and every one of their lines is accounted for exactly once: as bronze rows (data, ddl, heartbeat,
  control), as a quarantine row, or as a message of a table outside the include list (re-parsed to tell).
- **state** (per table): the state the whole bronze change log implies, rebuilt by the apply step's own
  code into a scratch replica (`lakeloader.audit.rebuilt_state`: DDL, renames and truncations included), equals
  silver: same row count and same order-independent checksum of all columns (the sum of per-row xxhash64);
  where not, the keys that differ.
- **snapshot** (per table, when the source's full export of current rows is configured): the export equals
  silver the same way, on the columns the export has.

Everything is computed with Spark SQL; the driver collects per-file and per-table aggregates and at most
SAMPLE_SIZE example lines or keys per finding. Results go to a JSON and a Markdown report per run, a Delta
audit table (one row per check), and the source's freshness watermark (newest change and heartbeat loaded).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, TypedDict
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeloader.apply.silver import KEY_PROPERTY
from lakeloader.audit.rebuilt_state import replica
from lakeloader.audit.reconcile_report import ACCOUNTING, CHECKS, SNAPSHOT, STATE, audit_rows, render_markdown
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.errors import LakeloaderError
from lakeloader.core.lake_index import silver_tables
from lakeloader.core.lock import writes_source
from lakeloader.core.storage import Store, open_store, spark_path
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.engine.factory import engine_for
from lakeloader.land.step import raw_files, read_manifest
from lakeloader.parse import canonical as C
from lakeloader.parse.framing import read_messages
from lakeloader.parse.step import EXCLUDED, OUTCOME, QUARANTINED, classify
from lakeloader.spark import CACHED, read_parquet_dir

SAMPLE_SIZE = 20
# when apply wrote a row differs between a replay and the original run; the rest only steer the writer
NOT_COMPARED = (E.LOADED_AT, *E.STAGING_COLUMNS, E.RANK)
BRONZE_OUTCOMES = (C.DATA, C.DDL, C.HEARTBEAT, C.CONTROL)
UNEXPECTED, UNACCOUNTED, DOUBLE_COUNTED, DROPPED = "unexpected", "unaccounted", "double_counted", "dropped"


class ReconcileError(LakeloaderError, RuntimeError):
    """A check cannot be computed at all (as opposed to finding a difference); the message says why."""


# ---------------------------------------------------------------------------------------------------------------
# accounting
# ---------------------------------------------------------------------------------------------------------------


def account_hour(spark: SparkSession, source: SourceConfig, hour: datetime, lake: Store) -> dict:
    """Every landed line of `hour` accounted for exactly once; the manifest's files present with their sizes."""
    hour_text = zones.format_hour(hour)
    manifest_present = lake.stat(zones.manifest_key(source.name, hour)) is not None
    manifest = read_manifest(lake, source.name, hour)
    file_problems, present = [], []
    for entry in manifest:
        stored = lake.stat(entry.raw_key)
        if stored is None:
            file_problems.append({"file": entry.export_key, "raw_key": entry.raw_key, "problem": "missing"})
        elif stored.size != entry.size:
            problem = f"{stored.size} bytes, the manifest says {entry.size}"
            file_problems.append({"file": entry.export_key, "raw_key": entry.raw_key, "problem": problem})
        else:
            present.append(entry)

    messages = read_messages(spark, raw_files(lake, present), source, hour_text).persist(CACHED)
    try:
        statuses = _line_statuses(spark, messages, source, hour, lake).persist(CACHED)
        try:
            by_file = _counts_by_file(statuses)
            unaccounted = statuses.where(F.col("status") == UNACCOUNTED).select("origin_file", "origin_line")
            resolved = _resolve_unaccounted(messages, unaccounted, source) if _any(by_file, UNACCOUNTED) else []
            samples = {
                UNEXPECTED: _sample(statuses, UNEXPECTED),
                DOUBLE_COUNTED: _sample(statuses, DOUBLE_COUNTED),
                DROPPED: [r for r in resolved if r["status"] == DROPPED][:SAMPLE_SIZE],
            }
        finally:
            statuses.unpersist()
    finally:
        messages.unpersist()

    for row in resolved:
        counts = by_file.setdefault(row["origin_file"], {})
        counts[UNACCOUNTED] -= 1
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    totals: dict[str, int] = {}
    for counts in by_file.values():
        for status, n in counts.items():
            if n:
                totals[status] = totals.get(status, 0) + n
    outcomes = {k: totals.get(k, 0) for k in (*BRONZE_OUTCOMES, QUARANTINED, EXCLUDED)}
    gaps = {k: totals.get(k, 0) for k in (DROPPED, UNEXPECTED, DOUBLE_COUNTED)}
    landed = sum(n for status, n in totals.items() if status != UNEXPECTED)
    problems = [f"landed file {p['file']} ({p['raw_key']}): {p['problem']}" for p in file_problems]
    if gaps[DROPPED]:
        problems.append(f"{gaps[DROPPED]} landed message(s) are neither in bronze nor in quarantine")
    if gaps[UNEXPECTED]:
        problems.append(f"{gaps[UNEXPECTED]} bronze/quarantine message(s) come from no landed line")
    if gaps[DOUBLE_COUNTED]:
        problems.append(f"{gaps[DOUBLE_COUNTED]} landed message(s) are counted in more than one outcome")
    if not manifest_present and (landed or gaps[UNEXPECTED]):
        problems.append("the hour has no manifest (never landed) but has bronze or quarantine rows")
    return {
        "check": ACCOUNTING,
        "hour": hour_text,
        "ok": not problems,
        "landed_hour": manifest_present,
        "files": len(manifest),
        "landed": landed,
        "outcomes": outcomes,
        "gaps": gaps,
        "file_problems": file_problems,
        "by_file": {name: {k: v for k, v in counts.items() if v} for name, counts in sorted(by_file.items())},
        "samples": {k: v for k, v in samples.items() if v},
        "problems": problems,
    }


def _line_statuses(spark: SparkSession, lines: DataFrame, source: SourceConfig, hour: datetime, lake: Store):
    """One row per (origin_file, origin_line) seen in the landed files, bronze or quarantine, with its status:
    the bronze kind, 'quarantined', 'unaccounted' (landed only), 'unexpected' (not landed) or 'double_counted'."""
    bronze = read_parquet_dir(spark, lake, zones.bronze_changes_dir(source.name, hour), C.CHANGE_SCHEMA)
    quarantine = read_parquet_dir(spark, lake, zones.bronze_quarantine_dir(source.name, hour), C.QUARANTINE_SCHEMA)
    outcomes = (
        bronze.select("origin_file", "origin_line", F.col("kind").alias(OUTCOME))
        .unionByName(quarantine.select("origin_file", "origin_line", F.lit(QUARANTINED).alias(OUTCOME)))
        .distinct()
        .groupBy("origin_file", "origin_line")
        .agg(F.count("*").alias("n"), F.min(OUTCOME).alias(OUTCOME))
    )
    landed = lines.select("origin_file", "origin_line", F.lit(True).alias("landed"))
    joined = landed.join(outcomes, ["origin_file", "origin_line"], "full_outer")
    status = (
        F.when(F.col("landed").isNull(), F.lit(UNEXPECTED))
        .when(F.col(OUTCOME).isNull(), F.lit(UNACCOUNTED))
        .when(F.col("n") > 1, F.lit(DOUBLE_COUNTED))
        .otherwise(F.col(OUTCOME))
    )
    return joined.select("origin_file", "origin_line", status.alias("status"))


def _counts_by_file(statuses: DataFrame) -> dict[str, dict[str, int]]:
    by_file: dict[str, dict[str, int]] = {}
    for row in statuses.groupBy("origin_file", "status").count().collect():
        by_file.setdefault(row["origin_file"], {})[row["status"]] = row["count"]
    return by_file


def _any(by_file: dict[str, dict[str, int]], status: str) -> bool:
    return any(counts.get(status) for counts in by_file.values())


def _resolve_unaccounted(lines: DataFrame, unaccounted: DataFrame, source: SourceConfig) -> list[dict]:
    """Re-parse the lines missing from bronze and quarantine: a table outside the include list is 'excluded',
    anything else was dropped. Collected: one small row per unaccounted line (normally only excluded ones)."""
    subset = lines.join(unaccounted, ["origin_file", "origin_line"], "left_semi")
    verdict = (
        classify(subset, source)
        .groupBy("origin_file", "origin_line")
        .agg(
            F.min(F.col(OUTCOME) == EXCLUDED).alias("excluded"),
            F.first(OUTCOME).alias("would_be"),
            F.first(F.substring("text", 1, 200)).alias("text"),
        )
    )
    status = F.when(F.col("excluded"), F.lit(EXCLUDED)).otherwise(F.lit(DROPPED))
    rows = verdict.select("origin_file", "origin_line", status.alias("status"), "would_be", "text").collect()
    return sorted((r.asDict() for r in rows), key=lambda r: (r["origin_file"], r["origin_line"]))


def _sample(statuses: DataFrame, status: str) -> list[dict]:
    rows = statuses.where(F.col("status") == status).orderBy("origin_file", "origin_line").limit(SAMPLE_SIZE)
    return [{"origin_file": r["origin_file"], "origin_line": r["origin_line"]} for r in rows.collect()]


# ---------------------------------------------------------------------------------------------------------------
# comparing two states of a table
# ---------------------------------------------------------------------------------------------------------------


def quoted(name: str) -> str:
    """A column name as a Spark identifier: backticks around it, its own backticks doubled, so a name holding a
    `.` or a backtick is one column, never a nested field."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str, frame_alias: str | None = None) -> Column:
    """The column named exactly `name` (of the frame aliased `frame_alias`)."""
    return F.col(f"{frame_alias}.{quoted(name)}" if frame_alias else quoted(name))


def row_hash(columns: list[str]) -> Column:
    """xxhash64 of all columns, plus their null flags (xxhash64 skips NULLs, so (NULL, 1) would equal (1, NULL))."""
    flags = F.array(*[col(c).isNull() for c in columns])
    return F.xxhash64(*[col(c) for c in columns], flags)


def checksum(hashes: Column) -> Column:
    """Order-independent: the sum of the row hashes, as decimal so it never overflows."""
    return F.coalesce(F.sum(hashes.cast("decimal(38,0)")), F.lit(0).cast("decimal(38,0)"))


def compare(expected: DataFrame, actual: DataFrame, key: list[str], columns: list[str]) -> dict:
    """Row count, checksum and (when they differ) the differing keys of two frames over `columns`.

    `actual`'s columns are cast to `expected`'s types; a column `actual` lacks compares as NULL.
    """
    types = dict(expected.dtypes)
    aligned = actual.select(
        *[(col(c).cast(types[c]) if c in actual.columns else F.lit(None).cast(types[c])).alias(c) for c in columns]
    )
    sides = {"expected": expected.select(*[col(c) for c in columns]), "actual": aligned}
    totals = (
        sides["expected"]
        .select(F.lit("expected").alias("side"), row_hash(columns).alias("h"))
        .unionByName(sides["actual"].select(F.lit("actual").alias("side"), row_hash(columns).alias("h")))
        .groupBy("side")
        .agg(F.count("*").alias("rows"), checksum(F.col("h")).alias("checksum"))
        .collect()
    )
    found = {r["side"]: (r["rows"], str(r["checksum"])) for r in totals}
    (rows_e, sum_e), (rows_a, sum_a) = found.get("expected", (0, "0")), found.get("actual", (0, "0"))
    result = {
        "ok": rows_e == rows_a and sum_e == sum_a,
        "expected_rows": rows_e,
        "actual_rows": rows_a,
        "expected_checksum": sum_e,
        "actual_checksum": sum_a,
        "missing_columns": [c for c in columns if c not in actual.columns],
        "differing_keys": 0,
        "sample": [],
    }
    if not result["ok"]:
        result.update(_differing_keys(sides["expected"], sides["actual"], key, columns))
    return result


def _differing_keys(expected: DataFrame, actual: DataFrame, key: list[str], columns: list[str]) -> dict:
    def per_key(frame: DataFrame, alias: str) -> DataFrame:
        return (
            frame.select(*[col(k) for k in key], row_hash(columns).alias("h"))
            .groupBy(*[col(k) for k in key])
            .agg(F.count("*").alias("n"), checksum(F.col("h")).alias("s"))
            .alias(alias)
        )

    on = [col(k, "e").eqNullSafe(col(k, "a")) for k in key]
    joined = per_key(expected, "e").join(per_key(actual, "a"), on, "full_outer")
    same = F.col("e.n").eqNullSafe(F.col("a.n")) & F.col("e.s").eqNullSafe(F.col("a.s"))
    problem = (
        F.when(F.col("a.n").isNull(), F.lit("missing from silver"))
        .when(F.col("e.n").isNull(), F.lit("in silver but not expected"))
        .when(F.col("e.n") != F.col("a.n"), F.concat(F.lit("expected "), "e.n", F.lit(" row(s), silver has "), "a.n"))
        .otherwise(F.lit("values differ"))
    )
    differing = joined.where(~same).select(
        F.struct(*[F.coalesce(col(k, "e"), col(k, "a")).cast("string").alias(k) for k in key]).alias("key"),
        problem.alias("problem"),
    )
    differing = differing.persist(CACHED)
    try:
        count = differing.count()
        sample = [
            {"key": r["key"].asDict(), "problem": r["problem"]}
            for r in differing.orderBy(*[col(k, "key") for k in key]).limit(SAMPLE_SIZE).collect()
        ]
    finally:
        differing.unpersist()
    return {"differing_keys": count, "sample": sample}


# ---------------------------------------------------------------------------------------------------------------
# state: silver against the whole bronze change log
# ---------------------------------------------------------------------------------------------------------------


def silver_frame(spark: SparkSession, engine: TableEngine, uri: str) -> DataFrame:
    """A silver table's current version as a Spark frame, read by the source's table engine."""
    try:
        return engine.spark_frame(spark, uri)
    except E.UnreadableTable as error:
        raise ReconcileError(str(error)) from error


def check_state(spark: SparkSession, source: SourceConfig, lake: Store, label: str) -> list[dict]:
    """Every silver table against its replica rebuilt from the whole bronze change log
    (lakeloader.audit.rebuilt_state)."""
    engine = engine_for(source)
    silver = silver_tables(lake, source.name)
    results = []
    with replica(spark, source, lake, "reconcile", label) as scratch:
        for name, replica_uri in sorted(silver_tables(scratch, source.name).items()):
            expected = silver_frame(spark, engine, replica_uri).drop(*NOT_COMPARED)
            key = json.loads(engine.properties(replica_uri).get(KEY_PROPERTY) or "null") or expected.columns
            uri = silver.pop(name, None)
            actual = silver_frame(spark, engine, uri) if uri else expected.limit(0)
            columns = expected.columns
            result = compare(expected, actual, key, columns)
            extra = [c for c in actual.columns if c not in columns and c not in NOT_COMPARED]
            if extra:
                result.update(ok=False, extra_columns=extra)
            if uri is None:
                result.update(ok=result["expected_rows"] == 0, silver_table="missing")
            results.append({"check": STATE, "table": name, "key": key, **result})
    for name, uri in sorted(silver.items()):
        rows = silver_frame(spark, engine, uri).count()
        results.append(
            {"check": STATE, "table": name, "ok": rows == 0, "expected_rows": 0, "actual_rows": rows,
             "problem": "silver table has no changes in bronze"}
        )  # fmt: skip
    return results


# ---------------------------------------------------------------------------------------------------------------
# snapshot: silver against the source's full export of current rows
# ---------------------------------------------------------------------------------------------------------------


def snapshot_tables(source: SourceConfig) -> dict[str, str]:
    """'db.table' -> directory of every table in the snapshot export (<uri>/<db>/<table>/<files>)."""
    assert source.snapshot is not None
    store = open_store(source.snapshot.uri, source.s3_endpoint_url)
    tables = {}
    for item in store.list():
        parts = item.key.split("/")
        if len(parts) >= 3 and not parts[-1].startswith(("_", ".")):
            tables[f"{unquote(parts[0])}.{unquote(parts[1])}"] = store.child(f"{parts[0]}/{parts[1]}")
    return tables


def snapshot_frame(spark: SparkSession, source: SourceConfig, directory: str, types: dict[str, str]) -> DataFrame:
    """The export's rows with each column converted to silver's type (text as canonical text: binary is Base64)."""
    assert source.snapshot is not None
    reader, path = spark.read, spark_path(directory)
    if source.snapshot.format == "json":
        frame = reader.option("primitivesAsString", "true").json(path)
    elif source.snapshot.format == "csv":
        frame = reader.option("header", "true").csv(path)
    else:
        frame = reader.parquet(path)
    text = dict(frame.dtypes)

    def converted(name: str) -> Column:
        value = col(name)
        if types[name] == "binary" and text[name] == "string":
            return F.try_to_binary(value, F.lit("base64")).alias(name)
        return value.try_cast(types[name]).alias(name)

    return frame.select(*[converted(c) for c in frame.columns if c in types])


def check_snapshot(spark: SparkSession, source: SourceConfig, lake: Store) -> list[dict]:
    engine = engine_for(source)
    silver = silver_tables(lake, source.name)
    results = []
    for name, directory in sorted(snapshot_tables(source).items()):
        uri = silver.get(name)
        if uri is None:
            results.append({"check": SNAPSHOT, "table": name, "ok": False, "problem": "no silver table"})
            continue
        actual = silver_frame(spark, engine, uri).drop(*[f.name for f in E.METADATA_FIELDS])
        types = dict(actual.dtypes)
        expected = snapshot_frame(spark, source, directory, types)
        columns = expected.columns
        recorded = engine.properties(uri).get(KEY_PROPERTY)
        key = [k for k in (json.loads(recorded) if recorded else columns) if k in columns] or columns
        result = compare(expected, actual.select(*columns), key, columns)
        results.append({"check": SNAPSHOT, "table": name, "key": key, "columns": columns, **result})
    return results


# ---------------------------------------------------------------------------------------------------------------
# a run
# ---------------------------------------------------------------------------------------------------------------


def watermark(spark: SparkSession, source: SourceConfig, hours: list[datetime], lake: Store) -> dict:
    """Newest change (data/ddl) and heartbeat event times in the hours' bronze, merged into freshness.json,
    which only moves forward (replaying old hours never makes a source look older)."""
    frames = [read_parquet_dir(spark, lake, zones.bronze_changes_dir(source.name, h), C.CHANGE_SCHEMA) for h in hours]
    newest = {"change": None, "heartbeat": None}
    if frames:
        bronze = frames[0]
        for frame in frames[1:]:
            bronze = bronze.unionByName(frame)
        row = bronze.agg(
            F.max(F.when(F.col("kind").isin(C.DATA, C.DDL), F.col("event_time"))).alias("change"),
            F.max(F.when(F.col("kind") == C.HEARTBEAT, F.col("event_time"))).alias("heartbeat"),
        ).first()
        assert row is not None  # an aggregate without grouping has one row
        newest = {k: row[k].replace(tzinfo=UTC).isoformat() if row[k] else None for k in newest}
    key = zones.freshness_key(source.name)
    state = json.loads(lake.read_bytes(key)) if lake.stat(key) is not None else {}
    merged = {
        "source": source.name,
        "newest_change": _later(state.get("newest_change"), newest["change"]),
        "newest_heartbeat": _later(state.get("newest_heartbeat"), newest["heartbeat"]),
    }
    merged["watermark"] = _later(merged["newest_change"], merged["newest_heartbeat"])
    if merged != {k: state.get(k) for k in merged}:
        lake.write_bytes(key, json.dumps({**merged, "updated_at": _now()}, indent=1).encode())
    return merged


def _later(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a or b
    return max(a, b, key=datetime.fromisoformat)


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


class ReconcileReport(TypedDict):
    """The reconciliation report (`audit/<source>/reconcile/<label>.json`, rendered as Markdown beside it)."""

    source: str
    label: str
    checked_at: str
    hours: list[str]
    checks: list[str]
    ok: bool
    results: list[dict[str, Any]]
    freshness: dict[str, Any]
    report_uri: str


@writes_source("reconcile")
def run_reconcile(
    spark: SparkSession,
    source: SourceConfig,
    hours: list[datetime],
    checks: tuple[str, ...],
    label: str,
    lake: Store | None = None,
) -> ReconcileReport:
    """Run the checks, write the report (JSON and Markdown) and the audit rows; returns the report."""
    unknown = set(checks) - set(CHECKS)
    if unknown:
        raise ReconcileError(f"unknown check(s) {sorted(unknown)}; known: {', '.join(CHECKS)}")
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    started = _now()
    results: list[dict] = []
    if ACCOUNTING in checks:
        results += [account_hour(spark, source, hour, lake) for hour in hours]
    if STATE in checks:
        results += check_state(spark, source, lake, label)
    if SNAPSHOT in checks:
        if source.snapshot is None:
            raise ReconcileError(f"source {source.name!r} has no snapshot export configured (key 'snapshot')")
        results += check_snapshot(spark, source, lake)
    report: ReconcileReport = {
        "source": source.name,
        "label": label,
        "checked_at": started,
        "hours": [zones.format_hour(h) for h in hours],
        "checks": list(checks),
        "ok": all(r["ok"] for r in results),
        "results": results,
        "freshness": watermark(spark, source, hours, lake),
        "report_uri": lake.child(zones.reconcile_report_key(source.name, label, "md")),
    }
    lake.write_bytes(zones.reconcile_report_key(source.name, label, "json"), json.dumps(report, indent=1).encode())
    lake.write_bytes(zones.reconcile_report_key(source.name, label, "md"), render_markdown(report).encode())
    engine_for(source).append(
        lake.child(zones.reconciliation_table_dir(source.name)),
        pa.Table.from_pylist(audit_rows(report), schema=AUDIT_SCHEMA),
    )
    return report


AUDIT_SCHEMA = pa.schema(
    [
        pa.field("checked_at", pa.timestamp("us", tz="UTC")),
        pa.field("source", pa.string()),
        pa.field("label", pa.string()),
        pa.field("check", pa.string()),
        pa.field("subject", pa.string()),  # the hour (accounting) or the table (state, snapshot)
        pa.field("ok", pa.bool_()),
        pa.field("expected", pa.int64()),
        pa.field("actual", pa.int64()),
        pa.field("expected_checksum", pa.string()),
        pa.field("actual_checksum", pa.string()),
        pa.field("differences", pa.int64()),
        pa.field("detail", pa.string()),  # the result as JSON
    ]
)
