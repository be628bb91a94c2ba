"""Column renames, drops and filled additions over a table's life, and row images read as a later schema has them.

A keyless table (`lakeloader.apply.multiset`) knows a row by a hash of its content, column names included. After
`RENAME COLUMN a TO b` the source's later images of a row name `b` where the earlier ones named `a`; so
before counting a content's history, every image older than a rename or drop of one of its columns is read
as the schema after it has the row (`a` becomes `b`, a dropped column goes, a column added with a value for
existing rows has it: `lakeloader.apply.ddl.defaults`), and the silver table's rows are recounted after such a
statement (`lakeloader.apply.step`).

The renames and drops come from the schema history (statements applied in earlier batches) and from the
batch's own DDL messages as they are applied.

Every table's changes are read through the schema history's renames and drops too (`declared_as_later`), their
declared columns and key names, and a keyed table's images with them: a change exported late, older than a
rename an earlier hour applied, then gives its value to the column's new name, and an insert older than an
`ADD COLUMN c ... DEFAULT 5` an earlier hour applied makes a row with c = 5, as the source's row has it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Iterable
from decimal import Decimal
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.defaults import fill
from lakeloader.apply.ddl.moves import TableMove, resolve
from lakeloader.apply.table_identity import TableId
from lakeloader.core import zones
from lakeloader.core.storage import Store
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.parse import canonical as C

Position = tuple  # (seq, seq2, origin_file, origin_line, origin_index), as DdlEvent.position
ColumnChange = tuple[Position, S.Operation]
IMAGES = ("before", "after")  # a RenameColumn, DropColumns or renaming ChangeColumnType


def image_changes(operations: Iterable[S.Operation]) -> list[S.Operation]:
    """The operations that change a row's earlier images: which names its values have (a rename, a drop), or
    which values it has (a column added with a value for the existing rows, `lakeloader.apply.ddl.defaults`)."""
    return [
        op
        for op in operations
        if isinstance(op, S.RenameColumn | S.DropColumns)
        or (isinstance(op, S.ChangeColumnType) and op.renamed_from is not None)
        or (isinstance(op, S.AddColumns) and _filled(op))
    ]


# the words of every statement `image_changes` finds (RENAME COLUMN, DROP [COLUMN], MySQL CHANGE, Oracle SET
# UNUSED, a DEFAULT or MySQL's implicit NOT NULL one): the schema history's other statements are not parsed again
_MAY_CHANGE_IMAGES = re.compile(r"rename|drop|change|unused|default|not\s+null", re.IGNORECASE)


PERFORMED = ("applied", "no-op")  # statuses of statements the table has had (no-op: it needed no change then)
Recorded = tuple[TableId, Position, str, S.Statement]  # a statement of the schema history: its table as recorded


def applied_changes(
    engine: TableEngine,
    lake: Store,
    source: str,
    dialect: str,
    moves: list[TableMove],
    lower_case_table_names: bool = False,
) -> dict[TableId, list[ColumnChange]]:
    """Per table (under its name now, after `moves`): the renames and drops performed so far, from the schema history.

    With those that changed nothing then (the column was absent, or the table not loaded yet): a change older
    than `DROP COLUMN c`, applied after it, must not bring `c` back either."""
    changes: dict[TableId, list[ColumnChange]] = {}
    for recorded_as, position, status, statement in recorded_statements(
        engine, lake, source, dialect, lower_case_table_names, _MAY_CHANGE_IMAGES
    ):
        name = resolve(recorded_as, position[:2], moves)
        if status in PERFORMED and name is not None:
            for op in image_changes(statement.operations):
                changes.setdefault(name, []).append((position, op))
    return changes


def recorded_statements(
    engine: TableEngine,
    lake: Store,
    source: str,
    dialect: str,
    lower_case_table_names: bool,
    words: re.Pattern | None = None,
) -> list[Recorded]:
    """Each statement of the schema history (whose text matches `words`, if given) with its table as recorded,
    position and status. The history records a statement's table as the source compares names (folded to lower
    case with `lower_case_table_names`), so a statement of its text is the row's when its name folds to it."""
    uri = lake.child(zones.schema_history_dir(source))
    if not engine.exists(uri):
        return []
    recorded = []
    for row in engine.read(uri).to_pylist():
        if not row["ddl"] or (words is not None and not words.search(row["ddl"])):
            continue
        parsed = S.parse_ddl(row["ddl"], dialect)
        position = (row[E.SEQ], row[E.SEQ2], row["origin_file"], row["origin_line"], row["origin_index"])
        for statement in parsed.statements if isinstance(parsed, S.Statements) else (parsed,):
            named = statement.table.table if isinstance(statement, S.Statement) and statement.table else None
            if named is not None and lower_case_table_names:
                named = named.lower()
            if isinstance(statement, S.Statement) and (named is None or named == row["table"]):
                recorded.append(((row["db"], row["table"]), position, row["status"], statement))
    return recorded


