"""Perform parsed DDL operations on a silver table through the table engine, and say what was done.

Every operation is idempotent against the table's current schema (adding a column that exists, dropping
one that does not, ... is a no-op); a DDL message the schema history records as performed is skipped (a rerun),
and one older than statements it records is performed in its place among them (`lakeloader.apply.ddl.late`), so
reruns and out-of-order hours leave the schema as the source had it. The newest statement applied is recorded
as the table's `lakeloader.schemaSeq`, which tells the changes older than it (`lakeloader.apply.step`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakeloader.apply import multiset
from lakeloader.apply.change_set import arrow_mask
from lakeloader.apply.ddl import defaults
from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.late import NamedAgain, in_the_past
from lakeloader.apply.ddl.moves import TableMove, record_move
from lakeloader.apply.ddl.truncations import record_truncation
from lakeloader.apply.ddl.types import arrow_type, spark_type_of_arrow
from lakeloader.apply.ddl.widening import is_widening
from lakeloader.apply.silver import KEY_PROPERTY, SilverTable, truncate, widen_columns
from lakeloader.core import zones
from lakeloader.core.errors import LakeloaderError
from lakeloader.core.storage import Store
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.parse.framing import CASE_TWINS, RESERVED_COLUMNS, RESERVED_PREFIX

SCHEMA_SEQ_PROPERTY = "lakeloader.schemaSeq"
APPLIED, NO_OP, SKIPPED, FAILED = "applied", "no-op", "skipped", "failed"


class UnsupportedOperation(LakeloaderError):
    """An operation the engine cannot perform faithfully; the caller applies the source's DDL policy."""


class DdlPolicyError(LakeloaderError, RuntimeError):
    """An unsupported DDL statement under the `fail` policy: the run stops here, nothing after it applies."""


@dataclass
class TableLocation:
    """Where a source table's silver table and tombstones live; a RENAME TABLE moves them."""

    source: str
    db: str
    table: str

    def silver_key(self) -> str:
        return zones.silver_table_dir(self.source, self.db, self.table)

    def tombstones_key(self) -> str:
        return zones.tombstones_dir(self.source, self.db, self.table)


@dataclass(frozen=True)
class Outcome:
    status: str
    detail: str


def schema_mark(engine: TableEngine, uri: str) -> E.Point | None:
    """The point of the last statement that changed the table (recorded before marks held a position: the first
    place of its (seq, seq2), E.point)."""
    recorded = engine.properties(uri).get(SCHEMA_SEQ_PROPERTY) if engine.exists(uri) else None
    return E.point(json.loads(recorded)) if recorded else None


