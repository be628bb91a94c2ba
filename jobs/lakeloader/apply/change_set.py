"""Where one table segment's change set lives while `lakeloader.apply.silver` writes it, and how each operation on
it executes there.

`lakeloader.apply.silver` decides (which columns to add, widen, cast or drop, which changes are older than a
truncation, stale or rejected and why, what becomes a tombstone); a `ChangeSet` only executes those decisions:
- `ArrowChangeSet`: an Arrow table in the driver, for delta-rs (`engine: delta_rs`, the embedded default);
- `SparkChangeSet`: a Spark frame, for Delta on Spark (`engine: delta_spark`): every operation is a Spark
  transformation and `DeltaTable.merge` reads the frame, so the change set never reaches the driver. What the
  driver does receive: counts, the names of the columns whose text did not fit (`_cdc_unfit`), the first change
  that carried a value in a widened column, and the rejected changes themselves, `REJECTED_CHUNK_ROWS` at a
  time (usually few: values no type holds; a misdeclared column can reject a whole hour).

Conditions are the typed predicates of `lakeloader.engine.base` (Arrow evaluates them with pyarrow.compute, Spark
as the SQL the Delta engine renders); the ordering comparison against tombstones is the engines' own `newer`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from lakeloader.apply import multiset
from lakeloader.apply.ddl.widening import MAX_DECIMAL_PRECISION
from lakeloader.engine import base as E
from lakeloader.engine.base import MergeResult, Predicate, TableEngine

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


# The rejected changes reach the driver (to be quarantined) in chunks of about this many rows
REJECTED_CHUNK_ROWS = 10_000


@dataclass(frozen=True)
class Rejected:
    """Some of the changes left out: their values before the cast and, per column, which of them it rejects, as
    text that did not fit the batch's type (`text`) or as a value the silver type cannot hold (`cast`)."""

    rows: pa.Table
    text: dict[str, list[bool]]
    cast: dict[str, list[bool]]


@dataclass(frozen=True)
class Fitted:
    """A change set with its values cast to the silver types, and the changes left out, chunk by chunk (an
    iterator: read it once, each chunk computed when it is reached)."""

    kept: ChangeSet
    rejected: Iterator[Rejected]


class ChangeSet(Protocol):
    """One table segment's change set (`lakeloader.engine.base` describes its columns)."""

    @property
    def data(self) -> pa.Table | DataFrame:
        """What the engine's merge reads."""
        ...

    @property
    def schema(self) -> pa.Schema: ...

    def count(self) -> int: ...

    def count_where(self, predicate: Predicate) -> int: ...

    def counts(self, predicates: dict[str, Predicate]) -> dict[str, int]:
        """How many changes there are (`all`) and how many each predicate selects, in one pass."""
        ...

    def where(self, predicate: Predicate) -> ChangeSet: ...

    def drop(self, names: Sequence[str]) -> ChangeSet: ...

    def values_only_where(self, names: Sequence[str], predicate: Predicate) -> ChangeSet:
        """The named columns NULL in the changes `predicate` does not select."""
        ...

    def first_holding(self, column: str) -> dict:
        """(seq, seq2, source file, source line) of the first change by ordering key holding a value in
        `column` (else of the first change)."""
        ...

    def fitted(self, casts: dict[str, pa.DataType], key: Sequence[str]) -> Fitted:
        """Each column of `casts` cast to its type; a change is rejected by a column (a key column: any change; any
        other column: an upsert) whose value does not survive the cast exactly, or that `_cdc_unfit` names."""
        ...

    def without_stale_upserts(self, engine: TableEngine, tombstones_uri: str, key: Sequence[str]) -> ChangeSet:
        """Without the upserts not newer than their key's tombstone in the total order (a tombstone as new
        wins; a tombstone without a position counts as the oldest of its (seq, seq2))."""
        ...

    def as_tombstones(self, key: Sequence[str], loaded_at: datetime) -> ChangeSet:
        """The change set's rows (deletes) as tombstone rows to upsert: key, ordering key, rank, deleted at."""
        ...

    def with_surplus_deletes(self, engine: TableEngine, uri: str) -> ChangeSet:
        """A multiset's change set (`lakeloader.apply.multiset`) as its merge wants it: copies 1..n of each content
        it touches, and deletes of the copies the table holds above n (a content's template row carries them)."""
        ...

    def materialized(self) -> ChangeSet:
        """The same change set, computed once at its first use (a Spark frame read by several jobs and merges)."""
        ...

    def release(self) -> None:
        """Forget what `materialized` kept."""
        ...


