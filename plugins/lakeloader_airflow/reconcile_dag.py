"""Build the daily reconciliation DAG of one source: wait_for_day -> reconcile (Spark, in the source's pool) -> verify.

Once a day, for the previous UTC day: every hour's accounting again (catching hours that never loaded),
the state of every silver table against the whole bronze change log, and, when the source's snapshot
export is configured, every table against it. The full-state checks read the whole change log, so they
run daily rather than in every hourly run.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import open_store
from lakeloader.land.step import landed_empty
from lakeloader_airflow import checks
from lakeloader_airflow.dag_factory import RECONCILE_APP, default_args, spark_task
from lakeloader_airflow.timetable import HourIntervals

FIRST_HOUR = "{{ data_interval_start.strftime('%Y-%m-%dT%H') }}"
LAST_HOUR = "{{ (data_interval_end - macros.timedelta(hours=1)).strftime('%Y-%m-%dT%H') }}"
WAIT_TIMEOUT = timedelta(hours=6)


def daily_dag_id(source_name: str) -> str:
    return f"lakeloader_{source_name}_reconcile_daily"


def daily_checks(source: SourceConfig) -> list[str]:
    return ["accounting", "state"] + (["snapshot"] if source.snapshot else [])


def build_daily_reconcile_dag(source: SourceConfig, config_file: Path) -> DAG:
    config_file = Path(config_file).resolve()
    checks_arg = ",".join(daily_checks(source))
    with DAG(
        dag_id=daily_dag_id(source.name),
        description=f"Reconcile source '{source.name}' daily: accounting, table state, snapshot export",
        schedule=HourIntervals("0 0 * * *", timezone="UTC"),
        start_date=datetime.fromisoformat(source.start_date),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(source, config_file),
        tags=["lakeloader", source.name, "reconcile"],
        doc_md=_DAG_DOC.format(source=source.name, checks=checks_arg),
    ) as dag:

        @task.sensor(task_id="wait_for_day", poke_interval=300, timeout=WAIT_TIMEOUT.total_seconds(),
                     mode="reschedule", doc_md=_WAIT_DOC)  # fmt: skip
        def wait_for_day(data_interval_end: datetime | None = None) -> bool:
            assert data_interval_end is not None  # Airflow passes it
            last_hour = data_interval_end - timedelta(hours=1)
            lake = open_store(source.lake_root, source.s3_endpoint_url)
            applied = lake.stat(zones.run_report_key(source.name, last_hour, "apply")) is not None
            return applied or landed_empty(lake, source.name, last_hour)

        args = ["--source", source.name, "--from", FIRST_HOUR, "--to", LAST_HOUR, "--checks", checks_arg]
        args += ["--label", "{{ run_id }}", "--config", str(config_file)]
        reconcile = spark_task("reconcile", RECONCILE_APP, args, source, _RECONCILE_DOC)

        @task(task_id="verify", retries=0, doc_md=_VERIFY_DOC)
        def verify(dag_run=None) -> dict[str, Any]:
            return checks.verify_reconciliation(source, dag_run.run_id, dag_run.dag_id, dag_run.run_id)

        wait_for_day() >> reconcile >> verify()
    return dag


_DAG_DOC = """\
# Lakeloader: `{source}` daily reconciliation

Runs after each UTC day, over that day's 24 hours (checks: {checks}):

- **accounting** of every hour: each landed message counted once in bronze or quarantine; an hour that
  never loaded shows up here;
- **state** of every silver table: rebuilt from the whole bronze change log and compared with silver
  (row count and an order-independent checksum of all columns); differing keys are listed;
- **snapshot** (when configured): the source's full export of current rows against silver.

Results: `audit/{source}/reconcile/<run id>.md` (readable), `.json`, and the Delta table
`audit/{source}/reconciliation`. A difference fails **verify** and alerts. To repair a table that differs,
trigger `lakeloader_replay` with mode *rebuild*.
"""

_WAIT_DOC = """\
### wait_for_day

Waits (rescheduling every 5 minutes, up to 6 hours) until the day's last hour has been applied, so the
checks do not race the hourly run that loads it. Times out, and alerts, when that hour never loads.
"""

_RECONCILE_DOC = """\
### reconcile

`spark-submit jobs/reconcile.py` over the day's hours with the checks above; writes the reports and the
audit table rows. Runs in the source's pool, so no hourly apply or replay changes tables meanwhile.
"""

_VERIFY_DOC = """\
### verify

Logs the readable report; XCom: per table the expected and actual rows and differing keys, and the
findings. Any difference fails this task and alerts with the tables and keys.
"""
