"""Read landed export files as numbered lines: one message per line, gzip decompressed by extension.

Line numbers are exact and computed in the JVM: within one scanned file chunk the row ids of
monotonically_increasing_id are consecutive, so a line's number is its offset inside the chunk plus the
number of lines in the file's earlier chunks (a small aggregate, broadcast back). An hour of a few files that
Spark cannot split (each no larger than a split can be, or gzip) is read one scan per file instead: each file
is then one partition, and a line's number its row's offset in the partition, with no shuffle (a tiny hour's
parse ran 7 Spark jobs, 4 with it: adaptive execution runs each shuffle stage as a job of its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeloader.core import zones
from lakeloader.core.compression import GZIP_SUFFIX

LINE_COLUMNS = ("source", "batch_hour", "origin_file", "origin_line", "text")


PER_FILE_SCANS = 32  # at most this many files are read one scan each (more would make a large plan)
_ROW_BITS = 33  # monotonically_increasing_id: the partition index above the row's offset in its partition


def read_numbered_lines(
    spark: SparkSession, paths: list[str], source: str, batch_hour: str, sizes: Mapping[str, int] | None = None
) -> DataFrame:
    """Columns: source, batch_hour, origin_file (the export file's name), origin_line (1-based), text. `sizes`
    (bytes per path, where known) lets a few small files be read one scan each (module docstring)."""
    if not paths:
        return spark.createDataFrame(
            [], "source string, batch_hour string, origin_file string, origin_line long, text string"
        )
    if len(paths) <= PER_FILE_SCANS and all(_unsplit(spark, path, (sizes or {}).get(path)) for path in paths):
        numbered = reduce(DataFrame.unionAll, [_one_file(spark, path) for path in paths])
    else:
        numbered = _by_chunks(spark, paths)
    return numbered.select(*file_keys(source, batch_hour, F.col("origin_file")), "origin_line", "text")


def _one_file(spark: SparkSession, path: str) -> DataFrame:
    """The lines of a file read in one chunk, numbered by their offset in its one partition (the row id less
    the partition's index, both taken in the scan's own projection: above a union the index is the union's)."""
    offset = F.monotonically_increasing_id() - F.shiftleft(F.spark_partition_id().cast("long"), _ROW_BITS)
    return spark.read.text(path).select(
        export_name(F.col("_metadata.file_path")).alias("origin_file"),
        (offset + 1).alias("origin_line"),
        F.col("value").alias("text"),
    )


def _by_chunks(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The lines numbered by their offset in their chunk plus the lines of the file's earlier chunks; each
    chunk's file name is taken once, with its count, rather than for each line."""
    scanned = spark.read.text(paths).select(
        F.col("value").alias("text"),
        F.col("_metadata.file_path").alias("path"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("row_id"),
    )
    chunks = scanned.groupBy("path", "block").agg(F.min("row_id").alias("first_id"), F.count("*").alias("lines"))
    earlier = Window.partitionBy("path").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    chunks = chunks.withColumns(
        {
            "lines_before": F.coalesce(F.sum("lines").over(earlier), F.lit(0)),
            "origin_file": export_name(F.col("path")),
        }
    )
    numbered = scanned.join(F.broadcast(chunks), ["path", "block"])
    line = F.col("row_id") - F.col("first_id") + F.col("lines_before") + 1
    return numbered.select("origin_file", line.alias("origin_line"), "text")


def _unsplit(spark: SparkSession, path: str, size: int | None) -> bool:
    """Whether Spark reads the file in one chunk: gzip is never split, and a file no larger than
    spark.sql.files.openCostInBytes (and maxPartitionBytes) never is, whatever the other files of the scan."""
    if path.endswith(GZIP_SUFFIX):
        return True
    conf = spark._jsparkSession.sessionState().conf()
    return size is not None and size <= min(conf.filesOpenCostInBytes(), conf.filesMaxPartitionBytes())


def file_keys(source: str, batch_hour: str, origin_file: F.Column) -> list[F.Column]:
    """The columns that say which landed file a piece of it came from: source, batch_hour, origin_file (the
    file's `export_name`)."""
    return [F.lit(source).alias("source"), F.lit(batch_hour).alias("batch_hour"), origin_file.alias("origin_file")]


def export_name(path: F.Column) -> F.Column:
    """The landed copy's name under its hour directory: the part of its raw path after 'hour=HH/', URI-decoded
    (the whole path for a file read from elsewhere). It is the export file's key unless land had to rename
    the copy (`zones.raw_name`); `messages.read_messages` maps such names back."""
    relative = F.regexp_extract(path, zones.UNDER_HOUR_DIR, 1)
    return F.url_decode(F.regexp_replace(F.when(relative != "", relative).otherwise(path), r"\+", "%2B"))
