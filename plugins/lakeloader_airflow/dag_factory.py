"""Build the hourly DAG of one configured source: land -> parse -> apply -> reconcile -> verify, and freshness.

Wiring only: landing lives in `lakeloader.land.step`, parsing, applying and reconciling in the Spark entry points
`jobs/parse.py`, `jobs/apply.py` and `jobs/reconcile.py`, which run through spark-submit; the checks in
`lakeloader_airflow.checks`. Every run covers one data interval (one hour with the default schedule) and
hands its start to each step as the hour to process.

Operations: every run has a Deadline Alert (data interval end + the source's `deadline_minutes`), every
task alerts through the source's channels when it fails its last retry, and the tasks that write the lake
run in the source's pool (one slot), which the replay and daily reconciliation DAGs share.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, AsyncCallback, DeadlineAlert, task  # type: ignore[attr-defined]  # not in its stubs

import lakeloader
from lakeloader.core import zones
from lakeloader.core.config import BrokenSource, ConfigError, SourceConfig
from lakeloader.core.spark_conf import session_conf
from lakeloader.land.step import land_hour
from lakeloader_airflow import checks
from lakeloader_airflow.assets import silver_alias, silver_events
from lakeloader_airflow.callbacks import FailureAlert, deadline_missed
from lakeloader_airflow.deadlines import DataIntervalEnd
from lakeloader_airflow.timetable import HourIntervals

log = logging.getLogger(__name__)

JOBS_DIR = Path(lakeloader.__file__).resolve().parent.parent
PARSE_APP = JOBS_DIR / "parse.py"
APPLY_APP = JOBS_DIR / "apply.py"
RECONCILE_APP = JOBS_DIR / "reconcile.py"

SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false"}
HOUR_TEMPLATE = "{{ data_interval_start.strftime('%Y-%m-%dT%H') }}"
RETRY_DELAY = timedelta(minutes=5)


def dag_id_for(source_name: str) -> str:
    return f"lakeloader_{source_name}_hourly"


def pool_for(source_name: str) -> str:
    """The one-slot pool of a source: its lake-writing tasks (hourly, replay, daily reconcile) never overlap."""
    return f"lakeloader_{source_name}"


def default_args(source: SourceConfig, config_file: Path) -> dict[str, Any]:
    return {
        "owner": source.owner,
        "retries": source.retries,
        "retry_delay": RETRY_DELAY,
        "on_failure_callback": FailureAlert(source.name, str(config_file)),
    }


def spark_task(task_id: str, app: Path, args: list[str], source: SourceConfig, doc: str) -> SparkSubmitOperator:
    """A spark-submit step of `source`, in the source's pool, with the settings its table engine needs."""
    return SparkSubmitOperator(
        task_id=task_id,
        doc_md=doc,
        conn_id=SPARK_CONN_ID,
        application=str(app),
        application_args=list(args),
        conf={**SPARK_CONF, **session_conf(source)},
        name=f"lakeloader-{source.name}-{task_id}-{HOUR_TEMPLATE}",
        verbose=False,
        pool=pool_for(source.name),
    )


def running_dags_test() -> bool:
    """Whether this process is `airflow dags test`, which Airflow 3.3.2 cannot run with a Deadline Alert.

    `DAG.test()` leaves the encoded alerts in the run's DAG and crashes after a successful run
    (apache/airflow#73428, fix proposed in #73430). `dags test` has no scheduler or triggerer, so no deadline
    could fire there anyway; the alert is left out only in that process. Remove once Airflow ships the fix.
    """
    return sys.argv[1:3] == ["dags", "test"]


def hourly_deadline(source: SourceConfig, config_file: Path) -> DeadlineAlert | None:
    """Late when the run has not finished `deadline_minutes` after the end of its data interval."""
    if running_dags_test():
        return None
    return DeadlineAlert(
        reference=DataIntervalEnd(),
        interval=timedelta(minutes=source.deadline_minutes),
        callback=AsyncCallback(
            deadline_missed,
            kwargs={"source": source.name, "config": str(config_file), "deadline_minutes": source.deadline_minutes},
        ),
        name=f"lakeloader {source.name}: hour loaded {source.deadline_minutes} min after it ended",
    )


