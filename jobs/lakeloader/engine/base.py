"""The table engine: the operations the apply job needs from a Delta table, whatever library performs them.

Change sets arrive as Arrow tables holding the table's columns, the `_cdc_*` metadata columns and the
action column `_cdc_action` ('upsert' or 'delete'), already reduced to one row per key. A change set may
also carry `_cdc_partial` (the row's image holds only some columns) and `_cdc_present` (which ones).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Literal, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from lakeloader.core.errors import LakeloaderError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# a value in a predicate or a default, which each engine renders in its own dialect
Value = str | int | float | bool | Decimal | datetime | date

ACTION = "_cdc_action"
UPSERT, DELETE = "upsert", "delete"
PARTIAL, PRESENT = "_cdc_partial", "_cdc_present"

# Metadata columns on every silver row (documented in README "Silver tables").
SEQ, SEQ2 = "_cdc_seq", "_cdc_seq2"
OP, EVENT_TIME = "_cdc_op", "_cdc_event_time"
SOURCE_FILE, SOURCE_LINE = "_cdc_source_file", "_cdc_source_line"
# the change's place among changes of equal (seq, seq2): rank and export position
# (lakeloader.apply.key_actions.position)
POSITION = "_cdc_position"
LOADED_AT = "_cdc_loaded_at"
# Only in tombstone tables: the action's rank (0 = first half of a two-message update), and when it was written.
RANK, DELETED_AT = "_cdc_rank", "_cdc_deleted_at"

METADATA_FIELDS = (
    pa.field(SEQ, pa.decimal128(38, 0)),
    pa.field(SEQ2, pa.decimal128(38, 0)),
    pa.field(OP, pa.string()),
    pa.field(EVENT_TIME, pa.timestamp("us", tz="UTC")),
    pa.field(SOURCE_FILE, pa.string()),
    pa.field(SOURCE_LINE, pa.int64()),
    pa.field(POSITION, pa.string()),
    pa.field(LOADED_AT, pa.timestamp("us", tz="UTC")),
)
METADATA_COLUMNS = tuple(f.name for f in METADATA_FIELDS)
# the total order of docs/semantics.md; a NULL position (a row written before the column existed) is the oldest
ORDERING_COLUMNS = (SEQ, SEQ2, POSITION)
# (the value a NULL counts as, a Python value each engine renders in its own dialect)
NULL_AS_OLDEST: dict[str, Value] = {POSITION: ""}
# a place in that order, as ORDERING_COLUMNS hold it: where a DDL statement takes effect (lakeloader.apply)
Point = tuple[Decimal, Decimal, str]


def point(recorded: Sequence[str]) -> Point:
    """A point as recorded in a property or ledger: [seq, seq2, position], or [seq, seq2] (recorded before points
    held a position: the first place of that key, before every change sharing it)."""
    return Decimal(recorded[0]), Decimal(recorded[1]), recorded[2] if len(recorded) > 2 else ""


# Delta's table property for the size of the files a write aims at (delta-rs: bytes of Arrow data, before
# Parquet's encoding and compression, which roughly halve it).
FILE_SIZE_PROPERTY = "delta.targetFileSize"
# Delta's table property listing the columns whose per-file statistics writers collect (and readers may prune on)
STATS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"
# Every table the engines create writes a checkpoint of its log every 10 commits (Delta's default: 100). Reading a
# table replays the commits since its last checkpoint, and an hour's apply reads each of its tables a few dozen
# times: at 60 commits past a checkpoint delta-rs took 17-21 ms to open a table, at most 10 past one 1-2 ms.
CHECKPOINT_INTERVAL = {"delta.checkpointInterval": "10"}
# Columns a change set may carry beside the table's: `_cdc_unfit` names the columns whose canonical text did not
# fit the type the batch declared for them (the change is rejected, lakeloader.apply.silver).
UNFIT = "_cdc_unfit"
STAGING_COLUMNS = (ACTION, PARTIAL, PRESENT, UNFIT)


@dataclass(frozen=True)
class MergeResult:
    inserted: int
    updated: int
    deleted: int
    version: int


class UnreadableTable(LakeloaderError, RuntimeError):
    """A table the engine cannot read the way asked (e.g. into Spark), with what the user can do about it."""


# ---------------------------------------------------------------------------------------------------------------
# Typed predicates: what a delete selects, rendered by each engine in its own dialect (no SQL strings here).
# ---------------------------------------------------------------------------------------------------------------

Comparison = Literal["<", "<=", "=", "!=", ">=", ">"]


@dataclass(frozen=True)
class Compare:
    """`column op value`, the value a Python one (a Decimal compares as a decimal, a datetime as a timestamp)."""

    column: str
    op: Comparison
    value: Value


@dataclass(frozen=True)
class NotNull:
    column: str


@dataclass(frozen=True)
class Not:
    term: Predicate


@dataclass(frozen=True)
class And:
    terms: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    terms: tuple[Predicate, ...]


Predicate = Compare | NotNull | Not | And | Or


def before(columns: Sequence[str], values: Sequence[Value]) -> Predicate:
    """Rows whose `columns` come before `values` lexicographically (e.g. ORDERING_COLUMNS older than a point); a
    NULL in a column of NULL_AS_OLDEST counts as its oldest value."""
    return _lexicographic(columns, values, "<")


def after(columns: Sequence[str], values: Sequence[Value]) -> Predicate:
    """Rows whose `columns` come after `values` lexicographically (e.g. (seq, seq2) newer than a mark)."""
    return _lexicographic(columns, values, ">")


def _lexicographic(columns: Sequence[str], values: Sequence[Value], op: Comparison) -> Predicate:
    terms: list[Predicate] = []
    for i, column in enumerate(columns):
        equal = [_compare(c, "=", v) for c, v in zip(columns[:i], values[:i], strict=True)]
        last = _compare(column, op, values[i])
        terms.append(And((*equal, last)) if equal else last)
    return Or(tuple(terms)) if len(terms) > 1 else terms[0]


_HOLDS = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "=": lambda a, b: a == b}


def _compare(column: str, op: Comparison, value: Value) -> Predicate:
    """`column op value`, a NULL in a column of NULL_AS_OLDEST taken as its oldest value."""
    compared = Compare(column, op, value)
    if column not in NULL_AS_OLDEST or not _HOLDS[op](NULL_AS_OLDEST[column], value):
        return compared
    return Or((Not(NotNull(column)), compared))


def render_predicate(predicate: Predicate, column: Callable[[str], str], value: Callable[[Value], str]) -> str:
    """A typed predicate as SQL text in an engine's dialect: `column` quotes a name, `value` renders a literal;
    compound terms inside another are parenthesised."""

    def render(term: Predicate, nested: bool) -> str:
        if isinstance(term, Compare):
            return f"{column(term.column)} {term.op} {value(term.value)}"
        if isinstance(term, NotNull):
            return f"{column(term.column)} IS NOT NULL"
        if isinstance(term, Not):
            return f"NOT ({render(term.term, False)})"
        if isinstance(term, And | Or):
            text = (" AND " if isinstance(term, And) else " OR ").join(render(t, True) for t in term.terms)
            return f"({text})" if nested and len(term.terms) > 1 else text
        raise TypeError(f"not a predicate: {term!r}")

    return render(predicate, False)


def render_newer(order_columns: tuple[str, ...], source: Callable[[str], str], target: Callable[[str], str]) -> str:
    """SQL for 'the source row's ordering key is greater than the target row's', lexicographically over
    `order_columns`; `source`/`target` render a column of each side (with its NULL_AS_OLDEST treatment). With no
    ordering columns every source row counts as newer."""
    if not order_columns:
        return "TRUE"
    terms = []
    for i, column in enumerate(order_columns):
        equal_before = [f"{source(c)} = {target(c)}" for c in order_columns[:i]]
        terms.append(" AND ".join([*equal_before, f"{source(column)} > {target(column)}"]))
    return "(" + " OR ".join(f"({t})" for t in terms) + ")"


@dataclass(frozen=True)
class Dialect:
    """How an engine's SQL names a column, writes a string literal, and asks whether an array holds a value."""

    quote: Callable[[str], str]
    literal: Callable[[str], str]
    array_contains: str


