"""Apply step: one hour of the canonical change log -> one Delta table per source table (silver).

1. Order and deduplicate the hour's changes into one action per (table, key) (`lakeloader.ordering`).
2. Per table, type the images' canonical text into the table's columns and add the `_cdc_*` metadata.
3. Write each table's change set with `lakeloader.silver`: truncation, tombstones, then a merge in which
   an action applies only when its ordering key is newer than the row's, so replays and out-of-order
   hours leave tables as they are.
DDL takes effect at its place in the sequence: a table's changes are split into segments at its DDL
messages, and segment i is merged before DDL i is performed (`lakeloader.ddl`). Changes to a table
renamed in this batch are grouped with its old name, so they continue the same silver table.

Per-table isolation: a table whose changes cannot be applied, whatever the cause (a broken table, a name or a
column the engine refuses), is held back: its changes stay in bronze, the hour's other tables commit, the apply
report lists it under `held_back` (the verify task alerts) and `state/<source>/held_back.json` remembers its
hours, so the next run of any hour (or a replay) retries it with those hours' changes as one batch.

Collected to the driver: table shapes (column names and types), the batch's DDL messages and, one table
segment at a time, its deduplicated change set as Arrow (what delta-rs merges).
See docs/semantics.md and docs/ddl.md for the rules.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeloader import canonical as C
from lakeloader import multiset, zones
from lakeloader.config import SourceConfig
from lakeloader.ddl import changes as D
from lakeloader.ddl import statements as S
from lakeloader.ddl.events import DdlEvent, ddl_events, record_history
from lakeloader.ddl.moves import (
    TableId,
    TableMove,
    per_table,
    read_moves,
    resolve,
    table_id,
    table_id_literal,
    with_moves,
)
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.lake_index import record_names
from lakeloader.lock import writes_source
from lakeloader.multiset import multiset_actions
from lakeloader.ordering import TableShape, key_actions, table_shapes
from lakeloader.silver import SilverTable, apply_change_set, recorded_key, truncation_mark
from lakeloader.storage import Store, delta_storage_options, open_store, spark_path


def read_bronze(spark: SparkSession, lake: Store, source: str, hour: datetime) -> DataFrame:
    return spark.read.schema(C.CHANGE_SCHEMA).parquet(spark_path(lake.child(zones.bronze_changes_dir(source, hour))))


def read_change_log(spark: SparkSession, lake: Store, source: str) -> DataFrame:
    """Every bronze hour of the source (empty when there is none yet)."""
    root = zones.bronze_changes_root(source)
    if next(iter(lake.list(root + "/")), None) is None:
        return spark.createDataFrame([], C.CHANGE_SCHEMA)
    # partition discovery adds dt/hour: keep the canonical columns only
    return spark.read.schema(C.CHANGE_SCHEMA).parquet(spark_path(lake.child(root))).select(*C.CHANGE_SCHEMA.names)


def typed_change_set(actions: DataFrame, shape: TableShape, loaded_at: datetime) -> DataFrame:
    """One table segment's actions with its columns typed from canonical text, the _cdc_* metadata, and
    the staging columns the writer needs (action, rank, partial, present columns)."""

    def typed(name: str, spark_type: str) -> Column:
        text = F.element_at("image", F.lit(name))
        value = F.unbase64(text) if spark_type == "binary" else text.try_cast(spark_type)
        return value.alias(name)

    selected = (F.col("db") == shape.db) & (F.col("table") == shape.table) & (F.col("segment") == shape.segment)
    return actions.where(selected).select(
        *[typed(name, spark_type) for name, spark_type in shape.columns],
        F.col("seq").alias(E.SEQ),
        F.col("seq2").alias(E.SEQ2),
        F.col("op").alias(E.OP),
        F.col("event_time").alias(E.EVENT_TIME),
        F.col("origin_file").alias(E.SOURCE_FILE),
        F.col("origin_line").alias(E.SOURCE_LINE),
        F.lit(loaded_at).cast("timestamp").alias(E.LOADED_AT),
        E.ACTION,
        F.col("rank").cast("int").alias(E.RANK),
        F.col("partial").alias(E.PARTIAL),
        F.when(F.col("partial"), F.map_keys("image")).alias(E.PRESENT),
    )


@writes_source("apply")
def run_apply(
    spark: SparkSession,
    source: SourceConfig,
    hour: datetime,
    lake: Store | None = None,
    engine: TableEngine | None = None,
) -> dict:
    """Merge the hour's bronze changes and DDL into silver; returns (and records) per-table counts."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    engine = engine or DeltaRsEngine(delta_storage_options(source.lake_root, source.s3_endpoint_url))
    hour_text = zones.format_hour(hour)
    held = read_held_back(lake, source.name)
    bronze = with_held_back(spark, lake, source.name, hour, read_bronze(spark, lake, source.name, hour), held)
    log = partial(read_change_log, spark, lake, source.name)  # read only when the hour touches a keyless table
    commit_info = {"lakeloader.hour": hour_text}
    due = recluster_due(source, hour)
    applied = apply_changes(source, bronze, log, lake, engine, hour_text, commit_info, recluster=due)
    write_held_back(lake, source.name, hour_text, held, applied["held_back"])
    report = {"source": source.name, "hour": hour_text, **applied}
    lake.write_bytes(zones.run_report_key(source.name, hour, "apply"), json.dumps(report, indent=1).encode())
    return report


