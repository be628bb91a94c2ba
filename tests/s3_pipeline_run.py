"""Run by tests/system/test_s3_pipeline.py in its own process (a JVM's jars are fixed when it starts, and the test
session's Spark JVM has none of ours): the whole pipeline of one source whose exports and lake are on S3 (a moto
server), in one local Spark session: for each batch of export lines, upload it and land, parse and apply the hour
it was modified in (then the next hours), then reconcile the hours (accounting and state), then replay (rebuild
every table from the bronze change log). Prints one JSON object of the step reports and the silver rows.

    python tests/s3_pipeline_run.py CONFIG BATCHES_JSON     (AWS_* credentials in the environment)

BATCHES_JSON: a file of [[key, [line, ...]], ...], one export object per hour. The session gets what a job of the
source's engine gets (`session_conf`); a `delta_rs` source gets none, so it gets what a cluster's
spark-defaults.conf must bring for an S3 lake: hadoop-aws (the pinned jars) and the s3a settings.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, timedelta
from pathlib import Path

import boto3

from lakeloader.audit.reconcile import run_reconcile
from lakeloader.audit.reconcile_report import findings
from lakeloader.audit.replay import run_replay
from lakeloader.audit.replay_plan import validate
from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import valid_sources
from lakeloader.core.spark_conf import extra_jars, s3a_conf, session_conf
from lakeloader.core.storage import open_store
from lakeloader.engine import reader_for
from lakeloader.spark import spark_session


def main(config_path: str, batches_path: str) -> None:
    config = valid_sources(config_path)
    [source] = config.sources
    bucket, _, prefix = source.export_uri.removeprefix("s3://").partition("/")
    s3 = boto3.client("s3", endpoint_url=source.s3_endpoint_url)
    conf = session_conf(source) or {"spark.jars": ",".join(extra_jars()), **s3a_conf(source.s3_endpoint_url)}
    spark = spark_session("s3-pipeline", master="local[2]", conf=conf)
    lake = open_store(source.lake_root, source.s3_endpoint_url)
    steps, hours, seconds = [], [], {}
    started = time.monotonic()
    for key, lines in json.loads(Path(batches_path).read_text()):
        s3.put_object(Bucket=bucket, Key=f"{prefix.rstrip('/')}/{key}", Body=("\n".join(lines) + "\n").encode())
        modified = s3.head_object(Bucket=bucket, Key=f"{prefix.rstrip('/')}/{key}")["LastModified"].astimezone(UTC)
        hour = hours[-1] + timedelta(hours=1) if hours else modified.replace(minute=0, second=0, microsecond=0)
        hours.append(hour)
        steps += run_hours(spark, source, [hour], emit=lambda _: None)
    seconds["land_parse_apply"], started = time.monotonic() - started, time.monotonic()
    reconcile = run_reconcile(spark, source, hours, ("accounting", "state"), "s3-pipeline")
    seconds["reconcile"], started = time.monotonic() - started, time.monotonic()
    silver = lake.child(zones.silver_table_dir(source.name, "shop", "orders"))
    loaded = reader_for(source).read(silver).to_pylist()
    plan = validate(config, {"source": source.name, "mode": "rebuild"})
    replay = run_replay(spark, source, plan, "s3-pipeline-rebuild")
    rebuilt = reader_for(source).read(silver).to_pylist()
    seconds["replay"] = time.monotonic() - started
    spark.stop()
    print(
        json.dumps(
            {
                "hours": [zones.format_hour(h) for h in hours],
                "steps": steps,
                "reconcile": {"ok": reconcile["ok"], "findings": findings(reconcile), "results": reconcile["results"]},
                "loaded": loaded,
                "replay": replay["tables"],
                "rebuilt": rebuilt,
                "seconds": {step: round(duration, 1) for step, duration in seconds.items()},
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
