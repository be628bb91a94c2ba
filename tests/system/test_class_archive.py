"""The local setup's Spark drivers start from the archive of Spark's classes that `make setup` dumps
(bin/build-class-archive) and bin/with-airflow gives them, with config/spark/local.conf's settings as -D options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = REPO_ROOT / ".venv" / "spark-classes.jsa"
# a driver started as pyspark starts one (spark-submit, SPARK_SUBMIT_OPTS on its command line)
DRIVER = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
print(spark.range(3).count(), spark.conf.get("spark.sql.shuffle.partitions"))
"""


def test_a_local_driver_starts_from_the_archive_of_sparks_classes_with_the_local_settings():
    options = os.environ["SPARK_SUBMIT_OPTS"]  # bin/with-airflow's: `make test` runs under it
    assert f"-XX:SharedArchiveFile={ARCHIVE}" in options.split(), "run `make setup` (bin/build-class-archive)"
    # with -Xshare:on the JVM refuses to start when it cannot map the archive (absent, or stale for its class path)
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{options} -Xshare:on"}
    result = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["3", "16"]  # local.conf's spark.sql.shuffle.partitions
