"""docker/airflow-init.sh outside a container: against a fresh SQLite metadata database and a moto S3 server it
migrates the database, points spark_default at the compose file's Spark master in client mode and creates the
lake's bucket; run again, it succeeds and leaves one connection and the bucket as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3

REPO = Path(__file__).resolve().parents[2]
INIT = REPO / "docker" / "airflow-init.sh"
AIRFLOW = Path(sys.executable).parent / "airflow"


def test_the_init_script_migrates_adds_the_spark_connection_and_creates_the_bucket_idempotently(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str
):
    bucket = f"{s3_bucket}-lake"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path}/airflow.db",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "SPARK_MASTER_URL": "spark://spark-master:7077",
        "LAKELOADER_S3_BUCKET": bucket,
        "AWS_ENDPOINT_URL": s3_endpoint,
    }
    env.pop("AIRFLOW_CONN_SPARK_DEFAULT", None)  # bin/with-airflow's local[*] would shadow the stored connection
    for attempt in (1, 2):
        result = subprocess.run([str(INIT)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert result.returncode == 0, f"attempt {attempt}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        assert "airflow-init: done" in result.stdout
    assert "bucket" in result.stdout and "exists" in result.stdout  # the second run found it

    shown = subprocess.run(
        [str(AIRFLOW), "connections", "get", "spark_default", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    (connection,) = json.loads(shown.stdout)
    assert (connection["conn_type"], connection["host"], int(connection["port"])) == (
        "spark",
        "spark://spark-master",
        7077,
    )
    assert connection["extra_dejson"] == {"deploy-mode": "client"}
    names = [b["Name"] for b in boto3.client("s3", endpoint_url=s3_endpoint).list_buckets()["Buckets"]]
    assert bucket in names
