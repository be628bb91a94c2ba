"""One hourly Airflow DAG per source declared in the lakeloader configuration.

The configuration is $LAKELOADER_CONFIG, else config/sources.yaml. Each source is validated on its own: a
mistake in one source's declaration gives that source a configuration-error DAG (its message names the key
to fix) and leaves the other sources' DAGs untouched. A mistake of the whole file is this file's import error.
"""

from lakeloader.core.config import config_path, load_sources
from lakeloader_airflow.dag_factory import build_config_error_dag, build_hourly_dag

_config_file = config_path()
_loaded = load_sources(_config_file)
for _source in _loaded.sources:
    _dag = build_hourly_dag(_source, _config_file)
    globals()[_dag.dag_id] = _dag
for _broken in _loaded.broken:
    _dag = build_config_error_dag(_broken, _config_file)
    globals()[_dag.dag_id] = _dag