def apply_changes(
    source: SourceConfig,
    bronze: DataFrame,
    log: Callable[[], DataFrame],
    lake: Store,
    engine: TableEngine,
    batch: str,
    commit_info: dict[str, str],
    recluster: bool = False,
) -> dict:
    """Merge a batch of bronze changes and DDL (one hour, or the whole log) into the silver tables under `lake`.

    `log` gives the whole change log (read when the batch touches a keyless table, `lakeloader.multiset`);
    `batch` names the batch in the schema history; `recluster`: afterwards, lay out the keyed tables the batch
    touched (`TableEngine.recluster`): a one-column key's table when its files overlap in key ranges or do not
    yet aim at `silver_file_size_mb`, a composite key's table always (merging only its small files). Returns
    per-table counts and DDL outcomes."""
    loaded_at = datetime.now(UTC).replace(microsecond=0)
    commit_info = {"lakeloader.source": source.name, "lakeloader.step": "apply", **commit_info}
    events = [e for e in ddl_events(bronze, source.source_dialect) if source.includes(e.db, e.table)]
    moves = read_moves(lake, source.name)  # renames and drops already performed (by earlier or later hours)
    fresh = [e for e in events if resolve((e.db, e.table), e.position[:2], moves) == (e.db, e.table)]
    identities = renamed_identities(fresh)
    events_by_table = _events_by_table(events, identities, moves)
    data = bronze.where(F.col("kind") == C.DATA)
    data = with_segments(with_identities(with_moves(data, moves), identities), events_by_table)
    configured = {name: list(key) for name, key in source.primary_keys.items()}
    held_back: dict[str, dict] = {}
    shapes = []
    for shape in table_shapes(data, configured):
        try:
            shapes.append(_keyed(engine, lake, source.name, shape, configured))
        except Exception as error:
            held_back[_held_name(shape.db, shape.table)] = _held(shape.db, shape.table, error)
    held_ids = {(h["db"], h["table"]) for h in held_back.values()}
    shapes = [s for s in shapes if (s.db, s.table) not in held_ids]
    keyed, keyless = [s for s in shapes if s.key], _multiset_shapes([s for s in shapes if not s.key])
    shapes = keyed + keyless
    changes_per_table = {(r["db"], r["table"]): r["count"] for r in data.groupBy("db", "table").count().collect()}
    actions = None
    if keyed:
        actions = key_actions(data.where(~_among(keyless)), keyed)
    if keyless:
        history = with_identities(with_moves(log().where(F.col("kind") == C.DATA), moves), identities)
        since, truncated = _truncations(engine, lake, source.name, keyless, events_by_table)
        segments = {(s.db, s.table): s.segment for s in keyless}
        counted = multiset_actions(data.where(_among(keyless)), history, segments, since, truncated)
        actions = counted if actions is None else actions.unionByName(counted)
    if actions is not None:
        actions = actions.persist(StorageLevel.MEMORY_AND_DISK)
    writer = _Batch(engine, lake, source, commit_info, loaded_at, actions, recluster)
    tables: dict[str, dict] = {}
    try:
        for db, table in sorted({(s.db, s.table) for s in shapes} | set(events_by_table) - held_ids):
            segments = {s.segment: s for s in shapes if (s.db, s.table) == (db, table)}
            try:
                counts = writer.apply_table(db, table, segments, events_by_table.get((db, table), []))
            except D.DdlPolicyError:
                raise  # the source asked to stop at unsupported DDL
            except Exception as error:
                held_back[_held_name(db, table)] = _held(db, table, error)
                continue
            tables[f"{db}.{table}"] = {"changes": changes_per_table.get((db, table), 0), **counts}
    finally:
        if actions is not None:
            actions.unpersist()
        history_uri = lake.child(zones.schema_history_dir(source.name))
        record_history(engine, history_uri, [e for e in events if e.status], batch, loaded_at, commit_info)
    for name, entry in held_back.items():
        entry["changes"] = changes_per_table.get((entry["db"], entry["table"]), 0)
        logging.getLogger(__name__).error(
            "held back table %s: its changes stay in bronze until a later run applies them: %s", name, entry["error"]
        )
    return {
        "tables": tables,
        "held_back": held_back,
        "ddl": {status: sum(e.status == status for e in events) for status in sorted({e.status for e in events})},
        "ddl_unsupported": [_unsupported(e) for e in events if e.unsupported],
    }


