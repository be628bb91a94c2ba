"""Land, parse and apply hours of a source in their given order (repeats allowed) with the source's engine, in a
Spark of its own started with the pinned jars (`session_conf`), as a script (tests/system/test_delta_spark_oracle.py):

    python tests/delta_spark_hours.py CONFIG SOURCE WORKDIR HOUR[,HOUR...] [MAX_RESULT_SIZE]

Prints {"apply": the last apply report's tables, "collect": null}. With MAX_RESULT_SIZE (e.g. `1m`) the driver
refuses any Spark action that would bring it more (`spark.driver.maxResultSize`), and afterwards each silver table
the last apply wrote is read back to the driver as Arrow (what the delta-rs path does with a change set):
"collect" holds the line of that read's error naming the limit, showing the limit would have stopped a collect."""

from __future__ import annotations

import json
import sys

from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import load_source
from lakeloader.core.spark_conf import session_conf
from lakeloader.spark import spark_session


def main(config: str, name: str, workdir: str, hours: str, max_result_size: str | None = None) -> None:
    source = load_source(config, name)
    conf = {**session_conf(source), "spark.sql.shuffle.partitions": "2", "spark.local.dir": workdir}
    if max_result_size:
        conf["spark.driver.maxResultSize"] = max_result_size
    spark = spark_session("delta-spark-hours", master="local[2]", conf=conf)
    reports = run_hours(spark, source, [zones.parse_hour(h) for h in hours.split(",")], emit=lambda _: None)
    record: dict = {"apply": reports[-1]["tables"], "collect": None}
    if max_result_size:
        for table in record["apply"].values():
            try:
                spark.read.format("delta").load(table["uri"]).toArrow()
            except Exception as error:
                lines = str(error).splitlines()
                record["collect"] = next((line for line in lines if "maxResultSize" in line), lines[0])[:300]
    spark.stop()
    print(json.dumps(record, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:6])
