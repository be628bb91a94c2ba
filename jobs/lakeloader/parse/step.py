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

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core import format_registry as registry
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.lock import writes_source
from lakeloader.core.storage import Store, open_store, spark_path
from lakeloader.land.step import raw_files, read_manifest
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import (
    MESSAGE_BYTES,
    REJECT_REASON,
    UNPARSED,
    UNPARSED_MESSAGE,
    CommonCase,
    common_case_rows,
)
from lakeloader.parse.framing import LINE_KEYS, framed, read_messages
from lakeloader.spark import splits_even_over_cores

OUTCOME = "outcome"
EXCLUDED, QUARANTINED = "excluded", "quarantined"
DESTINATION, BRONZE = "destination", "bronze"  # a row's place: bronze (data, ddl, heartbeat, control), or its outcome
LINE_COLUMNS = (*LINE_KEYS, *[f.name for f in C.POSITION_FIELDS])  # what a staged row keeps of its message's line


def classify(messages: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Parse messages (lakeloader.parse.framing) with the source's format (`common_case`: with its JVM reader, if
    it has one) and add `outcome`: the message's kind, or 'excluded' / 'quarantined'."""
    return classified(registry.parser(source.format)(messages, source, common_case), source)


def classified(parsed: DataFrame, source: SourceConfig, columns_checked: bool = False) -> DataFrame:
    """A parser's rows with the framing applied (`columns_checked`: rows of a JVM common-case reader, which takes no
    message whose column names framing would quarantine; `framing.framed`) and `outcome` (`classify`); a message a
    common-case reader did not take (UNPARSED, `common_case_rows`) has the outcome UNPARSED."""
    parsed = framed(parsed, columns_checked)
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
    if UNPARSED in parsed.columns:
        outcome = F.when(F.col(UNPARSED).isNotNull(), F.lit(UNPARSED)).otherwise(outcome)
    return parsed.withColumn(OUTCOME, outcome)


def staged_rows(classified: DataFrame) -> DataFrame:
    """Every classified row, with bronze's columns and quarantine's, UNPARSED and its `destination` (bronze,
    quarantined, excluded or unparsed), for the write the parse step makes. A column holds a value only where the
    row's destination keeps it: a bronze row carries no quarantine values, a quarantined row no change, an excluded
    row only its table and position (what the report counts), an unparsed row its position and UNPARSED."""
    outcome, destination = F.col(OUTCOME), F.col(DESTINATION)
    bronze, quarantined = destination == BRONZE, destination == QUARANTINED
    # the columns bronze and quarantine share, and the row's index in its message (the report counts lines by it)
    every_row = set(C.CHANGE_SCHEMA.names) & set(C.QUARANTINE_SCHEMA.names) | {"origin_index"}
    change = [F.col(c) if c in every_row else F.when(bronze, F.col(c)).alias(c) for c in C.CHANGE_SCHEMA.names]
    placed = classified.withColumn(
        DESTINATION, F.when(outcome.isin(QUARANTINED, EXCLUDED, UNPARSED), outcome).otherwise(BRONZE)
    )
    unparsed = F.col(UNPARSED) if UNPARSED in classified.columns else F.lit(None).cast(UNPARSED_MESSAGE)
    return placed.select(
        *change,
        F.when(quarantined, F.col(REJECT_REASON)).alias("reason"),
        F.when(quarantined, F.make_valid_utf8("text")).alias("message"),
        F.when(quarantined, message_bytes(classified)).alias("message_bytes"),
        unparsed.alias(UNPARSED),
        DESTINATION,
    )


def message_bytes(classified: DataFrame) -> Column:
    """A quarantined message's bytes as read: kept by the framing when its text had to be made valid UTF-8, else
    its text's bytes (Spark's text reader keeps a line's bytes as read)."""
    text = F.col("text").cast("binary")
    return F.coalesce(MESSAGE_BYTES, text) if MESSAGE_BYTES in classified.columns else text


