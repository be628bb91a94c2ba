"""End to end through Airflow: `airflow dags test` of the shop DAG for two hours of a DataWorks-JSON export,
then the silver Delta table holds exactly the rows the changes leave behind and each hour reconciles."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakeloader.audit.replay_plan import validate
from lakeloader.core.config import load_config

REPO_ROOT = Path(__file__).resolve().parents[2]
WITH_AIRFLOW = REPO_ROOT / "bin" / "with-airflow"
DAG_ID = "lakeloader_shop_hourly"
DAG_RUN_TIMEOUT_SECONDS = 600

HOUR_1 = datetime(2026, 11, 21, 10, tzinfo=UTC)
HOUR_2 = HOUR_1 + timedelta(hours=1)
CREATED_MS = 1731661114000  # 2024-11-15 08:58:34 UTC
COLUMNS = [
    {"name": "id", "type": "LONG"},
    {"name": "val", "type": "DOUBLE"},
    {"name": "name", "type": "STRING"},
    {"name": "create_time", "type": "DATE"},
]
USER_COLUMNS = ["id", "val", "name", "create_time"]


def _row(id_: int, val: str, name: str, created_offset_s: int = 0) -> dict[str, object]:
    return {"dataColumn": {"id": id_, "val": val, "name": name, "create_time": CREATED_MS + created_offset_s * 1000}}


def _message(seq: int, op: str, before: dict | None, after: dict | None) -> str:
    """One DataWorks JSON message (version 0.0.1), shaped like the peers' aliyun table event fixtures."""
    event_ms = 1731662085000 + seq * 1000
    return json.dumps(
        {
            "schema": {
                "dataColumn": COLUMNS,
                "primaryKey": ["id"],
                "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "orders"},
            },
            "payload": {
                "before": before,
                "after": after,
                "sequenceId": str(1731663842292000000 + seq),
                "timestamp": {"eventTime": event_ms, "systemTime": event_ms + 500, "checkpointTime": event_ms},
                "op": op,
                "ddl": None,
            },
            "version": "0.0.1",
        },
        separators=(",", ":"),
    )


# Export files: name, modification time (decides the hour each one lands in), messages in order.
EXPORT_FILES = [
    (
        "shop-orders-0001.json",
        HOUR_1 + timedelta(minutes=20),
        [
            _message(1, "INSERT", None, _row(1, "1.100000", "a")),
            _message(2, "INSERT", None, _row(2, "2.000000", "b", 1)),
            _message(3, "INSERT", None, _row(3, "3.000000", "c", 2)),
            _message(4, "UPDATE_AFTER", _row(1, "1.100000", "a"), _row(1, "1.500000", "a2")),
            _message(5, "INSERT", None, _row(5, "5.000000", "e", 4)),
            _message(6, "DELETE", _row(5, "5.000000", "e", 4), None),
        ],
    ),
    (
        "shop-orders-0002.json",
        HOUR_2 + timedelta(minutes=15),
        [
            _message(7, "DELETE", _row(2, "2.000000", "b", 1), None),
            _message(8, "UPDATE_AFTER", _row(3, "3.000000", "c", 2), _row(3, "3.300000", "c2", 2)),
        ],
    ),
    (
        "shop-orders-0003.json",
        HOUR_2 + timedelta(minutes=40),
        [
            _message(9, "INSERT", None, _row(4, "4.000000", "d", 3)),
            _message(10, "UPDATE_AFTER", _row(1, "1.500000", "a2"), _row(1, "1.750000", "a3")),
        ],
    ),
]

EXPECTED_ROWS = [
    {"id": 1, "val": 1.75, "name": "a3", "create_time": datetime(2024, 11, 15, 8, 58, 34, tzinfo=UTC)},
    {"id": 3, "val": 3.3, "name": "c2", "create_time": datetime(2024, 11, 15, 8, 58, 36, tzinfo=UTC)},
    {"id": 4, "val": 4.0, "name": "d", "create_time": datetime(2024, 11, 15, 8, 58, 37, tzinfo=UTC)},
]


def _write_export(export_dir: Path) -> None:
    export_dir.mkdir(parents=True)
    for name, modified, messages in EXPORT_FILES:
        path = export_dir / name
        path.write_text("\n".join(messages) + "\n")
        os.utime(path, (modified.timestamp(), modified.timestamp()))


def _write_config(path: Path) -> None:
    path.write_text(
        "sources:\n"
        "  - name: shop\n"
        "    format: dataworks_json\n"
        "    export_uri: exports/shop\n"
        "    lake_root: lake\n"
        "    start_date: '2026-11-21T00:00:00+00:00'\n"
        "    retries: 0\n"  # a failing step fails the run at once instead of waiting for retries
        "    column_types: {shop.orders: {val: double}}\n"  # DataWorks DOUBLE is exact text unless configured
    )