def later_operations(
    recorded: list[Recorded], moves: list[TableMove], table: TableId, position: Position
) -> list[S.Operation] | None:
    """The column operations of the `recorded` statements performed on `table` (its name after `moves`) after
    `position`, in sequence order; None if the statement at `position` was itself performed (a rerun)."""
    newer: list[tuple[tuple, tuple[S.Operation, ...]]] = []
    for recorded_as, at, status, statement in recorded:
        if status not in PERFORMED or resolve(recorded_as, at[:2], moves) != table:
            continue
        if at == position:
            return None
        if _sortable(at) > _sortable(position):
            newer.append((_sortable(at), statement.operations))
    return [op for _, operations in sorted(newer, key=lambda n: n[0]) for op in operations]


def read_as_later(data: DataFrame, changes: dict[TableId, list[ColumnChange]], ignore_case: bool) -> DataFrame:
    """Changes with their before/after images read as the schema after every given rename, drop or filled addition
    newer than them has the row: one fold over the changes in sequence order (a lambda, so the image is not repeated
    per change in the plan). `ignore_case`: the source's column names are case-insensitive (MySQL), so a statement's
    `DROP COLUMN qty` drops an image's `Qty`."""
    folded = _folded(changes, ignore_case)
    if folded is None:
        return data
    return data.withColumns({image: F.aggregate(folded, F.col(image), _image_step) for image in IMAGES})


def declared_as_later(
    data: DataFrame, changes: dict[TableId, list[ColumnChange]], keyed: Collection[TableId], ignore_case: bool
) -> DataFrame:
    """Changes read as the schema after the renames and drops newer than them (`changes`: those performed in
    earlier batches): their declared columns and key names, and the `keyed` tables' images as `read_as_later`
    reads them (a keyless table's images are read through later, with its history, `lakeloader.apply.step`). So
    a change exported late, older than a `RENAME COLUMN a TO b` an earlier hour applied, gives its value to `b`
    (a delete keyed by `a` finds its row), and one older than a `DROP COLUMN c` gives none to a column `c` added
    again later. Only the changed tables' rows run the fold (`ignore_case`: as `read_as_later`)."""
    folded = _folded(changes, ignore_case)
    if folded is None:
        return data

    def later(name: str, step: Callable[[Column, Column], Column], tables: Collection[TableId]) -> Column:
        touched = reduce(operator.or_, [(F.col("db") == db) & (F.col("table") == table) for db, table in tables])
        return F.when(touched, F.aggregate(folded, F.col(name), step)).otherwise(F.col(name))

    declared = {
        "columns": later("columns", _columns_step, changes),
        "primary_key": later("primary_key", _key_step, changes),
    }
    images = {image: later(image, _image_step, keyed) for image in IMAGES} if keyed else {}
    return data.withColumns(images | declared)


def _folded(changes: dict[TableId, list[ColumnChange]], ignore_case: bool) -> Column | None:
    """The renames and drops as an array of structs in sequence order per table (None: there are none), a DDL
    message delivered again (the same ordering key and operation, another export position) once: the fold's
    steps are not idempotent (a rename's second step would drop the name its first gave). With `ignore_case`,
    the names a change removes are in lower case, as `_named` reads an image's."""

    def named(name: str | None) -> str | None:
        return name.lower() if ignore_case and name is not None else name

    entries = [
        F.struct(
            F.lit(db).alias("db"),
            F.lit(table).alias("table"),
            position_literal(at).alias("at"),
            F.array(*(F.lit(named(name)) for name in _dropped(op))).cast("array<string>").alias("dropped"),
            F.lit(named(_renamed_from(op))).cast("string").alias("old"),
            F.lit(ignore_case).alias("ignore_case"),
            F.lit(_renamed_to(op)).cast("string").alias("new"),
            _filled_map(op, lambda column, text: text).alias("filled"),
            _filled_map(op, lambda column, text: column.spark_type).alias("filled_types"),
        )
        for (db, table), table_changes in changes.items()
        for at, op in _once(sorted(table_changes, key=lambda change: _sortable(change[0])))
    ]
    return F.array(*entries) if entries else None


def _once(changes: list[ColumnChange]) -> list[ColumnChange]:
    """The changes, each (ordering key, operation) once: the first delivery of a re-delivered message."""
    seen: set[tuple] = set()
    kept = []
    for at, op in changes:
        if (Decimal(at[0]), Decimal(at[1]), op) not in seen:
            seen.add((Decimal(at[0]), Decimal(at[1]), op))
            kept.append((at, op))
    return kept


