"""The whole pipeline on object storage, once per table engine: a source whose exports and lake are on S3 (the moto
server on loopback) lands, parses and applies two hours (bronze through s3a, silver by delta-rs or by Delta on
Spark through s3a), reconciles them (accounting and state) and is rebuilt by a replay, all in one local Spark
session with the pinned jars (tests/s3_pipeline_run.py, its own process). The credentials reach every client
from the environment and appear in no output and no object of the lake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
import yaml
from deltalake import DeltaTable
from test_delta_spark_oracle import NO_JARS

from lakeloader.core.storage import delta_storage_options
from tools.cdcgen import dataworks as dw

RUN_SCRIPT = Path(__file__).parents[1] / "s3_pipeline_run.py"
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))
AT = datetime(2026, 11, 21, 5, 10, tzinfo=UTC)
BATCHES = [
    ["orders-1.json", [*dw.insert(ORDERS, 1, AT, {"id": 1, "status": "new"}),
                       *dw.insert(ORDERS, 2, AT, {"id": 2, "status": "new"})]],
    ["orders-2.json", [*dw.update(ORDERS, 3, AT, {"id": 1, "status": "new"}, {"id": 1, "status": "paid"},
                                  one_message=False),
                       *dw.delete(ORDERS, 4, AT, {"id": 2, "status": "new"}),
                       *dw.insert(ORDERS, 5, AT, {"id": 3, "status": "new"}), "{broken"]],
]  # fmt: skip


@pytest.mark.slow
@NO_JARS
@pytest.mark.parametrize("engine", ["delta_rs", "delta_spark"])
def test_land_parse_apply_reconcile_and_replay_on_s3_with_each_engine(
    engine: str, s3_endpoint: str, s3_bucket: str, tmp_path: Path
) -> None:
    source = {
        "name": "shop",
        "format": "dataworks_json",
        "export_uri": f"s3://{s3_bucket}/exports/shop",
        "lake_root": f"s3://{s3_bucket}/lake",
        "s3_endpoint_url": s3_endpoint,
        "engine": engine,
    }
    config = tmp_path / "sources.yaml"
    config.write_text(yaml.safe_dump({"sources": [source]}))
    batches = tmp_path / "batches.json"
    batches.write_text(json.dumps(BATCHES))
    secret = f"secret-{uuid.uuid4().hex}"  # moto takes any credentials: a distinct one to look for
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": secret, "SPARK_LOCAL_IP": "127.0.0.1"}

    done = subprocess.run(
        [sys.executable, str(RUN_SCRIPT), str(config), str(batches)], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-5000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{engine} on S3, seconds: {result['seconds']}")
    by_step = {(s["step"], s["hour"]): s for s in result["steps"]}
    first, second = result["hours"]
    assert [by_step[("land", hour)]["copied"] for hour in (first, second)] == [1, 1]
    assert by_step[("parse", second)]["outcomes"].get("quarantined") == 1  # the broken line
    assert result["reconcile"]["ok"], result["reconcile"]["findings"]
    assert {r["check"] for r in result["reconcile"]["results"]} == {"accounting", "state"}
    expected = [(1, "paid"), (3, "new")]
    assert _rows(result["loaded"]) == expected
    [rebuilt] = result["replay"].values()
    assert (rebuilt["rows_before"], rebuilt["rows"]) == (2, 2)
    assert _rows(result["rebuilt"]) == expected

    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=s3_bucket, Prefix="lake/")["Contents"]]
    assert any(k.startswith("lake/bronze/shop/") and k.endswith(".parquet") for k in keys)  # Spark wrote via s3a
    log = sorted(k for k in keys if k.startswith("lake/silver/shop/shop/orders/_delta_log/") and k.endswith(".json"))
    commits = [s3.get_object(Bucket=s3_bucket, Key=k)["Body"].read().decode() for k in log]
    writer = "Delta-Lake/" if engine == "delta_spark" else "delta-rs"
    assert writer in commits[0], commits[0][:500]  # the source's engine wrote silver
    # no table feature: either engine (and delta-rs 1.6) reads and writes what the other wrote
    table = DeltaTable(f"s3://{s3_bucket}/lake/silver/shop/shop/orders",
                       storage_options=delta_storage_options(source["lake_root"], s3_endpoint))  # fmt: skip
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert (protocol.reader_features, protocol.writer_features) == (None, None)
    texts = [s3.get_object(Bucket=s3_bucket, Key=k)["Body"].read() for k in keys if not k.endswith(".parquet")]
    assert all(secret.encode() not in text for text in texts)
    assert secret not in done.stdout + done.stderr


def _rows(rows: list[dict]) -> list[tuple]:
    return sorted((r["id"], r["status"]) for r in rows)
