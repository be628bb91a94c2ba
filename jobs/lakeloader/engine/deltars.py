"""The embedded table engine: delta-rs (`deltalake`), which needs no JVM jars.

Reads always go through `DeltaTable.scan()`: `to_pyarrow_table()` returns NULL columns on tables with
column mapping (see ENVIRONMENT.md).

File statistics that lie: delta-rs 1.6 writes the min/max of a decimal column with scale 0 and precision of 19
or more (BIGINT UNSIGNED's decimal(20,0), decimal(38,0) ordering keys) clamped to the int64 range, so a file
holding 2^63 records max 2^63-1, and a merge's key-range pruning then skips the file that holds the key (the
change is inserted again instead of updating or deleting it). Every table this engine writes therefore lists
the columns whose statistics are collected (`delta.dataSkippingStatsColumns`, a plain table property, no
table feature) without such columns; delta-rs then ignores those columns' statistics in files written before,
too, so neither merges nor other readers prune on them (`untrusted_statistics`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, QueryBuilder, write_deltalake
from deltalake.exceptions import TableNotFoundError
from deltalake.schema import Field

from lakeloader.engine.base import (
    ACTION,
    DELETE,
    FILE_SIZE_PROPERTY,
    METADATA_COLUMNS,
    PARTIAL,
    PRESENT,
    STAGING_COLUMNS,
    STATS_COLUMNS_PROPERTY,
    UPSERT,
    MergeResult,
)


def quote(name: str) -> str:
    """A SQL identifier for delta-rs predicates: every name is quoted, embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def untrusted_statistics(schema: pa.Schema) -> list[str]:
    """Columns whose file statistics delta-rs 1.6 may write wrongly: decimals of scale 0 that can exceed int64
    (their min/max are clamped to it)."""
    return [f.name for f in schema if pa.types.is_decimal(f.type) and f.type.scale == 0 and f.type.precision >= 19]


def statistics_configuration(schema: pa.Schema) -> dict[str, str]:
    """The table property that keeps statistics off the `untrusted_statistics` columns (empty: none needs it)."""
    untrusted = set(untrusted_statistics(schema))
    if not untrusted:
        return {}
    trusted = [f.name for f in schema if f.name not in untrusted]
    return {STATS_COLUMNS_PROPERTY: ",".join(_stats_name(name) for name in trusted)}


def _stats_name(name: str) -> str:
    """A column name as `delta.dataSkippingStatsColumns` lists it (backticks unless plain; `a.b` is a path)."""
    if name.replace("_", "").isalnum() and name.isascii():
        return name
    return "`" + name.replace("`", "``") + "`"


def newer(order_columns: tuple[str, ...], source: str = "s", target: str = "t") -> str:
    """SQL for 'the source row's ordering key is greater than the target row's' (lexicographic); with no
    ordering columns every source row counts as newer."""
    if not order_columns:
        return "TRUE"
    terms = []
    for i, column in enumerate(order_columns):
        equal_before = [f"{source}.{quote(c)} = {target}.{quote(c)}" for c in order_columns[:i]]
        terms.append(" AND ".join([*equal_before, f"{source}.{quote(column)} > {target}.{quote(column)}"]))
    return "(" + " OR ".join(f"({t})" for t in terms) + ")"


