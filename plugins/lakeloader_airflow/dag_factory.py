"""Build the hourly DAG of one configured source: land -> parse -> apply.

Wiring only: landing lives in `lakeloader.land`, parsing and applying in the Spark entry points
`jobs/parse.py` and `jobs/apply.py`, which run through spark-submit. Every run covers one data interval
(one hour with the default schedule) and hands its start to each step as the hour to process.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, CronDataIntervalTimetable, task

import lakeloader
from lakeloader import zones
from lakeloader.config import SourceConfig
from lakeloader.land import land_hour

log = logging.getLogger(__name__)

JOBS_DIR = Path(lakeloader.__file__).resolve().parent.parent
PARSE_APP = JOBS_DIR / "parse.py"
APPLY_APP = JOBS_DIR / "apply.py"

SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false"}
HOUR_TEMPLATE = "{{ data_interval_start.strftime('%Y-%m-%dT%H') }}"
RETRY_DELAY = timedelta(minutes=5)


def dag_id_for(source_name: str) -> str:
    return f"lakeloader_{source_name}_hourly"


def build_hourly_dag(source: SourceConfig, config_file: Path) -> DAG:
    """The hourly DAG of `source`; the Spark jobs read the same declaration from `config_file`."""
    config_file = Path(config_file).resolve()
    spark_args = ["--source", source.name, "--hour", HOUR_TEMPLATE, "--config", str(config_file)]

    with DAG(
        dag_id=dag_id_for(source.name),
        description=f"Load the {source.format} export of source '{source.name}' into Delta tables, hour by hour",
        schedule=CronDataIntervalTimetable(source.schedule, timezone="UTC"),
        start_date=datetime.fromisoformat(source.start_date),
        catchup=False,
        max_active_runs=1,
        default_args={"retries": source.retries, "retry_delay": RETRY_DELAY},
        tags=["lakeloader", source.name, source.format],
        doc_md=_dag_doc(source, config_file),
    ) as dag:

        @task(task_id="land", doc_md=_LAND_DOC)
        def land(data_interval_start: datetime | None = None) -> dict[str, Any]:
            if data_interval_start is None:
                raise ValueError(
                    "this run has no data interval, so there is no hour to load: trigger it with a logical date, "
                    "or rerun an hour by clearing its scheduled run or with `airflow backfill create`"
                )
            summary = land_hour(source, data_interval_start).summary()
            log.info("landed hour %s of source %s: %s", summary["hour"], source.name, summary)
            return summary

        parse = SparkSubmitOperator(
            task_id="parse",
            doc_md=_PARSE_DOC,
            conn_id=SPARK_CONN_ID,
            application=str(PARSE_APP),
            application_args=list(spark_args),
            conf=dict(SPARK_CONF),
            name=f"lakeloader-{source.name}-parse-{HOUR_TEMPLATE}",
            verbose=False,
        )
        apply = SparkSubmitOperator(
            task_id="apply",
            doc_md=_APPLY_DOC,
            conn_id=SPARK_CONN_ID,
            application=str(APPLY_APP),
            application_args=list(spark_args),
            conf=dict(SPARK_CONF),
            name=f"lakeloader-{source.name}-apply-{HOUR_TEMPLATE}",
            verbose=False,
        )

        land() >> parse >> apply

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

## Rerunning an hour

The steps are built to be rerun for an hour (landing never copies a file twice):

- **Clear** the run of that hour in the Grid view (or just its failed task and downstream); the run keeps
  its data interval.
- Or create a backfill; `--from-date`/`--to-date` are the data interval starts of the first and last
  hour, e.g. for hour `{hour_text}`:

  ```
  airflow backfill create --dag-id {dag_id_for(source.name)} --reprocess-behavior completed \\
      --from-date {example_hour.isoformat()} --to-date {example_hour.isoformat()}
  ```

- A manual trigger *with a logical date T* covers the last complete hour before T: to load
  `{hour_text}` trigger with `{next_hour.isoformat()}`. A trigger without a logical date has no hour and fails.

Runs of this DAG never overlap (max one active run), because landing relies on it.
"""


_LAND_DOC = """\
### land

Copies the export files due by the end of this run's hour into the raw zone, each file exactly once (a
ledger in the audit zone remembers every landed file), and writes the hour's manifest. No Spark.
Returns a summary (files and bytes in the manifest, files copied, already landed, not yet due, and
files changed after landing) as its XCom and in its log. Rerunning copies nothing new and rewrites
the same manifest.
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
