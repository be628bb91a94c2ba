"""Land, parse and apply hours of sources in their given order (repeats allowed) with each source's engine, in
one Spark of its own started with the pinned jars (`session_conf`), as a script
(tests/system/test_delta_spark_oracle.py):

    python tests/delta_spark_hours.py CONFIG WORKDIR MAX_RESULT_SIZE SOURCE=HOUR[,HOUR...] [SOURCE=HOUR...]

Prints {"apply": {source: its last apply report's tables}, "collect": {source: line or null}}. The driver refuses
any Spark action that would bring it more than MAX_RESULT_SIZE (e.g. `1m`; `spark.driver.maxResultSize`), and
afterwards each silver table a source's last apply wrote is read back to the driver as Arrow (what the delta-rs
path does with a change set): "collect" holds the line of the first such read's error naming the limit, showing
the limit would have stopped a collect of that source's tables (null: they all fit)."""

from __future__ import annotations

import json
import sys

from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import load_source
from lakeloader.core.spark_conf import session_conf
from lakeloader.spark import spark_session


def main(config: str, workdir: str, max_result_size: str, *loads: str) -> None:
    plans = [(load_source(config, name), hours.split(",")) for name, hours in (load.split("=") for load in loads)]
    conf = {
        **session_conf(plans[0][0]),  # the jars and Delta's extension: the same for every delta_spark source
        "spark.sql.shuffle.partitions": "2",
        "spark.local.dir": workdir,
        "spark.driver.maxResultSize": max_result_size,
    }
    spark = spark_session("delta-spark-hours", master="local[2]", conf=conf)
    record: dict = {"apply": {}, "collect": {}}
    for source, hours in plans:
        reports = run_hours(spark, source, [zones.parse_hour(h) for h in hours], emit=lambda _: None)
        record["apply"][source.name] = reports[-1]["tables"]
        record["collect"][source.name] = None
        for table in record["apply"][source.name].values():
            try:
                spark.read.format("delta").load(table["uri"]).toArrow()
            except Exception as error:
                lines = str(error).splitlines()
                named = next((line for line in lines if "maxResultSize" in line), lines[0])
                record["collect"][source.name] = named[:300]
                break
    spark.stop()
    print(json.dumps(record, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:])
