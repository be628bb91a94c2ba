"""The embedded table engine: delta-rs (`deltalake`), which needs no JVM jars.

Reads always go through `DeltaTable.scan()`: `to_pyarrow_table()` returns NULL columns on tables with
column mapping (see ENVIRONMENT.md).

File statistics that lie: delta-rs 1.6 writes the min/max of a decimal column as a double (and clamped to the
int64 range), so a DataWorks sequenceId of 19 digits, 1620457642589000101, is recorded as 1620457642589000192,
and a BIGINT UNSIGNED key of 2^63 as 2^63-1. Anything that prunes files on those bounds then skips the file
that holds the value: a merge inserts the change again instead of updating or deleting the row, a TRUNCATE's
delete of the rows older than it deletes none, a count answers from the bounds. Before a write, a table whose
decimal column holds (or is about to hold) a value a double does not hold exactly gets the column left out of
the columns whose statistics are collected (`delta.dataSkippingStatsColumns`, a plain table property, no table
feature); delta-rs then ignores that column's statistics in the files written before, too, so neither merges
nor other readers prune on them. While every value is exact as a double (integers up to 2^53, decimals of up
to 15 digits) the statistics are exact and merges keep pruning on them (`DeltaRsEngine._trust_statistics`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from functools import partial, wraps
from itertools import pairwise
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, QueryBuilder, write_deltalake
from deltalake.schema import Field

from lakeloader.engine.base import (
    CHECKPOINT_INTERVAL,
    FILE_SIZE_PROPERTY,
    NULL_AS_OLDEST,
    PARTIAL,
    STATS_COLUMNS_PROPERTY,
    Dialect,
    MergeResult,
    Predicate,
    UnreadableTable,
    Value,
    converts_exactly,
    merge_plan,
    render_newer,
    render_predicate,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def quote(name: str) -> str:
    """A SQL identifier for delta-rs predicates: every name is quoted, embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


DIALECT = Dialect(quote, literal, "array_has")


def value_sql(value: Value) -> str:
    """A Python value as a delta-rs SQL literal: a Decimal cast to a decimal of its scale, a datetime or date
    as its ISO text (which delta-rs coerces to the column's type)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        scale = max(0, -exponent) if isinstance(exponent, int) else 0
        return f"CAST({literal(str(value))} AS DECIMAL(38,{scale}))"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime | date):
        return literal(value.isoformat())
    if isinstance(value, str):
        return literal(value)
    raise TypeError(f"no SQL literal for {type(value).__name__} {value!r}")


def predicate_sql(predicate: Predicate) -> str:
    """A typed predicate (`lakeloader.engine.base`) in delta-rs' SQL."""
    return render_predicate(predicate, quote, value_sql)


EXACT_DIGITS = 15  # a double holds every decimal of up to 15 digits, as written and read back
EXACT_INTEGERS = Decimal(2**53)  # and every integer up to 2^53


def untrusted_statistics(schema: pa.Schema) -> list[str]:
    """Columns whose file statistics delta-rs 1.6 may write wrongly: decimals that can hold a value a double
    does not (their min/max are written as doubles)."""
    return [f.name for f in schema if pa.types.is_decimal(f.type) and f.type.precision > EXACT_DIGITS]


def _exact_below(decimal: pa.Decimal128Type) -> Decimal:
    """The magnitude from which a value of the decimal type may not be exact as a double."""
    return EXACT_INTEGERS if decimal.scale <= 0 else Decimal(10) ** (EXACT_DIGITS - decimal.scale)


def _inexact(values: Iterable[Decimal | None], decimal: pa.Decimal128Type) -> bool:
    limit = _exact_below(decimal)
    return any(value is not None and abs(value) >= limit for value in values)


