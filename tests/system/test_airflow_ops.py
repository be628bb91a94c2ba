"""Operations through Airflow's own runner: the replay DAG in both modes and its rejection of bad input
(`airflow dags test`), and a freshness breach alerting from the hourly DAG's task (`airflow tasks test`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import WITH_AIRFLOW
from deltalake import DeltaTable

from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import load_config
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw

pytestmark = pytest.mark.slow

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))


def _airflow(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(WITH_AIRFLOW), "airflow", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def _config(root: Path, extra: str = "") -> Path:
    path = root / "sources.yaml"
    path.write_text(
        "sources:\n"
        "  - name: shop\n"
        "    format: dataworks_json\n"
        "    export_uri: exports\n"
        "    lake_root: lake\n"
        "    start_date: '2026-11-21T00:00:00+00:00'\n"
        "    retries: 0\n" + extra
    )
    return path


@pytest.fixture
def loaded(spark, tmp_path) -> Path:
    """Two hours of orders loaded with the local runner."""
    first = dw.insert(ORDERS, 1, H5, {"id": 1, "status": "new"}) + dw.insert(ORDERS, 2, H5, {"id": 2, "status": "new"})
    second = dw.update(ORDERS, 3, H6, {"id": 1, "status": "new"}, {"id": 1, "status": "paid"}, one_message=True)
    for hour, lines in ((H5, first), (H6, second)):
        path = tmp_path / "exports" / f"orders-{hour:%H}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (hour.timestamp() + 60, hour.timestamp() + 60))
    config = _config(tmp_path)
    run_hours(spark, load_config(config).source("shop"), [H5, H6], emit=lambda _: None)
    return tmp_path


def _orders(root: Path) -> list[tuple]:
    rows = DeltaRsEngine().read(str(root / "lake/silver/shop/shop/orders")).to_pylist()
    return sorted((r["id"], r["status"]) for r in rows)


def test_replay_dag_rebuilds_and_reapplies(loaded, airflow_env):
    env = {**airflow_env, "LAKELOADER_CONFIG": str(loaded / "sources.yaml")}
    orders = DeltaTable(str(loaded / "lake/silver/shop/shop/orders"))
    orders.update(predicate="id = 1", updates={"status": "'tampered'"})

    rebuild = {"source": "shop", "mode": "rebuild", "tables": ["shop.orders"]}
    result = _airflow(env, loaded, "dags", "test", "lakeloader_replay", "--conf", json.dumps(rebuild))

    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert _orders(loaded) == [(1, "paid"), (2, "new")]
    [report] = [json.loads(p.read_text()) for p in (loaded / "lake/audit/shop/replay").glob("*.json")]
    assert report["plan"] == {"source": "shop", "mode": "rebuild", "hours": None, "tables": ["shop.orders"]}

    DeltaTable(str(loaded / "lake/silver/shop/shop/orders")).delete("id = 2")
    reapply = {"source": "shop", "mode": "reapply", "from_hour": "2026-11-21T05", "to_hour": "2026-11-21T06"}
    result = _airflow(env, loaded, "dags", "test", "lakeloader_replay", "--conf", json.dumps(reapply))

    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert _orders(loaded) == [(1, "paid"), (2, "new")]


def test_replay_dag_rejects_bad_input_before_any_spark_job(tmp_path, airflow_env):
    """(No hour loaded first: the input is rejected before anything reads the lake.)"""
    env = {**airflow_env, "LAKELOADER_CONFIG": str(_config(tmp_path))}
    backwards = {"source": "shop", "mode": "reapply", "from_hour": "2026-11-21T06", "to_hour": "2026-11-21T05"}

    result = _airflow(env, tmp_path, "dags", "test", "lakeloader_replay", "--conf", json.dumps(backwards))

    output = result.stdout + result.stderr
    assert "'from_hour' 2026-11-21T06 is after 'to_hour' 2026-11-21T05" in output
    assert "Spark-Submit cmd" not in output
    assert not (tmp_path / "lake/audit/shop/replay").exists()

    result = _airflow(env, tmp_path, "dags", "test", "lakeloader_replay", "--conf", json.dumps({"source": "nope"}))

    assert result.returncode != 0
    assert "Invalid input for param source: 'nope' is not one of ['shop']" in result.stdout + result.stderr


def test_freshness_breach_alerts_from_the_hourly_dags_task(tmp_path, airflow_env, http_receiver, smtp_receiver):
    config = _config(
        tmp_path,
        "    freshness_sla_minutes: 30\n"
        "    alerts:\n"
        f"      - {{type: webhook, url: '{http_receiver.url}/alerts'}}\n"
        "      - {type: email, to: [data@example.com], from_email: airflow@example.com, conn_id: smtp_test}\n",
    )
    now = datetime.now(UTC).replace(microsecond=0)
    watermark = now - timedelta(minutes=100)
    state = tmp_path / "lake" / zones.freshness_key("shop")
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"newest_change": watermark.isoformat(), "newest_heartbeat": None,
                                 "watermark": watermark.isoformat()}))  # fmt: skip
    smtp = {"conn_type": "smtp", "host": "127.0.0.1", "port": smtp_receiver.port,
            "extra": {"disable_ssl": True, "disable_tls": True, "retry_limit": 0}}  # fmt: skip
    env = {**airflow_env, "LAKELOADER_CONFIG": str(config), "AIRFLOW_CONN_SMTP_TEST": json.dumps(smtp)}
    started = time.time()

    result = _airflow(env, tmp_path, "tasks", "test", "lakeloader_shop_hourly", "freshness", now.isoformat())

    output = result.stdout + result.stderr
    assert "AlertSent" in output and "new_state=failed" in output, output[-3000:]  # the task fails: data is late
    [post] = http_receiver.wait_for(1, timeout=10)
    [mail] = smtp_receiver.wait_for(1, timeout=10)
    assert post["received_at"] - started < 60
    body = json.loads(post["body"])
    assert (body["source"], body["kind"], body["dag_id"]) == ("shop", "freshness_lag", "lakeloader_shop_hourly")
    assert 100 * 60 <= body["amount_seconds"] < 102 * 60
    assert re.fullmatch(
        r"Source shop: data is 1 h 4[01] min behind \(newest change or heartbeat loaded: "
        rf"{re.escape(watermark.isoformat())}\), over its freshness SLA of 30 min by 1 h 1[01] min",
        body["summary"],
    ), body["summary"]
    assert body["run_url"].startswith("http://localhost:8080/dags/lakeloader_shop_hourly/runs/")
    assert mail["subject"] == "[lakeloader] shop: freshness lag" and "over its freshness SLA of 30 min" in mail["body"]
