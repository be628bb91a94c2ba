"""python -m tools.bench [common options] {run,growth,layout,all,formats,engines} [options]

Defaults are the full-size benchmark (1M changes over 20 tables into 10M rows); `--scale` multiplies every
count (changes, rows, rows per file, curve points), so `--scale 0.02` runs the same code on 20k changes
and 200k rows. Results go to <results>/<timestamp>-<command>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from lakeloader.core.config import PROJECT_ROOT

COMMANDS = ("run", "growth", "layout", "all", "formats", "engines")


def _ints(text: str) -> list[int]:
    return [int(float(v)) for v in text.split(",") if v]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "command",
        choices=COMMANDS,
        help="run: one scenario; growth: apply-time curves; layout: file layouts and merge modes; "
        "all: the issue's set (run over 1 hour and over 10 hours, growth, layout); "
        "formats: parse throughput of every wire format next to the floor; "
        "engines: apply with delta_rs and with delta_spark on the same change sets (needs `make jars`)",
    )
    p.add_argument("--scale", type=float, default=1.0, help="multiply every count (default 1 = full size)")
    p.add_argument("--workdir", type=Path, default=PROJECT_ROOT / "var" / "bench", help="generated data (reused)")
    p.add_argument("--results", type=Path, default=PROJECT_ROOT / "var" / "bench" / "results")
    p.add_argument("--driver-memory", default="1g", help="spark.driver.memory (the jobs' default is 1g)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--no-verify", dest="verify", action="store_false", help="skip checking tables against the stream")
    g = p.add_argument_group("scenario (run, growth, all)")
    g.add_argument("--changes", type=int, default=1_000_000)
    g.add_argument("--tables", type=int, default=20)
    g.add_argument("--existing-rows", type=int, default=10_000_000, help="rows in all tables before the run")
    g.add_argument("--hours", type=int, default=1, help="hours the changes are spread over (run)")
    g.add_argument("--keys", default="local", choices=("local", "uniform"))
    g.add_argument("--hot-share", type=float, default=0.8, help="share of updates/deletes on the newest keys")
    g.add_argument("--hot-fraction", type=float, default=0.1, help="fraction of keys that are the newest")
    g.add_argument("--rows-per-file", type=int, default=50_000, help="pre-existing rows per file, in key order")
    g.add_argument("--target-file-size", type=int, help="delta.targetFileSize of the tables (bytes)")
    g.add_argument("--streamed-merge", action="store_true", help="delta-rs streamed_exec merge (the old default)")
    g = p.add_argument_group("growth")
    g.add_argument("--change-points", type=_ints, default=[100_000, 300_000, 1_000_000])
    g.add_argument("--existing-points", type=_ints, default=[1_000_000, 3_000_000, 10_000_000])
    g.add_argument("--fixed-changes", type=int, default=100_000, help="change volume of the table-size curve")
    g.add_argument("--fixed-existing", type=int, default=10_000_000, help="table size of the change-volume curve")
    g.add_argument("--curve-keys", default="local,uniform")
    g = p.add_argument_group("layout (per-table sizes as in the full run, fewer tables, hourly batches)")
    g.add_argument("--layout-tables", type=int, default=2)
    g.add_argument("--layout-hours", type=int, default=3)
    g.add_argument("--layout-changes-per-table-hour", type=int, default=5_000)
    g.add_argument("--files-per-table", type=int, default=10)
    g = p.add_argument_group("formats")
    g.add_argument("--format-changes", type=int, default=1_000_000, help="changes in each format's export")
    g.add_argument("--formats", default="", help="comma-separated formats (default: every format)")
    g = p.add_argument_group("engines")
    g.add_argument("--engine-changes", type=_ints, default=[100_000, 1_000_000], help="change volumes to apply")
    return p


def scaled(args: argparse.Namespace) -> argparse.Namespace:
    """Every count multiplied by --scale (at least 1)."""
    s = args.scale

    def n(v: int) -> int:
        return max(1, round(v * s))

    return argparse.Namespace(
        **{
            **vars(args),
            "changes": n(args.changes),
            "existing_rows": n(args.existing_rows),
            "rows_per_file": n(args.rows_per_file),
            "change_points": [n(v) for v in args.change_points],
            "existing_points": [n(v) for v in args.existing_points],
            "fixed_changes": n(args.fixed_changes),
            "fixed_existing": n(args.fixed_existing),
            "layout_changes_per_table_hour": n(args.layout_changes_per_table_hour),
            "format_changes": n(args.format_changes),
            "engine_changes": [n(v) for v in args.engine_changes],
        }
    )


def main(argv: list[str] | None = None) -> int:
    args = scaled(parser().parse_args(argv))
    from lakeloader.core.spark_conf import jars_conf
    from lakeloader.spark import spark_session
    from tools.bench import engines, formats, growth, layout
    from tools.bench.probe import Probe, jvm_pid
    from tools.bench.report import environment, scenario_json, scenario_markdown, write_results
    from tools.bench.run import run_scenario
    from tools.bench.scenario import Scenario
    from tools.bench.workspace import Layout
    from tools.cdcgen.wire import WRITERS

    scenario = Scenario(
        changes=args.changes,
        tables=args.tables,
        existing_rows=args.existing_rows,
        hours=args.hours,
        keys=args.keys,
        hot_share=args.hot_share,
        hot_fraction=args.hot_fraction,
    )
    chosen = Layout(args.rows_per_file, args.target_file_size)
    conf = {"spark.driver.memory": args.driver_memory}
    if args.command == "engines":  # Delta on Spark's classes, given when the JVM starts
        conf |= jars_conf() | engines.SESSION_CONF
    spark = spark_session("lakeloader-bench", master=args.master, conf=conf)
    probe = Probe(jvm_pid(spark))
    document: dict = {"command": args.command, "arguments": {k: str(v) for k, v in vars(args).items()}}
    document["environment"] = environment(spark, probe.peak_method)
    sections: list[str] = []

    def scenario_section(s: Scenario) -> None:
        result = run_scenario(
            spark, probe, s, chosen, args.workdir, streamed_merge=args.streamed_merge, verify=args.verify
        )
        data = scenario_json(result)
        document.setdefault("scenarios", []).append(data)
        sections.append(scenario_markdown(data))
        print(sections[-1], flush=True)

    try:
        if args.command in ("run", "all"):
            scenario_section(scenario)
        if args.command == "all":
            scenario_section(replace(scenario, hours=10))
        if args.command in ("growth", "all"):
            points = growth.growth_points(
                args.change_points, args.existing_points, args.fixed_changes, args.fixed_existing
            )
            rows = growth.run_growth(
                spark, probe, scenario, chosen, points, args.curve_keys.split(","), args.workdir,
                streamed_merge=args.streamed_merge, verify=args.verify,
            )  # fmt: skip
            document["growth"] = rows
            sections.append("### Growth\n" + growth.growth_markdown(rows))
            print(sections[-1], flush=True)
        if args.command in ("layout", "all"):
            per_table = scenario.rows_per_table
            layout_scenario = replace(
                scenario,
                tables=args.layout_tables,
                existing_rows=per_table * args.layout_tables,
                hours=args.layout_hours,
                changes=args.layout_changes_per_table_hour * args.layout_tables * args.layout_hours,
            )
            rows = layout.run_layout(spark, probe, layout_scenario, args.files_per_table, args.workdir)
            document["layout"] = {"scenario": layout_scenario.as_dict(), "rows": rows}
            sections.append(f"### Layout ({layout_scenario.label()})\n" + layout.layout_markdown(rows))
            print(sections[-1], flush=True)
        if args.command == "formats":
            chosen_formats = [f for f in args.formats.split(",") if f] or sorted(WRITERS)
            rows = formats.run_formats(spark, probe, chosen_formats, args.format_changes, args.workdir)
            document["formats"] = [{"format": r["format"], "messages": r["messages"], "mib": r["mib"]} for r in rows]
            sections.append(
                f"### Parse per format ({args.format_changes:,} changes each)\n" + formats.formats_markdown(rows)
            )
            print(sections[-1], flush=True)
        if args.command == "engines":
            rows = engines.run_engines(
                spark, probe, scenario, chosen, args.engine_changes, args.workdir, verify=args.verify
            )
            document["engines"] = rows
            label = f"{scenario.tables} tables, {scenario.existing_rows:,} rows, {scenario.keys} keys"
            sections.append(f"### Engines ({label})\n" + engines.engines_markdown(rows))
            print(sections[-1], flush=True)
    finally:
        document["environment"]["load_at_end"] = [round(v, 2) for v in os.getloadavg()]
        document["phases"] = [r.as_dict() for r in probe.records]
        probe.close()
        header = _header(document)
        paths = write_results(args.results, args.command, document, header + "\n".join(sections))
        print("results:", *paths)
        spark.stop()
    return 0


def _header(document: dict) -> str:
    env = document["environment"]
    shown = ("scale", "changes", "tables", "existing_rows", "hours", "keys", "rows_per_file", "streamed_merge")
    arguments = json.dumps({k: document["arguments"][k] for k in shown})
    return (
        f"## Benchmark `{document['command']}` at {env['started']}\n\n"
        f"{env['cpus']} CPUs, {env['memory_gib']} GiB; load (1/5/15 min) at start {env['load_at_start']}, "
        f"at end {env.get('load_at_end')}; Python {env['python']}, pyspark {env['pyspark']} "
        f"({env['spark_master']}, driver memory {env['spark_driver_memory']}, JVM max heap "
        f"{env['jvm_max_heap_mib']} MiB), deltalake {env['deltalake']}; peak memory: {env['peak_memory_method']}.\n"
        f"Arguments: `{arguments}`\n\n"
    )


if __name__ == "__main__":
    sys.exit(main())