def staged(engine: TableEngine, frame: DataFrame) -> ChangeSet:
    """The typed change set of a segment (a Spark frame) where the engine merges it: in the Spark job for an
    engine that runs in Spark, else collected as Arrow to the driver (delta-rs merges in this process)."""
    if engine.runs_in_spark:
        return SparkChangeSet(frame)
    return ArrowChangeSet(frame.toArrow())


def merge(
    engine: TableEngine,
    uri: str,
    change_set: ChangeSet,
    key: list[str],
    order: tuple[str, ...],
    commit_info: dict[str, str],
) -> MergeResult:
    return engine.merge(uri, change_set.data, key, order, commit_info)


# ---------------------------------------------------------------------------------------------------------------
# Arrow, in the driver (delta-rs)
# ---------------------------------------------------------------------------------------------------------------

_ARROW_COMPARE = {
    "<": pc.less,
    "<=": pc.less_equal,
    "=": pc.equal,
    "!=": pc.not_equal,
    ">=": pc.greater_equal,
    ">": pc.greater,
}


def arrow_mask(table: pa.Table, predicate: Predicate) -> pa.ChunkedArray | pa.Array:
    """Which rows of `table` a typed predicate selects (NULL where SQL's three-valued logic says unknown)."""
    if isinstance(predicate, E.Compare):
        column = table[predicate.column]
        return _ARROW_COMPARE[predicate.op](column, pa.scalar(predicate.value, column.type))
    if isinstance(predicate, E.NotNull):
        return pc.is_valid(table[predicate.column])
    if isinstance(predicate, E.Not):
        return pc.invert(arrow_mask(table, predicate.term))
    if isinstance(predicate, E.And | E.Or):
        combine = pc.and_kleene if isinstance(predicate, E.And) else pc.or_kleene
        masks = [arrow_mask(table, term) for term in predicate.terms]
        result = masks[0]
        for mask in masks[1:]:
            result = combine(result, mask)
        return result
    raise TypeError(f"not a predicate: {predicate!r}")


