"""Parse throughput per wire format: an export of N messages in each format (`tools.cdcgen.wire`),
then, measured in the same process, the floor (Spark reads the landed files and writes them as Parquet) and
parse (`run_parse`: the format's parser, bronze and quarantine written, the report's counts).

The stream is one keyed table: the first quarter of the changes insert keys, the rest update them (and delete
every tenth, re-inserting it later), so every format carries inserts, updates and deletes in proportions a
replicated OLTP table shows. Generated exports are kept under <workdir>/formats/<format>/<n> and reused.
"""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import spark_path
from lakeloader.land.step import land_hour
from lakeloader.parse.step import run_parse
from tools.bench.generate import count_lines
from tools.bench.probe import Probe
from tools.cdcgen import wire

HOUR = wire.BASE
FLOOR, PARSE = "floor", "parse"


def _export(directory: Path, fmt: str, n: int) -> Path:
    """The format's export of n changes (written once, then reused); returns the export directory."""
    exports = directory / "exports"
    done = directory / "complete"
    if not done.exists():
        shutil.rmtree(exports, ignore_errors=True)
        path = exports / f"{wire.ITEMS.name}-topic" / "part-0.json"
        path.parent.mkdir(parents=True)
        with path.open("w") as out:
            for change in wire.keyed_stream(wire.ITEMS, n)[0]:
                for line in wire.WRITERS[fmt](change):
                    out.write(line + "\n")
        moment = (HOUR + timedelta(minutes=30)).timestamp()
        os.utime(path, (moment, moment))
        done.touch()
    return exports


def run_formats(spark: SparkSession, probe: Probe, formats: list[str], n: int, workdir: Path) -> list[dict]:
    """Floor and parse per format; one row per format for the report."""
    rows = []
    for fmt in formats:
        directory = workdir / "formats" / fmt / str(n)
        exports = _export(directory, fmt, n)
        lake = directory / "lake"
        shutil.rmtree(lake, ignore_errors=True)
        settings = wire.settings(fmt, (wire.ITEMS,))
        source = SourceConfig(name="bench", format=fmt, export_uri=str(exports), lake_root=str(lake), **settings)
        manifest = land_hour(source, HOUR).manifest
        paths = [spark_path(str(lake / entry.raw_key)) for entry in manifest]
        messages = sum(count_lines(lake / entry.raw_key) for entry in manifest)
        with probe.phase(f"{FLOOR}: {fmt}", messages) as floor:
            spark.read.text(paths).write.mode("overwrite").parquet(spark_path(str(directory / "floor")))
        with probe.phase(f"{PARSE}: {fmt}", messages) as parse:
            outcomes = run_parse(spark, source, HOUR)["outcomes"]
            parse.details = outcomes
        size = sum(entry.size for entry in manifest)
        rows.append({"format": fmt, "messages": messages, "mib": size / 2**20, "floor": floor, "parse": parse})
    return rows


def formats_markdown(rows: list[dict]) -> str:
    lines = [
        "| format | messages | MiB | floor s | parse s | parse messages/s | of floor | quarantined | peak MiB JVM |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        floor, parse = r["floor"], r["parse"]
        lines.append(
            f"| {r['format']} | {r['messages']:,} | {r['mib']:.0f} | {floor.seconds:.1f} | {parse.seconds:.1f} "
            f"| {parse.per_second:,.0f} | {floor.seconds / parse.seconds:.2f} | "
            f"{parse.details.get('quarantined', 0):,} | {parse.jvm_peak_mb:,.0f} |"
        )
    return "\n".join(lines) + "\n"