class ParseReport(TypedDict):
    """The parse step's report (`audit/<source>/runs/<hour>/parse.json`): counts of messages by outcome, table and
    reason, and of the changes the data messages hold."""

    source: str
    hour: str
    files: int
    lines: int
    outcomes: dict[str, int]
    changes: int
    tables: dict[str, dict[str, int]]
    table_ids: dict[str, list[str]]  # 'db.table' of `tables` -> [db, table] (a db name may hold dots)
    quarantine_reasons: dict[str, int]


# Parquet columns of the staged rows whose values rarely repeat (image values, sequences, times, lines): written
# without a dictionary, which Parquet otherwise fills for each of them until it is too large and then drops
# (a million-change hour: the parse 0.7-1.0 s faster, bronze no larger)
PLAIN_ENCODED = {
    f"parquet.enable.dictionary#{column}": "false"
    for column in (
        "before.key_value.value",
        "after.key_value.value",
        "seq",
        "seq2",
        "event_time",
        "origin_line",
        "origin_offset",
    )
}


@writes_source("parse")
def run_parse(spark: SparkSession, source: SourceConfig, hour: datetime, lake: Store | None = None) -> ParseReport:
    """Parse the hour's manifest into bronze and quarantine; returns (and records) the counts.

    The messages are parsed once, in one write of every row partitioned by destination to a scratch directory:
    the report is counted from its small columns, bronze's partition moved into place, the quarantined rows (few)
    rewritten with quarantine's columns, the excluded dropped. Parsing into a cache on disk that the report,
    bronze and quarantine then read was slower (a million-change hour: 39.9 s against 35.5, docs/performance.md).

    A format with a JVM common-case reader (`registry.reader`) is parsed in two jobs: the reader's, which writes the
    messages it did not take aside as they were read (`common_case_rows`), then, if there are any, the Spark SQL
    parse of those alone, appended (`_parse_unparsed`). So the reader runs once per message, and no Spark SQL
    parse is evaluated for a message it took (docs/performance.md)."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    hour_text = zones.format_hour(hour)
    manifest = read_manifest(lake, source.name, hour)
    messages = read_messages(spark, raw_files(lake, manifest), source, hour_text)
    scratch = zones.work_dir(source.name, "parse", hour_text)
    lake.delete_tree(scratch)
    try:
        common = _common_case(messages, source)
        rows = first_job_rows(messages, source, common)
        with splits_even_over_cores(spark, (entry.size for entry in manifest)):
            _write_staged(rows, lake, scratch, "overwrite")
        if common is not None:
            _parse_unparsed(spark, source, common, lake, scratch, rows.schema)
        staged = spark.read.schema(rows.schema).parquet(spark_path(lake.child(scratch)))
        report = _report(staged, source.name, hour_text, len(manifest))
        _publish_bronze(lake, f"{scratch}/{DESTINATION}={BRONZE}", zones.bronze_changes_dir(source.name, hour))
        quarantine = zones.bronze_quarantine_dir(source.name, hour)
        if report["outcomes"][QUARANTINED]:
            quarantined = staged.where(F.col(DESTINATION) == QUARANTINED).select(*C.QUARANTINE_SCHEMA.names)
            quarantined.write.mode("overwrite").parquet(spark_path(lake.child(quarantine)))
        else:  # no directory rather than a Spark job writing an empty one; a rerun removes an earlier run's
            lake.delete_tree(quarantine)
    finally:
        lake.delete_tree(scratch)
    lake.write_bytes(zones.run_report_key(source.name, hour, "parse"), json.dumps(report, indent=1).encode())
    return report


def _common_case(messages: DataFrame, source: SourceConfig) -> CommonCase | None:
    """The format's JVM common-case reader over the hour's messages, if it has one."""
    reader = registry.reader(source.format)
    return reader(messages, source) if reader is not None else None


def first_job_rows(messages: DataFrame, source: SourceConfig, common: CommonCase | None) -> DataFrame:
    """The staged rows of the parse's first job (`run_parse`): with the format's JVM common-case reader (`common`),
    the messages it did not take left UNPARSED; without, every message parsed."""
    if common is None:
        return staged_rows(classify(messages, source))
    return staged_rows(classified(common_case_rows(messages, common), source, columns_checked=True))


def _write_staged(rows: DataFrame, lake: Store, scratch: str, mode: str) -> None:
    rows.write.mode(mode).options(**PLAIN_ENCODED).partitionBy(DESTINATION).parquet(spark_path(lake.child(scratch)))


def _parse_unparsed(
    spark: SparkSession,
    source: SourceConfig,
    common: CommonCase,
    lake: Store,
    scratch: str,
    schema: T.StructType,
) -> None:
    """The staged messages a common-case reader did not take (the UNPARSED partition, if any), parsed by the format's
    Spark SQL parser (`common.rest`) and appended to the staged rows; the partition then removed."""
    unparsed = f"{scratch}/{DESTINATION}={UNPARSED}"
    if next(iter(lake.list(unparsed + "/")), None) is None:
        return
    reading = spark.read.schema(T.StructType([f for f in schema.fields if f.name != DESTINATION]))
    lines = reading.parquet(spark_path(lake.child(unparsed))).select(*LINE_COLUMNS, f"{UNPARSED}.*")
    _write_staged(staged_rows(classified(common.rest(lines), source)), lake, scratch, "append")
    lake.delete_tree(unparsed)


def _publish_bronze(lake: Store, staged: str, bronze: str) -> None:
    """Replace the hour's bronze with the staged bronze partition's files (a rename on a local lake). Bronze's
    files also hold quarantine's columns and UNPARSED, all NULL (readers name the columns they read). The success marker
    keeps an hour without bronze rows listed as parsed (lake_index.bronze_hours)."""
    lake.delete_tree(bronze)
    if next(iter(lake.list(staged + "/")), None) is not None:
        lake.move_tree(staged, bronze)
    lake.write_bytes(f"{bronze}/_SUCCESS", b"")


def _report(staged: DataFrame, source: str, hour_text: str, files: int) -> ParseReport:
    """Counts of messages by outcome, by table and by quarantine reason (they add up to the lines read), and of the
    changes the data messages hold (a Canal message may hold many rows, each a change), from one small aggregate
    of the staged rows' small columns collected to the driver."""
    first_of_message = F.when(F.col("origin_index") == 0, 1).otherwise(0)  # a Canal message may hold many rows
    outcome = F.when(F.col(DESTINATION) == BRONZE, F.col("kind")).otherwise(F.col(DESTINATION))
    groups = (
        staged.groupBy("db", "table", outcome.alias(OUTCOME), F.col("reason").alias(REJECT_REASON))
        .agg(F.count("*").alias("n"), F.sum(first_of_message).alias("lines"))
        .collect()
    )
    by_outcome: dict[str, int] = {}
    tables: dict[str, dict[str, int]] = {}
    table_ids: dict[str, list[str]] = {}
    reasons: dict[str, int] = {}
    for row in groups:
        outcome, n = row[OUTCOME], row["lines"]
        by_outcome[outcome] = by_outcome.get(outcome, 0) + n
        if row["table"] is not None:
            name = f"{row['db']}.{row['table']}"
            table_ids[name] = [row["db"], row["table"]]
            per_table = tables.setdefault(name, {})
            per_table[outcome] = per_table.get(outcome, 0) + n
        if outcome == QUARANTINED:
            reasons[row[REJECT_REASON]] = reasons.get(row[REJECT_REASON], 0) + n
    return {
        "source": source,
        "hour": hour_text,
        "files": files,
        "lines": sum(row["lines"] for row in groups),
        "outcomes": {k: by_outcome.get(k, 0) for k in (C.DATA, C.DDL, C.HEARTBEAT, C.CONTROL, EXCLUDED, QUARANTINED)},
        "changes": sum(row["n"] for row in groups if row[OUTCOME] == C.DATA),
        "tables": dict(sorted(tables.items())),
        "table_ids": dict(sorted(table_ids.items())),
        "quarantine_reasons": reasons,
    }