class ArrowChangeSet:
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @property
    def data(self) -> pa.Table:
        return self.table

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    def count(self) -> int:
        return self.table.num_rows

    def count_where(self, predicate: Predicate) -> int:
        return int(pc.sum(arrow_mask(self.table, predicate).cast(pa.int64())).as_py() or 0)

    def counts(self, predicates: dict[str, Predicate]) -> dict[str, int]:
        return {"all": self.table.num_rows, **{name: self.count_where(p) for name, p in predicates.items()}}

    def where(self, predicate: Predicate) -> ArrowChangeSet:
        return ArrowChangeSet(self.table.filter(arrow_mask(self.table, predicate)))

    def drop(self, names: Sequence[str]) -> ArrowChangeSet:
        return ArrowChangeSet(self.table.drop_columns([n for n in names if n in self.table.column_names]))

    def values_only_where(self, names: Sequence[str], predicate: Predicate) -> ArrowChangeSet:
        table = self.table
        selected = arrow_mask(table, predicate)
        for name in names:
            column = table[name]
            kept = pc.if_else(selected, column, pa.nulls(table.num_rows, column.type))
            table = table.set_column(table.schema.get_field_index(name), name, kept)
        return ArrowChangeSet(table)

    def first_holding(self, column: str) -> dict:
        holding = self.table.filter(pc.is_valid(self.table[column]))
        rows = holding if holding.num_rows else self.table
        return (
            rows.select([E.SEQ, E.SEQ2, E.SOURCE_FILE, E.SOURCE_LINE])
            .sort_by([(E.SEQ, "ascending"), (E.SEQ2, "ascending")])
            .slice(0, 1)
            .to_pylist()[0]
        )

    def fitted(self, casts: dict[str, pa.DataType], key: Sequence[str]) -> Fitted:
        change_set = original = self.table
        text_unfit = _unfit_text(change_set)  # column -> rows whose text did not fit the batch's type
        change_set = change_set.drop_columns([c for c in (E.UNFIT,) if c in change_set.column_names])
        cast_unfit: dict[str, pa.Array] = {}  # column -> rows whose value the silver type cannot hold
        for name, target in casts.items():
            cast, fits = exact_cast(change_set[name].combine_chunks(), target)
            change_set = change_set.set_column(change_set.schema.get_field_index(name), name, cast)
            cast_unfit[name] = pc.invert(fits)
        is_upsert = pc.fill_null(pc.equal(change_set[E.ACTION], E.UPSERT), False)
        rejected = pa.array([False] * change_set.num_rows, pa.bool_())
        for masks in (text_unfit, cast_unfit):
            for name, mask in masks.items():
                masks[name] = pc.and_(mask, is_upsert) if name not in key else mask
                rejected = pc.or_(rejected, masks[name])
        if not pc.any(rejected).as_py():
            return Fitted(ArrowChangeSet(change_set), iter(()))
        rows = original.filter(rejected)
        flags = [{name: mask.filter(rejected) for name, mask in m.items()} for m in (text_unfit, cast_unfit)]
        kept = ArrowChangeSet(change_set.filter(pc.invert(rejected)))
        return Fitted(kept, _arrow_chunks(rows, *flags))

    def without_stale_upserts(self, engine: TableEngine, tombstones_uri: str, key: Sequence[str]) -> ArrowChangeSet:
        change_set = self.table
        names = engine.schema(tombstones_uri).names
        held = engine.read(tombstones_uri, [*key, *(c for c in E.ORDERING_COLUMNS if c in names)])
        if E.POSITION not in held.column_names:  # written before positions: NULL, the oldest
            held = held.append_column(E.POSITION, pa.nulls(held.num_rows, pa.string()))
        tombstones = held.select([*key, *E.ORDERING_COLUMNS])
        tombstones = tombstones.rename_columns([*key, "_t_seq", "_t_seq2", "_t_position"])
        positions = pa.array(range(change_set.num_rows), pa.int64())
        # joins take only flat columns: join the keys and ordering key with the row's position, filter by position
        slim = change_set.select([*key, E.SEQ, E.SEQ2, E.POSITION, E.ACTION]).append_column("_position", positions)
        joined = slim.join(tombstones, keys=list(key), join_type="inner")
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
        return ArrowChangeSet(change_set.filter(pc.invert(pc.is_in(positions, value_set=stale.combine_chunks()))))

    def as_tombstones(self, key: Sequence[str], loaded_at: datetime) -> ArrowChangeSet:
        deletes = self.table
        tombstones = deletes.select([*key, E.SEQ, E.SEQ2, E.RANK, E.POSITION, E.ACTION]).append_column(
            E.DELETED_AT, pa.array([loaded_at] * deletes.num_rows, pa.timestamp("us", tz="UTC"))
        )
        tombstones = tombstones.set_column(
            tombstones.schema.get_field_index(E.ACTION), E.ACTION, pa.array([E.UPSERT] * deletes.num_rows)
        )
        return ArrowChangeSet(tombstones)

    def with_surplus_deletes(self, engine: TableEngine, uri: str) -> ArrowChangeSet:
        change_set = self.table
        row, occurrence = multiset.ROW_ID, multiset.OCCURRENCE
        upserts = change_set.filter(pc.equal(change_set[E.ACTION], E.UPSERT))
        wanted = upserts.group_by(row).aggregate([(occurrence, "max")])
        held = engine.read(uri, [row, occurrence])
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
        return ArrowChangeSet(pa.concat_tables([kept, deletes.select(kept.column_names).cast(kept.schema)]))

    def materialized(self) -> ArrowChangeSet:
        return self

    def release(self) -> None:
        pass


