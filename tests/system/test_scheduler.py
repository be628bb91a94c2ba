"""Through a running Airflow as a production deployment runs it: api-server, dag-processor, scheduler and triggerer
(LocalExecutor) on a PostgreSQL metadata database (a throwaway server, tests/postgres_server.py; the embedded
default's SQLite stays for `make demo` and `airflow dags test`):

- a backfill of two past hours of the hourly DAG (one with export files, one without) produces the expected
  table, reconciles the hour and publishes its asset event; the hour without files starts no Spark job;
  re-running the loaded hour by backfill gives the same tables and lands no file twice (each Spark step is a
  spark-submit of about 16 CPU-seconds: the many hours of the other oracles are loaded in-process);
- a run past its deadline delivers the Deadline Alert to a real HTTP receiver and a real SMTP receiver.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import WITH_AIRFLOW, Receiver, _free_port, _start_receiver
from postgres_server import PostgresServer, binaries, postgres_server

from lakeloader.audit.replay_plan import validate
from lakeloader.core.config import load_config
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader_airflow.alerts import minutes
from tools.cdcgen import dataworks as dw

pytestmark = pytest.mark.slow

SERVICES = ("api-server", "dag-processor", "scheduler", "triggerer")
STARTUP_SECONDS = 180
BACKFILL_SECONDS = 900
FIRST = datetime(2026, 11, 21, 0, tzinfo=UTC)
HOURS = [FIRST + timedelta(hours=i) for i in range(2)]
DATA_HOUR, EMPTY_HOUR = HOURS  # no export file is modified in the last hour
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))
DEADLINE_MINUTES = 1


@dataclass
class Airflow:
    env: dict[str, str]
    home: Path
    root: Path
    http: Receiver
    smtp: Receiver
    db: PostgresServer

    def cli(self, *args: str, timeout: float = 180) -> str:
        result = subprocess.run(
            [str(WITH_AIRFLOW), "airflow", *args], env=self.env, cwd=self.root, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        assert result.returncode == 0, (
            f"airflow {' '.join(args)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
        return result.stdout

    def query(self, sql: str, *params: object) -> list[tuple]:
        """Rows of a read-only query of the metadata DB (`%s` placeholders; timestamps as aware datetimes)."""
        connection = self.db.connect()
        try:
            connection.set_session(readonly=True, autocommit=True)
            with connection.cursor() as cursor:
                cursor.execute(sql, params or None)  # no params: a `%` is a `%`
                return cursor.fetchall()
        finally:
            connection.close()

    def wait(self, what: str, check, timeout: float, every: float = 2.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(every)
        logs = "\n".join(f"--- {s}\n{(self.home / f'{s}.log').read_text()[-2000:]}" for s in SERVICES)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs}")


# export file -> the hour it is modified in, its lines: inserts; in two more files, an update, an insert, a delete
# and a broken line
EXPORTS = {
    "orders-00.json": (DATA_HOUR, [*dw.insert(ORDERS, 1, DATA_HOUR, {"id": 1, "status": "new"}),
                                   *dw.insert(ORDERS, 2, DATA_HOUR, {"id": 2, "status": "new"}),
                                   dw.heartbeat(DATA_HOUR)]),
    "orders-00a.json": (DATA_HOUR, dw.update(ORDERS, 3, DATA_HOUR, {"id": 1, "status": "new"},
                                             {"id": 1, "status": "paid"}, one_message=False)),
    "orders-00b.json": (DATA_HOUR, [*dw.insert(ORDERS, 4, DATA_HOUR, {"id": 3, "status": "new"}),
                                    *dw.delete(ORDERS, 5, DATA_HOUR, {"id": 2, "status": "new"}), "{broken"]),
}  # fmt: skip


def _exports(directory: Path) -> None:
    directory.mkdir(parents=True)
    for name, (hour, lines) in EXPORTS.items():
        path = directory / name
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (hour.timestamp() + 600, hour.timestamp() + 600))


def _config(root: Path, http: Receiver) -> Path:
    path = root / "sources.yaml"
    path.write_text(
        "sources:\n"
        # start_date in the future: the scheduler makes no scheduled run of its own; backfills run past hours
        "  - {name: shop, format: dataworks_json, export_uri: exports/shop, lake_root: lake,\n"
        "     start_date: '2027-01-01T00:00:00+00:00', retries: 0}\n"
        "  - name: late\n"
        "    format: dataworks_json\n"
        "    export_uri: exports/late\n"
        "    lake_root: lake\n"
        "    start_date: '2026-11-21T00:00:00+00:00'\n"
        f"    deadline_minutes: {DEADLINE_MINUTES}\n"
        "    alerts:\n"
        f"      - {{type: webhook, url: '{http.url}/alerts'}}\n"
        "      - {type: email, to: [oncall@example.com], from_email: airflow@example.com, conn_id: smtp_test}\n"
    )
    return path


def _stop_group(process: subprocess.Popen) -> None:
    """Stop a service and the workers it started (it leads its own process group, whose id is its PID)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def metadata_db(tmp_path_factory) -> Iterator[PostgresServer]:
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed: apt-get install postgresql (.ci/run installs it)")
    with postgres_server(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, metadata_db: PostgresServer) -> Iterator[Airflow]:
    root = tmp_path_factory.mktemp("services")
    http_receivers = _start_receiver("http", tmp_path_factory.mktemp("http"))
    smtp_receivers = _start_receiver("smtp", tmp_path_factory.mktemp("smtp"))
    http, smtp = next(http_receivers), next(smtp_receivers)
    _exports(root / "exports" / "shop")
    (root / "exports" / "late").mkdir(parents=True)
    home = root / "airflow-home"
    home.mkdir()
    port = _free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata_db.url,
        "AIRFLOW__CORE__DAGS_FOLDER": str(WITH_AIRFLOW.parents[1] / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(WITH_AIRFLOW.parents[1] / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "lakeloader-test-secret",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",  # parsed once: spare the two cores
        "LAKELOADER_CONFIG": str(_config(root, http)),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        "AIRFLOW_CONN_SMTP_TEST": json.dumps(
            {
                "conn_type": "smtp",
                "host": "127.0.0.1",
                "port": smtp.port,
                "extra": {"disable_ssl": True, "disable_tls": True, "retry_limit": 1},
            }
        ),
    }
    services: dict[str, subprocess.Popen] = {}
    handle = Airflow(env, home, root, http, smtp, metadata_db)
    try:
        handle.cli("db", "migrate", timeout=300)
        subprocess.run(
            [str(WITH_AIRFLOW), "python", "-m", "lakeloader_airflow.pools"], env=env, check=True, timeout=120
        )
        for service in SERVICES:
            with open(home / f"{service}.log", "wb") as log:
                services[service] = subprocess.Popen(
                    [str(WITH_AIRFLOW), "airflow", service], env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
        handle.wait(
            "the api-server", lambda: _answers(f"http://127.0.0.1:{port}/api/v2/monitor/health"), STARTUP_SECONDS
        )
        handle.wait(
            "the DAGs in the metadata DB",
            lambda: handle.query("select count(*) from dag where dag_id like 'lakeloader_%_hourly'")[0][0] == 2,
            STARTUP_SECONDS,
        )
        yield handle
    finally:
        for process in services.values():
            _stop_group(process)
        for receivers in (http_receivers, smtp_receivers):
            receivers.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def _runs(airflow: Airflow, dag_id: str, run_type: str) -> dict[str, str]:
    rows = airflow.query("select run_id, state from dag_run where dag_id = %s and run_type = %s", dag_id, run_type)
    return dict(rows)


def _silver(root: Path) -> list[dict]:
    rows = DeltaRsEngine().read(str(root / "lake/silver/shop/shop/orders")).to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "_cdc_loaded_at"} for r in rows), key=lambda r: r["id"])