def perform(
    engine: TableEngine,
    lake: Store,
    location: TableLocation,
    statement: S.Statement,
    order: E.Point,
    commit_info: dict[str, str],
    later: Callable[[], list[S.Operation] | None] = list,
    named: tuple[str, str] | None = None,
    pending: Sequence[S.Operation] = (),
    ignore_case: bool = False,
) -> Outcome:
    """Apply one parsed statement, at `order` (its place in the total order), to the table at `location` (which a
    rename updates).

    `later` gives the column operations of the statements the table has had since this one, in sequence order
    (None: this one was performed itself, a rerun). When there are any (an hour exported late, or run after a
    later one), the statement is performed in its place among them (`lakeloader.apply.ddl.late`); a RENAME TABLE
    is skipped. A DROP TABLE of a table with newer statements or rows is `_drop_in_the_past` (`named`: the name
    the statement gave the table, which newer moves may have changed). `pending`: the column operations of the
    batch's newer statements on the table, still to perform; a CREATE TABLE of a table that exists declares its
    columns as they leave them (`_typed_as_created`). `ignore_case`: the source's column names are case-insensitive
    (`S.columns_ignore_case`), so a statement's name is of the table's column equal to it ignoring case."""
    uri = lake.child(location.silver_key())
    newer = later()
    if newer is None:
        return Outcome(SKIPPED, "performed before (a rerun)")
    operations = statement.operations
    if pending and engine.exists(uri):
        operations = tuple(
            in_the_past((op,), pending, ignore_case)[0] if isinstance(op, S.CreateTable) else op for op in operations
        )
    drops = any(isinstance(op, S.DropTable) for op in operations)
    if drops and (newer or _holds_newer(engine, uri, order)):
        return _drop_in_the_past(engine, lake, location, named or (location.db, location.table), order, commit_info)
    if newer:
        if any(isinstance(op, S.RenameTable) for op in operations):
            return Outcome(SKIPPED, f"{_OLDER}; a late RENAME TABLE is not performed")
        try:
            operations = in_the_past(operations, newer, ignore_case)
        except NamedAgain as again:
            raise UnsupportedOperation(f"{_OLDER}, and {again}") from None
        if not operations:
            return Outcome(NO_OP, f"{_OLDER}, which undid it")
    if ignore_case:
        stored = engine.schema(uri).names if engine.exists(uri) else []
        operations = S.spelled_as(operations, [n for n in stored if not n.startswith(RESERVED_PREFIX)])  # the source's
    _check(engine, uri, operations)  # every operation can be performed, or none is
    outcomes = [_perform(engine, lake, location, op, order, commit_info) for op in _adds_joined(operations)]
    uri = lake.child(location.silver_key())
    mark = schema_mark(engine, uri)
    if any(o.status == APPLIED for o in outcomes) and engine.exists(uri) and (mark is None or order > mark):
        engine.set_properties(uri, {SCHEMA_SEQ_PROPERTY: json.dumps([str(v) for v in order])}, commit_info)
    status = APPLIED if any(o.status == APPLIED for o in outcomes) else NO_OP
    placed = f"{_OLDER}, performed in its place: " if newer else ""
    return Outcome(status, placed + "; ".join(o.detail for o in outcomes))


_OLDER = "older than DDL the table has had since"


def _holds_newer(engine: TableEngine, uri: str, order: E.Point) -> bool:
    """Whether the table has rows of changes newer than `order` (its hour run after a later one)."""
    return engine.exists(uri) and engine.row_count(uri, E.after(E.ORDERING_COLUMNS, order)) > 0


def _drop_in_the_past(
    engine: TableEngine, lake: Store, location: TableLocation, named: tuple[str, str], order: E.Point, info: dict
) -> Outcome:
    """A DROP TABLE older than statements or rows its table has had since (run after a later hour, or exported
    late): the table there now was created again after the drop. Changes to `named` no newer than the drop
    belong nowhere (recorded in the moves ledger), and the rows older than it are deleted, as a truncation would
    (they are of the table dropped; not archived)."""
    record_move(lake, location.source, TableMove(named, None, order))
    uri = lake.child(location.silver_key())
    if not engine.exists(uri):
        return Outcome(APPLIED, f"{_OLDER}: recorded the drop, so older changes are not loaded")
    key = json.loads(engine.properties(uri).get(KEY_PROPERTY, "[]"))
    deleted = truncate(engine, SilverTable(uri, lake.child(location.tombstones_key()), key, info), order)
    return Outcome(APPLIED, f"{_OLDER}: recorded the drop and deleted {deleted} rows older than it")


def _adds_joined(operations: Sequence[S.Operation]) -> list[S.Operation]:
    """The operations with consecutive ADD COLUMN clauses joined into one AddColumns, each name once (its first
    clause's, as when added one by one): one commit to the table instead of one per column, each of which read
    the table's growing log (an ALTER adding 400 columns took two minutes, 5,000 did not finish)."""
    joined: list[S.Operation] = []
    for op in operations:
        if isinstance(op, S.AddColumns) and joined and isinstance(joined[-1], S.AddColumns):
            first: dict[str, S.Column] = {}
            for column in (*joined[-1].columns, *op.columns):
                first.setdefault(column.name, column)
            joined[-1] = S.AddColumns(tuple(first.values()))
        else:
            joined.append(op)
    return joined


