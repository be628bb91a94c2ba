"""Run by tests/system/test_spark_jars.py in its own process (a JVM's jars are fixed when it starts, and the test
session's Spark JVM has none of ours): a local Spark session with `lakeloader.spark.jars_conf()` merges a
Delta table with delta-spark on `s3a://` (a moto S3 server) and round-trips Avro there. (One Delta table
only, on s3a, to keep it cheap: it needs the Delta jars, hadoop-aws and the AWS SDK bundle all at once.)
Prints one JSON object of what it read back.

    python tests/spark_jars_check.py WORKDIR S3_ENDPOINT BUCKET   (AWS_ACCESS_KEY_ID/SECRET in the environment)
"""

from __future__ import annotations

import json
import sys

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from lakeloader.core.spark_conf import jars_conf, s3a_conf
from lakeloader.spark import spark_session


def rows(frame: DataFrame) -> list[list[object]]:
    return [list(row) for row in frame.orderBy("id").collect()]


def merge_round_trip(spark: SparkSession, path: str) -> dict[str, object]:
    """Write three rows as a Delta table, MERGE an update, an insert and a delete into it, read it back."""
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id INT, name STRING").write.format("delta").save(path)
    changes = spark.createDataFrame(
        [(2, "B", False), (3, None, True), (4, "d", False)], "id INT, name STRING, gone BOOLEAN"
    )
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(changes.alias("s"), "t.id = s.id")
        .whenMatchedDelete(condition="s.gone")
        .whenMatchedUpdate(set={"name": "s.name"})
        .whenNotMatchedInsert(values={"id": "s.id", "name": "s.name"})
        .execute()
    )
    history = DeltaTable.forPath(spark, path).history().orderBy("version").select("operation").collect()
    return {
        "rows": rows(spark.read.format("delta").load(path)),
        "operations": [row.operation for row in history],
    }


def main(workdir: str, endpoint: str, bucket: str) -> None:
    conf = {**jars_conf(), **s3a_conf(endpoint), "spark.sql.shuffle.partitions": "1", "spark.local.dir": workdir}
    spark = spark_session("spark-jars-check", master="local[1]", conf=conf)
    result: dict[str, object] = {"delta_s3a": merge_round_trip(spark, f"s3a://{bucket}/silver/t")}
    avro_path = f"s3a://{bucket}/avro"
    spark.createDataFrame([(7, "x")], "id INT, name STRING").write.format("avro").save(avro_path)
    result["avro_s3a"] = rows(spark.read.format("avro").load(avro_path))
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:4])