def _columns(root: Path) -> list[str]:
    return DeltaRsEngine().read(str(root / "lake/silver/shop/shop/orders")).column_names


def _run_id(airflow: Airflow, hour: datetime) -> str:
    [(run_id,)] = airflow.query(
        "select run_id from dag_run where dag_id = 'lakeloader_shop_hourly' and logical_date = %s", hour
    )
    return run_id


def _landed(root: Path) -> dict[str, list[str]]:
    """Per raw hour directory, the files in it (not counting manifests)."""
    raw = root / "lake/raw/shop"
    return {
        str(d.relative_to(raw)): sorted(p.name for p in d.iterdir() if p.name != "_manifest.json")
        for d in sorted(raw.glob("dt=*/hour=*"))
    }


def _backfill(airflow: Airflow, first: datetime, last: datetime, *extra: str) -> None:
    """Create a backfill and wait until every backfill is complete. (On PostgreSQL `backfill create` needs no
    retry: on SQLite it can fail with "database is locked" while the scheduler writes, which bin/airflow-backfill,
    `make demo`'s runner, still retries.)"""
    before = airflow.query("select count(*) from backfill")[0][0]
    airflow.cli("backfill", "create", "--dag-id", "lakeloader_shop_hourly", "--max-active-runs", "1",
                "--from-date", first.isoformat(), "--to-date", last.isoformat(), *extra)  # fmt: skip
    airflow.wait(
        "the backfill to complete",
        lambda: airflow.query("select count(*) > %s from backfill", before)[0][0] and _all_backfills_complete(airflow),
        BACKFILL_SECONDS,
        every=5,
    )


