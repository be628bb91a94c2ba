"""The benchmark's anchors: what a competent engineer would write by hand, measured next to our steps.

- **textbook parse**: `from_json` of each line with the format's envelope schema (every value as a string,
  as the format's parser asks for it), one pass, written to Parquet partitioned by table. No exact numbers
  (Spark renders a fractional number through a double), no type checks, no quarantine, no positions.
- **textbook order+dedupe**: over the same bronze change log our order+dedupe reads, `row_number()` over
  (db, table, key) ordered by the sequence, the last change of each key kept, materialized.

The gap between these and our parse / order+dedupe is what our guarantees cost (issue 17's targets).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.storage import spark_path
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import canal, dataworks, dataworks_v2, debezium, oms_default, shareplex
from lakeloader.spark import CACHED

STRING_MAP = T.MapType(T.StringType(), T.StringType())


def _topic(_j: Column) -> Column:
    """The table of a format whose messages do not name it: the export's topic directory."""
    return F.regexp_extract(F.input_file_name(), r"/([^/]+)-topic/", 1)


# format -> (the envelope schema its parser reads, where the message names its table)
ENVELOPES: dict[str, tuple[T.DataType, Callable[[Column], Column]]] = {
    "canal_json": (canal.MESSAGE, lambda j: j["table"]),
    "datahub_tuple": (STRING_MAP, lambda j: j["_source_table_"]),
    "dataworks_json": (dataworks.MESSAGE_SCHEMA, lambda j: j["schema"]["source"]["tableName"]),
    "dataworks_v2": (dataworks_v2.MESSAGE_SCHEMA, lambda j: j["schema"]["source"]["table"]),
    "debezium_json": (debezium.ENVELOPE, lambda j: j["payload"]["source"]["table"]),
    "debezium_flatten": (debezium.PAYLOAD, lambda j: j["source"]["table"]),
    "debezium_smt": (STRING_MAP, _topic),
    "oms_default": (oms_default.MESSAGE_SCHEMA, lambda j: j["allMetaData"]["table_name"]),
    "oms_default_extend_column_type": (oms_default.MESSAGE_SCHEMA, lambda j: j["allMetaData"]["table_name"]),
    "shareplex_json": (shareplex.MESSAGE_SCHEMA, lambda j: j["meta"]["table"]),
}


def textbook_parse(spark: SparkSession, fmt: str, paths: list[str], out: Path) -> None:
    """The textbook parse of the landed files into `out` (a format of ENVELOPES: DTS Avro has no JSON
    envelope)."""
    schema, table_of = ENVELOPES[fmt]
    j = F.from_json(F.col("value"), schema)  # type: ignore[arg-type]  # a MapType schema works
    parsed = spark.read.text(paths).select(j.alias("j")).select(table_of(F.col("j")).alias("table"), "j")
    parsed.write.mode("overwrite").partitionBy("table").parquet(spark_path(str(out)))


def textbook_dedupe(bronze: DataFrame, key: tuple[str, ...]) -> int:
    """The textbook order+dedupe of a bronze change log (tables keyed by `key`): the last change per key by
    (seq, seq2), materialized; returns the number of keys."""
    data = bronze.where(F.col("kind") == C.DATA)
    keys = [F.coalesce(F.col("after")[k], F.col("before")[k]).alias(f"_key_{k}") for k in key]
    keyed = data.select("*", *keys)
    last = Window.partitionBy("db", "table", *[f"_key_{k}" for k in key]).orderBy(F.desc("seq"), F.desc("seq2"))
    kept = keyed.withColumn("_n", F.row_number().over(last)).where("_n = 1").persist(CACHED)
    try:
        return kept.count()
    finally:
        kept.unpersist()
