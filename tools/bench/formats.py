"""Parse throughput per wire format: an export of N messages in each format (`tools.cdcgen.wire`),
then, measured in the same process on the same landed files: the floor (Spark reads the landed files and writes
them as Parquet), the textbook parse (`tools.bench.textbook`), parse (`run_parse`: the format's parser, bronze and
quarantine written, the report's counts), the batch's table shapes (`batch_tables`: columns, keys, counts),
order+dedupe (`key_actions` over that bronze, materialized) and the textbook order+dedupe of the same bronze.

The two parses and the two windows are compared warm: each is run once before it is measured. A format's parse
runs code of its own (its JVM reader, its expressions) that the JVM compiles during its first run, where the
textbook's is Spark's JSON reader, already compiled by the formats before; so a first run compares a cold parse
with a warm textbook. The parse's first run is measured too (`PARSE_FIRST`), and reported beside the warm one.

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
from pyspark.sql import functions as F

from lakeloader.apply.key_actions import batch_tables, key_actions, with_order
from lakeloader.apply.step import cached_for_reads_by_table, read_bronze, with_segments
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import open_store, spark_path
from lakeloader.land.step import land_hour
from lakeloader.parse import canonical as C
from lakeloader.parse.step import run_parse
from tools.bench.generate import count_lines
from tools.bench.probe import PhaseRecord, Probe
from tools.bench.textbook import ENVELOPES, textbook_dedupe, textbook_parse
from tools.cdcgen import wire

HOUR = wire.BASE
FLOOR, TEXTBOOK, PARSE, PARSE_FIRST = "floor", "textbook parse", "parse", "parse, first run"
SHAPES, ORDER, TEXTBOOK_ORDER = "table shapes", "order+dedupe", "textbook order+dedupe"


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
    """Floor, textbook parse, parse, order+dedupe and textbook order+dedupe per format; one row per format for
    the report (a phase that does not apply to a format, the textbook parse of DTS Avro, is None).

    The first format is run once unmeasured before the measured rounds: the JVM compiles the code every format
    shares (reading, writing, sorting) on it, which would otherwise be charged to whichever format comes first
    (its parse and order took about twice as long as when run later in the same process)."""
    if formats:
        warm_up = Probe(probe.jvm_pid)
        try:
            _measure(spark, warm_up, formats[0], n, workdir)
        finally:
            warm_up.close()
    return [_measure(spark, probe, fmt, n, workdir) for fmt in formats]


def _measure(spark: SparkSession, probe: Probe, fmt: str, n: int, workdir: Path) -> dict:
    """One format's phases (`run_formats`), measured by `probe`."""
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
    textbook: PhaseRecord | None = None
    if fmt in ENVELOPES:
        textbook_parse(spark, fmt, paths, directory / "textbook")  # once unmeasured first (module docstring)
        with probe.phase(f"{TEXTBOOK}: {fmt}", messages) as textbook:
            textbook_parse(spark, fmt, paths, directory / "textbook")
    with probe.phase(f"{PARSE_FIRST}: {fmt}", messages) as parse_first:
        run_parse(spark, source, HOUR)
    with probe.phase(f"{PARSE}: {fmt}", messages) as parse:
        outcomes = run_parse(spark, source, HOUR)["outcomes"]
        parse.details = outcomes
    store = open_store(str(lake))
    data = with_segments(read_bronze(spark, store, source.name, HOUR).where(F.col("kind") == C.DATA), {})
    data = with_order(data, fmt)
    # apply's table shapes (columns, types, keys, counts: one pass over the batch) apart from the window,
    # which is what the textbook window does; the textbook is handed the key that the shapes find
    with probe.phase(f"{SHAPES}: {fmt}", messages) as shapes_phase:
        shapes = batch_tables(data, {}).shapes

    def ordered() -> int:
        cached, actions = cached_for_reads_by_table(key_actions(data, shapes, fmt))
        try:
            return actions.count()
        finally:
            cached.unpersist()

    def textbook_ordered() -> int:
        return textbook_dedupe(read_bronze(spark, store, source.name, HOUR), ("id",))

    # each window once unmeasured first: the textbook's plan is the same for every format, so its generated code
    # is compiled and warm from the formats before, where ours (its plan names the format's order) would be cold
    ordered(), textbook_ordered()
    with probe.phase(f"{ORDER}: {fmt}", messages) as order:
        order.details["actions"] = ordered()
    with probe.phase(f"{TEXTBOOK_ORDER}: {fmt}", messages) as textbook_order:
        textbook_order.details["actions"] = textbook_ordered()
    return {
        "format": fmt,
        "messages": messages,
        "mib": sum(entry.size for entry in manifest) / 2**20,
        "floor": floor,
        "textbook": textbook,
        "parse": parse,
        "parse_first": parse_first,
        "shapes": shapes_phase,
        "order": order,
        "textbook_order": textbook_order,
    }


def _ratio(ours: PhaseRecord, anchor: PhaseRecord | None, cpu: bool = False) -> str:
    """Our time over the anchor's (wall clock, or the JVM's CPU seconds: on a shared machine the CPU time is
    the steadier measure); '-' without an anchor."""
    if anchor is None:
        return "-"
    mine, theirs = (ours.jvm_cpu_seconds, anchor.jvm_cpu_seconds) if cpu else (ours.seconds, anchor.seconds)
    return f"{mine / theirs:.1f}" if theirs > 0 else "-"


def formats_markdown(rows: list[dict]) -> str:
    """Per format: seconds of each phase, parse's messages/s and MB/s, and the ratios (our time over the anchor's:
    1.0 is as fast as the anchor), by wall clock and by JVM CPU seconds. Parse is its warm run, beside its first
    (module docstring); order / textbook compares the windows; the table shapes, which the textbook is given, are
    their own column."""
    lines = [
        "| format | messages | MiB | floor s | textbook s | parse s | parse, first run s | parse messages/s "
        "| parse MiB/s | parse / floor | parse / textbook | parse / textbook, CPU | table shapes s | order+dedupe s "
        "| textbook order s | order / textbook | order / textbook, CPU | quarantined | peak MiB JVM | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        floor, textbook, parse, order, textbook_order = (
            r["floor"],
            r["textbook"],
            r["parse"],
            r["order"],
            r["textbook_order"],
        )
        textbook_seconds = f"{textbook.seconds:.1f}" if textbook is not None else "-"
        lines.append(
            f"| {r['format']} | {r['messages']:,} | {r['mib']:.0f} | {floor.seconds:.1f} | {textbook_seconds} "
            f"| {parse.seconds:.1f} | {r['parse_first'].seconds:.1f} | {parse.per_second:,.0f} "
            f"| {r['mib'] / parse.seconds:.1f} "
            f"| {_ratio(parse, floor)} | {_ratio(parse, textbook)} | {_ratio(parse, textbook, cpu=True)} "
            f"| {r['shapes'].seconds:.1f} | {order.seconds:.1f} | {textbook_order.seconds:.1f} "
            f"| {_ratio(order, textbook_order)} "
            f"| {_ratio(order, textbook_order, cpu=True)} | {parse.details.get('quarantined', 0):,} "
            f"| {parse.jvm_peak_mb:,.0f} | {floor.load_before:.1f}-{textbook_order.load_after:.1f} |"
        )
    return "\n".join(lines) + "\n"
