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
larger decimal, ...) by rewriting the table, and reported as a schema change; where no type holds both, the
values are cast to the silver type and a change whose value does not survive exactly is rejected with the
reason (quarantined by the caller) instead of failing the merge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from lakeloader.apply import multiset
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
    rejections: tuple[Rejection, ...] = field(default=(), repr=False)


def recorded_key(engine: TableEngine, uri: str) -> list[str] | None:
    """The key a silver table was created with, if it exists."""
    if not engine.exists(uri):
        return None
    recorded = engine.properties(uri).get(KEY_PROPERTY)
    return json.loads(recorded) if recorded else None


def apply_change_set(
    engine: TableEngine,
    table: SilverTable,
    change_set: pa.Table,
    loaded_at: datetime,
    retention: timedelta,
    add_columns: bool = True,
) -> ApplyResult:
    """Drop what is older than the table's truncation mark or a tombstone, merge, then record the
    batch's deletes as tombstones and forget tombstones past their retention.

    New columns in the change set are added to the table when `add_columns`, else left out; columns are
    widened or values rejected as `_fit_types` says (both reported in the result)."""
    change_set = _ensure_table(engine, table, change_set, add_columns)
    change_set, changes, rejections = _fit_types(engine, table, change_set)
    result = _apply(engine, table, change_set, loaded_at, retention)
    return replace(result, schema_changes=changes, rejections=rejections)


def _apply(
    engine: TableEngine, table: SilverTable, change_set: pa.Table, loaded_at: datetime, retention: timedelta
) -> ApplyResult:
    if table.key == multiset.KEY:
        return _apply_counts(engine, table, change_set)
    mark = truncation_mark(engine, table.uri)
    before = change_set.num_rows
    if mark is not None:
        change_set = change_set.filter(_not_older_than(change_set, mark))
    older_than_truncation = before - change_set.num_rows
    before = change_set.num_rows
    change_set = _drop_stale_upserts(engine, table, change_set)
    stale = before - change_set.num_rows
    upserts = pc.sum(pc.equal(change_set[E.ACTION], E.UPSERT).cast(pa.int64())).as_py() or 0
    result = engine.merge(table.uri, change_set, table.key, E.ORDERING_COLUMNS, table.commit_info)
    stale += upserts - result.inserted - result.updated
    without_effect = change_set.num_rows - upserts - result.deleted
    _record_tombstones(engine, table, change_set, loaded_at)
    if engine.exists(table.tombstones_uri):
        expired = E.Compare(E.DELETED_AT, "<", loaded_at - retention)
        engine.delete_where(table.tombstones_uri, expired, table.commit_info)
    return ApplyResult(
        result.inserted, result.updated, result.deleted, stale, older_than_truncation, without_effect, result.version
    )


def _apply_counts(engine: TableEngine, table: SilverTable, change_set: pa.Table) -> ApplyResult:
    """A multiset's change set (`lakeloader.apply.multiset`): copies 1..n of each content it touches, and a delete
    of copy 0 for a content whose count is 0. The copies the table holds above n are deleted as well. The
    merge is unconditional and leaves no tombstones: the counts come from the whole log."""
    change_set = change_set.drop_columns([c for c in (E.PARTIAL, E.PRESENT) if c in change_set.column_names])
    row, occurrence = multiset.ROW_ID, multiset.OCCURRENCE
    upserts = change_set.filter(pc.equal(change_set[E.ACTION], E.UPSERT))
    wanted = upserts.group_by(row).aggregate([(occurrence, "max")])
    held = engine.read(table.uri).select([row, occurrence])
    held = held.filter(pc.is_in(held[row], value_set=pc.unique(change_set[row])))
    held = held.join(wanted, keys=row, join_type="left outer")
    surplus = held.filter(pc.greater(held[occurrence], pc.coalesce(held[f"{occurrence}_max"], 0)))
    # one row of the change set per content, as the template of its surplus copies' deletes
    positions = pa.table({row: change_set[row], "_position": pa.array(range(change_set.num_rows), pa.int64())})
    firsts = positions.group_by(row).aggregate([("_position", "min")])["_position_min"]
    template = change_set.take(firsts).drop_columns([occurrence, E.ACTION])
    deletes = surplus.select([row, occurrence]).join(template, keys=row, join_type="inner")
    deletes = deletes.append_column(E.ACTION, pa.array([E.DELETE] * deletes.num_rows, pa.string()))
    kept = change_set.filter(pc.greater(change_set[occurrence], 0))
    change_set = pa.concat_tables([kept, deletes.select(kept.column_names).cast(kept.schema)])
    result = engine.merge(table.uri, change_set, table.key, (), table.commit_info)
    return ApplyResult(result.inserted, result.updated, result.deleted, 0, 0, 0, result.version)


