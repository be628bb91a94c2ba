"""Write one table's deduplicated change set into its silver Delta table, safely against any arrival order.

Around the merge itself (see TableEngine.merge) two pieces of state keep late data from undoing newer
changes:
- tombstones: every delete leaves (key, seq, seq2, position) in a small Delta table under
  state/<source>/<db>/<table>/tombstones, kept for the source's `tombstone_retention_hours`; an upsert
  whose key has a tombstone at least as new is dropped, so an older insert or update arriving later
  cannot bring a deleted row back. The first half of a two-message update leaves a rank-0 tombstone, which
  its own second half (same sequence, rank 1 in its position) outranks, also when the halves land in
  different hours.
Rows, tombstones and changes compare in the one total order (seq, seq2, position) of docs/semantics.md; a
table or tombstone table written before `_cdc_position` existed gets the column, NULL meaning oldest.
- truncation mark: a TRUNCATE at ordering key T deletes every row older than T, and T is recorded in the
  table's properties, so changes older than T are ignored from then on.

Before the merge, the change set is fitted to the table's columns (`_fit_types`): a column whose batch type
the silver type cannot hold is widened (`lakeloader.apply.ddl.widening.widest`: int -> bigint, float -> double, a
larger decimal, ...) by rewriting the table, and reported as a schema change (so is a text column that holds no
value yet, which takes the batch's type: `_typed_by_nothing`); where no type holds both, the
values are cast to the silver type and a change whose value does not survive exactly is rejected with the
reason (handed to the caller's quarantine, a bounded chunk at a time) instead of failing the merge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

import pyarrow as pa

from lakeloader.apply import change_set as C
from lakeloader.apply import multiset
from lakeloader.apply.change_set import ArrowChangeSet, ChangeSet
from lakeloader.apply.ddl.types import arrow_type, spark_type_of_arrow
from lakeloader.apply.ddl.widening import widest
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine

KEY_PROPERTY = "lakeloader.primaryKey"
TRUNCATED_PROPERTY = "lakeloader.truncatedBefore"
TOMBSTONE_ORDER = E.ORDERING_COLUMNS


@dataclass(frozen=True)
class SilverTable:
    uri: str
    tombstones_uri: str
    key: list[str]
    commit_info: dict[str, str]
    file_size: int | None = None  # what the table's files aim at when the apply step creates it
    truncated: E.Point | None = None  # its truncation point when created (apply.ddl.truncations)


@dataclass(frozen=True)
class SchemaChange:
    """A silver column retyped because a batch's values needed a wider type (no DDL said so), and the first
    change (by ordering key) of the batch that carried a value in it."""

    column: str
    old: str
    new: str
    seq: Decimal
    seq2: Decimal
    origin_file: str
    origin_line: int


@dataclass(frozen=True)
class Rejection:
    """A change left out because a value fits neither its silver column nor any safe widening of it."""

    reason: str
    row: str  # the change's values as JSON text
    seq: Decimal
    seq2: Decimal
    origin_file: str
    origin_line: int
    action: str


@dataclass(frozen=True)
class ApplyResult:
    inserted: int
    updated: int
    deleted: int
    stale_upserts: int  # upserts not applied: a tombstone or the row is as new or newer
    older_than_truncation: int
    deletes_without_effect: int  # deletes of a key that is absent, or whose row is as new or newer
    version: int
    schema_changes: tuple[SchemaChange, ...] = ()
    rejected: int = 0  # changes left out, each handed to the quarantine with its reason


def recorded_key(engine: TableEngine, uri: str) -> list[str] | None:
    """The key a silver table was created with, if it exists."""
    if not engine.exists(uri):
        return None
    recorded = engine.properties(uri).get(KEY_PROPERTY)
    return json.loads(recorded) if recorded else None


def apply_change_set(
    engine: TableEngine,
    table: SilverTable,
    change_set: ChangeSet | pa.Table,
    loaded_at: datetime,
    retention: timedelta,
    add_columns: bool = True,
    quarantine: Callable[[tuple[Rejection, ...]], None] | None = None,
) -> ApplyResult:
    """Drop what is older than the table's truncation mark or a tombstone, merge, then record the
    batch's deletes as tombstones and forget tombstones past their retention.

    New columns in the change set are added to the table when `add_columns`, else left out; columns are
    widened or values rejected as `_fit_types` says (both reported in the result): the rejected changes go to
    `quarantine` chunk by chunk, before the merge (without one, a rejection is an error: nothing is dropped
    silently). The change set is executed where the engine merges it (`lakeloader.apply.change_set`: Arrow in
    the driver, or a Spark frame)."""
    if isinstance(change_set, pa.Table):
        change_set = ArrowChangeSet(change_set)
    change_set = _ensure_table(engine, table, change_set, add_columns)
    change_set, changes, rejections = _fit_types(engine, table, change_set)
    rejected = 0
    for chunk in rejections:
        if quarantine is None:
            raise ValueError(f"{table.uri}: {len(chunk)} changes rejected ({chunk[0].reason}) and no quarantine")
        quarantine(chunk)
        rejected += len(chunk)
    result = _apply(engine, table, change_set, loaded_at, retention)
    return replace(result, schema_changes=changes, rejected=rejected)


def _apply(
    engine: TableEngine, table: SilverTable, change_set: ChangeSet, loaded_at: datetime, retention: timedelta
) -> ApplyResult:
    if table.key == multiset.KEY:
        return _apply_counts(engine, table, change_set)
    mark = truncation_mark(engine, table.uri)
    older = {"older": E.before(E.ORDERING_COLUMNS, mark)} if mark is not None else {}
    counted = change_set.counts(older)  # one pass (a Spark job) for both counts
    older_than_truncation = counted.get("older", 0)
    remaining = counted["all"] - older_than_truncation
    if mark is not None:
        change_set = change_set.where(E.Not(older["older"]))
    if remaining and engine.exists(table.tombstones_uri):
        change_set = _drop_stale_upserts(engine, table, change_set)
    change_set = change_set.materialized()
    try:
        kept = change_set.counts({"upserts": _action(E.UPSERT), "deletes": _action(E.DELETE)})
        stale = remaining - kept["all"]
        result = C.merge(engine, table.uri, change_set, table.key, E.ORDERING_COLUMNS, table.commit_info)
        stale += kept["upserts"] - result.inserted - result.updated
        without_effect = kept["all"] - kept["upserts"] - result.deleted
        if kept["deletes"]:
            _record_tombstones(engine, table, change_set, loaded_at)
    finally:
        change_set.release()
    if engine.exists(table.tombstones_uri):
        expired = E.Compare(E.DELETED_AT, "<", loaded_at - retention)
        engine.delete_where(table.tombstones_uri, expired, table.commit_info)
    return ApplyResult(
        result.inserted, result.updated, result.deleted, stale, older_than_truncation, without_effect, result.version
    )


def _action(action: str) -> E.Predicate:
    return E.Compare(E.ACTION, "=", action)


def _apply_counts(engine: TableEngine, table: SilverTable, change_set: ChangeSet) -> ApplyResult:
    """A multiset's change set (`lakeloader.apply.multiset`): copies 1..n of each content it touches, and a delete
    of copy 0 for a content whose count is 0. The copies the table holds above n are deleted as well. The
    merge is unconditional and leaves no tombstones: the counts come from the whole log."""
    change_set = change_set.drop([E.PARTIAL, E.PRESENT])
    change_set = change_set.with_surplus_deletes(engine, table.uri).materialized()
    try:
        result = C.merge(engine, table.uri, change_set, table.key, (), table.commit_info)
    finally:
        change_set.release()
    return ApplyResult(result.inserted, result.updated, result.deleted, 0, 0, 0, result.version)


def truncate(engine: TableEngine, table: SilverTable, mark: E.Point) -> int:
    """Delete every row older than `mark` (the statement's place in the total order: a change of its second sent
    before it in the export is older, one sent after it is not) and remember it, unless a newer truncation
    already happened."""
    recorded = truncation_mark(engine, table.uri)
    if recorded is not None and recorded >= mark:
        return 0
    deleted = engine.delete_where(table.uri, E.before(E.ORDERING_COLUMNS, mark), table.commit_info)
    engine.set_properties(table.uri, {TRUNCATED_PROPERTY: json.dumps([str(v) for v in mark])}, table.commit_info)
    return deleted


def _ensure_table(engine: TableEngine, table: SilverTable, change_set: ChangeSet, add_columns: bool) -> ChangeSet:
    """Create the table on first sight with the change set's columns; add (or leave out) columns it lacks."""
    data_schema = pa.schema([f for f in change_set.schema if f.name not in (*E.STAGING_COLUMNS, E.RANK)])
    if not engine.exists(table.uri):
        properties = {KEY_PROPERTY: json.dumps(table.key)}
        if table.truncated is not None:
            properties[TRUNCATED_PROPERTY] = json.dumps([str(v) for v in table.truncated])
        engine.create(table.uri, data_schema, properties, table.commit_info, table.file_size)
        return change_set
    existing = engine.schema(table.uri)
    missing = [f for f in data_schema if f.name not in existing.names]
    metadata = [f for f in missing if f.name in E.METADATA_COLUMNS]  # a table written before a metadata column
    if metadata:
        engine.add_columns(table.uri, metadata, table.commit_info)
        missing = [f for f in missing if f.name not in E.METADATA_COLUMNS]
    if missing and add_columns:
        engine.add_columns(table.uri, missing, table.commit_info)
    elif missing:
        change_set = change_set.drop([f.name for f in missing])
    return change_set


