"""Apply step: one hour of the canonical change log -> one Delta table per source table (silver).

1. Order and deduplicate the hour's changes into one action per (table, key) (`lakeloader.apply.key_actions`).
2. Per table, type the images' canonical text into the table's columns and add the `_cdc_*` metadata.
3. Write each table's change set with `lakeloader.apply.silver`: truncation, tombstones, then a merge in which
   an action applies only when its ordering key is newer than the row's, so replays and out-of-order
   hours leave tables as they are.
DDL takes effect at its place in the sequence: a table's changes are split into segments at its DDL
messages, and segment i is merged before DDL i is performed (`lakeloader.apply.ddl`). A batch holding a RENAME
TABLE is applied in parts that end at each rename (`_parts_at_renames`), so the changes after it go by the moves
ledger to the renamed table, or to a new table under the old name.

Per-table isolation: a table whose changes cannot be applied, whatever the cause (a broken table, a name or a
column the engine refuses), is held back: its changes stay in bronze, the hour's other tables commit, the apply
report lists it under `held_back` (the verify task alerts) and `state/<source>/held_back.json` remembers its
hours, so the next run of any hour (or a replay) retries it with those hours' changes as one batch.

Collected to the driver: table shapes (column names and types), the batch's DDL messages and, with the embedded
engine (delta-rs), the table segments' deduplicated change sets as Arrow (what delta-rs merges), one segment at a
time or, for segments typed alike, several (`lakeloader.apply.typed_change_sets`). With Delta on Spark the
change set stays a Spark frame (`lakeloader.apply.change_set` says what reaches the driver).
See docs/semantics.md and docs/ddl.md for the rules.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial, reduce
from typing import Any, TypedDict

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeloader.apply import multiset
from lakeloader.apply import schema_changes as D
from lakeloader.apply.change_set import ArrowChangeSet, ChangeSet, staged
from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.columns import (
    ColumnChange,
    Recorded,
    applied_changes,
    change_position,
    declared_as_later,
    image_changes,
    later_operations,
    position_literal,
    read_as_later,
    recorded_statements,
)
from lakeloader.apply.ddl.events import DdlEvent, ddl_events, record_history
from lakeloader.apply.ddl.moves import TableMove, read_moves, resolve, with_moves
from lakeloader.apply.ddl.points import change_point, point_literal
from lakeloader.apply.ddl.truncations import read_truncations
from lakeloader.apply.ddl.types import spark_type_of_arrow
from lakeloader.apply.ddl.widening import widest
from lakeloader.apply.key_actions import (
    DEFAULT_RANK,
    POSITION,
    TableShape,
    batch_tables,
    change_place,
    identified_by_sequence,
    key_actions,
    latest_declared_keys,
    position,
    with_order,
)
from lakeloader.apply.multiset import multiset_actions
from lakeloader.apply.silver import (
    Rejection,
    SchemaChange,
    SilverTable,
    apply_change_set,
    quarantine_rejections,
    recorded_key,
    truncation_mark,
)
from lakeloader.apply.table_identity import TableId, per_table, table_id, table_id_literal
from lakeloader.apply.typed_change_sets import CollectedChangeSets, Typing, segment_rows, typed_change_set
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.format_registry import FORMATS
from lakeloader.core.lake_index import record_names
from lakeloader.core.lock import writes_source
from lakeloader.core.storage import Store, open_store
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.engine.factory import engine_for
from lakeloader.parse import canonical as C
from lakeloader.spark import CACHED, read_parquet_dir

CASE_TWIN_REASON = "column(s) differing only by case from the table's (Delta column names are case-insensitive): "


def read_bronze(spark: SparkSession, lake: Store, source: str, hour: datetime) -> DataFrame:
    """The hour's bronze change log (empty for an hour nothing landed in, whose parse was skipped)."""
    return read_parquet_dir(spark, lake, zones.bronze_changes_dir(source, hour), C.CHANGE_SCHEMA)


def read_change_log(spark: SparkSession, lake: Store, source: str) -> DataFrame:
    """Every bronze hour of the source (empty when there is none yet)."""
    # partition discovery adds dt/hour: keep the canonical columns only
    changes = read_parquet_dir(spark, lake, zones.bronze_changes_root(source), C.CHANGE_SCHEMA)
    return changes.select(*C.CHANGE_SCHEMA.names)


class AppliedChanges(TypedDict):
    """What `apply_changes` did to one batch: per-table counts, held-back tables, DDL outcomes, rejections."""

    tables: dict[str, dict[str, Any]]
    held_back: dict[str, dict[str, Any]]
    ddl: dict[str, int]
    ddl_unsupported: list[dict[str, Any]]
    schema_changes: list[dict[str, Any]]
    rejected_changes: int
    rejection_reasons: dict[str, int]


class ApplyReport(AppliedChanges):
    """The apply step's report (`audit/<source>/runs/<hour>/apply.json`): the source and hour, then the batch's
    `AppliedChanges` (in the JSON the source and hour come first)."""

    source: str
    hour: str