def inexact_as_doubles(data: pa.Table, schema: pa.Schema, columns: list[str]) -> set[str]:
    """Of `columns` (decimals of `schema`), those holding a value a double does not hold exactly in `data`."""
    found = set()
    for name in columns:
        if name in data.column_names and data.num_rows:
            bounds = pc.min_max(data[name].cast(schema.field(name).type)).as_py()
            if _inexact((bounds["min"], bounds["max"]), schema.field(name).type):
                found.add(name)
    return found


def _logged_inexact(table: DeltaTable, schema: pa.Schema, columns: list[str]) -> set[str]:
    """Of `columns`, those whose recorded file statistics hold a value a double does not hold exactly (rounded)."""
    if not columns:
        return set()
    files = pa.table(table.get_add_actions(flatten=True))
    found = set()
    for name in columns:
        for bound in (f"min.{name}", f"max.{name}"):
            if bound in files.column_names and _inexact(files[bound].to_pylist(), schema.field(name).type):
                found.add(name)
    return found


def _all_with_statistics(schema: pa.Schema) -> dict[str, str]:
    """A new table's statistics columns: every column, listed when some may need leaving out later
    (`_trust_statistics`)."""
    if not untrusted_statistics(schema):
        return {}
    return {STATS_COLUMNS_PROPERTY: ",".join(_stats_name(f.name) for f in schema)}


def _without_statistics(table: DeltaTable) -> set[str]:
    """The table's columns left out of `delta.dataSkippingStatsColumns` (none when it is not set)."""
    listed = table.metadata().configuration.get(STATS_COLUMNS_PROPERTY)
    if listed is None:
        return set()
    return set(table.schema().to_arrow().names) - _listed(listed)


def _stats_name(name: str) -> str:
    """A column name as `delta.dataSkippingStatsColumns` lists it (backticks unless plain; `a.b` is a path)."""
    if name.replace("_", "").isalnum() and name.isascii():
        return name
    return "`" + name.replace("`", "``") + "`"


def _listed(names: str) -> set[str]:
    """The column names a `delta.dataSkippingStatsColumns` value lists (as `_stats_name` writes them)."""
    listed, current, quoted, i = set(), "", False, 0
    while i < len(names):
        char = names[i]
        if char == "`" and quoted and names[i + 1 : i + 2] == "`":
            current, i = current + "`", i + 2
            continue
        if char == "`":
            quoted = not quoted
        elif char == "," and not quoted:
            listed.add(current.strip())
            current = ""
        else:
            current += char
        i += 1
    return listed | {current.strip()} if current.strip() else listed


def newer(
    order_columns: tuple[str, ...], source: str = "s", target: str = "t", absent: frozenset[str] = frozenset()
) -> str:
    """SQL for 'the source row's ordering key is greater than the target row's' (lexicographic, a NULL in a
    column of NULL_AS_OLDEST the oldest value, as is such a column that a side lacks: `absent` holds
    'side.column'); with no ordering columns every source row counts as newer."""

    def value(side: str, column: str) -> str:
        if column not in NULL_AS_OLDEST:
            return f"{side}.{quote(column)}"
        if f"{side}.{column}" in absent:
            return value_sql(NULL_AS_OLDEST[column])
        return f"coalesce({side}.{quote(column)}, {value_sql(NULL_AS_OLDEST[column])})"

    return render_newer(order_columns, partial(value, source), partial(value, target))


