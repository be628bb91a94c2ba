"""Apply with each table engine on the same change sets (docs/performance.md, "The two table engines side by side").

For each change volume: the scenario's export is landed and parsed once; each engine then applies the hours to
its own clone of that lake (the same pre-existing tables, the same bronze): `delta_rs`, the embedded engine
(each table's change set collected to the driver as Arrow and merged by delta-rs in this process), and
`delta_spark` (Delta Lake MERGEs as Spark jobs; the change sets never reach the driver). Every merge is timed,
with the files and bytes it rewrote (from the Delta log, read the same way for both), the tables of both are
checked against the stream, and the phase's peak memory shows what each engine holds in the driver.

The Spark session needs Delta's jars (`jars_conf`), given when the benchmark starts it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from lakeloader.apply.step import run_apply
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import open_store
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.engine.deltaspark import DeltaSparkEngine
from lakeloader.land.step import land_hour
from lakeloader.parse.step import run_parse
from tools.bench import generate
from tools.bench.merges import MeasuredEngine
from tools.bench.probe import Probe
from tools.bench.report import fmt, markdown_table, merge_summary
from tools.bench.run import prepare_base, prepare_export
from tools.bench.scenario import FIRST_HOUR, Scenario
from tools.bench.verify import verify_tables
from tools.bench.workspace import Layout, clone_tables, source_config

ENGINES = ("delta_rs", "delta_spark")
# Delta on Spark rebuilds a table's state after each commit in this many partitions (Delta's default is 50),
# as config/spark/local.conf sets it for local runs
SESSION_CONF = {"spark.databricks.delta.snapshotPartitions": "1"}


def run_engines(
    spark: SparkSession,
    probe: Probe,
    scenario: Scenario,
    layout: Layout,
    change_points: list[int],
    workdir: Path,
    verify: bool = True,
) -> list[dict]:
    """One row per (change volume, engine): apply seconds, peak memory of the Python driver and of the JVM,
    merge totals (files and bytes rewritten) and the verification."""
    rows = []
    for changes in change_points:
        point = replace(scenario, changes=changes)
        parsed = workdir / "runs" / "engines" / "parsed"
        source = _land_and_parse(spark, probe, point, layout, workdir, parsed)
        for name in ENGINES:
            lake = parsed.parent / name
            shutil.rmtree(lake, ignore_errors=True)
            shutil.copytree(parsed, lake, copy_function=_link_data_files)
            engine = MeasuredEngine(DeltaRsEngine() if name == "delta_rs" else DeltaSparkEngine(spark))
            engine_source = source.model_copy(update={"lake_root": str(lake), "engine": name})
            with probe.phase(f"apply with {name} ({point.label()})", point.changes) as record:
                for offset in range(point.hours):
                    run_apply(spark, engine_source, FIRST_HOUR + timedelta(hours=offset), open_store(str(lake)), engine)
            merges = merge_summary(engine.merges)
            merge_seconds = merges.pop("seconds")
            row = {
                "engine": name,
                "changes": point.changes,
                "existing_rows": point.existing_rows,
                "keys": point.keys,
                "apply_seconds": record.seconds,
                "driver_peak_mib": record.driver_peak_mb,
                "jvm_peak_mib": record.jvm_peak_mb,
                **merges,
                "merge_seconds": merge_seconds,
            }
            if verify:
                row["verified"] = verify_tables(spark, point, {name: lake})[name]["ok"]
            rows.append(row)
            shutil.rmtree(lake, ignore_errors=True)
        shutil.rmtree(parsed, ignore_errors=True)
    return rows


def _link_data_files(source: str, target: str) -> None:
    """Parquet files hard-linked (no engine modifies one), everything else copied (a table log's
    `_last_checkpoint` is rewritten in place)."""
    if source.endswith(".parquet"):
        os.link(source, target)
    else:
        shutil.copy2(source, target)


def _land_and_parse(
    spark: SparkSession, probe: Probe, scenario: Scenario, layout: Layout, workdir: Path, lake: Path
) -> SourceConfig:
    """A lake of the scenario's pre-existing tables with its hours landed and parsed; returns its source."""
    exports = prepare_export(spark, probe, scenario, workdir)
    clone_tables(prepare_base(spark, probe, scenario, layout, workdir), lake)
    source = source_config(exports, lake, scenario.table_names())
    for offset in range(scenario.hours):
        hour = FIRST_HOUR + timedelta(hours=offset)
        manifest = land_hour(source, hour).manifest
        changes = sum(generate.count_lines(lake / f.raw_key) for f in manifest)
        with probe.phase("setup: land and parse", changes):
            run_parse(spark, source, hour)
    return source


def engines_markdown(rows: list[dict]) -> str:
    headers = ["changes", "engine", "apply s", "of which merges s", "driver peak MiB", "JVM peak MiB", "merges",
               "files rewritten / files", "files written", "MiB rewritten", "verified"]  # fmt: skip
    cells = [
        [fmt(r["changes"]), r["engine"], fmt(r["apply_seconds"], 1), fmt(r["merge_seconds"], 1),
         fmt(r["driver_peak_mib"]), fmt(r["jvm_peak_mib"]), str(r["merges"]),
         f"{r['files_removed']} / {r['files_before']}", str(r["files_added"]), fmt(r["mib_removed"], 1),
         str(r.get("verified", "not checked"))]
        for r in rows
    ]  # fmt: skip
    return "\n".join(markdown_table(headers, cells)) + "\n"