def _check(engine: TableEngine, uri: str, operations: Sequence[S.Operation]) -> None:
    """Raise UnsupportedOperation, naming the operation, if one of the statement's column operations cannot be
    performed on the table's schema as the operations before it leave it; so a multi-clause ALTER TABLE is
    performed entirely or goes to the DDL policy entirely. A column name the table could not store (the
    loader's reserved prefix, or one differing only by case from another: `_check_stored_names`) is refused
    whether or not the table exists. A rename may name a column the table has (`_merge_renamed`)."""
    exists = engine.exists(uri)
    columns = {f.name: spark_type_of_arrow(f.type) for f in engine.schema(uri)} if exists else {}
    key = json.loads(engine.properties(uri).get(KEY_PROPERTY, "[]")) if exists else []
    # the stored column holding a name's values (None: two merged by a rename; a name added here has none)
    stored: dict[str, str | None] = {name: name for name in columns}

    def rename(old: str, new: str) -> None:
        if old in columns and new in columns and old != new:
            merged = None if {old, new} & set(key) else _merged_type(columns[old], columns[new])
            if merged is None:
                raise UnsupportedOperation(f"renaming {old} to {new}, which exists")
            columns[old] = merged
            del columns[new]
            stored[old] = None  # the values of two stored columns
        if old in columns:
            columns[new] = columns.pop(old)
            stored[new] = stored.pop(old, "")  # "": added by this statement
            key[:] = [new if k == old else k for k in key]

    for op in operations:
        _check_stored_names(op, columns)
        if isinstance(op, S.AddColumns):
            columns.update({c.name: c.spark_type for c in op.columns if c.name not in columns})
        elif isinstance(op, S.DropColumns):
            if set(op.names) & set(key) & set(columns):
                raise UnsupportedOperation(f"dropping primary-key column(s) {sorted(set(op.names) & set(key))}")
            for name in op.names:
                columns.pop(name, None)
        elif isinstance(op, S.RenameColumn):
            rename(op.old, op.new)
        elif isinstance(op, S.ChangeColumnType):
            if op.old:
                rename(op.old, op.name)
            old_type = columns.get(op.name)
            if old_type is not None:
                _check_retype(engine, uri, op.name, stored.get(op.name, ""), key, old_type, op.spark_type)
                columns[op.name] = op.spark_type


def _check_retype(
    engine: TableEngine, uri: str, name: str, stored: str | None, key: Sequence[str], old_type: str, new_type: str
) -> None:
    """Raise UnsupportedOperation unless the column `name` can change from `old_type` to `new_type`: a widening,
    or a change from text whose values (those of the `stored` column: "" for none, None for those of two merged
    columns) all convert exactly (`TableEngine.converts`). A column is text when the format declared its type so
    (DataWorks DOUBLE, a DECIMAL without precision): when an hour is applied after a later one, its `MODIFY` to a
    decimal meets the text column the later hour's changes created. A key column stays text ("0123" and "123"
    would become one key)."""
    if is_widening(old_type, new_type):
        return
    refused = f"type change of {name} from {old_type} to {new_type} is not a widening"
    if old_type != "string" or name in key:
        raise UnsupportedOperation(refused)
    if stored is None or (stored and not engine.converts(uri, stored, arrow_type(new_type))):
        raise UnsupportedOperation(f"{refused}, and not every value the column holds is a {new_type}")


def _typed_as_created(
    engine: TableEngine, lake: Store, location: TableLocation, op: S.CreateTable, order: E.Point, info: dict
) -> Outcome:
    """A CREATE TABLE of a table that exists: a no-op, unless changes newer than the statement created the table
    (their hour ran first). Then the table is made as the statement declares it, as far as its rows allow: a
    column it does not declare that holds no value goes (`_drop_undeclared`), and each column takes the declared
    type where a type change could give it (`_check_retype`: a widening, or text whose values all convert; a
    format may declare a column's values text, DataWorks DOUBLE for a DECIMAL, or a narrower type)."""
    uri = lake.child(location.silver_key())
    if op.if_not_exists or not _holds_newer(engine, uri, order):
        return Outcome(NO_OP, "table exists")
    key = json.loads(engine.properties(uri).get(KEY_PROPERTY, "[]"))
    dropped = _drop_undeclared(engine, uri, {column.name for column in op.columns}, key, info)
    done = [f"dropped empty {', '.join(dropped)}"] if dropped else []
    done += _typed_as_declared(engine, lake, location, op.columns, key, info)
    if not done:
        return Outcome(NO_OP, "table exists")
    return Outcome(APPLIED, f"table exists, created by newer changes: {'; '.join(done)}")