def build_hourly_dag(source: SourceConfig, config_file: Path) -> DAG:
    """The hourly DAG of `source`; the Spark jobs read the same declaration from `config_file`."""
    config_file = Path(config_file).resolve()
    spark_args = ["--source", source.name, "--hour", HOUR_TEMPLATE, "--config", str(config_file)]

    with DAG(
        dag_id=dag_id_for(source.name),
        description=f"Load the {source.format} export of source '{source.name}' into Delta tables, hour by hour",
        schedule=HourIntervals(source.schedule, timezone="UTC"),
        start_date=datetime.fromisoformat(source.start_date),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(source, config_file),
        deadline=hourly_deadline(source, config_file),
        tags=["lakeloader", source.name, source.format],
        doc_md=_dag_doc(source, config_file),
    ) as dag:

        @task(task_id="land", doc_md=_LAND_DOC, pool=pool_for(source.name))
        def land(data_interval_start: datetime | None = None) -> dict[str, Any]:
            if data_interval_start is None:
                raise ValueError(
                    "this run has no data interval, so there is no hour to load: trigger it with a logical date, "
                    "or rerun an hour by clearing its scheduled run or with `airflow backfill create`"
                )
            summary = land_hour(source, data_interval_start).summary()
            log.info("landed hour %s of source %s: %s", summary["hour"], source.name, summary)
            return dict(summary)  # the land task returns a plain dict (its XCom)

        @task.short_circuit(
            task_id="anything_landed", doc_md=_ANYTHING_LANDED_DOC, retries=0, ignore_downstream_trigger_rules=False
        )
        def anything_landed(summary: dict[str, Any]) -> bool:
            if summary["files_in_manifest"]:
                return True
            log.info(
                "hour %s of source %s: no export file landed in it (%s landed in earlier hours, %s not yet due), so "
                "parse, apply and reconcile are skipped and no Spark job is started",
                summary["hour"], source.name, summary["already_landed"], summary["not_yet_due"],
            )  # fmt: skip
            return False

        parse = spark_task("parse", PARSE_APP, spark_args, source, _PARSE_DOC)
        apply = spark_task("apply", APPLY_APP, spark_args, source, _APPLY_DOC)
        reconcile_args = ["--source", source.name, "--from", HOUR_TEMPLATE, "--checks", "accounting"]
        reconcile_args += ["--label", "{{ run_id }}", "--config", str(config_file)]
        reconcile = spark_task("reconcile", RECONCILE_APP, reconcile_args, source, _RECONCILE_DOC)

        @task(task_id="verify", doc_md=_VERIFY_DOC, retries=0, outlets=[silver_alias(source.name)])
        def verify(dag_run=None, outlet_events=None) -> dict[str, Any]:
            summary = checks.verify_reconciliation(source, dag_run.run_id, dag_run.dag_id, dag_run.run_id)
            for asset, extra in silver_events(source.name, summary):
                outlet_events[silver_alias(source.name)].add(asset, extra=extra)
            return summary

        @task(task_id="freshness", doc_md=_FRESHNESS_DOC, retries=0, trigger_rule="all_done")
        def freshness(dag_run=None, data_interval_end=None) -> dict[str, Any]:
            return checks.check_freshness(source, dag_run.dag_id, dag_run.run_id, hour_end=data_interval_end)

        anything_landed(land()) >> parse >> apply >> reconcile >> [verify(), freshness()]  # type: ignore[arg-type]

    return dag


def config_error_dag_id(broken: BrokenSource) -> str:
    """The source's own hourly DAG id when its name is usable, else one naming its position in the file."""
    return dag_id_for(broken.name) if broken.name else f"lakeloader_config_error_{broken.index}"