def truncate(engine: TableEngine, table: SilverTable, mark: tuple[Decimal, Decimal]) -> int:
    """Delete every row older than `mark` and remember it, unless a newer truncation already happened."""
    recorded = truncation_mark(engine, table.uri)
    if recorded is not None and recorded >= mark:
        return 0
    deleted = engine.delete_where(table.uri, E.before((E.SEQ, E.SEQ2), mark), table.commit_info)
    engine.set_properties(table.uri, {TRUNCATED_PROPERTY: json.dumps([str(v) for v in mark])}, table.commit_info)
    return deleted


def _ensure_table(engine: TableEngine, table: SilverTable, change_set: pa.Table, add_columns: bool) -> pa.Table:
    """Create the table on first sight with the change set's columns; add (or leave out) columns it lacks."""
    data_schema = pa.schema([f for f in change_set.schema if f.name not in (*E.STAGING_COLUMNS, E.RANK)])
    if not engine.exists(table.uri):
        properties = {KEY_PROPERTY: json.dumps(table.key)}
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
        change_set = change_set.drop_columns([f.name for f in missing])
    return change_set


def widen_columns(engine: TableEngine, table: SilverTable, types: dict[str, str]) -> None:
    """Retype columns of the table (and of its tombstones, for key columns) to the given wider Spark types."""
    engine.widen_columns(table.uri, [pa.field(name, arrow_type(t)) for name, t in types.items()], table.commit_info)
    keys = {name: t for name, t in types.items() if name in table.key}
    if keys and engine.exists(table.tombstones_uri):
        fields = [pa.field(name, arrow_type(t)) for name, t in keys.items()]
        engine.widen_columns(table.tombstones_uri, fields, table.commit_info)


