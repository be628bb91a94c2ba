"""Check a benchmark's tables against the state its change stream implies, so a fast wrong answer shows.

Per table: the row count, the sum of `_cdc_seq` (which change each row last took) and the sum of
`quantity` (a data column the images carry), computed from the generated stream with Spark and from
the Delta table with delta-rs.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeloader.core import zones
from tools.bench.generate import changes
from tools.bench.scenario import DB, FIRST_SEQUENCE, SOURCE, Scenario

Totals = tuple[int, Decimal, int]


def expected_totals(spark: SparkSession, scenario: Scenario) -> dict[str, Totals]:
    """(rows, sum of _cdc_seq, sum of quantity) per table once every change is applied."""
    n = scenario.rows_per_table
    last = changes(spark, scenario).groupBy("table", "key").agg(F.max("i").alias("i"), F.max_by("op", "i").alias("op"))
    r = F.col("id")
    existing = spark.range(0, scenario.tables * n).select(
        F.concat(F.lit("t"), F.lpad(F.floor(r / n).cast("string"), 2, "0")).alias("table"),
        F.pmod(r, F.lit(n)).alias("key"),
    )
    rows = existing.join(last, ["table", "key"], "full_outer").where(F.col("op").isNull() | (F.col("op") != "DELETE"))
    changed = F.col("i").isNotNull()
    seq = F.when(changed, F.lit(FIRST_SEQUENCE) + F.col("i")).otherwise(F.col("key") + 1).cast("decimal(38,0)")
    quantity = F.when(changed, F.pmod(F.col("i") + 1, F.lit(50))).otherwise(F.lit(0))
    totals = rows.groupBy("table").agg(F.count("*").alias("n"), F.sum(seq).alias("seq"), F.sum(quantity).alias("q"))
    return {row["table"]: (row["n"], row["seq"], row["q"]) for row in totals.collect()}


def table_totals(uri: str) -> Totals:
    query = QueryBuilder().register("t", DeltaTable(uri))
    row = pa.table(
        query.execute('SELECT count(*) AS n, sum("_cdc_seq") AS seq, sum(quantity) AS q FROM t')
    ).to_pylist()[0]
    return row["n"], row["seq"], row["q"]


def verify_tables(spark: SparkSession, scenario: Scenario, lakes: dict[str, Path]) -> dict[str, dict]:
    """Per named lake: {'ok': bool, 'rows': total rows, 'mismatches': {table: {'expected', 'actual'}}}."""
    expected = expected_totals(spark, scenario)
    results = {}
    for name, lake in lakes.items():
        mismatches, rows = {}, 0
        for table, totals in sorted(expected.items()):
            actual = table_totals(str(lake / zones.silver_table_dir(SOURCE, DB, table)))
            rows += actual[0]
            if actual != totals:
                mismatches[table] = {"expected": [str(v) for v in totals], "actual": [str(v) for v in actual]}
        results[name] = {"ok": not mismatches, "rows": rows, "mismatches": mismatches}
    return results