def build_config_error_dag(broken: BrokenSource, config_file: Path) -> DAG:
    """Stands in for the DAGs of a source whose declaration does not validate, so that the mistake shows in the
    UI under that source (description, docs, the `config-error` tag, and a task that fails with the message)
    while every other source keeps running. Unscheduled: it never runs by itself."""
    with DAG(
        dag_id=config_error_dag_id(broken),
        description=f"CONFIGURATION ERROR: {broken.message.splitlines()[-1].strip()}"[:200],
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        tags=["lakeloader", "config-error"],
        doc_md=f"""\
# Configuration error

The declaration of {f"source **`{broken.name}`**" if broken.name else f"source number {broken.index + 1}"} in
`{config_file}` does not validate, so this source is not loaded. The other sources are not affected.

```
{broken.message}
```

Fix the file; the next DAG parse replaces this DAG with the source's hourly DAG.
""",
    ) as dag:

        @task(task_id="configuration_error", retries=0)
        def configuration_error() -> None:
            raise ConfigError(broken.message)

        configuration_error()
    log.error("lakeloader: %s", broken.message)
    return dag


def _dag_doc(source: SourceConfig, config_file: Path) -> str:
    lake = source.lake_root.rstrip("/")
    example_hour = zones.parse_hour(source.start_date)
    hour_text = zones.format_hour(example_hour)
    next_hour = example_hour + timedelta(hours=1)
    return f"""\
# Lakeloader: `{source.name}` hourly

Loads the change-data-capture export of source **`{source.name}`** (format `{source.format}`) into one
Delta table per source table. Each run covers one data interval of the schedule `{source.schedule}` (UTC):
the hour from the run's *data interval start* to its *data interval end*.

| | |
|---|---|
| exports read from | `{source.export_uri}` |
| lake root | `{lake}` |
| configuration | `{config_file}` |

## Steps

1. **land**: copies the export files that appeared before the end of the hour and were not landed
   before into `{lake}/raw/{source.name}/dt=…/hour=…/`, each file exactly once, and writes that hour's
   `_manifest.json`. A file that arrives late lands in the next run; nothing is lost.
2. **parse** (Spark): turns the hour's landed files into the canonical change log in
   `{lake}/bronze/{source.name}/changes/…`; messages that cannot be read go to
   `{lake}/bronze/{source.name}/quarantine/…` with the reason.
3. **apply** (Spark): orders the hour's changes by sequence, removes duplicates, and merges inserts, updates and deletes
   into the silver Delta tables `{lake}/silver/{source.name}/<db>/<table>/`.
4. **reconcile** (Spark): recounts the hour's landed files line by line and checks every message ended up
   exactly once in bronze or quarantine (or outside the include list); updates the freshness watermark.
5. **verify**: reads that report; its XCom holds the hour's counts, what was quarantined (reasons and where),
   and the report's location. Any gap fails this task and alerts.
6. **freshness** (runs even when an earlier step failed): how far the newest loaded change or heartbeat lags
   wall-clock time; alerts and fails when over the source's freshness SLA or heartbeat timeout.

## Answering from the UI

- *Which hour last loaded?* The newest successful run in the Grid view: its data interval is the hour
  (also `hour` in the XCom of **verify**).
- *How far behind is the data?* XCom of the newest **freshness** task: `watermark`, `lag_minutes`,
  `newest_heartbeat`, `heartbeat_age_minutes`.
- *What was quarantined?* XCom of **verify**: `quarantined`, `quarantine_reasons`, `quarantine_location`;
  the log of **parse** prints the same counts.

## Deadlines and alerts

| | |
|---|---|
| deadline | {source.deadline_minutes} min after the end of the data interval (Deadline Alert) |
| freshness SLA | {_minutes_or_off(source.freshness_sla_minutes)} |
| heartbeat timeout | {_minutes_or_off(source.heartbeat_timeout_minutes)} |
| alert channels | {", ".join(c.type for c in source.alerts) or "none configured: alerts are only logged"} |

A task that fails its last retry alerts through the same channels. Tasks that write the lake run in the
pool `{pool_for(source.name)}` (one slot), shared with the replay and daily reconciliation DAGs; the
lakeloader plugin creates it when a scheduler starts (or run `python -m lakeloader_airflow.pools`). Each
writing step also holds the source's lake lock, so a writer launched outside Airflow is refused, not mixed in.

## Rerunning an hour

The steps are built to be rerun for an hour (landing never copies a file twice):

- **Clear** the run of that hour in the Grid view (or just its failed task and downstream); the run keeps
  its data interval.
- Or create a backfill; `--from-date`/`--to-date` are the data interval starts of the first and last
  hour, e.g. for hour `{hour_text}`:

  ```
  airflow backfill create --dag-id {dag_id_for(source.name)} --reprocess-behavior completed \\
      --max-active-runs 1 --from-date {example_hour.isoformat()} --to-date {example_hour.isoformat()}
  ```

- A trigger from the UI's form with logical date T covers the hour ending at T: to load `{hour_text}`
  trigger with `{next_hour.isoformat()}`. (`airflow dags trigger` in Airflow 3.3 covers the last complete
  hour before the trigger time instead; a trigger without a logical date has no hour and fails.)

Scheduled runs of this DAG never overlap (max one active run); backfill runs may, but the lake-writing
tasks share the source's one-slot pool, and `--max-active-runs 1` keeps them in order.
"""