def widen_columns(engine: TableEngine, table: SilverTable, types: dict[str, str]) -> None:
    """Retype columns of the table (and of its tombstones, for key columns) to the given wider Spark types."""
    engine.widen_columns(table.uri, [pa.field(name, arrow_type(t)) for name, t in types.items()], table.commit_info)
    keys = {name: t for name, t in types.items() if name in table.key}
    if keys and engine.exists(table.tombstones_uri):
        fields = [pa.field(name, arrow_type(t)) for name, t in keys.items()]
        engine.widen_columns(table.tombstones_uri, fields, table.commit_info)


def _fit_types(
    engine: TableEngine, table: SilverTable, change_set: ChangeSet
) -> tuple[ChangeSet, tuple[SchemaChange, ...], Iterator[tuple[Rejection, ...]]]:
    """The change set with every column of the table's type: a silver column that cannot hold the batch's type
    is widened to the narrowest type holding both (`widest`); otherwise the batch's values are cast to the
    silver type, and a change whose value (a key value, or any value of an upsert) does not survive the cast
    exactly, or whose canonical text did not fit the batch's own type (`E.UNFIT`), is left out as a
    `Rejection` (yielded a chunk at a time). A delete keeps its key and loses only values it does not need."""
    existing = engine.schema(table.uri)
    old_types = {f.name: spark_type_of_arrow(f.type) for f in existing}
    schema = change_set.schema
    wider: dict[str, str] = {}
    for column in schema:
        if column.name in old_types and column.name not in (*E.STAGING_COLUMNS, E.RANK):
            old, new = old_types[column.name], spark_type_of_arrow(column.type)
            target = widest(old, new) if old != new else old
            if target in (None, old) and _typed_by_nothing(engine, table, column.name, old, new):
                target = new
            if target is not None and target != old:
                wider[column.name] = target
    changes = tuple(_schema_change(change_set, name, old_types[name], new) for name, new in wider.items())
    if wider:
        widen_columns(engine, table, wider)
        existing = engine.schema(table.uri)
    batch_types = {f.name: spark_type_of_arrow(f.type) for f in schema}
    casts = {t.name: t.type for t in existing if t.name in schema.names and schema.field(t.name).type != t.type}
    fitted = change_set.fitted(casts, table.key)
    silver_types = {f.name: spark_type_of_arrow(f.type) for f in existing}

    def rejections() -> Iterator[tuple[Rejection, ...]]:
        for chunk in fitted.rejected:
            reasons = {
                name: f"column {name}: its text is not a {batch_types.get(name)} value as declared"
                for name in chunk.text
            }
            reasons |= {
                name: f"column {name}: a {batch_types[name]} value that the silver column's {silver_types[name]} "
                "cannot hold, and no type holds both exactly"
                for name in chunk.cast
            }
            yield _rejections(chunk.rows, chunk.text | chunk.cast, reasons)

    return fitted.kept, changes, rejections()