def _all_backfills_complete(airflow: Airflow) -> bool:
    return bool(airflow.query("select count(completed_at) = count(*) from backfill")[0][0])


def test_backfill_of_two_hours_loads_them_and_rerunning_the_loaded_hour_changes_nothing(airflow):
    airflow.cli("dags", "unpause", "lakeloader_shop_hourly")
    started = time.monotonic()

    _backfill(airflow, HOURS[0], HOURS[-1])

    runs = _runs(airflow, "lakeloader_shop_hourly", "backfill")
    assert sorted(runs.values()) == ["success"] * len(HOURS), runs
    # each run loaded the hour of its logical date, which is its data interval's start
    intervals = airflow.query(
        "select logical_date, data_interval_start from dag_run where dag_id = 'lakeloader_shop_hourly' "
        "and run_type = 'backfill' order by logical_date"
    )
    assert intervals == [(h, h) for h in HOURS]
    print(f"backfill of {len(HOURS)} hours: {time.monotonic() - started:.0f}s")
    root = airflow.root
    rows = _silver(root)
    assert [(r["id"], r["status"]) for r in rows] == [(1, "paid"), (3, "new")]
    assert {"_cdc_op", "_cdc_seq", "_cdc_loaded_at"} <= set(_columns(root))  # and the change metadata columns
    landed = _landed(root)
    assert landed == {
        f"dt=2026-11-21/hour={h:%H}": sorted(name for name, (at, _) in EXPORTS.items() if at == h) for h in HOURS
    }
    ledger = sorted((root / "lake/audit/shop/landed").iterdir())
    assert len(ledger) == 3
    reports = [json.loads(p.read_text()) for p in (root / "lake/audit/shop/reconcile").glob("*.json")]
    assert [(r["hours"], r["ok"]) for r in reports] == [(["2026-11-21T00"], True)]
    # verify published each loaded hour's update of the silver table as an asset event with the hour's counts
    events = airflow.query(
        "select a.uri, e.extra from asset_event e join asset a on a.id = e.asset_id "
        "where a.name = 'lakeloader.shop.shop.orders' order by e.timestamp"
    )
    assert [extra["hour"] for _, extra in events] == ["2026-11-21T00"]
    assert {uri for uri, _ in events} == {(root / "lake/silver/shop/shop/orders").resolve().as_uri()}
    assert all(extra["changes"] > 0 for _, extra in events)
    # the hour without export files: an empty manifest, no Spark step, nothing written to bronze or the run log
    skipped = airflow.query(
        "select task_id, state from task_instance where dag_id = 'lakeloader_shop_hourly' and run_id = %s",
        _run_id(airflow, EMPTY_HOUR),
    )
    assert {task: state for task, state in skipped if task in ("parse", "apply", "reconcile")} == dict.fromkeys(
        ("parse", "apply", "reconcile"), "skipped"
    )
    empty = f"dt={EMPTY_HOUR:%Y-%m-%d}/hour={EMPTY_HOUR:%H}"
    assert json.loads((root / f"lake/raw/shop/{empty}/_manifest.json").read_text())["files"] == []
    assert not (root / f"lake/bronze/shop/changes/{empty}").exists()
    assert not (root / f"lake/audit/shop/runs/{empty}").exists()
    # and a replay over a range with that hour in it is valid (its empty manifest says nothing was there to parse)
    reapply = {"source": "shop", "mode": "reapply", "from_hour": "2026-11-21T00", "to_hour": "2026-11-21T01"}
    assert validate(load_config(root / "sources.yaml"), reapply)["hours"] == ["2026-11-21T00", "2026-11-21T01"]
    manifest = (root / "lake/raw/shop/dt=2026-11-21/hour=00/_manifest.json").read_bytes()

    _backfill(airflow, DATA_HOUR, DATA_HOUR, "--reprocess-behavior", "completed")

    assert _silver(root) == rows  # same rows, same change metadata
    assert _landed(root) == landed
    assert sorted((root / "lake/audit/shop/landed").iterdir()) == ledger
    assert (root / "lake/raw/shop/dt=2026-11-21/hour=00/_manifest.json").read_bytes() == manifest
    assert airflow.http.received() == [] or all(
        json.loads(r["body"])["source"] != "shop" for r in airflow.http.received()
    )  # backfill runs have no deadline, and nothing failed


