"""Operations DAGs of the lakeloader configuration: a daily reconciliation per source, and one manual replay DAG.

Like lakeloader_hourly.py, each source is validated on its own: a source with a mistake gets no operations
DAG (its configuration-error DAG comes from lakeloader_hourly.py), and the replay DAG offers the valid
sources. A mistake of the whole file is this file's import error.
"""

from lakeloader.core.config import config_path, load_sources
from lakeloader_airflow.reconcile_dag import build_daily_reconcile_dag
from lakeloader_airflow.replay_dag import build_replay_dag

_config_file = config_path()
_loaded = load_sources(_config_file)
for _source in _loaded.sources:
    _dag = build_daily_reconcile_dag(_source, _config_file)
    globals()[_dag.dag_id] = _dag
if _loaded.config is not None:
    lakeloader_replay = build_replay_dag(_loaded.config, _config_file)
