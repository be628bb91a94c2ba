"""What jobs/parse.py and jobs/apply.py run under spark-submit: parse arguments, run one step for one hour."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import datetime

from lakeloader import zones
from lakeloader.config import ConfigError, SourceConfig, load_source

Step = Callable[..., dict]


def main(step_name: str, step: Step, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"spark-submit jobs/{step_name}.py")
    parser.add_argument("--source", required=True, help="source name from the config file")
    parser.add_argument("--hour", required=True, help="the hour to process, YYYY-MM-DDTHH (UTC)")
    parser.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    args = parser.parse_args(argv)
    try:
        source: SourceConfig = load_source(args.config, args.source)
        hour: datetime = zones.parse_hour(args.hour)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from lakeloader.spark import spark_session

    spark = spark_session(f"lakeloader-{source.name}-{step_name}-{zones.format_hour(hour)}")
    try:
        report = step(spark, source, hour)
    finally:
        spark.stop()
    print(json.dumps({"step": step_name, **report}, default=str))
    return 0