def _typed_by_nothing(engine: TableEngine, table: SilverTable, column: str, old: str, new: str) -> bool:
    """Whether a text column meeting values of another type holds no value at all, so it takes their type: a
    format whose type travels with the values (DTS Avro's DECIMAL and BLOB) declared it text for a batch that
    held only NULLs there, and the first value now types it. A key column stays as it is."""
    if old != "string" or new == "string" or column in table.key:
        return False
    return engine.row_count(table.uri, E.NotNull(column)) == 0


def _schema_change(change_set: ChangeSet, column: str, old: str, new: str) -> SchemaChange:
    first = change_set.first_holding(column)
    return SchemaChange(column, old, new, first[E.SEQ], first[E.SEQ2], first[E.SOURCE_FILE], first[E.SOURCE_LINE])


def _rejections(rows: pa.Table, flagged: dict[str, list[bool]], reasons: dict[str, str]) -> tuple[Rejection, ...]:
    """Each rejected change with the reasons of the columns that reject it and its values (before any cast)."""
    data = [
        c for c in rows.column_names if c not in (*E.STAGING_COLUMNS, E.RANK, E.UNFIT) and not c.startswith("_cdc_")
    ]
    values = rows.select(data).to_pylist()
    meta = rows.select([E.SEQ, E.SEQ2, E.SOURCE_FILE, E.SOURCE_LINE, E.ACTION]).to_pylist()
    out = []
    for i, (row, m) in enumerate(zip(values, meta, strict=True)):
        reason = "; ".join(dict.fromkeys(reasons[name] for name, flags in flagged.items() if flags[i]))
        text = json.dumps(row, default=str, sort_keys=True)
        out.append(Rejection(reason, text, m[E.SEQ], m[E.SEQ2], m[E.SOURCE_FILE], m[E.SOURCE_LINE], m[E.ACTION]))
    return tuple(out)


