"""Airflow plugin of lakeloader: registers the custom Deadline Alert reference (data interval end).

Airflow loads every .py file of the plugins folder; `.airflowignore` keeps it out of the lakeloader_airflow
package, which is imported as a normal package instead.
"""

from airflow.plugins_manager import AirflowPlugin

from lakeloader_airflow.deadlines import DataIntervalEnd


class LakeloaderPlugin(AirflowPlugin):
    name = "lakeloader"
    deadline_references = [DataIntervalEnd]