@writes_source("apply")
def run_apply(
    spark: SparkSession,
    source: SourceConfig,
    hour: datetime,
    lake: Store | None = None,
    engine: TableEngine | None = None,
) -> ApplyReport:
    """Merge the hour's bronze changes and DDL into silver; returns (and records) per-table counts."""
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    engine = engine or engine_for(source)
    hour_text = zones.format_hour(hour)
    held = read_held_back(lake, source.name)
    bronze = with_held_back(spark, lake, source.name, hour, read_bronze(spark, lake, source.name, hour), held)
    log = partial(read_change_log, spark, lake, source.name)  # read only when the hour touches a keyless table
    commit_info = {"lakeloader.hour": hour_text}
    due = recluster_due(source, hour)
    with engine.tables_held():
        applied = apply_changes(source, bronze, log, lake, engine, hour_text, commit_info, recluster=due)
    write_held_back(lake, source.name, hour_text, held, applied["held_back"])
    report: ApplyReport = {"source": source.name, "hour": hour_text, **applied}
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
) -> AppliedChanges:
    """Merge a batch of bronze changes and DDL (one hour, or the whole log) into the silver tables under `lake`.

    `log` gives the whole change log (read when the batch touches a keyless table, `lakeloader.apply.multiset`);
    `batch` names the batch in the schema history; `recluster`: afterwards, lay out the keyed tables the batch
    touched (`TableEngine.recluster`): a one-column key's table when its files overlap in key ranges or do not
    yet aim at `silver_file_size_mb`, a composite key's table always (merging only its small files). Returns
    per-table counts and DDL outcomes."""
    loaded_at = datetime.now(UTC).replace(microsecond=0)
    commit_info = {"lakeloader.source": source.name, "lakeloader.step": "apply", **commit_info}
    place = position(DEFAULT_RANK, identified_by_sequence(source.format))
    unkeyed = FORMATS[source.format].unkeyed_ddl
    events = ddl_events(bronze, source.source_dialect, source.unqualified_schemas, unkeyed, place)
    events = [e for e in events if source.includes(e.db, e.table)]
    if source.lower_case_table_names:  # the table a statement names, as the data names it (parse folds those)
        for event in events:
            event.db, event.table = event.db.lower(), event.table.lower()
    data = bronze.where(F.col("kind") == C.DATA)
    parts = [
        _apply_part(source, part_data, part_events, log, lake, engine, batch, commit_info, loaded_at, recluster)
        for part_data, part_events in _parts_at_renames(data, events, read_moves(lake, source.name))
    ]
    return reduce(_together, parts)


def _parts_at_renames(
    data: DataFrame, events: list[DdlEvent], moves: list[TableMove]
) -> list[tuple[DataFrame, list[DdlEvent]]]:
    """The batch's changes and DDL messages in parts that each end at a RENAME TABLE not yet performed (`moves`
    do not send it elsewhere), applied in turn as batches of their own.

    After a rename the moves ledger holds it, so the next part's changes to either name go where they belong by
    their place (as an hour applied after it finds them): to the old name (a table created under it again, even
    in the same second) or to the new one, only if the rename was performed."""
    renames = [
        e.position
        for e in events
        if e.seq is not None
        and isinstance(e.statement, S.Statement)
        and any(isinstance(op, S.RenameTable) for op in e.statement.operations)
        and resolve((e.db, e.table), e.point, moves) == (e.db, e.table)
    ]
    at = change_position()
    parts, earlier = [], F.lit(False)
    for bound in sorted(dict.fromkeys(renames), key=_sort_key):
        upto = F.coalesce(at <= position_literal(bound), F.lit(True))
        reached = [e.seq is not None and _sort_key(e.position) <= _sort_key(bound) for e in events]
        parts.append((data.where(~earlier & upto), [e for e, r in zip(events, reached, strict=True) if r]))
        events = [e for e, r in zip(events, reached, strict=True) if not r]
        earlier = earlier | upto
    parts.append((data.where(~earlier) if parts else data, events))
    return parts


_LATEST = ("db", "table", "rows", "uri", "version")  # of a table's entry in `AppliedChanges`; the rest are counts


def _together(first: AppliedChanges, then: AppliedChanges) -> AppliedChanges:
    """What two parts of a batch did, applied in turn: counts added, a table's latest state (rows, version) taken
    from the later part."""
    tables = dict(first["tables"])
    for name, counts in then["tables"].items():
        before = tables.get(name, {})
        tables[name] = {
            **before,
            **{k: v if k in _LATEST else v + before.get(k, 0) for k, v in counts.items()},
        }
    return {
        "tables": tables,
        "held_back": {**first["held_back"], **then["held_back"]},
        "ddl": _added(first["ddl"], then["ddl"]),
        "ddl_unsupported": first["ddl_unsupported"] + then["ddl_unsupported"],
        "schema_changes": first["schema_changes"] + then["schema_changes"],
        "rejected_changes": first["rejected_changes"] + then["rejected_changes"],
        "rejection_reasons": _added(first["rejection_reasons"], then["rejection_reasons"]),
    }