def _typed_as_declared(
    engine: TableEngine, lake: Store, location: TableLocation, columns: Sequence[S.Column], key: list[str], info: dict
) -> list[str]:
    """Give each existing column of `columns` (a statement's declarations, older than changes that created the
    columns) the declared type where a type change could (`_check_retype`); what was retyped."""
    uri = lake.child(location.silver_key())
    stored = {f.name: spark_type_of_arrow(f.type) for f in engine.schema(uri)}
    retyped = {}
    for column in columns:
        old_type = stored.get(column.name)
        if old_type in (None, column.spark_type):
            continue
        try:
            _check_retype(engine, uri, column.name, column.name, key, old_type, column.spark_type)
        except UnsupportedOperation:
            continue  # the column keeps the type its changes gave it
        retyped[column.name] = column.spark_type
    if retyped:
        widen_columns(engine, SilverTable(uri, lake.child(location.tombstones_key()), key, info), retyped)
    return [f"typed {name} {stored[name]} as declared, {spark_type}" for name, spark_type in retyped.items()]


def _filled(
    engine: TableEngine, uri: str, columns: Sequence[S.Column], key: list[str], order: E.Point, info: dict
) -> list[str]:
    """Give the added `columns` the value the source stored in its existing rows (`defaults.fill`), in the rows
    whose last change is older than the statement and that hold none (a row a newer change wrote has the
    column's value from its image); what was filled. A keyless table is not filled here: its rows are known by
    content, and are counted again from their images (`lakeloader.apply.step`), which read the default too
    (`lakeloader.apply.ddl.columns`)."""
    fills = {c.name: f for c in columns if (f := defaults.fill(c)) is not None}
    if not fills or engine.row_count(uri, E.before(E.ORDERING_COLUMNS, order)) == 0:
        return []

    def filled(rows: pa.Table) -> pa.Table:
        older = _older_than(rows, order)
        for name, fill in fills.items():
            current = rows[name].cast(fill.value.type)  # delta-rs reads strings as views, which if_else does not take
            values = pc.if_else(pc.and_(older, pc.is_null(current)), fill.value, current)
            rows = rows.set_column(rows.schema.get_field_index(name), name, values)
        return rows

    engine.rewrite(uri, engine.schema(uri), filled, info)
    return [f"filled {name} with {fill.text!r} in the rows older than this statement" for name, fill in fills.items()]


def _drop_undeclared(engine: TableEngine, uri: str, declared: set[str], key: list[str], info: dict) -> list[str]:
    """Drop the table's columns not `declared` that hold no value: older changes gave them, to the table that a
    DROP TABLE before the CREATE TABLE dropped, when neither statement had been performed yet."""
    schema = engine.schema(uri)
    undeclared = [f.name for f in schema if f.name not in {*declared, *key} and not f.name.startswith(RESERVED_PREFIX)]
    empty = [name for name in undeclared if engine.row_count(uri, E.NotNull(name)) == 0]
    if empty:
        kept = pa.schema([f for f in schema if f.name not in empty])
        engine.rewrite(uri, kept, lambda rows: rows.drop_columns(empty), info)
    return empty