def _held_name(db: str, table: str) -> str:
    return f"{db}.{table}"


def _held(db: str, table: str, error: BaseException) -> dict:
    """A held-back table as the apply report lists it: its names and the cause (first line, bounded)."""
    cause = f"{type(error).__name__}: {error}".strip().splitlines()[0][:500]
    return {"db": db, "table": table, "error": cause}


HELD_BACK_KEY = "state/{source}/held_back.json"


def read_held_back(lake: Store, source: str) -> list[dict]:
    """Tables held back by earlier runs: [{db, table, hours, error}] (`state/<source>/held_back.json`)."""
    key = HELD_BACK_KEY.format(source=source)
    return json.loads(lake.read_bytes(key)) if lake.stat(key) is not None else []


def with_held_back(
    spark: SparkSession, lake: Store, source: str, hour: datetime, bronze: DataFrame, held: list[dict]
) -> DataFrame:
    """The hour's bronze plus, for each held-back table, its changes of the earlier hours it is held for (one
    batch: the merge rules make the order of hours irrelevant)."""
    current = zones.format_hour(hour)
    for entry in held:
        for hour_text in entry["hours"]:
            if hour_text == current:
                continue
            earlier = read_bronze(spark, lake, source, zones.parse_hour(hour_text))
            its_table = (F.col("db") == entry["db"]) & (F.col("table") == entry["table"])
            bronze = bronze.unionByName(earlier.where(its_table))
    return bronze


def write_held_back(lake: Store, source: str, hour_text: str, before: list[dict], now: dict[str, dict]) -> None:
    """Record the tables this run held back with every hour whose changes they still miss; a table applied by
    this run leaves the list."""
    hours = {(e["db"], e["table"]): e["hours"] for e in before}
    entries = [
        {**{k: e[k] for k in ("db", "table", "error")},
         "hours": sorted({*hours.get((e["db"], e["table"]), []), hour_text})}
        for e in now.values()
    ]  # fmt: skip
    key = HELD_BACK_KEY.format(source=source)
    if entries or lake.stat(key) is not None:
        lake.write_bytes(key, json.dumps(sorted(entries, key=lambda e: (e["db"], e["table"])), indent=1).encode())


def _unsupported(event: DdlEvent) -> dict:
    """A DDL message skipped under the source's policy, as the apply report lists it (and alerts quote it)."""
    return {
        "table": event.name,
        "seq": None if event.seq is None else str(event.seq),
        "origin": f"{event.origin_file}:{event.origin_line}",
        "reason": event.detail,
        "text": (event.text or "")[:500],
    }