def _added(first: dict[str, int], then: dict[str, int]) -> dict[str, int]:
    return {k: first.get(k, 0) + then.get(k, 0) for k in sorted({*first, *then})}


def _apply_part(
    source: SourceConfig,
    data: DataFrame,
    events: list[DdlEvent],
    log: Callable[[], DataFrame],
    lake: Store,
    engine: TableEngine,
    batch: str,
    commit_info: dict[str, str],
    loaded_at: datetime,
    recluster: bool,
) -> AppliedChanges:
    """Apply one part of a batch (`_parts_at_renames`): its data changes and DDL messages."""
    moves = read_moves(lake, source.name)  # renames and drops already performed (by earlier or later hours)
    events_by_table = _events_by_table(events, moves)
    data = with_moves(data, moves, change_place(source.format))
    data = with_order(with_segments(data, events_by_table), source.format)
    applied = applied_changes(engine, lake, source.name, source.source_dialect, moves, source.lower_case_table_names)
    configured = {source.table_name(name): list(key) for name, key in source.primary_keys.items()}
    ignore_case = S.columns_ignore_case(source.source_dialect)
    data = declared_as_later(
        data, applied, _keyed_tables(engine, lake, source.name, applied, data, configured), ignore_case
    )
    held_back: dict[str, dict] = {}
    shapes = []
    in_batch = batch_tables(data, configured)
    for shape in in_batch.shapes:
        try:
            shapes.append(_keyed(engine, lake, source.name, shape, configured))
        except Exception as error:
            held_back[_held_name(shape.db, shape.table)] = _held(shape.db, shape.table, error)
    held_ids = {(h["db"], h["table"]) for h in held_back.values()}
    shapes = [s for s in shapes if (s.db, s.table) not in held_ids]
    keyed = [s for s in shapes if s.key]
    # keyless tables: counted once for the batch, or segment by segment around the batch's DDL (`_Multisets`)
    counted_once = _multiset_shapes([s for s in shapes if not s.key and (s.db, s.table) not in events_by_table])
    around_ddl = [_multiset_segment(s) for s in shapes if not s.key and (s.db, s.table) in events_by_table]
    keyless = counted_once + around_ddl
    shapes = keyed + keyless
    counts_per_table = in_batch.counts
    multisets = _Multisets(engine, source, data, log, moves, applied)
    actions = None
    if keyed:
        actions = key_actions(data.where(~_among(keyless)), keyed, source.format)
    if counted_once:
        since, truncated = _truncations(engine, lake, source.name, counted_once, events_by_table)
        segments = {(s.db, s.table): s.segment for s in counted_once}
        renamed = multisets.column_changes()
        batch_rows = read_as_later(data.where(_among(counted_once)), renamed, ignore_case)
        history = read_as_later(multisets.history(), renamed, ignore_case)
        counted = multiset_actions(batch_rows, history, segments, since, truncated)
        actions = counted if actions is None else actions.unionByName(counted)
    cached, collected = None, None
    if actions is not None:
        cached, actions = cached_for_reads_by_table(actions)
    if actions is not None and not engine.runs_in_spark:  # segments typed from `actions`: those without DDL
        alone = sorted((s for s in shapes if (s.db, s.table) not in events_by_table), key=lambda s: (s.db, s.table))
        typing = partial(_typing, engine, lake, source.name)
        sizes = {name: count for name, (count, _) in counts_per_table.items()}
        collected = CollectedChangeSets(actions, loaded_at, alone, sizes, typing)
    writer = _Batch(engine, lake, source, commit_info, loaded_at, actions, collected, recluster, multisets, batch)
    tables: dict[str, dict] = {}
    try:
        for db, table in sorted({(s.db, s.table) for s in shapes} | set(events_by_table) - held_ids):
            table_segments = {s.segment: s for s in shapes if (s.db, s.table) == (db, table)}
            try:
                counts = writer.apply_table(db, table, table_segments, events_by_table.get((db, table), []))
            except D.DdlPolicyError:
                raise  # the source asked to stop at unsupported DDL
            except Exception as error:
                held_back[_held_name(db, table)] = _held(db, table, error)
                continue
            changes, duplicates = counts_per_table.get((db, table), (0, 0))
            tables[f"{db}.{table}"] = {"db": db, "table": table, "changes": changes, "duplicates": duplicates, **counts}
    finally:
        if cached is not None:
            cached.unpersist()
        history_uri = lake.child(zones.schema_history_dir(source.name))
        recorded = [e for e in events if e.status] + writer.widenings
        record_history(engine, history_uri, recorded, batch, loaded_at, commit_info)
    for name, entry in held_back.items():
        entry["changes"] = counts_per_table.get((entry["db"], entry["table"]), (0, 0))[0]
        logging.getLogger(__name__).error(
            "held back table %s: its changes stay in bronze until a later run applies them: %s", name, entry["error"]
        )
    return {
        "tables": tables,
        "held_back": held_back,
        "ddl": {status: sum(e.status == status for e in events) for status in sorted({e.status for e in events})},
        "ddl_unsupported": [_unsupported(e) for e in events if e.unsupported],
        "schema_changes": [_schema_change(e) for e in writer.widenings],
        "rejected_changes": sum(writer.rejection_reasons.values()),
        "rejection_reasons": writer.rejection_reasons,
    }