def _check_stored_names(op: S.Operation, columns: dict[str, str]) -> None:
    """Raise UnsupportedOperation if `op` would name a column as no message of the table may (the rule data
    messages are quarantined by, `lakeloader.parse.framing.name_problem`): with the loader's reserved prefix, or
    differing only by case from another of the table's columns (`columns`, as the operations before leave them),
    which Delta takes as one column."""
    if isinstance(op, S.CreateTable):
        names, existing = [c.name for c in op.columns], []
    elif isinstance(op, S.AddColumns):  # a reserved name is one of the metadata columns the table has
        names = [c.name for c in op.columns]
        existing = [name for name in columns if name not in names]
    elif isinstance(op, S.RenameColumn) and op.old != op.new:
        names, existing = [op.new], [name for name in columns if name not in (op.old, op.new)]  # `new`: see rename
    elif isinstance(op, S.ChangeColumnType) and op.renamed_from is not None:
        names, existing = [op.name], [name for name in columns if name not in (op.old, op.name)]
    else:
        return
    reserved = [name for name in names if name.lower().startswith(RESERVED_PREFIX)]
    if reserved:
        raise UnsupportedOperation(RESERVED_COLUMNS + ", ".join(reserved))
    lowered = [name.lower() for name in [*existing, *names]]
    twins = sorted({name for name in [*existing, *names] if lowered.count(name.lower()) > 1})
    if twins:
        raise UnsupportedOperation(CASE_TWINS + ", ".join(twins))


def _perform(
    engine: TableEngine, lake: Store, location: TableLocation, op: S.Operation, order: E.Point, info: dict
) -> Outcome:
    uri = lake.child(location.silver_key())
    exists = engine.exists(uri)
    if isinstance(op, S.NoOp):
        return Outcome(NO_OP, f"recorded only: {op.what}")
    if isinstance(op, S.CreateTable):
        if exists:
            return _typed_as_created(engine, lake, location, op, order, info)
        fields = [pa.field(c.name, arrow_type(c.spark_type)) for c in op.columns]
        key = list(op.primary_key) or multiset.KEY  # no primary key: a multiset of rows
        if not op.primary_key:
            fields += [pa.field(name, arrow_type(spark_type)) for name, spark_type in multiset.COLUMNS]
        engine.create(uri, pa.schema([*fields, *E.METADATA_FIELDS]), {KEY_PROPERTY: json.dumps(key)}, info)
        return Outcome(APPLIED, f"created with {len(fields)} columns, key {key}")
    if isinstance(op, S.CreateTableLike):
        if exists:
            return Outcome(NO_OP, "table exists")
        like = TableLocation(location.source, op.like.db or location.db, op.like.table)
        like_uri = lake.child(like.silver_key())
        if not engine.exists(like_uri):
            return Outcome(NO_OP, f"{like.db}.{like.table} not loaded: the table is created by its first changes")
        like_key = engine.properties(like_uri).get(KEY_PROPERTY, "[]")
        engine.create(uri, engine.schema(like_uri), {KEY_PROPERTY: like_key}, info)
        return Outcome(APPLIED, f"created with the columns and key of {like.db}.{like.table}")
    if isinstance(op, S.TruncateTable):
        if not exists:  # its older changes, in an hour applied later, are not loaded (apply.ddl.truncations)
            record_truncation(lake, location.source, (location.db, location.table), order)
            return Outcome(APPLIED, "recorded: no silver table yet, so older changes are not loaded")
        key = json.loads(engine.properties(uri).get(KEY_PROPERTY, "[]"))
        deleted = truncate(engine, SilverTable(uri, lake.child(location.tombstones_key()), key, info), order)
        return Outcome(APPLIED, f"deleted {deleted} rows older than this statement; older changes are ignored")
    if isinstance(op, S.RenameTable):
        return _rename_table(engine, lake, location, op, order, exists)
    if isinstance(op, S.DropTable):
        # recorded also when the table has no silver table yet: its older changes, in an hour applied later, are
        # not loaded (ddl.moves: a name's changes no newer than its drop belong nowhere). Moved first: a rerun
        # after a failure between the two finds no table and records the drop
        archive = zones.archive_dir(location.source, location.db, location.table, order[:2])
        if exists:
            _move_table(engine, lake, location.silver_key(), archive)
            _move_table(engine, lake, location.tombstones_key(), f"{archive}-tombstones")
        record_move(lake, location.source, TableMove((location.db, location.table), None, order))
        if not exists:
            return Outcome(APPLIED, "recorded: no silver table yet, so older changes are not loaded")
        return Outcome(APPLIED, f"archived to {archive}")
    if not exists:
        return Outcome(NO_OP, "table not loaded yet")
    schema = engine.schema(uri)
    key = json.loads(engine.properties(uri).get(KEY_PROPERTY, "[]"))
    if isinstance(op, S.AddColumns):
        # a column that changes newer than the statement created (their hour ran first) takes the declared type
        # where a type change could give it, as the table would have it had the hours run in order
        existing = [c for c in op.columns if c.name in schema.names]
        created_by_newer = bool(existing) and _holds_newer(engine, uri, order)
        typed = _typed_as_declared(engine, lake, location, existing, key, info) if created_by_newer else []
        new = [pa.field(c.name, arrow_type(c.spark_type)) for c in op.columns if c.name not in schema.names]
        if new:
            engine.add_columns(uri, new, info)
        # a column the table had before the statement (ADD ... IF NOT EXISTS) keeps its values
        filling = [c for c in op.columns if c.name not in schema.names or created_by_newer]
        filled = _filled(engine, uri, filling, key, order, info) if key != multiset.KEY else []
        if not new and not typed and not filled:
            return Outcome(NO_OP, "columns exist")
        added = [f"added {', '.join(f.name for f in new)}"] if new else []
        return Outcome(APPLIED, "; ".join(added + typed + filled))
    if isinstance(op, S.DropColumns):
        gone = [n for n in op.names if n in schema.names]
        if set(gone) & set(key):
            raise UnsupportedOperation(f"dropping primary-key column(s) {sorted(set(gone) & set(key))}")
        if not gone:
            return Outcome(NO_OP, "columns absent")
        engine.rewrite(uri, pa.schema([f for f in schema if f.name not in gone]), lambda t: t.drop_columns(gone), info)
        return Outcome(APPLIED, "dropped " + ", ".join(gone))
    if isinstance(op, S.RenameColumn):
        return _rename_column(engine, lake, location, op.old, op.new, key, order, info)
    if isinstance(op, S.ChangeColumnType):
        details = []
        name = op.name
        if (old := op.renamed_from) is not None:
            details.append(_rename_column(engine, lake, location, old, op.name, key, order, info).detail)
            schema = engine.schema(uri)
        if name not in schema.names:
            return Outcome(NO_OP, "; ".join([*details, f"column {name} absent"]))
        old_type = spark_type_of_arrow(schema.field(name).type)
        if old_type == op.spark_type:
            return Outcome(APPLIED if details else NO_OP, "; ".join([*details, f"{name} already {old_type}"]))
        _check_retype(engine, uri, name, name, key, old_type, op.spark_type)
        widen_columns(engine, SilverTable(uri, lake.child(location.tombstones_key()), key, info), {name: op.spark_type})
        changed = "widened" if is_widening(old_type, op.spark_type) else "converted"
        return Outcome(APPLIED, "; ".join([*details, f"{changed} {name} from {old_type} to {op.spark_type}"]))
    raise UnsupportedOperation(f"no handler for {type(op).__name__}")