def _arrow_chunks(rows: pa.Table, text: dict[str, pa.Array], cast: dict[str, pa.Array]) -> Iterator[Rejected]:
    """Rejected changes and their flags, `REJECTED_CHUNK_ROWS` at a time."""
    for start in range(0, rows.num_rows, REJECTED_CHUNK_ROWS):
        window = slice(start, start + REJECTED_CHUNK_ROWS)
        yield Rejected(
            rows.slice(start, REJECTED_CHUNK_ROWS),
            {name: flags[window].to_pylist() for name, flags in text.items()},
            {name: flags[window].to_pylist() for name, flags in cast.items()},
        )


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


_DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"  # a date
_CLOCK = "[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,6})?"  # a time of day, to the microsecond


def text_form(target: pa.DataType) -> str | None:
    """The text that may be cast to `target` (a regular expression, whole text), or None for any text.

    Arrow and Spark each read more than the plain forms, differently: Spark trims spaces and line ends, reads
    't' and 'yes' as true, a timestamp as its date, a time of day as today's, and rounds a decimal's extra digits;
    Arrow reads '0x10' as 16. Text outside these forms is rejected by both executions, so a table's rows do not
    depend on its engine. The expressions mean the same in Java's and RE2's syntax."""
    if pa.types.is_integer(target):
        return "-?[0-9]+"
    if pa.types.is_decimal(target):  # plain notation, no more significant decimals than the scale
        return f"[-+]?[0-9]+(?:\\.[0-9]{{0,{target.scale}}}0*)?"
    if pa.types.is_floating(target):
        return "[-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?|NaN|[-+]?Infinity"
    if pa.types.is_boolean(target):
        return "(?i:true|false)|[01]"
    if pa.types.is_date(target):
        return _DATE
    if pa.types.is_timestamp(target) and target.tz is not None:  # an instant names its offset
        return f"{_DATE}[T ]{_CLOCK}(?:Z|[-+][0-9]{{2}}(?::?[0-9]{{2}})?)"
    if pa.types.is_timestamp(target):
        return f"{_DATE}(?:[T ]{_CLOCK})?"
    return None


def _whole(form: str) -> str:
    return f"\\A(?:{form})\\z"


