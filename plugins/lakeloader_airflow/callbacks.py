"""Callbacks Airflow imports by dotted path: the Deadline Alert of the hourly runs and the task-failure alert.

They live in this importable module (not in a DAG file) because Airflow stores callbacks as import paths:
the triggerer imports `deadline_missed`, the worker calls `FailureAlert` instances after the last retry.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from lakeloader.core import zones
from lakeloader.core.config import load_source
from lakeloader_airflow import alerts

log = logging.getLogger(__name__)


def _moment(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


async def deadline_missed(source: str, config: str, deadline_minutes: int, context: dict[str, Any]) -> None:
    """A run of `source`'s hourly DAG has not finished `deadline_minutes` after the end of its data interval.

    Runs in the triggerer (an AsyncCallback); `context` is what the scheduler passes: the run and the deadline.
    """
    declared = load_source(config, source)
    run = context.get("dag_run") or {}
    run_id = run.get("dag_run_id") or run.get("run_id")  # the scheduler hands the REST API's DAGRunResponse
    deadline = _moment((context.get("deadline") or {}).get("deadline_time"))
    interval_start, interval_end = _moment(run.get("data_interval_start")), _moment(run.get("data_interval_end"))
    now = datetime.now(UTC)
    late = (now - deadline).total_seconds() if deadline else None
    hour = f"{interval_start:%Y-%m-%dT%H}" if interval_start else "?"
    ended = f" ended at {interval_end:%Y-%m-%d %H:%M} UTC" if interval_end else " ended"
    summary = (
        f"Source {source}: the hourly run for hour {hour} is {alerts.minutes(late or 0)} past its deadline "
        f"({deadline_minutes} min after its data interval{ended}) and has not finished (state: {run.get('state')})"
    )
    alert = alerts.Alert(
        source=source,
        kind=alerts.DEADLINE_MISSED,
        summary=summary,
        dag_id=run.get("dag_id"),
        run_id=run_id,
        amount_seconds=late,
        details={
            "hour": hour,
            "data_interval_end": interval_end.isoformat() if interval_end else None,
            "deadline": deadline.isoformat() if deadline else None,
            "run_state": run.get("state"),
            "deadline_minutes": deadline_minutes,
        },
    )
    await alerts.adeliver(declared, alert)


class FailureAlert:
    """on_failure_callback of every lakeloader task: Airflow calls it once the task failed its last retry.

    Checks that already alerted about their problem fail with `AlertSent`; those are not alerted twice.
    """

    def __init__(self, source: str, config: str) -> None:
        self.source, self.config = source, config

    def __call__(self, context: dict[str, Any]) -> None:
        exception = context.get("exception")
        if isinstance(exception, alerts.AlertSent):
            return
        ti, run = context.get("ti"), context.get("dag_run")
        task_id = getattr(ti, "task_id", None)
        hour = context.get("data_interval_start")
        source = load_source(self.config, self.source)
        error = alerts.redact(f"{type(exception).__name__}: {exception}", source) if exception else "unknown"
        cause = _cause(source, task_id, hour) or error
        alert = alerts.Alert(
            source=self.source,
            kind=alerts.TASK_FAILED,
            summary=(
                f"Source {self.source}: {cause.splitlines()[0][:300]} (task {task_id} of "
                f"{getattr(ti, 'dag_id', '?')} failed after {getattr(ti, 'try_number', '?')} tries"
                + (f", hour {hour:%Y-%m-%dT%H})" if isinstance(hour, datetime) else ")")
            ),
            dag_id=getattr(ti, "dag_id", None),
            run_id=getattr(run, "run_id", None) or getattr(ti, "run_id", None),
            task_id=task_id,
            details={"error": error[:2000], **({"cause": cause[:2000]} if cause != error else {})},
        )
        alerts.deliver(source, alert)


def _cause(source, task_id: str | None, hour: object) -> str | None:
    """What a spark-submit step recorded as its failure's cause (lakeloader.cli.spark_submit), if it got that far."""
    if not task_id or not isinstance(hour, datetime):
        return None
    try:
        from lakeloader.core.storage import open_store

        lake = open_store(source.lake_root, source.s3_endpoint_url)
        key = zones.run_error_key(source.name, hour, task_id)
        return alerts.redact(json.loads(lake.read_bytes(key))["error"], source) if lake.stat(key) else None
    except Exception:  # the alert goes out with what the task said
        return None
