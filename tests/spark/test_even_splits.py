"""`lakeloader.spark.splits_even_over_cores`: a read of more than one chunk per core is cut into a multiple of the
cores' count of equal chunks, where Spark would leave a short remainder chunk (a core idle for its last round)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F

from lakeloader.spark import MAX_PARTITION_BYTES, splits_even_over_cores


def _lines_per_partition(spark, path: Path) -> list[int]:
    counts = spark.read.text(str(path)).groupBy(F.spark_partition_id().alias("p")).count().collect()
    return [r["count"] for r in sorted(counts, key=lambda r: r["p"])]


def test_a_read_of_more_than_a_chunk_per_core_is_cut_into_equal_chunks_a_multiple_of_the_cores(spark, tmp_path):
    assert spark.sparkContext.defaultParallelism == 2
    large, small = tmp_path / "large.txt", tmp_path / "small.txt"
    large.write_text("".join(f"{i:09d}\n" for i in range(300)))  # 3,000 bytes
    small.write_text("".join(f"{i:09d}\n" for i in range(150)))  # 1,500 bytes: no more than a chunk per core
    before = spark.conf.get(MAX_PARTITION_BYTES)
    spark.conf.set(MAX_PARTITION_BYTES, "1024")
    try:
        assert _lines_per_partition(spark, large) == [103, 102, 95]  # Spark's own: 1,024 + 1,024 + 952 bytes
        with splits_even_over_cores(spark, [3000]):
            # chunks of 750 bytes (a line starting at a chunk's end is the chunk's before it)
            assert _lines_per_partition(spark, large) == [76, 75, 75, 74]
        assert spark.conf.get(MAX_PARTITION_BYTES) == "1024"
        with splits_even_over_cores(spark, [1500]):
            assert _lines_per_partition(spark, small) == [103, 47]  # left to Spark
    finally:
        spark.conf.set(MAX_PARTITION_BYTES, before)