@dataclass(frozen=True)
class MergePlan:
    """The parts of a merge every engine builds alike (source alias `s`, target alias `t`)."""

    on: str
    updates: dict[str, str]
    inserts: dict[str, str]
    is_upsert: str
    is_delete: str
    # the change set's columns the merge reads: all but the staging ones (but the action, and the partial markers
    # when the change set has partial rows)
    source_columns: list[str]


def merge_plan(
    change_columns: Sequence[str],
    has_partial: bool,
    target_columns: Sequence[str],
    key_columns: Sequence[str],
    dialect: Dialect,
) -> MergePlan:
    """A change set's merge into a table with `target_columns`: matched on the key, every shared column set or
    inserted; when `has_partial` (the change set may hold partial rows), a partial row keeps the target's value
    for a column its image does not carry. The engine decides `has_partial` where its change set is (delta-rs:
    whether a row is partial; Delta on Spark: whether the column exists, no job to find out)."""
    quote, literal = dialect.quote, dialect.literal
    columns = [name for name in target_columns if name in change_columns]
    fixed = {*key_columns, *METADATA_COLUMNS}

    def assignment(column: str) -> str:
        if not has_partial or column in fixed:
            return f"s.{quote(column)}"
        absent = f"s.{quote(PARTIAL)} AND NOT {dialect.array_contains}(s.{quote(PRESENT)}, {literal(column)})"
        return f"CASE WHEN {absent} THEN t.{quote(column)} ELSE s.{quote(column)} END"

    source = [c for c in change_columns if c not in STAGING_COLUMNS or c == ACTION]
    if has_partial:
        source += [PARTIAL, PRESENT]
    return MergePlan(
        on=" AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key_columns),
        updates={quote(c): assignment(c) for c in columns},
        inserts={quote(c): f"s.{quote(c)}" for c in columns},
        is_upsert=f"s.{quote(ACTION)} = '{UPSERT}'",
        is_delete=f"s.{quote(ACTION)} = '{DELETE}'",
        source_columns=source,
    )


