"""Parse step: one hour's landed files -> canonical change log (bronze) + quarantine, and their counts.

Both outputs are overwritten per hour, so rerunning an hour reproduces them (an hour without quarantined
messages has no quarantine directory). Every line lands in exactly one of: bronze (data, ddl, heartbeat,
control), excluded (a table outside the source's include list), or quarantine (with the reason). The report
counts lines read and, per outcome, canonical rows: a message holding several rows (Canal) counts once as a
line and once per row.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TypedDict

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeloader.core import format_registry as registry
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.lock import writes_source
from lakeloader.core.storage import Store, open_store, spark_path
from lakeloader.land.step import raw_files, read_manifest
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import MESSAGE_BYTES, REJECT_REASON
from lakeloader.parse.framing import framed, read_messages

OUTCOME = "outcome"
EXCLUDED, QUARANTINED = "excluded", "quarantined"


def classify(messages: DataFrame, source: SourceConfig) -> DataFrame:
    """Parse messages (lakeloader.parse.framing) with the source's format and add `outcome`: the message's kind,
    or 'excluded' / 'quarantined'."""
    parsed = framed(registry.parser(source.format)(messages, source))
    if source.lower_case_table_names:  # one table, however a message spells its name
        parsed = parsed.withColumns({"db": F.lower("db"), "table": F.lower("table")})
    tables = [source.table_name(name) for name in source.tables or ()]
    in_scope = F.lit(True) if source.tables is None else F.concat_ws(".", "db", "table").isin(*tables)
    table_message = F.col("kind").isin(C.DATA, C.DDL)
    outcome = (
        F.when(F.col(REJECT_REASON).isNotNull(), F.lit(QUARANTINED))
        .when(table_message & ~in_scope, F.lit(EXCLUDED))
        .otherwise(F.col("kind"))
    )
    return parsed.withColumn(OUTCOME, outcome)


def bronze_rows(classified: DataFrame) -> DataFrame:
    return classified.where(F.col(OUTCOME).isin(C.DATA, C.DDL, C.HEARTBEAT, C.CONTROL)).select(*C.CHANGE_SCHEMA.names)


def quarantine_rows(classified: DataFrame) -> DataFrame:
    return classified.where(F.col(OUTCOME) == QUARANTINED).select(
        "source",
        F.col(REJECT_REASON).alias("reason"),
        "db",
        "table",
        F.make_valid_utf8("text").alias("message"),
        "origin_file",
        "origin_line",
        *[f.name for f in C.POSITION_FIELDS],
        "batch_hour",
        message_bytes(classified).alias("message_bytes"),
    )


def message_bytes(classified: DataFrame) -> Column:
    """A quarantined message's bytes as read: kept by the framing when its text had to be made valid UTF-8, else
    its text's bytes (Spark's text reader keeps a line's bytes as read)."""
    text = F.col("text").cast("binary")
    return F.coalesce(MESSAGE_BYTES, text) if MESSAGE_BYTES in classified.columns else text


class ParseReport(TypedDict):
    """The parse step's report (`audit/<source>/runs/<hour>/parse.json`): counts by outcome, table and reason."""

    source: str
    hour: str
    files: int
    lines: int
    outcomes: dict[str, int]
    tables: dict[str, dict[str, int]]
    quarantine_reasons: dict[str, int]


@writes_source("parse")
def run_parse(spark: SparkSession, source: SourceConfig, hour: datetime, lake: Store | None = None) -> ParseReport:
    """Parse the hour's manifest into bronze and quarantine; returns (and records) the counts."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    hour_text = zones.format_hour(hour)
    manifest = read_manifest(lake, source.name, hour)
    messages = read_messages(spark, raw_files(lake, manifest), source, hour_text)
    # On disk: the in-memory columnar cache builds its batches on the heap and ran a 1g driver out of memory
    # at a million messages an hour. Only quarantine needs the message text: caching every message's text too
    # ran a 1g driver out of heap reading the cache back, at a million Canal messages in one file
    # (docs/performance.md).
    classified = classify(messages, source)
    classified = classified.withColumn("text", F.when(F.col(OUTCOME) == QUARANTINED, F.col("text")))
    classified = classified.persist(StorageLevel.DISK_ONLY)
    try:
        report = _report(classified, source.name, hour_text, len(manifest))
        bronze_rows(classified).write.mode("overwrite").parquet(
            spark_path(lake.child(zones.bronze_changes_dir(source.name, hour)))
        )
        quarantine = zones.bronze_quarantine_dir(source.name, hour)
        if report["outcomes"][QUARANTINED]:
            quarantine_rows(classified).write.mode("overwrite").parquet(spark_path(lake.child(quarantine)))
        else:  # no directory rather than a Spark job writing an empty one; a rerun removes an earlier run's
            lake.delete_tree(quarantine)
    finally:
        classified.unpersist()
    lake.write_bytes(zones.run_report_key(source.name, hour, "parse"), json.dumps(report, indent=1).encode())
    return report


def _report(classified: DataFrame, source: str, hour_text: str, files: int) -> ParseReport:
    """Counts by outcome, by table and by quarantine reason, from one small aggregate collected to the driver
    (one pass over the classified rows instead of one per count)."""
    first_of_message = F.when(F.col("origin_index") == 0, 1).otherwise(0)  # a Canal message may hold many rows
    reason = F.when(F.col(OUTCOME) == QUARANTINED, F.col(REJECT_REASON))
    groups = (
        classified.groupBy("db", "table", OUTCOME, reason.alias(REJECT_REASON))
        .agg(F.count("*").alias("n"), F.sum(first_of_message).alias("lines"))
        .collect()
    )
    by_outcome: dict[str, int] = {}
    tables: dict[str, dict[str, int]] = {}
    reasons: dict[str, int] = {}
    for row in groups:
        outcome, n = row[OUTCOME], row["n"]
        by_outcome[outcome] = by_outcome.get(outcome, 0) + n
        if row["table"] is not None:
            per_table = tables.setdefault(f"{row['db']}.{row['table']}", {})
            per_table[outcome] = per_table.get(outcome, 0) + n
        if outcome == QUARANTINED:
            reasons[row[REJECT_REASON]] = reasons.get(row[REJECT_REASON], 0) + n
    return {
        "source": source,
        "hour": hour_text,
        "files": files,
        "lines": sum(row["lines"] for row in groups),
        "outcomes": {k: by_outcome.get(k, 0) for k in (C.DATA, C.DDL, C.HEARTBEAT, C.CONTROL, EXCLUDED, QUARANTINED)},
        "tables": dict(sorted(tables.items())),
        "quarantine_reasons": reasons,
    }