class _Batch:
    """Writes one batch, table by table: segments of changes interleaved with the table's DDL."""

    def __init__(self, engine, lake, source, commit_info, loaded_at, actions, recluster) -> None:
        self.engine, self.lake, self.source = engine, lake, source
        self.commit_info, self.loaded_at, self.actions = commit_info, loaded_at, actions
        self.retention = timedelta(hours=source.tombstone_retention_hours)
        self.recluster = recluster
        self.file_size = source.silver_file_size_mb * 2**20

    def apply_table(self, db: str, table: str, shapes: dict[int, TableShape], events: list[DdlEvent]) -> dict:
        location = D.TableLocation(self.source.name, db, table)
        totals: dict[str, int] = {}
        for segment in range(len(events) + 1):
            if segment in shapes:
                for key, value in self._write_segment(location, shapes[segment]).items():
                    totals[key] = totals.get(key, 0) + value
            if segment < len(events):
                self._perform(location, events[segment])
        uri = self.lake.child(location.silver_key())
        exists = self.engine.exists(uri)
        if exists:
            record_names(self.lake, self.source.name, location.db, location.table)
        if exists and self.recluster:
            totals["recluster_files"] = self._recluster(uri)
        return {
            **totals,
            "rows": self.engine.row_count(uri) if exists else 0,
            "uri": uri,
            "version": self.engine.version(uri) if exists else None,
        }

    def _recluster(self, uri: str) -> int:
        """Files written by reclustering the table (0: a multiset, or already laid out). Layout only: a
        failure is logged and leaves the table as the merges wrote it. The overlap check needs one key column:
        a composite key's table is compacted, which does nothing when no small files are left."""
        key = recorded_key(self.engine, uri)
        if not key or key == multiset.KEY or (len(key) == 1 and self.engine.clustered(uri, key[0], self.file_size)):
            return 0
        try:
            return self.engine.recluster(uri, key, self.file_size, self.commit_info)
        except Exception as error:
            log.warning("could not recluster %s by %s: %s", uri, key, error)
            return 0

    def _write_segment(self, location: D.TableLocation, shape: TableShape) -> dict[str, int]:
        table = SilverTable(
            self.lake.child(location.silver_key()),
            self.lake.child(location.tombstones_key()),
            shape.key,
            self.commit_info,
            self.file_size,
        )
        change_set = typed_change_set(self.actions, shape, self.loaded_at).toArrow()
        mark = D.schema_mark(self.engine, table.uri)
        add_columns = self.source.auto_add_columns and (mark is None or _newest(change_set) > mark)
        result = apply_change_set(self.engine, table, change_set, self.loaded_at, self.retention, add_columns)
        return {"actions": change_set.num_rows, **{k: v for k, v in asdict(result).items() if k != "version"}}

    def _perform(self, location: D.TableLocation, event: DdlEvent) -> None:
        """Perform one DDL message under the source's policy; its outcome goes to the schema history."""
        try:
            if isinstance(event.statement, S.Unsupported):
                raise D.UnsupportedOperation(event.statement.reason)
            outcome = D.perform(self.engine, self.lake, location, event.statement, event.position[:2], self.commit_info)
            event.status, event.detail = outcome.status, outcome.detail
        except D.UnsupportedOperation as unsupported:
            event.detail = str(unsupported)
            if self.source.ddl_policy == "fail":
                event.status = D.FAILED
                raise D.DdlPolicyError(
                    f"unsupported DDL for {event.name} at {event.origin_file}:{event.origin_line}: {unsupported} "
                    f"(ddl_policy is 'fail'; set it to 'skip' or 'skip_and_alert' to continue past it)"
                ) from None
            event.status, event.unsupported = D.SKIPPED, True
            log.warning("skipped DDL for %s (%s): %s | %s", event.name, event.origin_file, unsupported, event.text)
        uri = self.lake.child(location.silver_key())
        event.schema_version = self.engine.version(uri) if self.engine.exists(uri) else None


log = logging.getLogger(__name__)


def _newest(change_set: pa.Table) -> tuple[Decimal, Decimal]:
    if change_set.num_rows == 0:
        return (Decimal(-(10**37)), Decimal(0))
    newest = change_set.sort_by([(E.SEQ, "descending"), (E.SEQ2, "descending")]).slice(0, 1).to_pylist()[0]
    return (newest[E.SEQ], newest[E.SEQ2])


def recluster_due(source: SourceConfig, hour: datetime) -> bool:
    """Whether the hour starting at `hour` is one of the source's recluster hours."""
    every = source.recluster_every_hours
    return every > 0 and int(hour.timestamp()) // 3600 % every == 0


def renamed_identities(events: list[DdlEvent]) -> dict[TableId, TableId]:
    """(db, table) names that a RENAME in this batch gave to a table -> its name before the batch."""
    identities: dict[TableId, TableId] = {}
    for event in events:
        if isinstance(event.statement, S.Statement):
            for op in event.statement.operations:
                if isinstance(op, S.RenameTable):
                    new = (op.new.db or event.db, op.new.table)
                    identities[new] = identities.get((event.db, event.table), (event.db, event.table))
    return identities


def _events_by_table(
    events: list[DdlEvent], identities: dict[TableId, TableId], moves: list[TableMove]
) -> dict[TableId, list[DdlEvent]]:
    """Each DDL message under the silver table it acts on: where moves sent its table, under the table's name
    before this batch's renames."""
    by_table: dict[TableId, list[DdlEvent]] = {}
    for event in events:
        if event.seq is None or not event.table:
            event.status, event.detail = D.SKIPPED, _reason(event)
            event.unsupported = isinstance(event.statement, S.Unsupported)
            continue
        name = resolve((event.db, event.table), event.position[:2], moves)
        if name is None:
            event.status, event.detail = D.SKIPPED, "its table was dropped at or after this point"
            continue
        by_table.setdefault(identities.get(name, name), []).append(event)
    return by_table


def _reason(event: DdlEvent) -> str:
    return event.statement.reason if isinstance(event.statement, S.Unsupported) else "database-level statement"