def cached_for_reads_by_table(actions: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The batch's key actions cached (`CACHED`) for the reads of one table segment each that follow: the cached
    frame (to unpersist) and the frame to read, one task per core rather than one per cached partition.

    Sorted by table within each partition, the cache's batches hold one table each, and a read's filter skips the
    others by their bounds (a million changes over 20 tables: the 20 reads 8.1-9.0 s -> 6.6-7.6 s)."""
    cached = actions.sortWithinPartitions("db", "table", "segment").persist(CACHED)
    return cached, cached.coalesce(cached.sparkSession.sparkContext.defaultParallelism)


def _schema_change(event: DdlEvent) -> dict:
    """A column widened because the data needed it, as the apply report lists it (and alerts quote it)."""
    return {
        "table": event.name,
        "seq": str(event.seq),
        "origin": f"{event.origin_file}:{event.origin_line}",
        "change": event.detail,
    }


def widening_event(location: D.TableLocation, changes: tuple[SchemaChange, ...], version: int) -> DdlEvent:
    """The columns one segment widened for its data, as one schema-history row (op `WIDEN`, no DDL text) at the
    earliest of the changes that first carried a value in them."""
    first = min(changes, key=lambda c: (c.seq, c.seq2))
    operations = tuple(S.ChangeColumnType(c.column, c.new) for c in changes)
    detail = "; ".join(f"widened {c.column} from {c.old} to {c.new}" for c in changes)
    return DdlEvent(
        location.db,
        location.table,
        first.seq,
        first.seq2,
        first.origin_file,
        first.origin_line,
        0,
        "WIDEN",
        None,
        S.Statement(S.TableName(location.db, location.table), operations),
        status=D.APPLIED,
        detail=f"{detail}: the data needs it (no DDL)",
        schema_version=version,
    )


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

    def __init__(
        self, engine, lake, source, commit_info, loaded_at, actions, collected, recluster, multisets, batch
    ) -> None:
        self.engine, self.lake, self.source, self.batch = engine, lake, source, batch
        self.commit_info, self.loaded_at, self.actions = commit_info, loaded_at, actions
        self.collected: CollectedChangeSets | None = collected  # the segments' change sets, for delta-rs
        self.multisets: _Multisets = multisets
        self.retention = timedelta(hours=source.tombstone_retention_hours)
        self.recluster = recluster
        self.widenings: list[DdlEvent] = []  # columns widened for the data, recorded like DDL in the schema history
        self.rejection_reasons: dict[str, int] = {}  # changes no column type could hold, quarantined, by reason
        self.file_size = source.silver_file_size_mb * 2**20
        self.truncations = read_truncations(lake, source.name)  # of tables without a silver table when truncated
        self._recorded: list[Recorded] | None = None  # the schema history's statements, when a DDL message is met

    def apply_table(self, db: str, table: str, shapes: dict[int, TableShape], events: list[DdlEvent]) -> dict:
        location = D.TableLocation(self.source.name, db, table)
        totals: dict[str, int] = {}
        keyless = bool(events) and self._keyless(location, shapes)
        recount = False  # a keyless table's rows are known by content: recounted after an image change
        for segment in range(len(events) + 1):
            written: dict[str, int] = {}
            if keyless and (segment in shapes or recount):
                written = self._write_multiset(location, (db, table), shapes.get(segment), segment, events, recount)
                recount = False
            elif segment in shapes:
                written = self._write_segment(location, shapes[segment], self.actions)
            for key, value in written.items():
                totals[key] = totals.get(key, 0) + value
            if segment < len(events):
                self._perform(location, events[segment], events[segment + 1 :])
                recount = recount or (keyless and _image_changes(events[segment]) != [])
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

    def _keyless(self, location: D.TableLocation, shapes: dict[int, TableShape]) -> bool:
        if shapes:
            return all(s.key == multiset.KEY for s in shapes.values())
        return recorded_key(self.engine, self.lake.child(location.silver_key())) == multiset.KEY

    def _write_segment(self, location: D.TableLocation, shape: TableShape, actions: DataFrame) -> dict[str, int]:
        table = SilverTable(
            self.lake.child(location.silver_key()),
            self.lake.child(location.tombstones_key()),
            shape.key,
            self.commit_info,
            self.file_size,
            self.truncations.get((location.db, location.table)),
        )
        columns = silver_columns(self.engine, table.uri)
        twins = case_twins(shape, columns)
        if twins:
            shape, actions = self._without_case_twins(location, shape, actions, twins)
        as_text = _held_as_text(self.engine, table.uri, columns, shape)
        change_set: ChangeSet
        if self.collected is not None and not twins and self.collected.expects(shape):
            change_set = ArrowChangeSet(self.collected.change_set(shape, as_text))
        else:
            change_set = staged(self.engine, typed_change_set(actions, shape, self.loaded_at, as_text))
        change_set = self._as_of_schema(table.uri, shape, actions, change_set)
        add_columns = self.source.auto_add_columns
        quarantine = partial(self._quarantine, location)
        result = apply_change_set(
            self.engine, table, change_set, self.loaded_at, self.retention, add_columns, quarantine
        )
        version = self.engine.version(table.uri)
        if result.schema_changes:
            self.widenings.append(widening_event(location, result.schema_changes, version))
        counts = {k: v for k, v in asdict(result).items() if k not in ("version", "schema_changes", "rejected")}
        if result.schema_changes or result.rejected:
            counts |= {"widened_columns": len(result.schema_changes), "rejected": result.rejected}
        return {"actions": change_set.count(), **counts}

    def _quarantine(self, location: D.TableLocation, rejections: tuple[Rejection, ...]) -> None:
        """Keep rejected changes of one table in the apply quarantine as they are found, and count their reasons."""
        rows = [{"db": location.db, "table": location.table, **asdict(r)} for r in rejections]
        uri = self.lake.child(zones.apply_quarantine_dir(self.source.name))
        quarantine_rejections(self.engine, uri, self.source.name, rows, self.batch, self.loaded_at, self.commit_info)
        for rejection in rejections:
            self.rejection_reasons[rejection.reason] = self.rejection_reasons.get(rejection.reason, 0) + 1

    def _without_case_twins(
        self, location: D.TableLocation, shape: TableShape, actions: DataFrame, twins: dict[str, str]
    ) -> tuple[TableShape, DataFrame]:
        """The segment without the changes whose image names one of its `case_twins`. Those changes go to the
        apply quarantine, as data messages naming such twins together are quarantined at parse
        (`lakeloader.parse.framing`); no column is renamed."""
        selected = segment_rows(shape)
        naming = F.exists(F.map_keys("image"), lambda k: k.isin(*twins))
        fields = ["image", "seq", "seq2", "origin_file", "origin_line", E.ACTION]
        rejections = []
        for change in actions.where(selected & naming).select(*fields).toLocalIterator():
            named = [f"{twin} (the table's {twins[twin]})" for twin in twins if twin in change["image"]]
            reason = CASE_TWIN_REASON + ", ".join(named)
            row = json.dumps(change["image"], sort_keys=True)
            origin = (change["seq"], change["seq2"], change["origin_file"], change["origin_line"], change[E.ACTION])
            rejections.append(Rejection(reason, row, *origin))
        self._quarantine(location, tuple(rejections))
        columns = [(name, spark_type) for name, spark_type in shape.columns if name not in twins]
        return replace(shape, columns=columns), actions.where(~(selected & naming))

    def _as_of_schema(self, uri: str, shape: TableShape, actions: DataFrame, change_set: ChangeSet) -> ChangeSet:
        """A change older than the table's last DDL is read against the schema as it was then: a column the
        table lacks is added (under `auto_add_columns`) only when a change newer than that DDL declares it,
        and older changes never give it a value; so a re-delivered message from before a DROP or RENAME
        COLUMN cannot bring the old column back."""
        mark = D.schema_mark(self.engine, uri)
        if mark is None:
            return change_set
        existing = set(self.engine.schema(uri).names)
        missing = [name for name, _ in shape.columns if name not in existing and name in change_set.schema.names]
        if not missing:
            return change_set
        newer = E.after(E.ORDERING_COLUMNS, mark)
        declared = _declared_after(actions, shape, mark) if change_set.count_where(newer) else set()
        change_set = change_set.drop([name for name in missing if name not in declared])
        return change_set.values_only_where([name for name in missing if name in declared], newer)

    def _write_multiset(
        self,
        location: D.TableLocation,
        identity: TableId,
        shape: TableShape | None,
        segment: int,
        events: list[DdlEvent],
        recount: bool,
    ) -> dict[str, int]:
        """Write segment `segment` of a keyless table with DDL in the batch: the counts of its contents up to
        the next DDL still to perform, with every image read as the table's schema now has the row; after a
        column rename, drop or filled addition (`recount`), every content is counted again and replaces the
        table's rows."""
        uri = self.lake.child(location.silver_key())
        exists = self.engine.exists(uri)
        mark = D.schema_mark(self.engine, uri) if exists else None
        bound = next((e.position for e in events[segment:] if _bounds_counting(e, mark)), None)
        # the renames and drops the table has had: performed in this batch (also when they changed nothing then),
        # and those still to perform that are older than its last DDL (late, so its schema names what they name)
        had = [e for e in events[:segment] if e.status in (D.APPLIED, D.NO_OP)]
        late = [e for e in events[segment:] if mark is not None and e.seq is not None and e.point <= mark]
        performed = [(e.position, op) for e in had + late for op in _image_changes(e, any_status=True)]
        dropped = next((e.point for e in reversed(events[:segment]) if _drops_table(e)), None)
        actions = self.multisets.segment(identity, segment, bound, performed, uri if exists else None, recount, dropped)
        columns = dict(shape.columns) if shape else {}
        if exists:  # every column the table has, so that recounted rows keep their values
            current = {
                f.name: spark_type_of_arrow(f.type) for f in self.engine.schema(uri) if f.name not in E.METADATA_COLUMNS
            }
            columns = {**current, **{n: t for n, t in columns.items() if n not in current}}
        columns = {n: t for n, t in columns.items() if n not in multiset.KEY}
        shape = TableShape(identity[0], identity[1], [*columns.items(), *multiset.COLUMNS], multiset.KEY, segment)
        if recount and exists:
            self.engine.delete_where(uri, E.NotNull(multiset.ROW_ID), self.commit_info)
        return self._write_segment(location, shape, actions)

    def _later(self, location: D.TableLocation, event: DdlEvent) -> list[S.Operation] | None:
        """The column operations the table at `location` has had since `event`, from the schema history (read
        once per batch; the moves again, as this batch's renames add to them); None if it performed `event`."""
        if self._recorded is None:
            self._recorded = recorded_statements(
                self.engine, self.lake, self.source.name, self.source.source_dialect, self.source.lower_case_table_names
            )
        moves = read_moves(self.lake, self.source.name)
        return later_operations(self._recorded, moves, (location.db, location.table), event.position)

    def _perform(self, location: D.TableLocation, event: DdlEvent, pending: list[DdlEvent]) -> None:
        """Perform one DDL message under the source's policy (`pending`: the table's newer DDL messages of the
        batch); its outcome goes to the schema history."""
        try:
            if isinstance(event.statement, S.Unsupported):
                raise D.UnsupportedOperation(event.statement.reason)
            later = partial(self._later, location, event)
            order, named = event.point, (event.db, event.table)
            to_come = [op for e in pending if isinstance(e.statement, S.Statement) for op in e.statement.operations]
            ignore_case = S.columns_ignore_case(self.source.source_dialect)
            outcome = D.perform(
                self.engine,
                self.lake,
                location,
                event.statement,
                order,
                self.commit_info,
                later,
                named,
                to_come,
                ignore_case,
            )
            event.status, event.detail = outcome.status, outcome.detail
            if outcome.status == D.APPLIED and any(
                isinstance(op, S.TruncateTable) for op in event.statement.operations
            ):
                self.truncations = read_truncations(self.lake, self.source.name)  # for a table created after it
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


def _keyed_tables(
    engine: TableEngine, lake: Store, source: str, names: Collection[TableId], data: DataFrame, configured: dict
) -> set[TableId]:
    """Which of the tables `names` have a key (a keyless table reads its images through the column renames and
    drops itself, `_Multisets`). A table not loaded yet (whose renames and drops changed nothing then) has the
    key the batch gives it, as `batch_tables` takes it: configured, else the latest declared (read only then)."""
    keyed, unknown = set(), []
    for db, table in names:
        key = recorded_key(engine, lake.child(zones.silver_table_dir(source, db, table)))
        if f"{db}.{table}" in configured or (key and key != multiset.KEY):
            keyed.add((db, table))
        elif key is None:
            unknown.append((db, table))
    if unknown:
        latest = latest_declared_keys(data.where(_among_names(unknown))).collect()
        keyed |= {(r["db"], r["table"]) for r in latest if r["key"]}
    return keyed


def silver_columns(engine: TableEngine, uri: str) -> pa.Schema:
    """The silver table's columns (none before it exists)."""
    return engine.schema(uri) if engine.exists(uri) else pa.schema([])


def case_twins(shape: TableShape, columns: pa.Schema) -> dict[str, str]:
    """The segment's columns differing only by case from one of the table's `columns`, or from one the segment
    names before it, each with the name it differs from (Delta takes the two as one column: adding it failed, and
    held the table back at every run). Usually none."""
    spelled = {f.name.lower(): f.name for f in columns}
    twins: dict[str, str] = {}
    for name, _ in shape.columns:
        kept = spelled.setdefault(name.lower(), name)
        if kept != name:
            twins[name] = kept
    return twins


def _typing(engine: TableEngine, lake: Store, source: str, shape: TableShape) -> Typing | None:
    """How a segment typed from the batch's actions will be typed at its turn (None: it has case twins, so
    it is typed from fewer actions)."""
    uri = lake.child(D.TableLocation(source, shape.db, shape.table).silver_key())
    columns = silver_columns(engine, uri)
    if case_twins(shape, columns):
        return None
    return Typing.of(shape, _held_as_text(engine, uri, columns, shape))


def _held_as_text(engine: TableEngine, uri: str, columns: pa.Schema, shape: TableShape) -> set[str]:
    """The columns the table holds as text (`columns`) that the batch declares of another type (binary aside):
    they take the changes' canonical text, the value as the source wrote it, rather than an engine's rendering of
    it (Arrow writes 7.0 as '7', Spark an instant without its 'Z'). Not those holding no value yet: they take the
    batch's type (`lakeloader.apply.silver`)."""
    text = {f.name for f in columns if spark_type_of_arrow(f.type) == "string"}
    other = [name for name, spark_type in shape.columns if name in text and spark_type not in ("string", "binary")]
    return {name for name in other if engine.row_count(uri, E.NotNull(name)) > 0}


def _declared_after(actions: DataFrame, shape: TableShape, mark: E.Point) -> set[str]:
    """The columns that the segment's changes newer than `mark` carry."""
    selected = segment_rows(shape)
    newer = change_point(F.col("seq"), F.col("seq2"), F.col(POSITION)) > point_literal(mark)
    names = actions.where(selected & newer).select(F.explode(F.map_keys("image")).alias("name")).distinct()
    return {r["name"] for r in names.collect()}


def _image_changes(event: DdlEvent, any_status: bool = False) -> list[S.Operation]:
    """The operations of a DDL message that change the table's earlier images (`image_changes`: column renames,
    drops, columns filled in existing rows) when it changed the table (none when it was skipped or changed
    nothing, but an ADD COLUMN's fill), or of any parsed one (`any_status`)."""
    if not isinstance(event.statement, S.Statement):
        return []
    changes = image_changes(event.statement.operations)
    if any_status or event.status == D.APPLIED:
        return changes
    # an ADD COLUMN that found its column (newer changes created it) still gives the older images its default
    return [op for op in changes if isinstance(op, S.AddColumns)] if event.status == D.NO_OP else []


def _drops_table(event: DdlEvent) -> bool:
    """Whether a performed DDL message dropped its table (archived it)."""
    return (
        event.status == D.APPLIED
        and isinstance(event.statement, S.Statement)
        and any(isinstance(op, S.DropTable) for op in event.statement.operations)
    )


def _bounds_counting(event: DdlEvent, mark: E.Point | None) -> bool:
    """Whether a keyless table's contents are counted up to a DDL message still to perform: parsed, newer than
    `mark`, and changing which rows a content is (a rename or drop of a column, a truncate, a drop or rename of
    the table). Not at an added column or a type change: a content's count then takes every change the log has,
    also those newer than the statement that earlier batches applied (an hour run after a later one)."""
    statement = event.statement
    if not isinstance(statement, S.Statement) or event.seq is None or (mark is not None and event.point <= mark):
        return False
    return any(_bounds(op) for op in statement.operations)


def _bounds(op: S.Operation) -> bool:
    if isinstance(op, S.ChangeColumnType):
        return op.renamed_from is not None
    return not isinstance(op, S.NoOp | S.AddColumns)


class _Multisets:
    """The keyless tables' side of a batch: the change log (read once, when first needed), the column renames
    and drops applied so far, and the counted actions of one table segment around the batch's DDL."""

    def __init__(self, engine, source: SourceConfig, data: DataFrame, log, moves, applied) -> None:
        self.engine, self.source, self.data = engine, source, data
        self._log, self.moves = log, moves
        self._history: DataFrame | None = None
        self._changes: dict[TableId, list[ColumnChange]] = applied

    def history(self) -> DataFrame:
        if self._history is None:
            place = change_place(self.source.format)
            log_rows = with_moves(self._log().where(F.col("kind") == C.DATA), self.moves, place)
            self._history = with_order(log_rows, self.source.format)
        return self._history

    def column_changes(self) -> dict[TableId, list[ColumnChange]]:
        return self._changes

    def segment(
        self,
        identity: TableId,
        segment: int,
        bound: tuple | None,
        performed: list[ColumnChange],
        uri: str | None,
        recount: bool,
        dropped: E.Point | None = None,
    ) -> DataFrame:
        """The counted actions of one keyless table segment: the contents its changes touch (all contents when
        `recount`), counted over the log since the table's truncation and before `bound` (the next DDL to
        perform), images read through the renames and drops applied so far and `performed` in this batch.
        `dropped`: the order of a DROP TABLE of it performed earlier in this batch; the changes up to it belong
        to the table it dropped (as `with_moves` reads them once the drop is in the moves ledger)."""
        known = {(_sort_key(position), op): (position, op) for position, op in self.column_changes().get(identity, [])}
        known.update({(_sort_key(position), op): (position, op) for position, op in performed})
        changes = {identity: list(known.values())}
        table = (F.col("db") == identity[0]) & (F.col("table") == identity[1])
        batch_rows = self.data.where(table & (F.col("segment") == segment))
        history = self.history().where(table)
        if dropped is not None:
            history = with_moves(history, [TableMove(identity, None, dropped)], change_place(self.source.format))
        if bound is not None:
            history = history.where(change_position() < position_literal(bound))
        since = truncation_mark(self.engine, uri) if uri else None
        ignore_case = S.columns_ignore_case(self.source.source_dialect)
        return multiset_actions(
            read_as_later(batch_rows, changes, ignore_case),
            read_as_later(history, changes, ignore_case),
            {identity: segment},
            {identity: since} if since else {},
            {identity} if recount else set(),
        )


def _sort_key(position: tuple) -> tuple:
    seq, seq2, origin_file, origin_line, origin_index = position
    return (Decimal(seq), Decimal(seq2), origin_file or "", int(origin_line or 0), int(origin_index or 0))


def recluster_due(source: SourceConfig, hour: datetime) -> bool:
    """Whether the hour starting at `hour` is one of the source's recluster hours."""
    every = source.recluster_every_hours
    return every > 0 and int(hour.timestamp()) // 3600 % every == 0


def _events_by_table(events: list[DdlEvent], moves: list[TableMove]) -> dict[TableId, list[DdlEvent]]:
    """Each DDL message under the silver table it acts on: where moves sent its table."""
    by_table: dict[TableId, list[DdlEvent]] = {}
    for event in events:
        if event.seq is None or not event.table:
            event.status, event.detail = D.SKIPPED, _reason(event)
            event.unsupported = isinstance(event.statement, S.Unsupported)
            continue
        name = resolve((event.db, event.table), event.point, moves)
        if name is None:
            event.status, event.detail = D.SKIPPED, "its table was dropped at or after this point"
            continue
        by_table.setdefault(name, []).append(event)
    return by_table


def _reason(event: DdlEvent) -> str:
    return event.statement.reason if isinstance(event.statement, S.Unsupported) else "database-level statement"


def with_segments(data: DataFrame, events_by_table: dict[TableId, list[DdlEvent]]) -> DataFrame:
    """Adds `segment`: how many of its table's DDL messages precede the change in the sequence."""
    if not events_by_table:
        return data.withColumn("segment", F.lit(0))
    at = change_position()
    boundaries = per_table(
        {name: F.array(*(position_literal(e.position) for e in events)) for name, events in events_by_table.items()}
    )
    before = F.size(F.filter(boundaries, lambda b: b < at))
    return data.withColumn("segment", F.when(boundaries.isNull(), F.lit(0)).otherwise(before))


def silver_uri(lake: Store, source: str, shape: TableShape) -> str:
    return lake.child(zones.silver_table_dir(source, shape.db, shape.table))


def _among(shapes: list[TableShape]) -> Column:
    """Whether a change belongs to one of the shapes' tables."""
    return _among_names([(s.db, s.table) for s in shapes])


def _among_names(names: Collection[TableId]) -> Column:
    return table_id(F.col("db"), F.col("table")).isin(*[table_id_literal(name) for name in names])


def _multiset_shapes(shapes: list[TableShape]) -> list[TableShape]:
    """Keyless tables without DDL in the batch as multisets (`lakeloader.apply.multiset`), keyed by content and
    occurrence: one shape per table, its actions the contents' counts after the whole batch. (A keyless table
    with DDL in the batch is written segment by segment around it: `_multiset_segment`, `_Batch`.)"""
    tables: dict[TableId, list[TableShape]] = {}
    for shape in sorted(shapes, key=lambda s: s.segment):
        tables.setdefault((shape.db, shape.table), []).append(shape)
    merged = []
    for segments in tables.values():
        columns: dict[str, str] = {}  # the widest type, else (no type holds both: DDL changed it) the latest ...
        for name, spark_type in (column for s in segments for column in s.columns):
            earlier = columns.get(name)
            columns[name] = (earlier and spark_type and widest(earlier, spark_type)) or spark_type
        order = list(dict.fromkeys(name for s in segments for name, _ in s.columns))  # ... first position
        columns_in_order = [(name, columns[name]) for name in order if name not in multiset.KEY]
        merged.append(replace(segments[0], columns=columns_in_order + multiset.COLUMNS, key=multiset.KEY))
    return merged


def _multiset_segment(shape: TableShape) -> TableShape:
    """One segment of a keyless table with DDL in the batch, as a multiset shape."""
    columns = [c for c in shape.columns if c[0] not in multiset.KEY]
    return replace(shape, columns=columns + multiset.COLUMNS, key=multiset.KEY)


def _truncations(
    engine: TableEngine,
    lake: Store,
    source: str,
    shapes: list[TableShape],
    events_by_table: dict[TableId, list[DdlEvent]],
) -> tuple[dict[TableId, E.Point], set[TableId]]:
    """Per keyless table: the point of its last TRUNCATE (performed before, or in this batch), and
    which tables this batch truncates."""
    since: dict[TableId, E.Point] = {}
    truncated: set[TableId] = set()
    recorded = read_truncations(lake, source)  # truncations of tables that had no silver table yet
    for shape in shapes:
        name = (shape.db, shape.table)
        uri = silver_uri(lake, source, shape)
        exists = engine.exists(uri)
        marks: list[E.Point | None] = [truncation_mark(engine, uri) if exists else recorded.get(name)]
        for event in events_by_table.get(name, []):
            if isinstance(event.statement, S.Statement) and any(
                isinstance(op, S.TruncateTable) for op in event.statement.operations
            ):
                marks.append(event.point)
                truncated.add(name)
        found = [m for m in marks if m is not None]
        if found:
            since[name] = max(found)
    return since, truncated


def _keyed(engine: TableEngine, lake: Store, source: str, shape: TableShape, configured: dict) -> TableShape:
    """An existing silver table keeps the key it was created with, unless the configuration sets one (a
    multiset's key is no key: empty, as for a table first seen without one)."""
    if shape.name in configured:
        return shape
    recorded = recorded_key(engine, silver_uri(lake, source, shape))
    return replace(shape, key=[] if recorded == multiset.KEY else recorded or shape.key)