def _applies(current: Column, change: Column) -> Column:
    """Whether the image change `change` is of the row's table and newer than the row (with a value to read)."""
    at_table = (change["db"] == F.col("db")) & (change["table"] == F.col("table"))
    return at_table & (change_position() < change["at"]) & current.isNotNull()


def _named(name: Column, change: Column) -> Column:
    """A name as the change's removed names are written: in lower case where column names are case-insensitive."""
    return F.when(change["ignore_case"], F.lower(name)).otherwise(name)


def _kept(name: Column, change: Column) -> Column:
    """Whether a name survives the change: not dropped, nor the name a rename gives (which an older image holds
    only for a column dropped or renamed away before) unless the rename is of it (a change of case)."""
    named = _named(name, change)
    given = (named == _named(change["new"], change)) & (named != change["old"])
    return ~F.array_contains(change["dropped"], named) & (change["new"].isNull() | ~given)


def _new_name(name: Column, change: Column) -> Column:
    return F.when(_named(name, change) == change["old"], change["new"]).otherwise(name)


def _image_step(current: Column, change: Column) -> Column:
    kept = F.map_filter(current, lambda k, _: _kept(k, change))
    later = F.when(change["old"].isNull(), kept).otherwise(F.transform_keys(kept, lambda k, _: _new_name(k, change)))
    later = F.map_concat(later, F.map_filter(change["filled"], lambda k, _: ~F.map_contains_key(later, k)))
    return F.when(_applies(current, change), later).otherwise(current)


def _columns_step(current: Column, change: Column) -> Column:
    kept = F.filter(current, lambda c: _kept(c["name"], change))
    renamed = F.transform(kept, lambda c: F.struct(_new_name(c["name"], change).alias("name"), c["type"].alias("type")))
    undeclared = F.map_filter(change["filled_types"], lambda k, _: ~F.exists(renamed, lambda c: c["name"] == k))
    declared = F.transform(
        F.map_entries(undeclared), lambda e: F.struct(e["key"].alias("name"), e["value"].alias("type"))
    )
    return F.when(_applies(current, change), F.concat(renamed, declared)).otherwise(current)


def _key_step(current: Column, change: Column) -> Column:
    renamed = F.transform(F.filter(current, lambda k: _kept(k, change)), lambda k: _new_name(k, change))
    return F.when(_applies(current, change), renamed).otherwise(current)


def _dropped(op: S.Operation) -> tuple[str, ...]:
    return op.names if isinstance(op, S.DropColumns) else ()


def _renamed_from(op: S.Operation) -> str | None:
    return None if isinstance(op, S.DropColumns | S.AddColumns) else op.old  # type: ignore[union-attr]  # see IMAGES


def _renamed_to(op: S.Operation) -> str | None:
    if isinstance(op, S.DropColumns | S.AddColumns):
        return None
    return op.new if isinstance(op, S.RenameColumn) else op.name  # type: ignore[union-attr]  # see IMAGES


def _filled(op: S.AddColumns) -> dict[S.Column, str]:
    """The added columns that existing rows have a value in (`defaults.fill`), with that value's text."""
    return {column: filled.text for column in op.columns if (filled := fill(column)) is not None}


def _filled_map(op: S.Operation, value: Callable[[S.Column, str], str]) -> Column:
    """A map of an ADD COLUMN's filled columns' names to `value` of each (empty for any other operation)."""
    filled = _filled(op) if isinstance(op, S.AddColumns) else {}
    entries = [F.lit(part) for column, text in filled.items() for part in (column.name, value(column, text))]
    return F.create_map(*entries).cast("map<string,string>")


def change_position() -> Column:
    """A change's place in its table's sequence (seq, seq2, file, line, index), comparable with
    `position_literal` of a DDL message's position."""
    return F.struct(
        F.col("seq").cast(C.SEQ_TYPE),
        F.col("seq2").cast(C.SEQ_TYPE),
        "origin_file",
        F.col("origin_line").cast("long"),
        F.col("origin_index").cast("int"),
    )


def position_literal(position: Position) -> Column:
    seq, seq2, origin_file, origin_line, origin_index = position
    return F.struct(
        F.lit(seq).cast(C.SEQ_TYPE),
        F.lit(seq2).cast(C.SEQ_TYPE),
        F.lit(origin_file),
        F.lit(origin_line).cast("long"),
        F.lit(origin_index).cast("int"),
    )


def _sortable(position: Position) -> tuple:
    seq, seq2, origin_file, origin_line, origin_index = position
    return (Decimal(seq), Decimal(seq2), origin_file or "", origin_line or 0, origin_index or 0)
