"""A Deadline Alert reference for "late relative to the end of the data interval".

Airflow's built-in references are the logical date, the queue time, a fixed time and the average runtime.
An hourly run is late when its hour's data is not loaded some minutes after the hour ended, whatever
created the run (schedule, backfill, a manual trigger, whose logical date is the end of the interval):
so the reference is the run's `data_interval_end`. The scheduler evaluates it when it creates the run;
it finds the class through the plugin in plugins/lakeloader_plugin.py (custom references must be registered).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import BaseDeadlineReference


class DataIntervalEnd(BaseDeadlineReference):
    """The end of the DAG run's data interval."""

    required_kwargs = {"dag_id", "run_id"}

    def _evaluate_with(self, *, session: Any, **kwargs: Any) -> datetime | None:
        from airflow.models import DagRun
        from sqlalchemy import select

        return session.scalar(
            select(DagRun.data_interval_end).where(DagRun.dag_id == kwargs["dag_id"], DagRun.run_id == kwargs["run_id"])
        )