def _fit_types(
    engine: TableEngine, table: SilverTable, change_set: pa.Table
) -> tuple[pa.Table, tuple[SchemaChange, ...], tuple[Rejection, ...]]:
    """The change set with every column of the table's type: a silver column that cannot hold the batch's type
    is widened to the narrowest type holding both (`widest`); otherwise the batch's values are cast to the
    silver type, and a change whose value (a key value, or any value of an upsert) does not survive the cast
    exactly, or whose canonical text did not fit the batch's own type (`E.UNFIT`), is left out as a
    `Rejection`. A delete keeps its key and loses only values it does not need."""
    existing = engine.schema(table.uri)
    old_types = {f.name: spark_type_of_arrow(f.type) for f in existing}
    wider: dict[str, str] = {}
    for column in change_set.schema:
        if column.name in old_types and column.name not in (*E.STAGING_COLUMNS, E.RANK):
            old, new = old_types[column.name], spark_type_of_arrow(column.type)
            target = widest(old, new) if old != new else old
            if target is not None and target != old:
                wider[column.name] = target
    changes = tuple(_schema_change(change_set, name, old_types[name], new) for name, new in wider.items())
    if wider:
        widen_columns(engine, table, wider)
        existing = engine.schema(table.uri)
    batch_types = {f.name: spark_type_of_arrow(f.type) for f in change_set.schema}
    original = change_set
    text_unfit = _unfit_text(change_set)  # column -> rows whose text did not fit the batch's type
    change_set = change_set.drop_columns([c for c in (E.UNFIT,) if c in change_set.column_names])
    cast_unfit: dict[str, pa.Array] = {}  # column -> rows whose value the silver type cannot hold
    for target in existing:
        if target.name not in change_set.column_names or change_set.schema.field(target.name).type == target.type:
            continue
        cast, fits = _exact_cast(change_set[target.name].combine_chunks(), target.type)
        change_set = change_set.set_column(change_set.schema.get_field_index(target.name), target.name, cast)
        cast_unfit[target.name] = pc.invert(fits)
    is_upsert = pc.fill_null(pc.equal(change_set[E.ACTION], E.UPSERT), False)
    rejected = pa.array([False] * change_set.num_rows, pa.bool_())
    for masks in (text_unfit, cast_unfit):
        for name, mask in masks.items():
            masks[name] = pc.and_(mask, is_upsert) if name not in table.key else mask
            rejected = pc.or_(rejected, masks[name])
    if not pc.any(rejected).as_py():
        return change_set, changes, ()
    silver_types = {f.name: spark_type_of_arrow(f.type) for f in existing}
    reasons = {
        name: f"column {name}: its text is not a {batch_types.get(name)} value as declared" for name in text_unfit
    }
    reasons |= {
        name: f"column {name}: a {batch_types[name]} value that the silver column's {silver_types[name]} cannot "
        "hold, and no type holds both exactly"
        for name in cast_unfit
    }
    flagged = {
        name: mask.filter(rejected).to_pylist() for masks in (text_unfit, cast_unfit) for name, mask in masks.items()
    }
    rejections = _rejections(original.filter(rejected), flagged, reasons)
    return change_set.filter(pc.invert(rejected)), changes, rejections


def _unfit_text(change_set: pa.Table) -> dict[str, pa.Array]:
    """Per column named in `E.UNFIT` (canonical text that the batch's type could not hold): which rows."""
    if E.UNFIT not in change_set.column_names:
        return {}
    lists = change_set[E.UNFIT].combine_chunks()
    names, rows = pc.list_flatten(lists), pc.list_parent_indices(lists)
    positions = pa.array(range(change_set.num_rows), pa.int64())
    return {
        name: pc.is_in(positions, value_set=rows.filter(pc.equal(names, name)).cast(pa.int64()))
        for name in pc.unique(names).to_pylist()
    }


