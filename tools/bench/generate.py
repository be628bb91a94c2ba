"""Generate a scenario's data with Spark SQL only: the DataWorks JSON export and the pre-existing silver tables.

Every value is a function of the change's index (or the row's key), drawn with `xxhash64`, so a scenario
always produces the same bytes and no Python touches a row. A message's images follow the table's column
functions below; the pre-existing rows are the same functions at version 0, so an update's before-image
matches the row it replaces.

The silver tables are written by Spark as Parquet (key order, `rows_per_file` rows per file) and turned
into Delta tables in place by delta-rs (`convert_to_deltalake`), with the key recorded in the description
as the apply job records it (`lakeloader.apply.silver.KEY_PROPERTY`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from deltalake import convert_to_deltalake
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeloader.apply.silver import KEY_PROPERTY
from lakeloader.core import zones
from lakeloader.engine import base as E
from tools.bench.scenario import COLUMNS, DB, FIRST_HOUR, FIRST_SEQUENCE, KEY, SOURCE, SPARK_TYPES, Scenario

FIRST_MS = int(FIRST_HOUR.timestamp() * 1000)
HOUR_MS = 3_600_000
STATUSES = ("new", "paid", "shipped", "delivered", "cancelled")
INITIAL_LOAD_FILE = "initial-load"


@dataclass(frozen=True)
class ExportFile:
    path: Path
    hour: int
    lines: int


def _draw(index: Column, salt: int, seed: int) -> Column:
    """A uniform number in [0, 1) determined by (index, salt, seed)."""
    return F.pmod(F.xxhash64(index, F.lit(salt), F.lit(seed)), F.lit(1 << 30)) / F.lit(float(1 << 30))


def _values(key: Column, version: Column, created_ms: Column, updated_ms: Column) -> dict[str, Column]:
    """The row of `key` at `version`, in DataWorks wire values (DATE as epoch milliseconds)."""
    status = F.element_at(
        F.array(*[F.lit(s) for s in STATUSES]), (F.pmod(version, F.lit(len(STATUSES))) + 1).cast("int")
    )
    note = F.concat(F.lit("order note for key "), key.cast("string"), F.lit(" revision "), version.cast("string"))
    return {
        "id": key,
        "customer_id": F.pmod(key * 31 + version, F.lit(100_000)),
        "status": status,
        "amount": F.pmod(key * 7 + version * 13, F.lit(1_000_000)) / F.lit(100.0),
        "quantity": F.pmod(version, F.lit(50)),
        "active": F.pmod(version, F.lit(2)) == 0,
        "created_at": created_ms,
        "updated_at": updated_ms,
        "note": note,
    }


def _image(key: Column, version: Column, created_ms: Column, updated_ms: Column) -> Column:
    return F.struct(*[value.alias(name) for name, value in _values(key, version, created_ms, updated_ms).items()])


def _created_ms(key: Column, rows_per_table: int) -> Column:
    """Existing keys were created one second apart, the highest most recently, before the first hour."""
    return F.lit(FIRST_MS) - (F.lit(rows_per_table) - key) * 1000


def _schema_json(table: Column) -> Column:
    columns = json.dumps([{"name": n, "type": t} for n, t in COLUMNS], separators=(",", ":"))
    return F.concat(
        F.lit(
            f'{{"dataColumn":{columns},"primaryKey":["{KEY}"],"source":{{"dbType":"MySQL","dbName":"{DB}","tableName":"'
        ),
        table,
        F.lit('"}}'),
    )


def changes(spark: SparkSession, scenario: Scenario, partitions: int = 2) -> DataFrame:
    """The stream without its JSON: change index `i` (sequenceId FIRST_SEQUENCE + i), hour (0-based), table,
    op (DataWorks), key, event_ms, created_ms."""
    s, n = scenario, scenario.rows_per_table
    hot = max(1, int(n * s.hot_fraction))
    i = F.col("id")
    op_draw, hot_draw, key_draw = _draw(i, 2, s.seed), _draw(i, 3, s.seed), _draw(i, 4, s.seed)
    op = (
        F.when(op_draw < s.insert_share, F.lit("INSERT"))
        .when(op_draw < s.insert_share + s.delete_share, F.lit("DELETE"))
        .otherwise(F.lit("UPDATE_AFTER"))
    )
    if s.keys == "local":
        existing = F.when(hot_draw < s.hot_share, F.lit(n - 1) - F.floor(key_draw * hot)).otherwise(
            F.floor(key_draw * max(1, n - hot))
        )
    else:
        existing = F.floor(key_draw * n)
    table = F.pmod(F.xxhash64(i, F.lit(1), F.lit(s.seed)), F.lit(s.tables))
    event_ms = F.lit(FIRST_MS) + F.floor(i * F.lit(s.hours * HOUR_MS) / F.lit(s.changes)).cast("long")
    return (
        spark.range(0, s.changes, 1, partitions)
        .select(
            i.alias("i"),
            F.floor(i * F.lit(s.hours) / F.lit(s.changes)).cast("int").alias("hour"),
            F.concat(F.lit("t"), F.lpad(table.cast("string"), 2, "0")).alias("table"),
            op.alias("op"),
            F.when(op == "INSERT", F.lit(n) + i).otherwise(existing).cast("long").alias("key"),
            event_ms.alias("event_ms"),
        )
        .withColumn(
            "created_ms", F.when(F.col("op") == "INSERT", F.col("event_ms")).otherwise(_created_ms(F.col("key"), n))
        )
    )


def change_messages(spark: SparkSession, scenario: Scenario, partitions: int) -> DataFrame:
    """Columns: hour (0-based), value (one DataWorks JSON message per change)."""
    c = changes(spark, scenario, partitions)
    key, op, event_ms, created = F.col("key"), F.col("op"), F.col("event_ms"), F.col("created_ms")
    version = F.col("i") + 1
    after = _image(key, version, created, event_ms)
    before = _image(key, F.lit(0).cast("long"), created, created)
    payload = F.struct(
        F.when(op != "INSERT", F.struct(before.alias("dataColumn"))).alias("before"),
        F.when(op != "DELETE", F.struct(after.alias("dataColumn"))).alias("after"),
        (F.lit(FIRST_SEQUENCE) + F.col("i")).cast("string").alias("sequenceId"),
        F.struct(
            event_ms.alias("eventTime"), (event_ms + 500).alias("systemTime"), event_ms.alias("checkpointTime")
        ).alias("timestamp"),
        op.alias("op"),
    )
    message = F.concat(
        F.lit('{"schema":'),
        _schema_json(F.col("table")),
        F.lit(',"payload":'),
        F.to_json(payload),
        F.lit(',"version":"0.0.1"}'),
    )
    return c.select("hour", message.alias("value"))


def write_export(spark: SparkSession, scenario: Scenario, export_dir: Path, lines_per_file: int) -> list[ExportFile]:
    """The scenario's messages as JSON-lines export files, one folder per hour, each file's modification time
    inside its hour (so the land step of that hour picks it up)."""
    staging = export_dir.with_name(export_dir.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(export_dir, ignore_errors=True)
    partitions = max(2, -(-scenario.changes // lines_per_file))
    messages = change_messages(spark, scenario, partitions)
    messages.write.partitionBy("hour").option("maxRecordsPerFile", lines_per_file).text(str(staging))
    files = []
    for hour in range(scenario.hours):
        moment = FIRST_HOUR + timedelta(hours=hour)
        target = export_dir / f"{moment:%Y%m%d%H}"
        target.mkdir(parents=True, exist_ok=True)
        parts = sorted((staging / f"hour={hour}").glob("part-*"))
        for number, part in enumerate(parts):
            path = target / f"{SOURCE}-{moment:%Y%m%d%H}-{number:03d}.json"
            part.rename(path)
            stamp = (moment + timedelta(minutes=30)).timestamp()
            os.utime(path, (stamp, stamp))
            files.append(ExportFile(path, hour, count_lines(path)))
    shutil.rmtree(staging)
    return files


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))


def silver_rows(spark: SparkSession, scenario: Scenario, rows_per_file: int) -> DataFrame:
    """Every table's pre-existing rows in key order, with the `_cdc_*` columns the apply job writes:
    column `table` (partition) then the silver columns. One Spark partition per output file."""
    n = scenario.rows_per_table
    files_per_table = max(1, -(-n // rows_per_file))
    partitions = scenario.tables * files_per_table
    r = F.col("id")
    key = F.pmod(r, F.lit(n))
    created = _created_ms(key, n)
    seq_type = "decimal(38,0)"
    kinds = dict(COLUMNS)
    values = {
        name: F.timestamp_millis(value) if SPARK_TYPES[kinds[name]] == "timestamp" else value
        for name, value in _values(key, F.lit(0).cast("long"), created, created).items()
    }
    values |= {
        E.SEQ: (key + 1).cast(seq_type),
        E.SEQ2: F.lit(0).cast(seq_type),
        E.OP: F.lit("INSERT"),
        E.EVENT_TIME: F.timestamp_millis(created),
        E.SOURCE_FILE: F.lit(INITIAL_LOAD_FILE),
        E.SOURCE_LINE: key + 1,
        E.LOADED_AT: F.timestamp_millis(F.lit(FIRST_MS - HOUR_MS)),
    }
    # every silver column is nullable (as the apply job creates them); Spark would mark some NOT NULL in the
    # Parquet schema, and a CASE WHEN on a condition it cannot fold keeps them nullable
    nullable = [F.when(r >= 0, value).alias(name) for name, value in values.items()]
    table = F.concat(F.lit("t"), F.lpad(F.floor(r / n).cast("string"), 2, "0")).alias("table")
    return spark.range(0, scenario.tables * n, 1, partitions).select(table, *nullable)


def write_silver(
    spark: SparkSession, scenario: Scenario, lake_root: Path, rows_per_file: int, target_file_size: int | None = None
) -> list[str]:
    """Create the scenario's silver tables (replacing any) with their pre-existing rows; returns their URIs.
    `target_file_size` sets the tables' `delta.targetFileSize` (what delta-rs aims for when it writes)."""
    staging = lake_root / "silver-staging"
    shutil.rmtree(staging, ignore_errors=True)
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # Delta timestamps, not INT96
    try:
        silver_rows(spark, scenario, rows_per_file).write.partitionBy("table").option(
            "maxRecordsPerFile", rows_per_file
        ).parquet(str(staging))
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    uris = []
    for table in scenario.table_names():
        uri = lake_root / zones.silver_table_dir(SOURCE, DB, table)
        shutil.rmtree(uri, ignore_errors=True)
        uri.parent.mkdir(parents=True, exist_ok=True)
        (staging / f"table={table}").rename(uri)
        for checksum in uri.glob(".*.crc"):
            checksum.unlink()
        convert_to_deltalake(
            str(uri),
            description=json.dumps({KEY_PROPERTY: json.dumps([KEY])}),  # as DeltaRsEngine.create records it
            # as DeltaRsEngine.create configures a table
            configuration={
                **E.CHECKPOINT_INTERVAL,
                **({E.FILE_SIZE_PROPERTY: str(target_file_size)} if target_file_size else {}),
            },
        )
        uris.append(str(uri))
    shutil.rmtree(staging)
    return uris
