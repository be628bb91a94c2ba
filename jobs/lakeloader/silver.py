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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from lakeloader import multiset
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.engine.deltars import literal, quote

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
class ApplyResult:
    inserted: int
    updated: int
    deleted: int
    stale_upserts: int  # upserts not applied: a tombstone or the row is as new or newer
    older_than_truncation: int
    deletes_without_effect: int  # deletes of a key that is absent, or whose row is as new or newer
    version: int


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

    New columns in the change set are added to the table when `add_columns`, else left out."""
    change_set = _ensure_table(engine, table, change_set, add_columns)
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
        expired = (loaded_at - retention).isoformat()
        engine.delete_where(table.tombstones_uri, f"{quote(E.DELETED_AT)} < '{expired}'", table.commit_info)
    return ApplyResult(
        result.inserted, result.updated, result.deleted, stale, older_than_truncation, without_effect, result.version
    )


def _apply_counts(engine: TableEngine, table: SilverTable, change_set: pa.Table) -> ApplyResult:
    """A multiset's change set (`lakeloader.multiset`): copies 1..n of each content it touches, and a delete
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
    deleted = engine.delete_where(table.uri, _older_than(mark), table.commit_info)
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


def truncation_mark(engine: TableEngine, uri: str) -> tuple[Decimal, Decimal] | None:
    recorded = engine.properties(uri).get(TRUNCATED_PROPERTY)
    if not recorded:
        return None
    seq, seq2 = json.loads(recorded)
    return Decimal(seq), Decimal(seq2)


def _older_than(mark: tuple[Decimal, Decimal]) -> str:
    seq, seq2 = (literal(str(v)) for v in mark)
    return (
        f"{quote(E.SEQ)} < CAST({seq} AS DECIMAL(38,0)) OR ({quote(E.SEQ)} = CAST({seq} AS DECIMAL(38,0)) "
        f"AND {quote(E.SEQ2)} < CAST({seq2} AS DECIMAL(38,0)))"
    )


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