class DeltaRsEngine:
    def __init__(self, storage_options: dict[str, str] | None = None, streamed_merge: bool = False) -> None:
        """`streamed_merge` is delta-rs' `streamed_exec`. Off by default: the change set is an in-memory Arrow
        table anyway, and only a non-streamed merge derives a key-range filter from it, so the merge skips
        the files outside the change set's keys (a key-local change set on key-ordered files reads a few
        files instead of the whole table; see docs/performance.md)."""
        self.storage_options = storage_options
        self.streamed_merge = streamed_merge

    def _table(self, uri: str) -> DeltaTable:
        return DeltaTable(uri, storage_options=self.storage_options)

    def exists(self, uri: str) -> bool:
        try:
            self._table(uri)
        except TableNotFoundError:
            return False
        return True

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
            configuration={**configuration, **statistics_configuration(schema)} or None,
            storage_options=self.storage_options,
            commit_properties=CommitProperties(custom_metadata=commit_info),
        )

    def properties(self, uri: str) -> dict[str, str]:
        """Delta's table configuration only takes delta.* keys, so ours live in the table description."""
        description = self._table(uri).metadata().description
        try:
            return dict(json.loads(description)) if description else {}
        except ValueError:
            return {}

    def set_properties(self, uri: str, properties: dict[str, str], commit_info: dict[str, str]) -> None:
        merged = {**self.properties(uri), **properties}
        self._table(uri).alter.set_table_description(
            json.dumps(merged, sort_keys=True), commit_properties=CommitProperties(custom_metadata=commit_info)
        )

    def schema(self, uri: str) -> pa.Schema:
        return pa.schema(self._table(uri).schema().to_arrow())

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

    def _trust_statistics(self, uri: str, commit_info: dict[str, str]) -> DeltaTable:
        """Keep statistics off the table's `untrusted_statistics` columns (see the module's docstring): sets
        `delta.dataSkippingStatsColumns` when the schema needs it and the property does not say so yet (a
        table created before, a column added or retyped); the table as it is afterwards."""
        table = self._table(uri)
        schema = pa.schema(table.schema().to_arrow())
        wanted = statistics_configuration(schema)
        current = table.metadata().configuration.get(STATS_COLUMNS_PROPERTY)
        if STATS_COLUMNS_PROPERTY not in wanted and current is not None:
            wanted = {STATS_COLUMNS_PROPERTY: ",".join(_stats_name(f.name) for f in schema)}  # a new column's too
        if not wanted or wanted[STATS_COLUMNS_PROPERTY] == current:
            return table
        table.alter.set_table_properties(wanted, commit_properties=CommitProperties(custom_metadata=commit_info))
        return self._table(uri)

    def merge(
        self,
        uri: str,
        changes: pa.Table,
        key_columns: list[str],
        order_columns: tuple[str, ...],
        commit_info: dict[str, str],
    ) -> MergeResult:
        table = self._trust_statistics(uri, commit_info)
        columns = [name for name in table.schema().to_arrow().names if name in changes.column_names]
        has_partial = PARTIAL in changes.column_names and bool(pc.any(changes[PARTIAL]).as_py())
        fixed = {*key_columns, *METADATA_COLUMNS}
        updates = {quote(c): _assignment(c, has_partial and c not in fixed) for c in columns}
        inserts = {quote(c): f"s.{quote(c)}" for c in columns}
        on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key_columns)
        is_upsert, is_delete = f"s.{quote(ACTION)} = '{UPSERT}'", f"s.{quote(ACTION)} = '{DELETE}'"
        is_newer = newer(order_columns)
        source = changes.drop_columns([c for c in STAGING_COLUMNS if c in changes.column_names and c != ACTION])
        if has_partial:
            source = source.append_column(PARTIAL, changes[PARTIAL]).append_column(PRESENT, changes[PRESENT])
        metrics = (
            table.merge(
                source,
                predicate=on,
                source_alias="s",
                target_alias="t",
                streamed_exec=self.streamed_merge,
                commit_properties=CommitProperties(custom_metadata=commit_info),
            )
            .when_matched_delete(predicate=f"{is_delete} AND {is_newer}")
            .when_matched_update(updates=updates, predicate=f"{is_upsert} AND {is_newer}")
            .when_not_matched_insert(updates=inserts, predicate=is_upsert)
            .execute()
        )
        return MergeResult(
            inserted=metrics["num_target_rows_inserted"],
            updated=metrics["num_target_rows_updated"],
            deleted=metrics["num_target_rows_deleted"],
            version=self._table(uri).version(),
        )

    def delete_where(self, uri: str, predicate: str, commit_info: dict[str, str]) -> int:
        table = self._trust_statistics(uri, commit_info)
        metrics = table.delete(predicate, commit_properties=CommitProperties(custom_metadata=commit_info))
        return int(metrics.get("num_deleted_rows", 0))

    def rewrite(
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
        self._trust_statistics(uri, commit_info)

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

    def recluster(self, uri: str, columns: list[str], file_size: int, commit_info: dict[str, str]) -> int:
        """Lay the table out in files of about `file_size` bytes, and make that the size merges write; returns
        the files written. A one-column key is rewritten in key order (delta-rs' Z-order of one column). A
        composite key, or a key column without statistics (`untrusted_statistics`: merges cannot prune on it),
        only has its small files merged, in the order they were written: Z-order over several columns
        interleaves them, so each file spans a wide range of every key column and a merge of recent keys
        rewrites several times the bytes (docs/performance.md)."""
        commit = CommitProperties(custom_metadata=commit_info)
        table = self._table(uri)
        if not _aims_at(table, file_size):
            table.alter.set_table_properties({FILE_SIZE_PROPERTY: str(file_size)}, commit_properties=commit)
        optimize = self._table(uri).optimize
        if len(columns) == 1 and columns[0] not in untrusted_statistics(self.schema(uri)):
            metrics = optimize.z_order(columns, target_size=file_size, commit_properties=commit)
        else:
            metrics = optimize.compact(target_size=file_size, commit_properties=commit)
        return int(metrics["numFilesAdded"])

    def read(self, uri: str) -> pa.Table:
        table = pa.table(pa.RecordBatchReader.from_stream(self._table(uri).scan()))
        return table.cast(pa.schema([_plain(f) for f in table.schema]))

    def version(self, uri: str) -> int:
        return self._table(uri).version()

    def row_count(self, uri: str) -> int:
        query = QueryBuilder().register("t", self._table(uri))
        return int(pa.table(query.execute("SELECT count(*) AS n FROM t"))["n"][0].as_py())


def _aims_at(table: DeltaTable, file_size: int) -> bool:
    """Whether the table's writes aim at files of `file_size` bytes."""
    return table.metadata().configuration.get(FILE_SIZE_PROPERTY) == str(file_size)


def _assignment(column: str, may_be_absent: bool) -> str:
    """A partial row keeps the target's value for a column its image does not carry."""
    if not may_be_absent:
        return f"s.{quote(column)}"
    return (
        f"CASE WHEN s.{quote(PARTIAL)} AND NOT array_has(s.{quote(PRESENT)}, {literal(column)}) "
        f"THEN t.{quote(column)} ELSE s.{quote(column)} END"
    )


def _plain(field: pa.Field) -> pa.Field:
    """string_view/binary_view (what scan() yields) as plain string/binary, so results compare simply."""
    if pa.types.is_string_view(field.type):
        return field.with_type(pa.string())
    if pa.types.is_binary_view(field.type):
        return field.with_type(pa.binary())
    return field
