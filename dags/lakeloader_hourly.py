"""One hourly Airflow DAG per source declared in the lakeloader configuration.

The configuration is $LAKELOADER_CONFIG, else config/sources.yaml. An invalid configuration is not
caught here: it shows up as this file's DAG import error, with the message naming the key to fix.
"""

from lakeloader.config import config_path, load_config
from lakeloader_airflow.dag_factory import build_hourly_dag

_config_file = config_path()
for _source in load_config(_config_file).sources:
    _dag = build_hourly_dag(_source, _config_file)
    globals()[_dag.dag_id] = _dag