def converts_exactly(values: pa.Array | pa.ChunkedArray, arrow: pa.DataType) -> bool:
    """Whether every value converts to `arrow` with its value kept: Arrow's safe cast, which refuses a lost
    digit or fraction, an overflow and a text that is not a number of the type ("0123" and "1.0" are 123 and 1)."""
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.string())
    try:
        pc.cast(values, arrow, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


class TableEngine(Protocol):
    def tables_held(self) -> AbstractContextManager[None]:
        """A stretch in which only this engine commits to the tables it touches (apply, under the source's lock),
        so an engine may keep each table loaded rather than read its log again at every call."""
        ...

    def let_go(self, uri: str) -> None:
        """The table at `uri` was moved or removed by other means than the engine (DDL's table moves): a table
        held there is read again at its next use."""
        ...

    def exists(self, uri: str) -> bool: ...

    def create(
        self,
        uri: str,
        schema: pa.Schema,
        properties: dict[str, str],
        commit_info: dict[str, str],
        file_size: int | None = None,
    ) -> None:
        """A new empty table; `file_size` is the size of the files its writes aim at (engine default: None)."""
        ...

    def properties(self, uri: str) -> dict[str, str]:
        """Our own table properties (e.g. the primary key), as given to `create` or `set_properties`."""
        ...

    def set_properties(self, uri: str, properties: dict[str, str], commit_info: dict[str, str]) -> None: ...

    def schema(self, uri: str) -> pa.Schema: ...

    def add_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None: ...

    def widen_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None:
        """Retype the named columns to the fields' types, each a widening (`lakeloader.apply.ddl.widening`) or a
        change every value of the column survives (`converts`); the table's properties and rows are kept."""
        ...

    # whether the engine runs in the job's Spark session: its change sets stay Spark frames
    # (`lakeloader.apply.change_set`), never collected to the driver
    runs_in_spark: bool

    def merge(
        self,
        uri: str,
        changes: pa.Table | DataFrame,
        key_columns: list[str],
        order_columns: tuple[str, ...],
        commit_info: dict[str, str],
    ) -> MergeResult:
        """Per key: a newer upsert updates or inserts, a newer delete deletes, anything else is ignored.

        'Newer' compares `order_columns` lexicographically with the row's, a NULL in a column of
        NULL_AS_OLDEST as the oldest value. Partial rows update only their present columns. `changes` is an Arrow
        table, or a Spark frame for an engine that `runs_in_spark`.
        """
        ...

    def delete_where(self, uri: str, predicate: Predicate, commit_info: dict[str, str]) -> int:
        """Delete the rows `predicate` selects; returns how many."""
        ...

    def rewrite(
        self, uri: str, schema: pa.Schema, transform: Callable[[pa.Table], pa.Table], commit_info: dict[str, str]
    ) -> None:
        """Replace the table's schema and rows by `transform` applied to its rows, batch by batch (for
        schema changes Delta cannot express in place: drop, rename, retype a column)."""
        ...

    def clustered(self, uri: str, column: str, file_size: int) -> bool:
        """Whether the table is laid out as `recluster` leaves it: files of `file_size`, disjoint in `column`."""
        ...

    def recluster(self, uri: str, columns: list[str], file_size: int, commit_info: dict[str, str]) -> int:
        """Rewrite the table's rows into files of about `file_size` bytes (rows unchanged), in key order for a
        one-column key and in write order for a composite one, so a merge whose keys are local rewrites only
        the few files holding them; returns the files written."""
        ...

    def read(self, uri: str, columns: Sequence[str] | None = None) -> pa.Table:
        """The table's current rows (only `columns`, when given: apply's state checks need a few columns of a
        table that may be wide)."""
        ...

    def append(self, uri: str, rows: pa.Table) -> None:
        """Append rows, creating the table (with their schema) if it does not exist (audit tables)."""
        ...

    def replace_with(self, uri: str, source_uri: str, commit_info: dict[str, str]) -> None:
        """One overwrite commit of `uri` with the schema and rows of the table at `source_uri`, streamed (the
        driver never holds the table); `uri` keeps its properties, or takes the source's when it is new."""
        ...

    def spark_frame(self, spark: SparkSession, uri: str) -> DataFrame:
        """The table's current version as a Spark frame (reconciliation compares tables in Spark); raises
        `UnreadableTable` when it cannot be read so."""
        ...

    def version(self, uri: str) -> int: ...

    def row_count(self, uri: str, where: Predicate | None = None) -> int:
        """The table's rows (those matching `where`, if given)."""
        ...

    def converts(self, uri: str, column: str, arrow: pa.DataType) -> bool:
        """Whether every value of `column` converts to `arrow` with its value kept (`converts_exactly`), the
        column read a batch at a time."""
        ...
