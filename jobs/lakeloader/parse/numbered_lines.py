"""Read landed export files as numbered lines: one message per line, gzip decompressed by extension.

Line numbers are exact and computed in the JVM: within one scanned file chunk the row ids of
monotonically_increasing_id are consecutive, so a line's number is its offset inside the chunk plus the
number of lines in the file's earlier chunks (a small aggregate, broadcast back).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeloader.core import zones

LINE_COLUMNS = ("source", "batch_hour", "origin_file", "origin_line", "text")


def read_numbered_lines(spark: SparkSession, paths: list[str], source: str, batch_hour: str) -> DataFrame:
    """Columns: source, batch_hour, origin_file (the export file's name), origin_line (1-based), text."""
    if not paths:
        return spark.createDataFrame(
            [], "source string, batch_hour string, origin_file string, origin_line long, text string"
        )
    scanned = spark.read.text(paths).select(
        F.col("value").alias("text"),
        F.col("_metadata.file_path").alias("path"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("row_id"),
    )
    chunks = scanned.groupBy("path", "block").agg(F.min("row_id").alias("first_id"), F.count("*").alias("lines"))
    earlier = Window.partitionBy("path").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    chunks = chunks.withColumn("lines_before", F.coalesce(F.sum("lines").over(earlier), F.lit(0)))
    numbered = scanned.join(F.broadcast(chunks), ["path", "block"])
    return numbered.select(
        F.lit(source).alias("source"),
        F.lit(batch_hour).alias("batch_hour"),
        export_name(F.col("path")).alias("origin_file"),
        (F.col("row_id") - F.col("first_id") + F.col("lines_before") + 1).alias("origin_line"),
        "text",
    )


def export_name(path: F.Column) -> F.Column:
    """The landed copy's name under its hour directory: the part of its raw path after 'hour=HH/', URI-decoded
    (the whole path for a file read from elsewhere). It is the export file's key unless land had to rename
    the copy (`zones.raw_name`); `messages.read_messages` maps such names back."""
    relative = F.regexp_extract(path, zones.UNDER_HOUR_DIR, 1)
    return F.url_decode(F.regexp_replace(F.when(relative != "", relative).otherwise(path), r"\+", "%2B"))
