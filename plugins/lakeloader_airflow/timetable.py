"""The DAGs' timetable: Airflow's cron data intervals, with one rule for the hour a run loads.

A run loads its data interval, and its start is "the hour" everywhere (the Spark jobs' `--hour`, the raw and
bronze partitions, the reports). Scheduled and backfill runs of logical date T load the interval starting
at T. Airflow's own rule for a manual run is different: it loads the last complete interval before the
trigger's logical date, so a run triggered "for 05:00" loaded hour 04, and after `airflow dags test` of
05:00 a backfill of 05:00 loaded another hour than the name said. Here a manual run whose logical date is
on the schedule (05:00 sharp) loads the interval starting there, as a scheduled or backfill run of that
logical date does; a manual run at any other moment (the trigger form's "now") still loads the last
complete interval before it.

The scheduler, the API server (manual triggers) and `airflow backfill create` deserialize DAGs with this
class; Airflow finds it through the plugin in plugins/lakeloader_plugin.py (custom timetables must be
registered by a plugin).
"""

from __future__ import annotations

from typing import Any

from airflow.timetables.base import DataInterval
from airflow.timetables.interval import CronDataIntervalTimetable


class HourIntervals(CronDataIntervalTimetable):
    """CronDataIntervalTimetable whose manual runs on the schedule load the interval their logical date starts."""

    def infer_manual_data_interval(self, *, run_after: Any) -> DataInterval:
        if self._align_to_prev(run_after) == run_after:  # on the schedule: that interval, as a backfill runs it
            return DataInterval(start=run_after, end=self._get_next(run_after))
        return super().infer_manual_data_interval(run_after=run_after)
