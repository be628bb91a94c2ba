"""The engine a Spark job writes a source's tables with (its `engine` setting).

Apart from `lakeloader.engine` itself because it loads pyspark for `delta_spark`, which the Airflow side never
imports (it reads with `lakeloader.engine.reader_for`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from lakeloader.engine import reader_for

if TYPE_CHECKING:
    from lakeloader.core.config import SourceConfig
    from lakeloader.engine.base import TableEngine


def engine_for(source: SourceConfig) -> TableEngine:
    """`engine: delta_rs` (the default): delta-rs in the driver. `engine: delta_spark`: Delta Lake on the job's
    running Spark session, which must have been started with `lakeloader.spark.session_conf(source)`."""
    if source.engine != "delta_spark":
        return reader_for(source)
    session = SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError(f"source {source.name}: engine delta_spark writes from a Spark job, and none is running")
    from lakeloader.engine.deltaspark import DeltaSparkEngine

    return DeltaSparkEngine(session)