HELD_TABLES = 64  # silver and tombstone tables of 32 source tables: an hour of most sources, all held
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _commits(
    method: Callable[Concatenate[DeltaRsEngine, str, _P], _R],
) -> Callable[Concatenate[DeltaRsEngine, str, _P], _R]:
    """A method that commits to the table at its `uri` through the held `DeltaTable`, which follows its own
    commits: after a failure the held table is let go, as what the log then holds is not known."""

    @wraps(method)
    def committing(engine: DeltaRsEngine, uri: str, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(engine, uri, *args, **kwargs)
        except BaseException:
            engine.let_go(uri)
            raise

    return committing


def _writes_by_uri(
    method: Callable[Concatenate[DeltaRsEngine, str, _P], _R],
) -> Callable[Concatenate[DeltaRsEngine, str, _P], _R]:
    """A method that writes the table at its `uri` by the URI (`write_deltalake`, `DeltaTable.create`), which a
    held `DeltaTable` does not follow: the held table is let go, so the next use loads the table again."""

    @wraps(method)
    def writing(engine: DeltaRsEngine, uri: str, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(engine, uri, *args, **kwargs)
        finally:
            engine.let_go(uri)

    return writing


class DeltaRsEngine:
    runs_in_spark = False  # the change set is an Arrow table in this process

    def __init__(self, storage_options: dict[str, str] | None = None, streamed_merge: bool = False) -> None:
        """`streamed_merge` is delta-rs' `streamed_exec`. Off by default: the change set is an in-memory Arrow
        table anyway, and only a non-streamed merge derives a key-range filter from it, so the merge skips
        the files outside the change set's keys (a key-local change set on key-ordered files reads a few
        files instead of the whole table; see docs/performance.md)."""
        self.storage_options = storage_options
        self.streamed_merge = streamed_merge
        self._held: OrderedDict[str, DeltaTable] | None = None

    @contextmanager
    def tables_held(self) -> Iterator[None]:
        """Within it, each table is loaded once and kept: apply reads a table's schema, version and properties
        about 15 times per table and hour, and each load lists the log and reads its checkpoint and commits
        (2.5 ms on a local disk, 30-60 on a loopback S3). A held `DeltaTable` follows the commits made through it
        (`_commits`); a write by URI lets it go (`_writes_by_uri`). Only for a stretch in which nobody else
        commits to these tables (apply, under the source's lock): a commit from elsewhere would go unseen.
        Nested uses share the outermost one's tables. At most `HELD_TABLES` are held, the least recently used let
        go: a held table keeps its log's list of files (about 0.6 KB a file: 1.7 MiB for one of 3,000 files)."""
        if self._held is not None:
            yield
            return
        self._held = OrderedDict()
        try:
            yield
        finally:
            self._held = None

    def _table(self, uri: str) -> DeltaTable:
        if self._held is None:
            return DeltaTable(uri, storage_options=self.storage_options)
        if uri in self._held:
            self._held.move_to_end(uri)
            return self._held[uri]
        table = self._held[uri] = DeltaTable(uri, storage_options=self.storage_options)
        if len(self._held) > HELD_TABLES:
            self._held.popitem(last=False)
        return table

    def let_go(self, uri: str) -> None:
        if self._held is not None:
            self._held.pop(uri, None)

    def exists(self, uri: str) -> bool:
        """Whether the log holds a commit: a table held is one; otherwise a listing of the log, where loading
        the table reads its checkpoint and commits (apply asks about 9 times per table and hour: 0.1 ms each
        rather than 2.5 on a local disk, 8 ms rather than 60 on a loopback S3). An unreadable store raises, as
        loading it does."""
        if self._held is not None and uri in self._held:
            return True
        return DeltaTable.is_deltatable(uri, storage_options=self.storage_options)

    @_writes_by_uri
    def create(
        self,
        uri: str,
        schema: pa.Schema,
        properties: dict[str, str],
        commit_info: dict[str, str],
        file_size: int | None = None,
    ) -> None:
        configuration = {FILE_SIZE_PROPERTY: str(file_size)} if file_size else {}
        DeltaTable.create(
            uri,
            schema=schema,
            mode="ignore",
            description=json.dumps(properties, sort_keys=True),
            configuration={**configuration, **CHECKPOINT_INTERVAL, **_all_with_statistics(schema)},
            storage_options=self.storage_options,
            commit_properties=CommitProperties(custom_metadata=commit_info),
        )

    def properties(self, uri: str) -> dict[str, str]:
        return _properties(self._table(uri))

    @_commits
    def set_properties(self, uri: str, properties: dict[str, str], commit_info: dict[str, str]) -> None:
        table = self._table(uri)
        merged = {**_properties(table), **properties}
        table.alter.set_table_description(
            json.dumps(merged, sort_keys=True), commit_properties=CommitProperties(custom_metadata=commit_info)
        )

    def schema(self, uri: str) -> pa.Schema:
        return pa.schema(self._table(uri).schema().to_arrow())

    @_commits
    def add_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None:
        delta_fields = [Field.from_arrow(field) for field in fields]
        self._table(uri).alter.add_columns(
            delta_fields, commit_properties=CommitProperties(custom_metadata=commit_info)
        )
        self._trust_statistics(uri, commit_info)

    def widen_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None:
        """delta-rs has no ALTER COLUMN TYPE (and the type widening table feature is one delta-rs 1.6 cannot
        write): the table is rewritten with the columns cast, its description and configuration kept."""
        types = {f.name: f.type for f in fields}
        schema = pa.schema([f.with_type(types.get(f.name, f.type)) for f in self.schema(uri)])

        def cast(batch: pa.Table) -> pa.Table:
            for name, arrow in types.items():
                batch = batch.set_column(batch.schema.get_field_index(name), name, pc.cast(batch[name], arrow))
            return batch

        self.rewrite(uri, schema, cast, commit_info)

    @_commits
    def _trust_statistics(self, uri: str, commit_info: dict[str, str], incoming: pa.Table | None = None) -> DeltaTable:
        """Keep statistics off each `untrusted_statistics` column once it holds a value a double does not hold
        exactly: in the data about to be written (`incoming`), or as recorded statistics (files written before,
        perhaps by an earlier version that trusted them). Until then its statistics are exact and merges prune
        on them; afterwards delta-rs ignores them, in the files written before too (see the module's docstring).
        The property lists every other column (added ones too). Returns the table as it is afterwards."""
        table = self._table(uri)
        schema = pa.schema(table.schema().to_arrow())
        current = table.metadata().configuration.get(STATS_COLUMNS_PROPERTY)
        untrusted = untrusted_statistics(schema)
        excluded = _without_statistics(table) & set(untrusted)
        unchecked = [n for n in untrusted if n not in excluded]
        if incoming is not None:
            excluded |= inexact_as_doubles(incoming, schema, unchecked)
        excluded |= _logged_inexact(table, schema, [n for n in unchecked if n not in excluded])
        if not untrusted and current is None:
            return table
        wanted = ",".join(_stats_name(f.name) for f in schema if f.name not in excluded)
        if wanted == current:
            return table
        commit = CommitProperties(custom_metadata=commit_info)
        table.alter.set_table_properties({STATS_COLUMNS_PROPERTY: wanted}, commit_properties=commit)
        return table  # a DeltaTable follows its own commits

    @_commits
    def merge(
        self,
        uri: str,
        changes: pa.Table | DataFrame,
        key_columns: list[str],
        order_columns: tuple[str, ...],
        commit_info: dict[str, str],
    ) -> MergeResult:
        if not isinstance(changes, pa.Table):
            raise TypeError("delta-rs merges an Arrow change set (a Spark frame is the delta_spark engine's)")
        table = self._trust_statistics(uri, commit_info, changes)
        target_columns = table.schema().to_arrow().names
        has_partial = PARTIAL in changes.column_names and bool(pc.any(changes[PARTIAL]).as_py())
        plan = merge_plan(changes.column_names, has_partial, target_columns, key_columns, DIALECT)
        absent = frozenset(
            [f"t.{c}" for c in order_columns if c not in target_columns]
            + [f"s.{c}" for c in order_columns if c not in changes.column_names]
        )
        is_newer = newer(order_columns, absent=absent)
        metrics = (
            table.merge(
                changes.select(plan.source_columns),
                predicate=plan.on,
                source_alias="s",
                target_alias="t",
                streamed_exec=self.streamed_merge,
                commit_properties=CommitProperties(custom_metadata=commit_info),
            )
            .when_matched_delete(predicate=f"{plan.is_delete} AND {is_newer}")
            .when_matched_update(updates=plan.updates, predicate=f"{plan.is_upsert} AND {is_newer}")
            .when_not_matched_insert(updates=plan.inserts, predicate=plan.is_upsert)
            .execute()
        )
        return MergeResult(
            inserted=metrics["num_target_rows_inserted"],
            updated=metrics["num_target_rows_updated"],
            deleted=metrics["num_target_rows_deleted"],
            version=table.version(),
        )

    @_commits
    def delete_where(self, uri: str, predicate: Predicate, commit_info: dict[str, str]) -> int:
        table = self._trust_statistics(uri, commit_info)
        commit = CommitProperties(custom_metadata=commit_info)
        metrics = table.delete(predicate_sql(predicate), commit_properties=commit)
        return int(metrics.get("num_deleted_rows", 0))

    def rewrite(
        self, uri: str, schema: pa.Schema, transform: Callable[[pa.Table], pa.Table], commit_info: dict[str, str]
    ) -> None:
        self._overwrite(uri, schema, transform, commit_info)
        self._trust_statistics(uri, commit_info)

    @_writes_by_uri
    def _overwrite(
        self, uri: str, schema: pa.Schema, transform: Callable[[pa.Table], pa.Table], commit_info: dict[str, str]
    ) -> None:
        source = pa.RecordBatchReader.from_stream(self._table(uri).scan())
        batches = (b for batch in source for b in transform(pa.Table.from_batches([batch])).cast(schema).to_batches())
        write_deltalake(
            uri,
            pa.RecordBatchReader.from_batches(schema, batches),
            mode="overwrite",
            schema_mode="overwrite",
            storage_options=self.storage_options,
            commit_properties=CommitProperties(custom_metadata=commit_info),
        )

    def clustered(self, uri: str, column: str, file_size: int) -> bool:
        """Whether the table targets `file_size` and its files hold disjoint ranges of `column` (from the
        per-file statistics in the log; a file without statistics counts as overlapping)."""
        table = self._table(uri)
        if not _aims_at(table, file_size):
            return False
        files = pa.table(table.get_add_actions(flatten=True))
        if files.num_rows <= 1:
            return True
        low, high = f"min.{column}", f"max.{column}"
        if low not in files.column_names or high not in files.column_names:
            return False
        ranges = list(zip(files[low].to_pylist(), files[high].to_pylist(), strict=True))
        if any(bound is None for bounds in ranges for bound in bounds):
            return False
        return all(later[0] > earlier[1] for earlier, later in pairwise(sorted(ranges)))

    @_commits
    def recluster(self, uri: str, columns: list[str], file_size: int, commit_info: dict[str, str]) -> int:
        """Lay the table out in files of about `file_size` bytes, and make that the size merges write; returns
        the files written. A one-column key is rewritten in key order (delta-rs' Z-order of one column). A
        composite key, or a key column without statistics (`_trust_statistics`: merges cannot prune on it),
        only has its small files merged, in the order they were written: Z-order over several columns
        interleaves them, so each file spans a wide range of every key column and a merge of recent keys
        rewrites several times the bytes (docs/performance.md)."""
        commit = CommitProperties(custom_metadata=commit_info)
        table = self._table(uri)
        configuration = {FILE_SIZE_PROPERTY: str(file_size), **CHECKPOINT_INTERVAL}  # a table created before has none
        if any(table.metadata().configuration.get(name) != value for name, value in configuration.items()):
            table.alter.set_table_properties(configuration, commit_properties=commit)
        optimize = table.optimize
        if len(columns) == 1 and columns[0] not in _without_statistics(table):
            metrics = optimize.z_order(columns, target_size=file_size, commit_properties=commit)
        else:
            metrics = optimize.compact(target_size=file_size, commit_properties=commit)
        return int(metrics["numFilesAdded"])

    def read(self, uri: str, columns: Sequence[str] | None = None) -> pa.Table:
        chosen = None if columns is None else list(columns)
        table = pa.table(pa.RecordBatchReader.from_stream(self._table(uri).scan(columns=chosen)))
        return table.cast(pa.schema([_plain(f) for f in table.schema]))

    @_writes_by_uri
    def append(self, uri: str, rows: pa.Table) -> None:
        write_deltalake(uri, rows, mode="append", storage_options=self.storage_options)

    @_writes_by_uri
    def replace_with(self, uri: str, source_uri: str, commit_info: dict[str, str]) -> None:
        """Our properties live in the table description (`properties`), so the description is what is kept."""
        built = self._table(source_uri)
        description = (self._table(uri) if self.exists(uri) else built).metadata().description
        write_deltalake(
            uri,
            built.to_pyarrow_dataset().scanner().to_reader(),
            mode="overwrite",
            schema_mode="overwrite",
            description=description,
            storage_options=self.storage_options,
            commit_properties=CommitProperties(custom_metadata=commit_info),
        )

    def spark_frame(self, spark: SparkSession, uri: str) -> DataFrame:
        """Read from the table's active Parquet files (this Spark has no Delta reader): the Delta schema gives
        every file the same columns, column mapping is undone; deletion vectors cannot be applied so."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from lakeloader.core.storage import spark_path

        table = self._table(uri)
        uses_vectors = "deletionVectors" in (table.protocol().reader_features or [])
        if uses_vectors and pa.table(pa.RecordBatchReader.from_stream(table.deletion_vectors())).num_rows:
            raise UnreadableTable(f"{uri} has deletion vectors; purge them (REORG TABLE … APPLY (PURGE)) to reconcile")
        logical = T.StructType.fromJson(json.loads(table.schema().to_json()))
        physical = T.StructType(
            [T.StructField(f.metadata.get("delta.columnMapping.physicalName", f.name), f.dataType) for f in logical]
        )
        files = [spark_path(u) if "://" not in u else u.replace("s3://", "s3a://", 1) for u in table.file_uris()]
        frame = spark.read.schema(physical).parquet(*files) if files else spark.createDataFrame([], physical)
        # each name as one Spark identifier (backticks, its own doubled): a `.` or backtick in it is no path
        exact = [F.col("`" + p.name.replace("`", "``") + "`") for p in physical]
        return frame.select(*[c.alias(f.name) for c, f in zip(exact, logical, strict=True)])

    def version(self, uri: str) -> int:
        return self._table(uri).version()

    def row_count(self, uri: str, where: Predicate | None = None) -> int:
        """A condition is counted over every row, not as a filter: a filter prunes files on their statistics,
        which a read cannot leave out as a write does (`_trust_statistics`), and may answer from them."""
        query = QueryBuilder().register("t", self._table(uri))
        counted = "count(*)" if where is None else f"coalesce(sum(CASE WHEN {predicate_sql(where)} THEN 1 END), 0)"
        return int(pa.table(query.execute(f"SELECT {counted} AS n FROM t"))["n"][0].as_py())

    def converts(self, uri: str, column: str, arrow: pa.DataType) -> bool:
        batches = pa.RecordBatchReader.from_stream(self._table(uri).scan(columns=[column]))
        return all(converts_exactly(batch.column(0), arrow) for batch in batches)


def _properties(table: DeltaTable) -> dict[str, str]:
    """Delta's table configuration only takes delta.* keys, so ours live in the table description."""
    description = table.metadata().description
    try:
        return dict(json.loads(description)) if description else {}
    except ValueError:
        return {}


def _aims_at(table: DeltaTable, file_size: int) -> bool:
    """Whether the table's writes aim at files of `file_size` bytes."""
    return table.metadata().configuration.get(FILE_SIZE_PROPERTY) == str(file_size)


def _plain(field: pa.Field) -> pa.Field:
    """string_view/binary_view (what scan() yields) as plain string/binary, so results compare simply."""
    if pa.types.is_string_view(field.type):
        return field.with_type(pa.string())
    if pa.types.is_binary_view(field.type):
        return field.with_type(pa.binary())
    return field
