"""Table engines: the one seam through which the loader reads and writes Delta tables.

`base.TableEngine` is the neutral interface (Arrow data, typed predicates, no SQL strings); `deltars` is the
embedded implementation (delta-rs), `deltaspark` the cluster one (Delta Lake on Spark). Product code gets its
engine from `engine_for(source)`, never by constructing one, and never imports `deltalake` itself
(tests/test_engine_seam.py enforces both).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakeloader.core.config import SourceConfig
    from lakeloader.engine.base import TableEngine


def engine_for(source: SourceConfig) -> TableEngine:
    """The table engine for a source's lake. `engine: delta_rs` (the default): delta-rs, with the storage options
    of the source's lake root. `engine: delta_spark`: Delta Lake on the running Spark session (a job's), which
    must have been started with `lakeloader.spark.session_conf(source)`; where no Spark session runs (the
    Airflow side, the CLI), delta-rs, which reads the tables Delta on Spark writes. Engines are imported lazily,
    so that importing `engine.base` never loads delta-rs, and the Airflow side never loads pyspark."""
    if source.engine == "delta_spark" and (session := _active_spark()) is not None:
        from lakeloader.engine.deltaspark import DeltaSparkEngine

        return DeltaSparkEngine(session)
    from lakeloader.core.storage import delta_storage_options
    from lakeloader.engine.deltars import DeltaRsEngine

    return DeltaRsEngine(delta_storage_options(source.lake_root, source.s3_endpoint_url))


def _active_spark():
    """The running Spark session, without importing pyspark where nothing has (None then)."""
    if "pyspark.sql" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()