def exact_cast(values: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """`values` cast to `target`, and which of them survive exactly (NULL does); one that does not is NULL in
    the cast. Text survives when it is in one of `text_form`'s forms and casts; any other value when it casts
    back to itself (NaN to NaN), as Spark's execution decides: Arrow's own checks let a float's or a decimal's
    rounding, a timestamp's truncation to a date and a number's truth value (2 -> true) through, and refuse
    exact ones (2**40 as a float). The value-by-value fallback only runs for an array Arrow cannot cast whole."""
    textual = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    cast = _cast(values, target, safe=textual or not pa.types.is_floating(target))  # checked, but for floats
    if textual:
        form = text_form(target)
        exact = pc.match_substring_regex(values, _whole(form)) if form is not None else pc.is_valid(values)
    else:
        back = _cast(cast, values.type, safe=False)
        exact = pc.equal(back, values)
        if pa.types.is_floating(values.type):
            exact = pc.or_(exact, pc.and_(pc.is_nan(back), pc.is_nan(values)))
    fits = pc.or_(pc.is_null(values), pc.and_(pc.is_valid(cast), pc.fill_null(exact, False)))
    return pc.if_else(fits, cast, pa.scalar(None, target)), fits


def _cast(values: pa.Array, target: pa.DataType, safe: bool) -> pa.Array:
    """`values` cast to `target`: all at once, else value by value (NULL where a value does not cast). Detours
    where Arrow's own cast falls short: a decimal becomes a float through its text (Arrow's conversion is not
    correctly rounded: 0.10 -> 0.099999994); a number becomes a decimal of a smaller precision than its type
    needs through the widest decimal of that scale (Arrow refuses the precision outright); a boolean and a
    decimal, which Arrow does not cast into each other, go through an integer. A cast to a decimal is always
    checked: unchecked, Arrow keeps a value beyond the precision."""
    safe = safe or pa.types.is_decimal(target)
    source = values.type
    if pa.types.is_decimal(source) and pa.types.is_floating(target):
        return _cast(pc.cast(values, pa.string()), target, safe)
    if any(pa.types.is_boolean(a) and pa.types.is_decimal(b) for a, b in ((source, target), (target, source))):
        return _cast(_cast(values, pa.int64(), safe), target, safe)
    numeric = pa.types.is_integer(source) or pa.types.is_decimal(source)
    if numeric and pa.types.is_decimal(target) and target.precision < MAX_DECIMAL_PRECISION:
        values = _cast(values, pa.decimal128(MAX_DECIMAL_PRECISION, target.scale), safe)
    try:
        return pc.cast(values, target, safe=safe)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return pa.array([_cast_one(v, target, safe) for v in values], target)


def _cast_one(value: pa.Scalar, target: pa.DataType, safe: bool) -> object:
    try:
        return value.cast(target, safe=safe).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


# ---------------------------------------------------------------------------------------------------------------
# Spark, in the job's executors (Delta on Spark)
# ---------------------------------------------------------------------------------------------------------------


class SparkChangeSet:
    def __init__(self, frame: DataFrame, cached: bool = False) -> None:
        self.frame = frame
        self._cached = cached
        self._count: int | None = None

    @property
    def data(self) -> DataFrame:
        return self.frame

    @property
    def schema(self) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(self.frame.schema, timestamp_utc=True)

    def count(self) -> int:
        if self._count is None:
            self._count = self.frame.count()
        return self._count

    def count_where(self, predicate: Predicate) -> int:
        return self.frame.where(_sql(predicate)).count()

    def counts(self, predicates: dict[str, Predicate]) -> dict[str, int]:
        from pyspark.sql import functions as F

        sums = [
            F.sum(F.when(F.expr(_sql(p)), 1).otherwise(0)).alias(f"_n{i}") for i, p in enumerate(predicates.values())
        ]
        (row,) = self.frame.agg(F.count(F.lit(1)).alias("_all"), *sums).collect()
        found = {name: int(row[f"_n{i}"] or 0) for i, name in enumerate(predicates)}
        self._count = int(row["_all"])
        return {"all": int(row["_all"]), **found}

    def where(self, predicate: Predicate) -> SparkChangeSet:
        return SparkChangeSet(self.frame.where(_sql(predicate)))

    def drop(self, names: Sequence[str]) -> SparkChangeSet:
        return SparkChangeSet(self.frame.drop(*[n for n in names if n in self.frame.columns]))

    def values_only_where(self, names: Sequence[str], predicate: Predicate) -> SparkChangeSet:
        from pyspark.sql import functions as F

        selected = F.expr(_sql(predicate))
        frame = self.frame
        for name in names:
            column = _col(name)
            frame = frame.withColumn(name, F.when(selected, column).otherwise(F.lit(None).cast(_type(frame, name))))
        return SparkChangeSet(frame)

    def first_holding(self, column: str) -> dict:
        from pyspark.sql import functions as F

        metadata = [E.SEQ, E.SEQ2, E.SOURCE_FILE, E.SOURCE_LINE]
        order = [F.col(E.SEQ).asc(), F.col(E.SEQ2).asc()]
        holding = self.frame.where(_col(column).isNotNull()).select(*metadata).orderBy(*order).limit(1)
        first = holding.toArrow().to_pylist()
        if not first:
            first = self.frame.select(*metadata).orderBy(*order).limit(1).toArrow().to_pylist()
        return first[0]

    def fitted(self, casts: dict[str, pa.DataType], key: Sequence[str]) -> Fitted:
        """The cast is Spark's `try_cast`; a value survives it exactly when it casts back to itself (text: when it
        casts at all), which refuses what Arrow's safe cast refuses: overflow, a decimal's or a float's rounding,
        a timestamp's truncation, a number's truth value."""
        from pyspark.sql import functions as F

        from lakeloader.engine.deltaspark import spark_type

        frame = self.frame
        is_upsert = F.coalesce(F.col(E.ACTION) == E.UPSERT, F.lit(False))
        text_names: list[str] = []
        if E.UNFIT in frame.columns:  # the few column names whose text did not fit (a small collect)
            named = frame.select(F.explode(E.UNFIT).alias("name")).distinct()
            text_names = sorted(r["name"] for r in named.collect())
        flags: dict[str, Column] = {}  # flag column -> whether the row is rejected by that column
        labels: list[tuple[str, str, str]] = []  # (flag column, text|cast, column name)
        for name in text_names:
            mask = F.coalesce(F.array_contains(F.col(E.UNFIT), name), F.lit(False))
            flag = f"_cdc_flag_{len(labels)}"
            flags[flag] = mask if name in key else mask & is_upsert
            labels.append((flag, "text", name))
        casted: dict[str, Column] = {}
        for name, target in casts.items():
            source = _col(name)
            cast = source.try_cast(spark_type(target))
            textual = _type(frame, name) == "string"
            exact = cast.isNotNull() if textual else cast.try_cast(_type(frame, name)).eqNullSafe(source)
            if textual and (form := text_form(target)) is not None:
                exact = exact & source.rlike(_whole(form))
            if _type(frame, name) == "binary" and pa.types.is_string(target):  # Spark does not check the bytes
                exact = exact & F.is_valid_utf8(cast)
            fits = source.isNull() | F.coalesce(exact, F.lit(False))
            casted[name] = F.when(fits, cast)
            flag = f"_cdc_flag_{len(labels)}"
            flags[flag] = ~fits if name in key else ~fits & is_upsert
            labels.append((flag, "cast", name))
        kept_columns = [casted[c].alias(c) if c in casted else _col(c) for c in frame.columns if c != E.UNFIT]
        if not flags:
            return Fitted(SparkChangeSet(frame.select(*kept_columns)), iter(()))
        flagged = frame.select(*[_col(c) for c in frame.columns], *[f.alias(n) for n, f in flags.items()])
        rejected = reduce(operator.or_, [F.col(n) for n in flags])
        count = flagged.where(rejected).count()
        if not count:
            return Fitted(SparkChangeSet(frame.select(*kept_columns)), iter(()))
        kept = SparkChangeSet(flagged.where(~rejected).select(*kept_columns))
        spread = [_col(c) for c in (*key, E.SEQ, E.SEQ2, E.SOURCE_FILE, E.SOURCE_LINE) if c in frame.columns]
        return Fitted(kept, _spark_chunks(flagged.where(rejected), count, spread, labels))

    def without_stale_upserts(self, engine: TableEngine, tombstones_uri: str, key: Sequence[str]) -> SparkChangeSet:
        """A left join with the tombstones (one per key), the comparison being the Delta engine's `newer`: a
        tombstone is as new as or newer than the change when the change is not newer than it."""
        from pyspark.sql import functions as F

        from lakeloader.engine.deltaspark import newer

        held = engine.spark_frame(self.frame.sparkSession, tombstones_uri)
        columns = set(held.columns)
        tombstones = held.select(*[_col(c) for c in [*key, *E.ORDERING_COLUMNS] if c in columns])
        tombstones = tombstones.withColumn("_cdc_tombstone", F.lit(True))
        source = self.frame.alias("s")
        joined = source.join(
            tombstones.alias("t"), on=[F.col(f"s.{_quoted(k)}") == F.col(f"t.{_quoted(k)}") for k in key], how="left"
        )
        change_newer = F.expr(newer(E.ORDERING_COLUMNS, set(self.frame.columns), columns))
        stale = (F.col(f"s.{_quoted(E.ACTION)}") == E.UPSERT) & F.col("t._cdc_tombstone").isNotNull() & ~change_newer
        kept = joined.where(~F.coalesce(stale, F.lit(False)))
        return SparkChangeSet(kept.select(*[F.col(f"s.{_quoted(c)}") for c in self.frame.columns]))

    def as_tombstones(self, key: Sequence[str], loaded_at: datetime) -> SparkChangeSet:
        from pyspark.sql import functions as F

        columns = [*key, E.SEQ, E.SEQ2, E.RANK, E.POSITION]
        return SparkChangeSet(
            self.frame.select(
                *[_col(c) for c in columns],
                F.lit(E.UPSERT).alias(E.ACTION),
                F.lit(loaded_at).cast("timestamp").alias(E.DELETED_AT),
            )
        )

    def with_surplus_deletes(self, engine: TableEngine, uri: str) -> SparkChangeSet:
        """As `ArrowChangeSet.with_surplus_deletes`; a content's template is any of its rows (a delete reads only
        its key)."""
        from pyspark.sql import functions as F

        row, occurrence = multiset.ROW_ID, multiset.OCCURRENCE
        change_set = self.frame
        wanted = change_set.where(F.col(E.ACTION) == E.UPSERT).groupBy(row).agg(F.max(occurrence).alias("_wanted"))
        held = engine.spark_frame(change_set.sparkSession, uri).select(row, occurrence)
        held = held.join(change_set.select(row).distinct(), row, "left_semi").join(wanted, row, "left")
        surplus = held.where(F.col(occurrence) > F.coalesce(F.col("_wanted"), F.lit(0))).select(row, occurrence)
        template = change_set.dropDuplicates([row]).drop(occurrence, E.ACTION)
        deletes = surplus.join(template, row, "inner").withColumn(E.ACTION, F.lit(E.DELETE))
        kept = change_set.where(F.col(occurrence) > 0)
        return SparkChangeSet(kept.unionByName(deletes.select(*kept.columns)))

    def materialized(self) -> SparkChangeSet:
        """Persisted in the executors (memory, else their disks) at its first use (the counts that follow): the
        counts, the merge and the tombstones read the same rows, also though the merge changes the tables the
        change set was read against (tombstones, a multiset's own table)."""
        from lakeloader.spark import CACHED

        return SparkChangeSet(self.frame.persist(CACHED), cached=True)

    def release(self) -> None:
        if self._cached:
            self.frame.unpersist()


def _spark_chunks(
    rejected: DataFrame, count: int, spread: list[Column], labels: list[tuple[str, str, str]]
) -> Iterator[Rejected]:
    """The `count` rejected changes (with their flag columns, `labels`: flag, text|cast, column name) as Arrow
    chunks of about `REJECTED_CHUNK_ROWS`: the changes are spread over the chunks by a hash of `spread` (key and
    origin), and computed once for all chunks when there is more than one."""
    from pyspark.sql import functions as F

    from lakeloader.spark import CACHED

    chunks = -(-count // REJECTED_CHUNK_ROWS)
    if chunks > 1:
        rejected = rejected.persist(CACHED)
    bucket = F.pmod(F.xxhash64(*spread), F.lit(chunks))
    try:
        for chunk in range(chunks):
            rows = (rejected.where(bucket == chunk) if chunks > 1 else rejected).toArrow()
            found: dict[str, dict[str, list[bool]]] = {"text": {}, "cast": {}}
            for flag, kind, name in labels:
                found[kind][name] = rows[flag].to_pylist()
            yield Rejected(rows.drop_columns([flag for flag, _, _ in labels]), found["text"], found["cast"])
    finally:
        if chunks > 1:
            rejected.unpersist()


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(_quoted(name))


def _type(frame: DataFrame, name: str) -> str:
    return frame.schema[name].dataType.simpleString()


def _sql(predicate: Predicate) -> str:
    from lakeloader.engine.deltaspark import predicate_sql

    return predicate_sql(predicate)