def _dags_test(env: dict[str, str], hour: datetime, cwd: Path) -> tuple[float, str]:
    """Run the DAG for `hour`, returning seconds taken and its output: a run whose logical date is an exact
    hour loads that hour (lakeloader_airflow.timetable), as a backfill or scheduled run of that date does."""
    logical_date = hour.isoformat()
    started = time.monotonic()
    result = subprocess.run(
        [str(WITH_AIRFLOW), "airflow", "dags", "test", DAG_ID, logical_date],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DAG_RUN_TIMEOUT_SECONDS,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"`airflow dags test {DAG_ID} {logical_date}` failed:\n{output[-6000:]}"
    assert f"data_interval_start={hour:%Y-%m-%d %H:%M:%S}" in output, output[-3000:]
    return time.monotonic() - started, output


def _as_utc(value: object) -> object:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # timestamp_ntz columns hold UTC wall-clock times
    return value


@pytest.mark.slow
def test_two_hours_through_airflow_reach_the_silver_table(tmp_path: Path, airflow_env: dict[str, str]) -> None:
    _write_export(tmp_path / "exports" / "shop")
    config = tmp_path / "sources.yaml"
    _write_config(config)
    env = {**airflow_env, "LAKELOADER_CONFIG": str(config)}
    lake = tmp_path / "lake"

    for hour in (HOUR_1, HOUR_2):
        seconds, _ = _dags_test(env, hour, cwd=tmp_path)
        print(f"airflow dags test for {hour:%Y-%m-%dT%H}: {seconds:.1f}s")
        manifest = json.loads((lake / f"raw/shop/dt={hour:%Y-%m-%d}/hour={hour:%H}/_manifest.json").read_text())
        expected_files = sorted(
            name for name, modified, _ in EXPORT_FILES if hour <= modified < hour + timedelta(hours=1)
        )
        assert sorted(f["export_key"] for f in manifest["files"]) == expected_files

    # verify published each hour's update of the silver table as an asset event with the hour's counts
    db = Path(env["AIRFLOW_HOME"]) / "airflow.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as metadata:
        events = metadata.execute(
            "select a.uri, e.extra from asset_event e join asset a on a.id = e.asset_id "
            "where a.name = 'lakeloader.shop.shop.orders' order by e.timestamp"
        ).fetchall()
    assert [json.loads(extra)["hour"] for _, extra in events][-2:] == ["2026-11-21T10", "2026-11-21T11"]
    assert {uri for uri, _ in events} == {(lake / "silver/shop/shop/orders").resolve().as_uri()}
    assert json.loads(events[-1][1])["changes"] > 0
    reports = [json.loads(p.read_text()) for p in sorted((lake / "audit/shop/reconcile").glob("*.json"))]
    assert sorted((r["hours"], r["ok"]) for r in reports) == [(["2026-11-21T10"], True), (["2026-11-21T11"], True)]
    table = pa.table(pa.RecordBatchReader.from_stream(DeltaTable(str(lake / "silver/shop/shop/orders")).scan()))
    metadata_columns = [name for name in table.column_names if name not in USER_COLUMNS]
    assert set(USER_COLUMNS) <= set(table.column_names)
    assert metadata_columns and all(name.startswith("_cdc_") for name in metadata_columns), table.column_names
    rows = sorted(table.select(USER_COLUMNS).to_pylist(), key=lambda row: row["id"])
    assert [{key: _as_utc(value) for key, value in row.items()} for row in rows] == EXPECTED_ROWS

    # An hour in which nothing landed: no Spark job, nothing written but its (empty) manifest, and replay still
    # accepts a range over it.
    empty_hour = HOUR_2 + timedelta(hours=1)
    seconds, output = _dags_test(env, empty_hour, cwd=tmp_path)
    print(f"airflow dags test for the empty hour {empty_hour:%Y-%m-%dT%H}: {seconds:.1f}s")
    assert "parse, apply and reconcile are skipped and no Spark job is started" in output
    assert "spark-submit" not in output
    manifest = json.loads((lake / f"raw/shop/dt={empty_hour:%Y-%m-%d}/hour={empty_hour:%H}/_manifest.json").read_text())
    assert manifest["files"] == []
    assert not (lake / f"bronze/shop/changes/dt={empty_hour:%Y-%m-%d}/hour={empty_hour:%H}").exists()
    assert not (lake / f"audit/shop/runs/dt={empty_hour:%Y-%m-%d}/hour={empty_hour:%H}").exists()
    plan = validate(
        load_config(config),
        {"source": "shop", "mode": "reapply", "from_hour": "2026-11-21T10", "to_hour": "2026-11-21T12"},
    )
    assert plan["hours"] == ["2026-11-21T10", "2026-11-21T12"]
