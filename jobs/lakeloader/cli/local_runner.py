"""Local runner: land, parse and apply a source over a range of hours, without Airflow's scheduler.

    python -m lakeloader.cli.local_runner --source shop --from 2026-11-21T00 --to 2026-11-21T02 [--config FILE]

Runs the same three steps as the hourly DAG, in one process with one local Spark session, hour by hour,
and prints each step's counts as JSON lines (and on standard error each step's progress: a bar of its Spark
tasks on a terminal, its duration when done). Used for debugging and by the tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from datetime import datetime
from typing import TextIO

from lakeloader.cli.progress import Progress, spark_tasks
from lakeloader.core import zones
from lakeloader.core.config import ConfigError, SourceConfig, load_source
from lakeloader.land.step import land_hour


def run_hours(
    spark, source: SourceConfig, hours: list[datetime], emit=print, progress: TextIO | None = None
) -> list[dict]:
    """Land, parse and apply each hour in turn; returns the step reports in order. `progress`: a stream to
    report each step on (`cli.progress`: a bar of the step's Spark tasks on a terminal)."""
    from lakeloader.apply.step import run_apply
    from lakeloader.parse.step import run_parse

    steps = (
        ("land", lambda hour: land_hour(source, hour).summary()),
        ("parse", lambda hour: run_parse(spark, source, hour)),
        ("apply", lambda hour: run_apply(spark, source, hour)),
    )
    shown = Progress(progress, spark_tasks(spark), len(hours) * len(steps)) if progress else None
    reports = []
    for hour in hours:
        for step, run in steps:  # each step's report as soon as it is done: progress, not a wait for the hour
            with shown.step(f"{step} {zones.format_hour(hour)}") if shown else nullcontext():
                report = {"step": step, **run(hour)}
            emit(json.dumps(report, default=str))
            reports.append(report)
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakeloader.cli.local_runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="source name from the config file")
    parser.add_argument("--from", dest="first", required=True, help="first hour, YYYY-MM-DDTHH (UTC)")
    parser.add_argument("--to", dest="last", help="last hour, included (default: the first hour)")
    parser.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    args = parser.parse_args(argv)
    try:
        source = load_source(args.config, args.source)
        first, last = zones.parse_hour(args.first), zones.parse_hour(args.last or args.first)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if last < first:
        print(f"error: --to {args.last} is before --from {args.first}", file=sys.stderr)
        return 2
    from lakeloader.core.spark_conf import session_conf
    from lakeloader.spark import spark_session

    conf = session_conf(source)  # one session for every hour of the range
    spark = spark_session(f"lakeloader-{source.name}-runner", master=args.master, conf=conf)
    try:
        run_hours(spark, source, zones.hour_range(first, last), progress=sys.stderr)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
