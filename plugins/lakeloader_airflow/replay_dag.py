"""Build the manual replay DAG: validate -> replay_<source> (Spark, in the source's pool) -> report.

The trigger form shows one typed Param per field (source, mode, hours, tables) with help text; the JSON
schema of each rejects malformed values at trigger time. What one field cannot know (from after to, hours
bronze does not hold, tables the source does not have, fields that do not fit the mode) is checked by
`validate` within seconds, without Spark, and the run fails with the list of problems.

One replay branch per source, each in that source's one-slot pool, so a replay and the source's hourly
run (or its daily reconciliation) never write the same tables at once.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, task

from lakeloader.audit.replay_plan import HOUR_PATTERN, MODES, REAPPLY, TABLE_PATTERN, validate
from lakeloader.core import zones
from lakeloader.core.config import LakeloaderConfig, SourceConfig, load_source, valid_sources
from lakeloader.core.spark_conf import session_conf
from lakeloader.core.storage import open_store
from lakeloader_airflow.callbacks import FailureAlert
from lakeloader_airflow.dag_factory import JOBS_DIR, SPARK_CONF, SPARK_CONN_ID, pool_for

log = logging.getLogger(__name__)

DAG_ID = "lakeloader_replay"
REPLAY_APP = JOBS_DIR / "replay.py"


def replay_params(config: LakeloaderConfig) -> dict[str, Param]:
    names = [s.name for s in config.sources]
    hour: dict[str, Any] = {"type": ["null", "string"], "pattern": HOUR_PATTERN}
    return {
        "source": Param(
            names[0],
            type="string",
            enum=names,
            title="Source",
            description="The configured source whose tables to replay.",
        ),
        "mode": Param(
            REAPPLY,
            type="string",
            enum=list(MODES),
            title="Mode",
            description_md=(
                "**reapply**: run the apply step again over the bronze change log of the hours from *From hour* "
                "to *To hour*, every table (rows already up to date stay as they are).  \n"
                "**rebuild**: replace the chosen tables (all when none are listed) with the state of their "
                "**whole** change log; hours are not used."
            ),
        ),
        "from_hour": Param(
            None,
            **hour,
            title="From hour (reapply)",
            description="First hour to reapply, YYYY-MM-DDTHH in UTC (e.g. 2026-11-21T05). Empty for rebuild.",
        ),
        "to_hour": Param(
            None,
            **hour,
            title="To hour (reapply)",
            description="Last hour to reapply, included, YYYY-MM-DDTHH in UTC. Must not be before From hour.",
        ),
        "tables": Param(
            [],
            type=["null", "array"],  # "null": the form marks it optional (empty rebuilds every table)
            items={"type": "string", "pattern": TABLE_PATTERN},
            title="Tables (rebuild)",
            description="Tables to rebuild, one 'db.table' per line; empty rebuilds every table of the source. "
            "Leave empty for reapply.",
        ),
    }


def build_replay_dag(config: LakeloaderConfig, config_file: Path) -> DAG:
    config_file = Path(config_file).resolve()
    sources = [s.name for s in config.sources]
    with DAG(
        dag_id=DAG_ID,
        description="Replay a source's tables from bronze: reapply hours, or rebuild tables from the whole log",
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        params=replay_params(config),
        tags=["lakeloader", "replay"],
        doc_md=_DAG_DOC.format(sources=", ".join(f"`{s}`" for s in sources)),
    ) as dag:

        @task.branch(task_id="validate", doc_md=_VALIDATE_DOC, retries=0)
        def validate_request(params: dict[str, Any] | None = None, ti=None) -> str:
            plan = validate(valid_sources(config_file), dict(params or {}))
            log.info("replay plan: %s", plan)
            ti.xcom_push(key="plan", value=plan)
            return f"replay_{plan['source']}"

        @task(task_id="report", doc_md=_REPORT_DOC, trigger_rule="none_failed_min_one_success", retries=0)
        def report(params: dict[str, Any] | None = None, run_id: str | None = None) -> dict[str, Any]:
            assert params is not None and run_id is not None  # Airflow passes both
            source = load_source(config_file, params["source"])
            lake = open_store(source.lake_root, source.s3_endpoint_url)
            document = json.loads(lake.read_bytes(zones.replay_report_key(source.name, run_id)))
            log.info("replay of %s:\n%s", source.name, json.dumps(document, indent=1))
            return document

        chosen = validate_request()
        done = report()
        for source in config.sources:
            chosen >> _replay_task(source, config_file) >> done
    return dag


def _replay_task(source: SourceConfig, config_file: Path) -> SparkSubmitOperator:
    plan = "{{ ti.xcom_pull(task_ids='validate', key='plan') | tojson }}"
    return SparkSubmitOperator(
        task_id=f"replay_{source.name}",
        doc_md=_REPLAY_DOC,
        conn_id=SPARK_CONN_ID,
        application=str(REPLAY_APP),
        application_args=["--plan", plan, "--label", "{{ run_id }}", "--config", str(config_file)],
        conf={**SPARK_CONF, **session_conf(source)},
        name=f"lakeloader-{source.name}-replay",
        verbose=False,
        pool=pool_for(source.name),
        retries=0,
        on_failure_callback=FailureAlert(source.name, str(config_file)),
    )


_DAG_DOC = """\
# Lakeloader: replay

Re-runs loading from the bronze change log for one source ({sources}); trigger it with the form.

- **reapply** hours *From hour* .. *To hour*: the apply step again, hour by hour, every table. Use it after
  restoring or losing silver rows: a change is merged only when it is newer than the row, so rows already
  up to date stay as they are.
- **rebuild** tables: each table is replaced, in one Delta commit, by the state its **whole** change log
  implies (the same computation the reconciliation uses). Use it to repair a table whose rows differ
  (e.g. reported by reconciliation) or after changing a table's key.

Bad input is rejected: the form refuses malformed values; **validate** fails at once, listing what is wrong,
for an unknown source or table, *From hour* after *To hour*, hours bronze does not hold, or fields that do
not fit the mode. Re-landing or re-parsing hours is a backfill of the hourly DAG, not a replay.

A replay runs in the source's pool (`lakeloader_<source>`, one slot) like the hourly run's lake-writing
tasks, so the two never write the same tables at once; only one replay runs at a time.
"""

_VALIDATE_DOC = """\
### validate

Checks the request against the configuration and the lake (no Spark) and picks the source's replay task.
Fails with every problem listed. XCom `plan`: source, mode, hours, tables.
"""

_REPLAY_DOC = """\
### replay_&lt;source&gt;

`spark-submit jobs/replay.py --plan …`: carries out the validated plan and writes
`audit/<source>/replay/<run id>.json`. Runs in the source's pool.
"""

_REPORT_DOC = """\
### report

Reads the replay's report and returns it as XCom: per hour (reapply) the apply counts per table, or per
table (rebuild) the rows before and after.
"""
