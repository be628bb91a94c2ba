"""Spark settings a job's session needs beyond the defaults, computed without Spark (the Airflow side passes
them to spark-submit; the local runner to its session): the pinned jars, Delta's SQL extension, s3a."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakeloader.core.config import SourceConfig

# The pinned jars for Delta on Spark, s3a:// and Avro (config/jars/, fetched by `make jars` = bin/fetch-jars).
JARS_ENV = "LAKELOADER_JARS"
# The project's JVM functions (jvm/src, built by `make setup` = bin/build-jvm): every session adds them.
JVM_JAR_ENV = "LAKELOADER_JVM_JAR"
# Delta's SQL extension and catalog: DeltaTable, MERGE INTO and Delta DDL in Spark SQL need both.
DELTA_SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def jars_dir() -> Path:
    """The folder of the pinned jars: $LAKELOADER_JARS, else `jars/` of the Python environment running this
    (`.venv/jars` for the project's venv, where `make jars` puts them), like pyspark's own `pyspark/jars`."""
    configured = os.environ.get(JARS_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "jars"


def jvm_jar() -> Path:
    """The jar of the project's JVM functions: $LAKELOADER_JVM_JAR, else `lakeloader-jvm.jar` beside the Python
    environment running this (`.venv/lakeloader-jvm.jar`, where `make setup` builds it)."""
    configured = os.environ.get(JVM_JAR_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "lakeloader-jvm.jar"


def extra_jars(directory: Path | None = None) -> list[str]:
    """Absolute paths of the jars in `directory` (default `jars_dir()`), sorted; an absent or empty folder
    is an error that says how to get them."""
    folder = directory if directory is not None else jars_dir()
    jars = sorted(str(path.resolve()) for path in folder.glob("*.jar"))
    if not jars:
        raise FileNotFoundError(
            f"no jars in {folder}: run `make jars` (bin/fetch-jars) or point {JARS_ENV} at a folder of the jars "
            "listed in config/jars/SHA256SUMS"
        )
    return jars


def jars_conf(directory: Path | None = None) -> dict[str, str]:
    """Settings giving a Spark application the pinned jars (`spark.jars`) and Delta's SQL extension: pass
    them as `spark_session(conf=...)` or as spark-submit `--conf`s. They take effect only when the JVM
    starts; a running session cannot gain jars."""
    return {"spark.jars": ",".join(extra_jars(directory)), **DELTA_SESSION_CONF}


# SDK v2's provider of the AWS_* variables (hadoop-aws 3.4 has no s3a.auth class of that name)
ENVIRONMENT_CREDENTIALS = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"


def s3a_conf(endpoint_url: str | None) -> dict[str, str]:
    """s3a settings for the lake: credentials from the AWS_* variables (as delta-rs and boto3 take them), and
    for an S3-compatible endpoint (`s3_endpoint_url`) that endpoint, path-style buckets and plain HTTP when the
    URL says http. Without an endpoint, AWS S3 in AWS_DEFAULT_REGION (or the SDK's default chain's)."""
    conf = {"spark.hadoop.fs.s3a.aws.credentials.provider": ENVIRONMENT_CREDENTIALS}
    region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION")
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    if endpoint_url:
        conf |= {
            "spark.hadoop.fs.s3a.endpoint": endpoint_url,
            "spark.hadoop.fs.s3a.endpoint.region": region or "us-east-1",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint_url.startswith("https:")).lower(),
        }
    return conf


def session_conf(source: SourceConfig) -> dict[str, str]:
    """What a job's session needs for the source's table engine, given when its JVM starts (spark-submit
    `--conf`s, or the local runner's session): none for the embedded engine (delta-rs writes the tables); for
    `delta_spark`, the pinned jars as a pattern Spark expands where the job is submitted (so the Airflow side
    needs no jars to build the DAG), Delta's extension, and s3a settings for an S3 lake."""
    if source.engine != "delta_spark":
        return {}
    s3a = s3a_conf(source.s3_endpoint_url) if source.lake_root.startswith("s3://") else {}
    return {"spark.jars": str(jars_dir() / "*.jar"), **DELTA_SESSION_CONF, **s3a}
