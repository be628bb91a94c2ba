"""The hourly pipeline on a real Spark standalone cluster: a master and two one-core workers started from the
pyspark installation (the `spark_cluster` fixture), and the DAG's steps as it runs them (land in-process, then
spark-submit of jobs/parse.py and jobs/apply.py in client mode on `spark://127.0.0.1:<port>` with the DAG's
`--conf`s: the pinned jars, which the driver serves to the executors, Delta's extension and s3a) for a source with
`engine: delta_spark` whose lake is on S3 (the moto server on loopback). The DDL oracle's random stream (an
hour of fifteen steps, a keyed and a keyless table, DDL interleaved, re-deliveries, in Canal kcat envelopes) loads
to the model, and the work ran in executors on both workers. This is the DDL oracle's load with Delta on Spark
(tests/system/test_delta_spark_oracle.py has the other oracles')."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import test_ddl_oracle
from conftest import SHORT_JVM_OPTIONS
from test_ddl_oracle import model_rows, silver_rows
from test_delta_spark_oracle import NO_JARS, stream_source

# one hour of eight steps of the DDL oracle's stream (each DDL is several Delta commits, each a few Spark jobs on
# the cluster: the apply of fifteen steps with two DDL took 80 s); the seed's hour changes both tables (inserts, an
# update, a delete), adds a column to the keyless one between its changes and leaves rows in both. The DDL
# oracle's load over several hours, reloaded, is tests/system/test_ddl_oracle.py's with delta-rs, and the engine
# contract's with Delta on Spark.
HOURS = test_ddl_oracle.HOURS[:1]
STEPS_PER_HOUR = 8
SEED = 8


@pytest.mark.slow
@NO_JARS
def test_the_dags_spark_submit_steps_on_a_standalone_cluster_load_a_random_stream_into_an_s3_lake_to_the_model(
    spark_cluster, s3_endpoint: str, s3_bucket: str, tmp_path: Path, monkeypatch
):
    """As the hourly DAG runs them: land in-process, then spark-submit of jobs/parse.py and jobs/apply.py in
    client mode with the DAG's `--conf`s (`SPARK_CONF` and `session_conf(source)`, the jars as a pattern)."""
    from lakeloader.core import zones
    from lakeloader.core.spark_conf import session_conf
    from lakeloader.land.step import land_hour
    from lakeloader_airflow.dag_factory import APPLY_APP, PARSE_APP, SPARK_CONF

    monkeypatch.setattr(test_ddl_oracle, "STEPS_PER_HOUR", STEPS_PER_HOUR)
    monkeypatch.setattr(test_ddl_oracle, "HOURS", HOURS)
    source, models, config = stream_source(
        tmp_path, SEED, lake_root=f"s3://{s3_bucket}/lake", s3_endpoint_url=s3_endpoint
    )
    # the executors start as the drivers of the steps the tests submit do (C1 only, no verification: tests/conftest.py)
    test_conf = {"spark.executor.defaultJavaOptions": SHORT_JVM_OPTIONS}
    conf = [
        arg
        for key, value in {**SPARK_CONF, **session_conf(source), **test_conf}.items()
        for arg in ("--conf", f"{key}={value}")
    ]
    submit = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        spark_cluster.url,
        "--deploy-mode",
        "client",
    ]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    for hour in HOURS:
        land_hour(source, hour)
        for app in (PARSE_APP, APPLY_APP):
            args = ["--source", source.name, "--hour", zones.format_hour(hour), "--config", str(config)]
            done = subprocess.run(
                [*submit, *conf, str(app), *args], env=env, capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, f"{app.name} {zones.format_hour(hour)}:\n{done.stderr[-5000:]}"

    for model in models:
        assert model.rows and silver_rows(source, model) == model_rows(model), model.table
    applications = spark_cluster.status()["completedapps"]
    assert len(applications) == 2 * len(HOURS)  # one per spark-submit, all run on the cluster
    # each application had an executor on each worker, and each executor ran tasks
    app_dirs = sorted(spark_cluster.work_dir.glob("app-*"))
    assert len(app_dirs) == len(applications)
    for app_dir in app_dirs:
        executor_logs = sorted(app_dir.glob("*/stderr"))
        assert len(executor_logs) == 2, app_dir
        assert all("Running task" in log.read_text() for log in executor_logs), app_dir