def _minutes_or_off(value: int | None) -> str:
    return f"{value} min" if value else "not checked (not configured)"


_LAND_DOC = """\
### land

Copies the export files due by the end of this run's hour into the raw zone, each file exactly once (a
ledger in the audit zone remembers every landed file), and writes the hour's manifest. No Spark.
Returns a summary (files and bytes in the manifest, files copied, already landed, not yet due, and
files changed after landing) as its XCom and in its log. Rerunning copies nothing new and rewrites
the same manifest. Fails, naming it, when the export location cannot be listed (missing directory or
bucket, no permission): an existing empty location is fine, a wrong `export_uri` is not silently empty.
"""

_ANYTHING_LANDED_DOC = """\
### anything_landed

Lets the run go on when the hour's manifest holds files. An hour in which no export file landed skips
parse, apply, reconcile and verify (shown as skipped, with the reason in this task's log) without starting
Spark; freshness still runs, so an export that stopped arriving is still noticed.
"""

_PARSE_DOC = """\
### parse

`spark-submit jobs/parse.py` for this run's hour: reads the files in the hour's manifest and writes the
canonical change log (bronze), one row per message, or a quarantine row with its reason. Prints a JSON
summary line when it succeeds.
"""

_APPLY_DOC = """\
### apply

`spark-submit jobs/apply.py` for this run's hour: orders the hour's bronze changes per table, removes
duplicates, keeps the last change per key, and merges the changes into the
silver Delta tables. Prints a JSON summary line when it succeeds.
"""

_RECONCILE_DOC = """\
### reconcile

`spark-submit jobs/reconcile.py --checks accounting` for this run's hour: the hour's landed files must
still be in the raw zone with the manifest's sizes, and every line of them must be in bronze (data, ddl,
heartbeat, control) or quarantine exactly once, or belong to a table outside the include list. Writes
`audit/<source>/reconcile/<run id>.{json,md}` and a row per check to the `audit/<source>/reconciliation`
Delta table, and moves the freshness watermark forward. Succeeds whenever it could check; **verify** judges.
"""

_VERIFY_DOC = """\
### verify

Reads this run's reconciliation report and logs it in readable form. XCom: the hour, messages landed,
counts per outcome, what was quarantined (count, reasons, location) and the report's location. A gap
(a missing landed file, a message neither in bronze nor quarantine, one counted twice) fails the task
and alerts with what is missing. DDL skipped as unsupported (under `skip_and_alert`) and export files that
cannot be read whole (a damaged `.gz`, an unsupported compression) are alerted too (`ddl_skipped`,
`damaged_export`), and the run goes on. Once the hour checks out, it adds an asset event per silver table
the hour wrote (alias `lakeloader_<source>_silver`, the hour's counts in the extra).
"""

_FRESHNESS_DOC = """\
### freshness

Compares the source's watermark (the newest change or heartbeat event time loaded) with wall-clock time.
XCom: `watermark`, `lag_minutes`, `newest_heartbeat`, `heartbeat_age_minutes` and the configured limits.
Alerts and fails when the lag exceeds `freshness_sla_minutes` (default 180) or the newest heartbeat is older
than `heartbeat_timeout_minutes`. Runs even when an earlier step failed, since then the data is falling behind.
A run of a past hour (a backfill, a catch-up: its hour ended longer than the limit plus an hour ago) reports
the lag (`catching_up: true`) without alerting; the newest run judges the present.
"""
