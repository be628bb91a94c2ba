"""The hourly pipeline on a real Spark standalone cluster: a master and two one-core workers started from the
pyspark installation (the `spark_cluster` fixture), the local runner as a client-mode driver on
`spark://127.0.0.1:<port>` with `engine: delta_spark` (its session built with `session_conf`: the pinned jars,
which the driver serves to the executors, and Delta's extension). The DDL oracle's random stream (three hours
of ten steps, a keyed and a keyless table, DDL interleaved, re-deliveries) loads to the model, and the work ran
in executors on both workers, not in the driver."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import test_ddl_oracle
from test_ddl_oracle import model_rows, silver_rows
from test_delta_spark_oracle import NO_JARS, load_with_delta_spark

APP_NAME = "lakeloader-shop-runner"
# a third of the DDL oracle's steps per hour: each DDL is several Delta commits, each a few Spark jobs
STEPS_PER_HOUR = 10


@pytest.mark.slow
@NO_JARS
def test_delta_on_spark_on_a_standalone_cluster_loads_a_random_stream_to_the_model(
    spark_cluster, tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(test_ddl_oracle, "STEPS_PER_HOUR", STEPS_PER_HOUR)
    driver = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}  # the driver listens on loopback only, as the daemons
    source, models = load_with_delta_spark(tmp_path, spark_cluster.url, env=driver)

    for model in models:
        assert silver_rows(source, model) == model_rows(model), model.table
    status = spark_cluster.status()
    assert [app["name"] for app in status["completedapps"]] == [APP_NAME], spark_cluster.logs()
    assert status["activeapps"] == []
    # each worker launched an executor for the application, and each executor ran tasks
    (app_dir,) = spark_cluster.work_dir.glob("app-*")
    executor_logs = sorted(app_dir.glob("*/stderr"))
    assert len(executor_logs) == 2, spark_cluster.logs()
    for log in executor_logs:
        assert "Running task" in log.read_text(), log