# a message may hold several rows (Canal), the change set does not carry their index: the row tells them apart
QUARANTINE_KEY = ["db", "table", E.SEQ, E.SEQ2, "origin_file", "origin_line", "action", "row"]
QUARANTINE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("db", pa.string()),
        ("table", pa.string()),
        ("reason", pa.string()),
        ("row", pa.string()),
        (E.SEQ, pa.decimal128(38, 0)),
        (E.SEQ2, pa.decimal128(38, 0)),
        ("origin_file", pa.string()),
        ("origin_line", pa.int64()),
        ("action", pa.string()),
        ("batch_hour", pa.string()),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
    ]
)


def quarantine_rejections(
    engine: TableEngine, uri: str, source: str, rejected: list[dict], batch: str, at: datetime, commit_info: dict
) -> None:
    """Keep the changes `_fit_types` rejected, with their reasons, in the apply quarantine (a Delta table keyed by
    the change's table, ordering key, origin and values, so a rerun adds nothing)."""
    if not rejected:
        return
    rows = {
        tuple(str(r[k]) for k in ("db", "table", "seq", "seq2", "origin_file", "origin_line", "action", "row")): {
            "source": source,
            "db": r["db"],
            "table": r["table"],
            "reason": r["reason"],
            "row": r["row"],
            E.SEQ: r["seq"],
            E.SEQ2: r["seq2"],
            "origin_file": r["origin_file"],
            "origin_line": r["origin_line"],
            "action": r["action"],
            "batch_hour": batch,
            "recorded_at": at,
        }
        for r in rejected
    }
    table = pa.Table.from_pylist(list(rows.values()), QUARANTINE_SCHEMA)
    if not engine.exists(uri):
        engine.create(uri, QUARANTINE_SCHEMA, {}, commit_info)
    changes = table.append_column(E.ACTION, pa.array([E.UPSERT] * table.num_rows))
    engine.merge(uri, changes, QUARANTINE_KEY, (), commit_info)


def truncation_mark(engine: TableEngine, uri: str) -> E.Point | None:
    recorded = engine.properties(uri).get(TRUNCATED_PROPERTY)
    return E.point(json.loads(recorded)) if recorded else None


def _drop_stale_upserts(engine: TableEngine, table: SilverTable, change_set: ChangeSet) -> ChangeSet:
    """Upserts not newer than their key's tombstone in the total order (a tombstone as new wins)."""
    return change_set.without_stale_upserts(engine, table.tombstones_uri, table.key)


def _record_tombstones(engine: TableEngine, table: SilverTable, change_set: ChangeSet, loaded_at: datetime) -> None:
    """Each delete of the change set (which holds some) as its key's tombstone."""
    tombstones = change_set.where(_action(E.DELETE)).as_tombstones(table.key, loaded_at)
    schema = pa.schema([f for f in tombstones.schema if f.name != E.ACTION])
    if not engine.exists(table.tombstones_uri):
        engine.create(table.tombstones_uri, schema, {KEY_PROPERTY: json.dumps(table.key)}, table.commit_info)
    elif E.POSITION not in engine.schema(table.tombstones_uri).names:
        engine.add_columns(table.tombstones_uri, [schema.field(E.POSITION)], table.commit_info)
    C.merge(engine, table.tombstones_uri, tombstones, table.key, TOMBSTONE_ORDER, table.commit_info)
