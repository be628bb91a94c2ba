"""The table engine: the operations the apply job needs from a Delta table, whatever library performs them.

Change sets arrive as Arrow tables holding the table's columns, the `_cdc_*` metadata columns and the
action column `_cdc_action` ('upsert' or 'delete'), already reduced to one row per key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

ACTION = "_cdc_action"
UPSERT, DELETE = "upsert", "delete"

# Metadata columns on every silver row (documented in README "Silver tables").
SEQ, SEQ2 = "_cdc_seq", "_cdc_seq2"
OP, EVENT_TIME = "_cdc_op", "_cdc_event_time"
SOURCE_FILE, SOURCE_LINE = "_cdc_source_file", "_cdc_source_line"
LOADED_AT = "_cdc_loaded_at"

METADATA_FIELDS = (
    pa.field(SEQ, pa.decimal128(38, 0)),
    pa.field(SEQ2, pa.decimal128(38, 0)),
    pa.field(OP, pa.string()),
    pa.field(EVENT_TIME, pa.timestamp("us", tz="UTC")),
    pa.field(SOURCE_FILE, pa.string()),
    pa.field(SOURCE_LINE, pa.int64()),
    pa.field(LOADED_AT, pa.timestamp("us", tz="UTC")),
)


@dataclass(frozen=True)
class MergeResult:
    inserted: int
    updated: int
    deleted: int
    version: int


class TableEngine(Protocol):
    def exists(self, uri: str) -> bool: ...

    def create(self, uri: str, schema: pa.Schema, properties: dict[str, str], commit_info: dict[str, str]) -> None: ...

    def properties(self, uri: str) -> dict[str, str]:
        """Our own table properties (e.g. the primary key), as given to `create`."""
        ...

    def schema(self, uri: str) -> pa.Schema: ...

    def add_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None: ...

    def merge(
        self, uri: str, changes: pa.Table, key_columns: list[str], commit_info: dict[str, str]
    ) -> MergeResult: ...

    def read(self, uri: str) -> pa.Table: ...

    def row_count(self, uri: str) -> int: ...
