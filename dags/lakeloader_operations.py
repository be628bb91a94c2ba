"""Operations DAGs of the lakeloader configuration: a daily reconciliation per source, and one manual replay DAG.

Like lakeloader_hourly.py, an invalid configuration shows up as this file's import error.
"""

from lakeloader.config import config_path, load_config
from lakeloader_airflow.reconcile_dag import build_daily_reconcile_dag
from lakeloader_airflow.replay_dag import build_replay_dag

_config_file = config_path()
_config = load_config(_config_file)
for _source in _config.sources:
    _dag = build_daily_reconcile_dag(_source, _config_file)
    globals()[_dag.dag_id] = _dag
lakeloader_replay = build_replay_dag(_config, _config_file)
