"""The pinned Spark jars (config/jars/, `make jars`): how a session is given them, and that with them a local
Spark merges a Delta table with delta-spark on s3a:// (moto) and reads and writes Avro there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from lakeloader.core.spark_conf import DELTA_SESSION_CONF, JARS_ENV, extra_jars, jars_conf, jars_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK_SCRIPT = Path(__file__).parents[1] / "spark_jars_check.py"
_CHECK_TIMEOUT_SECONDS = 240


def test_jars_dir_is_the_environment_folder_unless_the_variable_names_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(JARS_ENV, raising=False)
    assert jars_dir() == Path(sys.prefix) / "jars"
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    assert jars_dir() == tmp_path


def test_jars_conf_lists_every_jar_of_the_folder_sorted_with_the_delta_extension(tmp_path: Path) -> None:
    for name in ("hadoop-aws-3.4.1.jar", "delta-storage-4.0.0.jar", ".verified-abc", "README"):
        (tmp_path / name).write_bytes(b"")
    conf = jars_conf(tmp_path)
    assert conf["spark.jars"] == f"{tmp_path}/delta-storage-4.0.0.jar,{tmp_path}/hadoop-aws-3.4.1.jar"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert {key: conf[key] for key in DELTA_SESSION_CONF} == DELTA_SESSION_CONF


def test_a_missing_jars_folder_fails_saying_how_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"run `make jars`"):
        extra_jars(tmp_path / "absent")


def test_the_pinned_jars_are_the_ones_in_the_checksums_file() -> None:
    listed = sorted(line.split()[1] for line in (REPO_ROOT / "config/jars/SHA256SUMS").read_text().splitlines())
    assert listed == [
        "bundle-2.24.6.jar",
        "delta-spark_2.13-4.0.0.jar",
        "delta-storage-4.0.0.jar",
        "hadoop-aws-3.4.1.jar",
        "spark-avro_2.13-4.0.2.jar",
        "wildfly-openssl-1.1.3.Final.jar",
    ]


@pytest.mark.skipif(
    not any(jars_dir().glob("*.jar")),
    reason=f"no jars in {jars_dir()}: run `make jars` (`make test` does)",
)
def test_spark_with_the_jars_merges_a_delta_table_on_s3a_and_round_trips_avro(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str
) -> None:
    # its own process: the test session's Spark JVM started without these jars and cannot gain them
    completed = subprocess.run(
        [sys.executable, str(CHECK_SCRIPT), str(tmp_path), s3_endpoint, s3_bucket],
        capture_output=True,
        text=True,
        timeout=_CHECK_TIMEOUT_SECONDS,
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])

    # 2 updated, 3 deleted, 4 inserted, 1 untouched
    assert result["delta_s3a"] == {"rows": [[1, "a"], [2, "B"], [4, "d"]], "operations": ["WRITE", "MERGE"]}
    assert result["avro_s3a"] == [[7, "x"]]
    # the s3a writes really are objects on the S3 server
    listed = boto3.client("s3", endpoint_url=s3_endpoint).list_objects_v2(Bucket=s3_bucket, Prefix="silver/t/")
    keys = {item["Key"] for item in listed["Contents"]}
    assert "silver/t/_delta_log/00000000000000000001.json" in keys
