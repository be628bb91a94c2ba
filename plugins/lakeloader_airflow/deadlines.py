"""A Deadline Alert reference for "late relative to the end of the data interval".

Airflow's built-in references are the logical date, the queue time, a fixed time and the average runtime.
An hourly run is late when its hour's data is not loaded some minutes after the hour ended, whatever
created the run (the schedule, or a manual trigger, whose logical date is the end of the interval): so the
reference is the run's `data_interval_end`. Backfill runs get no deadline: they re-run past hours on
purpose, and would all be "late" the moment they are created.

The scheduler evaluates the reference when it creates the run; it finds the class through the plugin in
plugins/lakeloader_plugin.py (Airflow only accepts custom references registered by a plugin).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import BaseDeadlineReference  # type: ignore[attr-defined]  # not in its stubs


class DataIntervalEnd(BaseDeadlineReference):
    """The end of the DAG run's data interval (None, so no deadline, for backfill runs)."""

    required_kwargs = {"dag_id", "run_id"}

    def _evaluate_with(self, *, session: Any, **kwargs: Any) -> datetime | None:
        from airflow.models import DagRun
        from airflow.utils.types import DagRunType
        from sqlalchemy import select

        row = session.execute(
            select(DagRun.data_interval_end, DagRun.run_type).where(
                DagRun.dag_id == kwargs["dag_id"], DagRun.run_id == kwargs["run_id"]
            )
        ).one_or_none()
        if row is None or row.run_type == DagRunType.BACKFILL_JOB:
            return None
        return row.data_interval_end