def _exact_cast(values: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """`values` cast to `target`, and which of them survive exactly (NULL does); one that does not is NULL in
    the cast. Arrow's safe cast refuses every loss but a float's rounding and a number's truth value (2 ->
    true), checked by casting back; the value-by-value fallback only runs for an array holding a value that
    does not fit."""
    try:
        cast = pc.cast(values, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        cast = pa.array([_cast_one(v, target) for v in values], target)
    fits = pc.or_(pc.is_null(values), pc.is_valid(cast))
    textual = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    if (pa.types.is_floating(target) or pa.types.is_boolean(target)) and not textual:
        back = pc.cast(cast, values.type, safe=False)
        fits = pc.and_(fits, pc.fill_null(pc.equal(back, values), True))
    return pc.if_else(fits, cast, pa.scalar(None, target)), fits


def _cast_one(value: pa.Scalar, target: pa.DataType) -> object:
    try:
        return value.cast(target, safe=True).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _first_change(change_set: pa.Table, column: str) -> dict:
    """The change set's first row (by ordering key) holding a value in `column` (else its first row)."""
    holding = change_set.filter(pc.is_valid(change_set[column]))
    rows = holding if holding.num_rows else change_set
    return (
        rows.select([E.SEQ, E.SEQ2, E.SOURCE_FILE, E.SOURCE_LINE])
        .sort_by([(E.SEQ, "ascending"), (E.SEQ2, "ascending")])
        .slice(0, 1)
        .to_pylist()[0]
    )


def _schema_change(change_set: pa.Table, column: str, old: str, new: str) -> SchemaChange:
    first = _first_change(change_set, column)
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


def truncation_mark(engine: TableEngine, uri: str) -> tuple[Decimal, Decimal] | None:
    recorded = engine.properties(uri).get(TRUNCATED_PROPERTY)
    if not recorded:
        return None
    seq, seq2 = json.loads(recorded)
    return Decimal(seq), Decimal(seq2)


def _not_older_than(change_set: pa.Table, mark: tuple[Decimal, Decimal]) -> pa.ChunkedArray:
    seq_type = change_set.schema.field(E.SEQ).type
    seq, seq2 = (pa.scalar(v, seq_type) for v in mark)
    return pc.or_(
        pc.greater(change_set[E.SEQ], seq),
        pc.and_(pc.equal(change_set[E.SEQ], seq), pc.greater_equal(change_set[E.SEQ2], seq2)),
    )


def _drop_stale_upserts(engine: TableEngine, table: SilverTable, change_set: pa.Table) -> pa.Table:
    """Upserts not newer than their key's tombstone in the total order (a tombstone as new wins)."""
    if not engine.exists(table.tombstones_uri) or change_set.num_rows == 0:
        return change_set
    held = engine.read(table.tombstones_uri)
    if E.POSITION not in held.column_names:  # written before positions: NULL, the oldest
        held = held.append_column(E.POSITION, pa.nulls(held.num_rows, pa.string()))
    tombstones = held.select([*table.key, *TOMBSTONE_ORDER])
    tombstones = tombstones.rename_columns([*table.key, "_t_seq", "_t_seq2", "_t_position"])
    positions = pa.array(range(change_set.num_rows), pa.int64())
    # joins take only flat columns: join the keys and ordering key with the row's position, filter by position
    slim = change_set.select([*table.key, E.SEQ, E.SEQ2, E.POSITION, E.ACTION]).append_column("_position", positions)
    joined = slim.join(tombstones, keys=table.key, join_type="inner")
    seq, seq2 = joined[E.SEQ], joined[E.SEQ2]
    position, t_position = (pc.fill_null(joined[c], "") for c in (E.POSITION, "_t_position"))
    tomb_newer_or_equal = pc.or_(
        pc.greater(joined["_t_seq"], seq),
        pc.and_(
            pc.equal(joined["_t_seq"], seq),
            pc.or_(
                pc.greater(joined["_t_seq2"], seq2),
                pc.and_(pc.equal(joined["_t_seq2"], seq2), pc.greater_equal(t_position, position)),
            ),
        ),
    )
    stale = joined.filter(pc.and_(pc.equal(joined[E.ACTION], E.UPSERT), tomb_newer_or_equal))["_position"]
    return change_set.filter(pc.invert(pc.is_in(positions, value_set=stale.combine_chunks())))


def _record_tombstones(engine: TableEngine, table: SilverTable, change_set: pa.Table, loaded_at: datetime) -> None:
    deletes = change_set.filter(pc.equal(change_set[E.ACTION], E.DELETE))
    if deletes.num_rows == 0:
        return
    tombstones = deletes.select([*table.key, E.SEQ, E.SEQ2, E.RANK, E.POSITION, E.ACTION]).append_column(
        E.DELETED_AT, pa.array([loaded_at] * deletes.num_rows, pa.timestamp("us", tz="UTC"))
    )
    tombstones = tombstones.set_column(
        tombstones.schema.get_field_index(E.ACTION), E.ACTION, pa.array([E.UPSERT] * deletes.num_rows)
    )
    schema = pa.schema([f for f in tombstones.schema if f.name != E.ACTION])
    if not engine.exists(table.tombstones_uri):
        engine.create(table.tombstones_uri, schema, {KEY_PROPERTY: json.dumps(table.key)}, table.commit_info)
    elif E.POSITION not in engine.schema(table.tombstones_uri).names:
        engine.add_columns(table.tombstones_uri, [schema.field(E.POSITION)], table.commit_info)
    engine.merge(table.tombstones_uri, tombstones, table.key, TOMBSTONE_ORDER, table.commit_info)
