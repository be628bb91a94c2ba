"""The embedded table engine: delta-rs (`deltalake`), which needs no JVM jars.

Reads always go through `DeltaTable.scan()`: `to_pyarrow_table()` returns NULL columns on tables with
column mapping (see ENVIRONMENT.md).
"""

from __future__ import annotations

import json

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, QueryBuilder
from deltalake.exceptions import TableNotFoundError

from lakeloader.engine.base import ACTION, DELETE, SEQ, SEQ2, UPSERT, MergeResult


def quote(name: str) -> str:
    """A SQL identifier for delta-rs predicates: every name is quoted, embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


NEWER = f"(s.{quote(SEQ)} > t.{quote(SEQ)} OR (s.{quote(SEQ)} = t.{quote(SEQ)} AND s.{quote(SEQ2)} > t.{quote(SEQ2)}))"


class DeltaRsEngine:
    def __init__(self, storage_options: dict[str, str] | None = None) -> None:
        self.storage_options = storage_options

    def _table(self, uri: str) -> DeltaTable:
        return DeltaTable(uri, storage_options=self.storage_options)

    def exists(self, uri: str) -> bool:
        try:
            self._table(uri)
        except TableNotFoundError:
            return False
        return True

    def create(self, uri: str, schema: pa.Schema, properties: dict[str, str], commit_info: dict[str, str]) -> None:
        DeltaTable.create(
            uri,
            schema=schema,
            mode="ignore",
            description=json.dumps(properties, sort_keys=True),
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

    def schema(self, uri: str) -> pa.Schema:
        return pa.schema(self._table(uri).schema().to_arrow())

    def add_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None:
        from deltalake.schema import Field

        delta_fields = [Field.from_arrow(field) for field in fields]
        self._table(uri).alter.add_columns(
            delta_fields, commit_properties=CommitProperties(custom_metadata=commit_info)
        )

    def merge(self, uri: str, changes: pa.Table, key_columns: list[str], commit_info: dict[str, str]) -> MergeResult:
        """Apply one row per key: newer upserts update or insert, newer deletes delete; older ones do nothing.

        'Newer' compares the ordering key (_cdc_seq, _cdc_seq2) with the row's, so replaying a batch, or
        an older batch after a newer one, leaves the table as it is.
        """
        table = self._table(uri)
        columns = [name for name in table.schema().to_arrow().names if name in changes.column_names]
        assignments = {quote(c): f"s.{quote(c)}" for c in columns}
        on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key_columns)
        is_upsert, is_delete = f"s.{quote(ACTION)} = '{UPSERT}'", f"s.{quote(ACTION)} = '{DELETE}'"
        metrics = (
            table.merge(
                changes,
                predicate=on,
                source_alias="s",
                target_alias="t",
                commit_properties=CommitProperties(custom_metadata=commit_info),
            )
            .when_matched_delete(predicate=f"{is_delete} AND {NEWER}")
            .when_matched_update(updates=assignments, predicate=f"{is_upsert} AND {NEWER}")
            .when_not_matched_insert(updates=assignments, predicate=is_upsert)
            .execute()
        )
        return MergeResult(
            inserted=metrics["num_target_rows_inserted"],
            updated=metrics["num_target_rows_updated"],
            deleted=metrics["num_target_rows_deleted"],
            version=self._table(uri).version(),
        )

    def read(self, uri: str) -> pa.Table:
        table = pa.table(pa.RecordBatchReader.from_stream(self._table(uri).scan()))
        return table.cast(pa.schema([_plain(f) for f in table.schema]))

    def row_count(self, uri: str) -> int:
        query = QueryBuilder().register("t", self._table(uri))
        return int(pa.table(query.execute("SELECT count(*) AS n FROM t"))["n"][0].as_py())


def _plain(field: pa.Field) -> pa.Field:
    """string_view/binary_view (what scan() yields) as plain string/binary, so results compare simply."""
    if pa.types.is_string_view(field.type):
        return field.with_type(pa.string())
    if pa.types.is_binary_view(field.type):
        return field.with_type(pa.binary())
    return field