def _rename_column(
    engine: TableEngine,
    lake: Store,
    location: TableLocation,
    old: str,
    new: str,
    key: list[str],
    order: E.Point,
    info: dict,
) -> Outcome:
    uri = lake.child(location.silver_key())
    schema = engine.schema(uri)
    if old not in schema.names:
        return Outcome(NO_OP, f"column {old} absent")
    if new in schema.names and not {old, new} & set(key):
        return _merge_renamed(engine, uri, schema, old, new, order, info)
    if new in schema.names:
        raise UnsupportedOperation(f"renaming {old} to {new}, which exists")
    renamed = pa.schema([f.with_name(new) if f.name == old else f for f in schema])
    engine.rewrite(uri, renamed, lambda t: t.rename_columns([new if n == old else n for n in t.column_names]), info)
    if old in key:
        new_key = [new if k == old else k for k in key]
        engine.set_properties(uri, {KEY_PROPERTY: json.dumps(new_key)}, info)
        tombstones = lake.child(location.tombstones_key())
        if engine.exists(tombstones):
            tomb_schema = engine.schema(tombstones)
            engine.rewrite(
                tombstones,
                pa.schema([f.with_name(new) if f.name == old else f for f in tomb_schema]),
                lambda t: t.rename_columns([new if n == old else n for n in t.column_names]),
                info,
            )
    return Outcome(APPLIED, f"renamed column {old} to {new}")