def test_a_run_past_its_deadline_alerts_by_webhook_and_email(airflow):
    # The DAG stays paused: the run is created (and its deadline with it) but never starts. A CLI trigger with
    # a logical date gets as data interval the last complete hour before the trigger time (Airflow 3.3 infers
    # it from the trigger time, not the logical date), so the deadline, 1 min after the interval ends, has
    # passed unless the trigger falls in an hour's first minute.
    triggered = time.time()
    logical_date = datetime.fromtimestamp(triggered, UTC).replace(microsecond=0).isoformat()
    airflow.cli("dags", "trigger", "lakeloader_late_hourly", "--logical-date", logical_date)
    [(run_id, start, end)] = airflow.query(
        "select run_id, data_interval_start, data_interval_end from dag_run where dag_id = 'lakeloader_late_hourly'"
    )
    start, end = (t.astimezone(UTC) for t in (start, end))
    deadline = end + timedelta(minutes=DEADLINE_MINUTES)

    [body] = airflow.wait("the deadline alert", lambda: _alerts(airflow, "/alerts"), timeout=180, every=0.5)
    [mail] = airflow.wait("the alert e-mail", airflow.smtp.received, timeout=60)

    assert body["received_at"] - max(triggered, deadline.timestamp()) < 60  # the scheduler and triggerer act at once
    assert (body["source"], body["kind"], body["dag_id"]) == ("late", "deadline_missed", "lakeloader_late_hourly")
    late = body["amount_seconds"]
    assert abs(late - (body["received_at"] - deadline.timestamp())) < 60
    assert body["summary"] == (
        f"Source late: the hourly run for hour {start:%Y-%m-%dT%H} is {minutes(late)} past its deadline "
        f"({DEADLINE_MINUTES} min after its data interval ended at {end:%Y-%m-%d %H:%M} UTC) and has not finished "
        "(state: queued)"
    )
    assert body["details"]["deadline"] == deadline.isoformat()
    base_url = airflow.env["AIRFLOW__API__BASE_URL"]
    assert body["run_url"] == f"{base_url}/dags/lakeloader_late_hourly/runs/{quote(run_id, safe='')}"
    assert (mail["to"], mail["subject"]) == (["oncall@example.com"], "[lakeloader] late: deadline missed")
    assert f"hour {start:%Y-%m-%dT%H}" in mail["body"] and body["run_url"] in mail["body"]


def _alerts(airflow: Airflow, path: str) -> list[dict]:
    return [
        {**json.loads(r["body"]), "received_at": r["received_at"]} for r in airflow.http.received() if r["path"] == path
    ]
