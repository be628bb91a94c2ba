"""Which silver file layout and merge mode keep a key-local change set from rewriting the whole table.

For each key distribution the stream is landed, parsed, ordered and collected once per hour; then every
layout variant gets a fresh copy of the pre-existing tables and merges the same change sets hour after
hour with the apply job's engine (`DeltaRsEngine.merge`, tombstones left out), recording per merge the
time and the files rewritten. Later hours show whether a layout survives the files its merges write.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from lakeloader.apply.step import silver_uri
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import open_store
from lakeloader.engine import base as E
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.land.step import land_hour
from lakeloader.parse.step import run_parse
from tools.bench import generate
from tools.bench.merges import MeasuredEngine
from tools.bench.probe import Probe
from tools.bench.report import MERGE_HEADERS, markdown_table, merge_cells, merge_summary
from tools.bench.run import PARSE, order_and_collect, prepare_base, prepare_export
from tools.bench.scenario import FIRST_HOUR, SOURCE, Scenario
from tools.bench.workspace import Layout, clone_tables, source_config

# Spark-written Parquet of the generated rows takes about 46 bytes a row; the target-size variant aims at
# about twice the initial files' size.
TARGET_BYTES_PER_ROW = 90
DEFAULT_FILE_SIZE_MB = SourceConfig.model_fields["silver_file_size_mb"].default
DEFAULT_FILE_SIZE = DEFAULT_FILE_SIZE_MB * 2**20


@dataclass(frozen=True)
class Variant:
    name: str
    layout: Layout
    streamed_merge: bool
    recluster_file_size: int | None = None  # recluster the tables (as the apply step does) before the first hour


@dataclass(frozen=True)
class KeyVariant:
    name: str
    keys: str
    hot_share: float


KEY_VARIANTS = (
    KeyVariant("local 80% on newest 10%", "local", 0.8),
    KeyVariant("local 100% on newest 10%", "local", 1.0),
    KeyVariant("uniform", "uniform", 0.8),
)


def variants(rows_per_table: int, files_per_table: int) -> list[Variant]:
    """The layouts compared: one file per table (what delta-rs writes for a table under its 100 MiB
    default target size) and key-ordered files, each with delta-rs' streamed merge (no file skipping) and
    the non-streamed one; key-ordered files with a target size that keeps merge-written files near the
    initial file size; and the apply step's own layout, reclustered at the default `silver_file_size_mb`."""
    rows_per_file = max(1, rows_per_table // files_per_table)
    one, ordered = Layout(rows_per_table), Layout(rows_per_file)
    sized = Layout(rows_per_file, rows_per_file * TARGET_BYTES_PER_ROW)
    return [
        Variant("one file per table, streamed merge", one, True),
        Variant("one file per table", one, False),
        Variant(f"{files_per_table} key-ordered files per table, streamed merge", ordered, True),
        Variant(f"{files_per_table} key-ordered files per table", ordered, False),
        Variant(
            f"{files_per_table} key-ordered files per table, target size {sized.target_file_size:,} B", sized, False
        ),
        Variant(f"reclustered by the apply step into {DEFAULT_FILE_SIZE_MB} MiB files", one, False, DEFAULT_FILE_SIZE),
    ]


def run_layout(spark: SparkSession, probe: Probe, base: Scenario, files_per_table: int, workdir: Path) -> list[dict]:
    rows = []
    for key_variant in KEY_VARIANTS:
        scenario = replace(base, keys=key_variant.keys, hot_share=key_variant.hot_share)
        hours = _change_sets(spark, probe, scenario, workdir)
        for variant in variants(scenario.rows_per_table, files_per_table):
            silver = prepare_base(spark, probe, scenario, variant.layout, workdir)
            lake = workdir / "runs" / "layout"
            clone_tables(silver, lake)
            store = open_store(str(lake))
            engine = MeasuredEngine(DeltaRsEngine(streamed_merge=variant.streamed_merge))
            if variant.recluster_file_size:
                with probe.phase("setup: recluster", scenario.existing_rows):
                    for shape, _ in hours[0]:
                        engine.recluster(silver_uri(store, SOURCE, shape), shape.key, variant.recluster_file_size, {})
            for offset, change_sets in enumerate(hours):
                before = len(engine.merges)
                for shape, change_set in change_sets:
                    engine.merge(silver_uri(store, SOURCE, shape), change_set, shape.key, E.ORDERING_COLUMNS, {})
                rows.append(
                    {
                        "keys": key_variant.name,
                        "variant": variant.name,
                        "layout": variant.layout.__dict__,
                        "streamed_merge": variant.streamed_merge,
                        "hour": offset + 1,
                        "merges": merge_summary(engine.merges[before:]),
                    }
                )
    return rows


def _change_sets(spark: SparkSession, probe: Probe, scenario: Scenario, workdir: Path) -> list[list]:
    """Per hour, every table's deduplicated change set as Arrow (land, parse, order, collect)."""
    exports = prepare_export(spark, probe, scenario, workdir)
    lake = workdir / "runs" / "layout-source"
    shutil.rmtree(lake, ignore_errors=True)
    source, store = source_config(exports, lake, scenario.table_names()), open_store(str(lake))
    hours = []
    for offset in range(scenario.hours):
        hour = FIRST_HOUR + timedelta(hours=offset)
        with probe.phase("setup: land", 0):
            manifest = land_hour(source, hour).manifest
        changes = sum(generate.count_lines(lake / f.raw_key) for f in manifest)
        with probe.phase(PARSE, changes):
            run_parse(spark, source, hour)
        hours.append(order_and_collect(spark, probe, store, hour, changes))
    return hours


def layout_markdown(rows: list[dict]) -> str:
    lines = []
    for key_variant in KEY_VARIANTS:
        lines += ["", f"#### Keys: {key_variant.name}", ""]
        lines += markdown_table(
            ["layout, merge", "hour", "merges", *MERGE_HEADERS],
            [
                [r["variant"], str(r["hour"]), str(r["merges"]["merges"]), *merge_cells(r["merges"])]
                for r in rows
                if r["keys"] == key_variant.name
            ],
        )
    return "\n".join(lines) + "\n"