def with_identities(data: DataFrame, identities: dict[TableId, TableId]) -> DataFrame:
    """Changes to a table renamed in this batch, under the name it had before (they continue its table)."""
    if not identities:
        return data
    lookup = per_table({new: table_id_literal(old) for new, old in identities.items()})
    return data.withColumn("db", F.coalesce(lookup["db"], "db")).withColumn(
        "table", F.coalesce(lookup["table"], "table")
    )


def with_segments(data: DataFrame, events_by_table: dict[TableId, list[DdlEvent]]) -> DataFrame:
    """Adds `segment`: how many of its table's DDL messages precede the change in the sequence."""
    if not events_by_table:
        return data.withColumn("segment", F.lit(0))
    position = F.struct(
        F.col("seq").cast(C.SEQ_TYPE),
        F.col("seq2").cast(C.SEQ_TYPE),
        "origin_file",
        F.col("origin_line").cast("long"),
        F.col("origin_index").cast("int"),
    )

    def literal(event: DdlEvent) -> Column:
        return F.struct(
            F.lit(event.seq).cast(C.SEQ_TYPE),
            F.lit(event.seq2).cast(C.SEQ_TYPE),
            F.lit(event.origin_file),
            F.lit(event.origin_line).cast("long"),
            F.lit(event.origin_index).cast("int"),
        )

    boundaries = per_table({name: F.array(*map(literal, events)) for name, events in events_by_table.items()})
    before = F.size(F.filter(boundaries, lambda b: b < position))
    return data.withColumn("segment", F.when(boundaries.isNull(), F.lit(0)).otherwise(before))


def silver_uri(lake: Store, source: str, shape: TableShape) -> str:
    return lake.child(zones.silver_table_dir(source, shape.db, shape.table))


def _among(shapes: list[TableShape]) -> Column:
    """Whether a change belongs to one of the shapes' tables."""
    return table_id(F.col("db"), F.col("table")).isin(*[table_id_literal((s.db, s.table)) for s in shapes])


def _multiset_shapes(shapes: list[TableShape]) -> list[TableShape]:
    """Keyless tables as multisets (`lakeloader.multiset`), keyed by content and occurrence: one shape per
    table with the columns of all its segments, in its first segment. A multiset's actions are its contents'
    counts after the whole batch, written before the batch's DDL so that the table exists when a TRUNCATE
    comes (and records its mark); they survive it, being newer (their rows' ordering key is their content's
    last change since the truncation)."""
    tables: dict[TableId, list[TableShape]] = {}
    for shape in sorted(shapes, key=lambda s: s.segment):
        tables.setdefault((shape.db, shape.table), []).append(shape)
    merged = []
    for segments in tables.values():
        columns = dict(column for s in segments for column in s.columns)  # the latest type ...
        order = list(dict.fromkeys(name for s in segments for name, _ in s.columns))  # ... first position
        columns_in_order = [(name, columns[name]) for name in order if name not in multiset.KEY]
        merged.append(replace(segments[0], columns=columns_in_order + multiset.COLUMNS, key=multiset.KEY))
    return merged


def _truncations(
    engine: TableEngine,
    lake: Store,
    source: str,
    shapes: list[TableShape],
    events_by_table: dict[TableId, list[DdlEvent]],
) -> tuple[dict[TableId, tuple[Decimal, Decimal]], set[TableId]]:
    """Per keyless table: the position of its last TRUNCATE (performed before, or in this batch), and
    which tables this batch truncates."""
    since: dict[TableId, tuple[Decimal, Decimal]] = {}
    truncated: set[TableId] = set()
    for shape in shapes:
        name = (shape.db, shape.table)
        uri = silver_uri(lake, source, shape)
        marks = [truncation_mark(engine, uri)] if engine.exists(uri) else []
        for event in events_by_table.get(name, []):
            if isinstance(event.statement, S.Statement) and any(
                isinstance(op, S.TruncateTable) for op in event.statement.operations
            ):
                marks.append((event.seq, event.seq2))
                truncated.add(name)
        marks = [m for m in marks if m is not None]
        if marks:
            since[name] = max(marks)
    return since, truncated


def _keyed(engine: TableEngine, lake: Store, source: str, shape: TableShape, configured: dict) -> TableShape:
    """An existing silver table keeps the key it was created with, unless the configuration sets one (a
    multiset's key is no key: empty, as for a table first seen without one)."""
    if shape.name in configured:
        return shape
    recorded = recorded_key(engine, silver_uri(lake, source, shape))
    return replace(shape, key=[] if recorded == multiset.KEY else recorded or shape.key)
