"""Airflow plugin of lakeloader: registers the custom Deadline Alert reference (data interval end), the
timetable that gives every kind of run one definition of its hour (lakeloader_airflow.timetable) and the
listener that creates the sources' pools when a scheduler starts (lakeloader_airflow.pool_listener), and the
status page (lakeloader_airflow.status_page): a FastAPI app the api-server mounts at /lakeloader, shown in the
UI's navigation as "Lakeloader".

Airflow loads every .py file of the plugins folder; `.airflowignore` keeps it out of the lakeloader_airflow
package, which is imported as a normal package instead.
"""

from airflow.plugins_manager import AirflowPlugin

from lakeloader_airflow import pool_listener, status_page
from lakeloader_airflow.deadlines import DataIntervalEnd
from lakeloader_airflow.timetable import HourIntervals


class LakeloaderPlugin(AirflowPlugin):
    name = "lakeloader"
    deadline_references = [DataIntervalEnd]
    listeners = [pool_listener]
    timetables = [HourIntervals]
    fastapi_apps = [{"app": status_page.app, "url_prefix": status_page.URL_PREFIX, "name": "lakeloader status"}]
    external_views = [
        {
            "name": "Lakeloader",
            "href": f"{status_page.URL_PREFIX.lstrip('/')}{status_page.PATH}",  # relative to the UI's base URL
            "destination": "nav",
            "url_route": "lakeloader-status",
        }
    ]