def _merge_renamed(
    engine: TableEngine, uri: str, schema: pa.Schema, old: str, new: str, order: E.Point, info: dict
) -> Outcome:
    """`RENAME COLUMN old TO new` where changes newer than it already gave the table a column `new`, added for
    their data (they were applied first: an hour run out of order, a late export, a message delivered early; at
    the source no column `new` existed when it was renamed to): a row takes its value from `old` if its last
    change is older than the rename, else from `new` (both in the type that holds either), and `old` goes. Exact
    for formats with full images; with partial ones, a row changed after the rename without `new` loses it."""
    spark_type = _merged_type(spark_type_of_arrow(schema.field(old).type), spark_type_of_arrow(schema.field(new).type))
    if spark_type is None:
        raise UnsupportedOperation(f"renaming {old} to {new}, which exists with a type that cannot hold both")
    target = arrow_type(spark_type)

    def merged(rows: pa.Table) -> pa.Table:
        values = pc.if_else(_older_than(rows, order), rows[old].cast(target), rows[new].cast(target))
        return rows.set_column(rows.schema.get_field_index(new), new, values).drop_columns([old])

    engine.rewrite(
        uri, pa.schema([f.with_type(target) if f.name == new else f for f in schema if f.name != old]), merged, info
    )
    return Outcome(APPLIED, f"renamed column {old} to {new}, which newer changes had added: merged by row age")


def _older_than(rows: pa.Table, order: E.Point) -> pa.ChunkedArray | pa.Array:
    """Which rows' last change is older than a statement at `order` (a NULL position is the oldest)."""
    if E.POSITION not in rows.column_names:  # rows of a table written before changes held their position
        rows = rows.append_column(E.POSITION, pa.nulls(rows.num_rows, pa.string()))
    return pc.fill_null(arrow_mask(rows, E.before(E.ORDERING_COLUMNS, order)), False)


def _merged_type(first: str, second: str) -> str | None:
    """The type of the two that holds the other's values, if one does."""
    if first == second or is_widening(first, second):
        return second
    return first if is_widening(second, first) else None


def _rename_table(
    engine: TableEngine, lake: Store, location: TableLocation, op: S.RenameTable, order: E.Point, exists: bool
) -> Outcome:
    """Move the table (when it has a silver table) and record the move, so its changes in this batch after the
    rename, and its older changes in hours applied later, load under the new name."""
    target = TableLocation(location.source, op.new.db or location.db, op.new.table)
    if (target.db, target.table) == (location.db, location.table):  # a rerun: the moves sent the statement here
        return Outcome(NO_OP, f"already renamed to {target.db}.{target.table}")
    move = TableMove((location.db, location.table), (target.db, target.table), order)
    if lake.stat(f"{target.silver_key()}/_delta_log/00000000000000000000.json") is not None:
        raise UnsupportedOperation(f"renaming to {target.db}.{target.table}, which already has a silver table")
    if exists:
        _move_table(engine, lake, location.silver_key(), target.silver_key())
        _move_table(engine, lake, location.tombstones_key(), target.tombstones_key())
    record_move(lake, location.source, move)
    old = f"{location.db}.{location.table}"
    location.db, location.table = target.db, target.table
    if not exists:
        return Outcome(APPLIED, f"recorded the rename of {old} to {target.db}.{target.table}: no silver table yet")
    return Outcome(APPLIED, f"moved silver table {old} to {target.db}.{target.table}")


def _move_table(engine: TableEngine, lake: Store, prefix: str, new_prefix: str) -> None:
    """Move a table's tree, if there is one, where the engine does not see it: it lets go of both places."""
    if next(iter(lake.list(prefix + "/")), None) is not None:
        lake.move_tree(prefix, new_prefix)
    engine.let_go(lake.child(prefix))
    engine.let_go(lake.child(new_prefix))
