"""One benchmark scenario end to end, every phase measured in the same run.

For every hour of the scenario, on that hour's landed export:
- floor: Spark reads the export files and writes them as Parquet (no parsing), the least any job pays;
- parse: `lakeloader.parse.step.run_parse` (bronze and quarantine written, counts reported);
- order+dedupe: `lakeloader.apply.key_actions.key_actions` over the hour's bronze, materialized (persisted, counted);
- to Arrow: every table's typed, deduplicated change set collected to the driver, as apply does;
- bare merge: one plain delta-rs MERGE of those change sets into a second copy of the tables;
- apply: `lakeloader.apply.step.run_apply` end to end (ordering again, typing, tombstones, conditional merge).
Generation and landing are measured too, as setup. With `compare=False` only land, parse and apply run
(what the growth curves need).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeloader.apply.key_actions import batch_tables, key_actions, with_order
from lakeloader.apply.step import (
    cached_for_reads_by_table,
    read_bronze,
    run_apply,
    silver_uri,
    with_segments,
)
from lakeloader.apply.typed_change_sets import CollectedChangeSets, Typing
from lakeloader.core.storage import Store, open_store, spark_path
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.land.step import land_hour
from lakeloader.parse import canonical as C
from lakeloader.parse.step import run_parse
from tools.bench import generate
from tools.bench.merges import MeasuredEngine, MergeRecord, bare_merge
from tools.bench.probe import PhaseRecord, Probe
from tools.bench.scenario import FIRST_HOUR, SOURCE, Scenario
from tools.bench.verify import verify_tables
from tools.bench.workspace import Layout, cached, clone_tables, fingerprint, source_config

LINES_PER_FILE = 250_000
FLOOR, PARSE, ORDER, TO_ARROW, BARE, APPLY = (
    "floor: Spark reads export, writes Parquet",
    "parse",
    "order+dedupe",
    "to Arrow: change sets to the driver",
    "bare delta-rs merge",
    "apply (run_apply, end to end)",
)


@dataclass
class ScenarioResult:
    scenario: Scenario
    layout: Layout
    streamed_merge: bool
    phases: list[PhaseRecord] = field(default_factory=list)
    apply_merges: list[MergeRecord] = field(default_factory=list)
    bare_merges: list[MergeRecord] = field(default_factory=list)
    verified: dict | None = None


def prepare_export(spark: SparkSession, probe: Probe, scenario: Scenario, workdir: Path) -> Path:
    parameters = {"scenario": scenario.as_dict(), "lines_per_file": LINES_PER_FILE}
    directory = workdir / "exports" / fingerprint(parameters)
    with probe.phase("setup: generate export", scenario.changes) as record:
        record.details["reused"] = cached(
            directory, parameters, lambda d: generate.write_export(spark, scenario, d, LINES_PER_FILE)
        )
    return directory


def prepare_base(spark: SparkSession, probe: Probe, scenario: Scenario, layout: Layout, workdir: Path) -> Path:
    """The pre-existing tables of the scenario's size in `layout`; returns their silver directory."""
    parameters = {"tables": scenario.tables, "existing_rows": scenario.existing_rows, **layout.__dict__}
    directory = workdir / "base" / fingerprint(parameters)

    def build(lake: Path) -> None:
        generate.write_silver(spark, scenario, lake, layout.rows_per_file, layout.target_file_size)

    with probe.phase("setup: generate silver tables", scenario.existing_rows) as record:
        record.details["reused"] = cached(directory, parameters, build)
    return directory / "silver"


def run_scenario(
    spark: SparkSession,
    probe: Probe,
    scenario: Scenario,
    layout: Layout,
    workdir: Path,
    *,
    streamed_merge: bool = False,
    compare: bool = True,
    verify: bool = True,
) -> ScenarioResult:
    """Generate (or reuse) the data, then run the phases for every hour; see the module docstring."""
    result = ScenarioResult(scenario, layout, streamed_merge)
    first_record = len(probe.records)
    exports = prepare_export(spark, probe, scenario, workdir)
    base = prepare_base(spark, probe, scenario, layout, workdir)
    run_dir = workdir / "runs" / "current"
    lake, bare_lake = run_dir / "lake", run_dir / "bare"
    shutil.rmtree(run_dir, ignore_errors=True)
    clone_tables(base, lake)
    if compare:
        clone_tables(base, bare_lake)
    source = source_config(exports, lake, scenario.table_names())
    store = open_store(str(lake))
    engine = MeasuredEngine(DeltaRsEngine(streamed_merge=streamed_merge))
    for offset in range(scenario.hours):
        hour = FIRST_HOUR + timedelta(hours=offset)
        with probe.phase("setup: land", 0):
            manifest = land_hour(source, hour).manifest
        paths = [lake / f.raw_key for f in manifest]
        changes = sum(generate.count_lines(p) for p in paths)
        probe.records[-1].changes = changes
        if compare:
            with probe.phase(FLOOR, changes):
                text = spark.read.text([spark_path(str(p)) for p in paths])
                text.write.mode("overwrite").parquet(spark_path(str(run_dir / "floor")))
        with probe.phase(PARSE, changes) as record:
            record.details = run_parse(spark, source, hour)["outcomes"]
        if compare:
            change_sets = order_and_collect(spark, probe, store, hour, changes)
            with probe.phase(BARE, changes):
                for shape, change_set in change_sets:
                    uri = bare_lake / Path(silver_uri(store, source.name, shape)).relative_to(lake)
                    result.bare_merges.append(bare_merge(str(uri), change_set, shape.key, streamed_merge))
            del change_sets
        merges_before = len(engine.merges)
        with probe.phase(APPLY, changes) as record:
            report = run_apply(spark, source, hour, lake=store, engine=engine)
            record.details = _apply_totals(report)
        result.apply_merges.extend(engine.merges[merges_before:])
    if verify:
        result.verified = verify_tables(
            spark, scenario, {"apply": lake, "bare": bare_lake} if compare else {"apply": lake}
        )
    result.phases = probe.records[first_record:]
    shutil.rmtree(run_dir, ignore_errors=True)
    return result


def order_and_collect(spark: SparkSession, probe: Probe, store: Store, hour: datetime, changes: int) -> list:
    """Order+dedupe (materialized), then every table's change set as Arrow: [(TableShape, pa.Table)], as
    apply collects them."""
    # the generated stream carries no DDL: one segment per table, as apply would find
    data = with_segments(read_bronze(spark, store, SOURCE, hour).where(F.col("kind") == C.DATA), {})
    data = with_order(data, "dataworks_json")  # the bench source (workspace.py)
    with probe.phase(ORDER, changes) as record:
        batch = batch_tables(data, {})
        shapes = batch.shapes
        cached, actions = cached_for_reads_by_table(key_actions(data, shapes, "dataworks_json"))
        record.details["actions"] = actions.count()
    try:
        loaded_at = datetime.now(UTC)
        with probe.phase(TO_ARROW, changes):  # the bench's silver tables hold no column as text
            sizes = {name: count for name, (count, _) in batch.counts.items()}
            collected = CollectedChangeSets(actions, loaded_at, shapes, sizes, lambda s: Typing.of(s, ()))
            return [(s, collected.change_set(s, ())) for s in shapes]
    finally:
        cached.unpersist()


def _apply_totals(report: dict) -> dict:
    keys = ("changes", "actions", "inserted", "updated", "deleted", "stale_upserts")
    return {k: sum(t.get(k, 0) for t in report["tables"].values()) for k in keys}
