"""Parse throughput per wire format: an export of N messages in each format (`tools.cdcgen.wire`),
then, measured in the same process on the same landed files: the floor (Spark reads the landed files and writes
them as Parquet), the textbook parse (`tools.bench.textbook`), parse (`run_parse`: the format's parser, bronze and
quarantine written, the report's counts), the batch's table shapes (`batch_tables`: columns, keys, counts),
order+dedupe (`key_actions` over that bronze, materialized) and the textbook order+dedupe of the same bronze.

The two parses and the two windows are compared warm: each is run once before it is measured. A format's parse
runs code of its own (its JVM reader, its expressions) that the JVM compiles during its first run, where the
textbook's is Spark's JSON reader, already compiled by the formats before; so a first run compares a cold parse
with a warm textbook. The parse's first run is measured too (`PARSE_FIRST`), and reported beside the warm one.
Each pair is then measured in ROUNDS rounds, the two taking turns (so a change in the machine's load falls on
both), and each reported by its median round, with the range: one run of each moved 10-20% between runs.

The stream is one keyed table: the first quarter of the changes insert keys, the rest update them (and delete
every tenth, re-inserting it later), so every format carries inserts, updates and deletes in proportions a
replicated OLTP table shows. Generated exports are kept under <workdir>/formats/<format>/<n> and reused.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
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
ROUNDS = 3  # measured rounds of each parse and each window (module docstring)


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


def run_formats(
    spark: SparkSession, probe: Probe, formats: list[str], n: int, workdir: Path, rounds: int = ROUNDS
) -> list[dict]:
    """Floor, textbook parse, parse, order+dedupe and textbook order+dedupe per format; one row per format for
    the report (a phase that does not apply to a format, the textbook parse of DTS Avro, is None). The parses and
    the windows are measured in `rounds` rounds (module docstring).

    The first format is run once unmeasured before the measured rounds: the JVM compiles the code every format
    shares (reading, writing, sorting) on it, which would otherwise be charged to whichever format comes first
    (its parse and order took about twice as long as when run later in the same process)."""
    if formats:
        warm_up = Probe(probe.jvm_pid)
        try:
            _measure(spark, warm_up, formats[0], n, workdir, 1)
        finally:
            warm_up.close()
    return [_measure(spark, probe, fmt, n, workdir, rounds) for fmt in formats]


def _in_turns(probe: Probe, messages: int, runs: dict[str, Callable[[], dict]], rounds: int) -> list[PhaseRecord]:
    """`rounds` rounds of each run (phase name -> what to run, which returns the phase's details) in turn, measured
    by `probe`; per run, its rounds in the order they ran."""
    records: dict[str, list[PhaseRecord]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            with probe.phase(name, messages) as record:
                record.details = run()
            records[name].append(record)
    return list(records.values())


def _median(rounds: list[PhaseRecord]) -> PhaseRecord:
    """The round of median seconds (of an even number, the slower of the middle two)."""
    return sorted(rounds, key=lambda r: r.seconds)[len(rounds) // 2]


def _seconds(rounds: list[PhaseRecord]) -> str:
    """The median round's seconds, with the range of the rounds when there are several."""
    median = f"{_median(rounds).seconds:.1f}"
    if len(rounds) == 1:
        return median
    return f"{median} ({min(r.seconds for r in rounds):.1f}-{max(r.seconds for r in rounds):.1f})"


def _measure(spark: SparkSession, probe: Probe, fmt: str, n: int, workdir: Path, rounds: int) -> dict:
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

    def textbook_parsed() -> dict:
        textbook_parse(spark, fmt, paths, directory / "textbook")
        return {}

    parses: dict[str, Callable[[], dict]] = {}
    if fmt in ENVELOPES:
        textbook_parsed()  # once unmeasured first (module docstring)
        parses[f"{TEXTBOOK}: {fmt}"] = textbook_parsed
    with probe.phase(f"{PARSE_FIRST}: {fmt}", messages) as parse_first:
        run_parse(spark, source, HOUR)
    parses[f"{PARSE}: {fmt}"] = lambda: dict(run_parse(spark, source, HOUR)["outcomes"])
    *textbook, parse = _in_turns(probe, messages, parses, rounds)  # no textbook round for a format without one
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
    windows = {
        f"{ORDER}: {fmt}": lambda: {"actions": ordered()},
        f"{TEXTBOOK_ORDER}: {fmt}": lambda: {"actions": textbook_ordered()},
    }
    order, textbook_order = _in_turns(probe, messages, windows, rounds)
    return {
        "format": fmt,
        "messages": messages,
        "mib": sum(entry.size for entry in manifest) / 2**20,
        "floor": floor,
        "textbook": textbook[0] if textbook else None,  # rounds, as parse, order and textbook_order
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
    1.0 is as fast as the anchor), by wall clock and by JVM CPU seconds. The parses and the windows are their median
    warm rounds (the range in brackets), beside the parse's first run (module docstring); order / textbook compares
    the windows; the table shapes, which the textbook is given, are their own column. Peak memory is the highest of
    the parse's rounds."""
    lines = [
        "| format | messages | MiB | floor s | textbook s | parse s | parse, first run s | parse messages/s "
        "| parse MiB/s | parse / floor | parse / textbook | parse / textbook, CPU | table shapes s | order+dedupe s "
        "| textbook order s | order / textbook | order / textbook, CPU | quarantined | peak MiB JVM | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        floor, textbooks, parses, orders, textbook_orders = (
            r["floor"],
            r["textbook"],
            r["parse"],
            r["order"],
            r["textbook_order"],
        )
        textbook = _median(textbooks) if textbooks else None
        parse, order, textbook_order = _median(parses), _median(orders), _median(textbook_orders)
        lines.append(
            f"| {r['format']} | {r['messages']:,} | {r['mib']:.0f} | {floor.seconds:.1f} "
            f"| {_seconds(textbooks) if textbooks else '-'} | {_seconds(parses)} | {r['parse_first'].seconds:.1f} "
            f"| {parse.per_second:,.0f} | {r['mib'] / parse.seconds:.1f} "
            f"| {_ratio(parse, floor)} | {_ratio(parse, textbook)} | {_ratio(parse, textbook, cpu=True)} "
            f"| {r['shapes'].seconds:.1f} | {_seconds(orders)} | {_seconds(textbook_orders)} "
            f"| {_ratio(order, textbook_order)} "
            f"| {_ratio(order, textbook_order, cpu=True)} | {parse.details.get('quarantined', 0):,} "
            f"| {max(p.jvm_peak_mb for p in parses):,.0f} "
            f"| {floor.load_before:.1f}-{textbook_orders[-1].load_after:.1f} |"
        )
    return "\n".join(lines) + "\n"
