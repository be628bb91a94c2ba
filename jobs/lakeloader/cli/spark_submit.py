"""What jobs/parse.py and jobs/apply.py run under spark-submit: parse arguments, run one step for one hour."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from lakeloader.core import zones
from lakeloader.core.config import ConfigError, SourceConfig, load_source

Step = Callable[..., dict]


@contextmanager
def recording_cause(source: SourceConfig, hour: datetime, step_name: str) -> Iterator[None]:
    """Record why the block failed in `zones.run_error_key` for the failure alert to lead with (spark-submit's
    own error only says that the job exited non-zero); a stale record of an earlier try is removed first."""
    from lakeloader.core.storage import open_store

    lake = open_store(source.lake_root, source.s3_endpoint_url)
    error_key = zones.run_error_key(source.name, hour, step_name)
    if lake.stat(error_key) is not None:
        lake.delete(error_key)
    try:
        yield
    except Exception as error:
        cause = f"{type(error).__name__}: {error}".strip()
        lake.write_bytes(error_key, json.dumps({"step": step_name, "error": cause[:4000]}).encode())
        raise


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
    from lakeloader.core.spark_conf import session_conf
    from lakeloader.spark import spark_session

    print(
        f"lakeloader: {step_name} of source {source.name}, hour {zones.format_hour(hour)}: starting",
        file=sys.stderr,
        flush=True,
    )
    with recording_cause(source, hour, step_name):
        spark = spark_session(
            f"lakeloader-{source.name}-{step_name}-{zones.format_hour(hour)}", conf=session_conf(source)
        )
        try:
            report = step(spark, source, hour)
        finally:
            spark.stop()
    print(json.dumps({"step": step_name, **report}, default=str))
    return 0
