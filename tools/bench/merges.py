"""Merges under measurement: an apply job's engine with every merge timed and its file rewrites counted, and
the bare delta-rs MERGE the job's merge is compared with.

Files rewritten are found by diffing the table's add actions before and after a merge (delta-rs rewrites
every file holding a row the merge changes, and only those): `files_removed` files of `files_before` were
rewritten into `files_added` new ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from pyspark.sql import DataFrame

from lakeloader.engine import base as E
from lakeloader.engine.base import MergeResult, TableEngine
from lakeloader.engine.deltars import quote


@dataclass(frozen=True)
class MergeRecord:
    uri: str
    rows: int
    seconds: float
    files_before: int
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int


def file_sizes(uri: str, storage_options: dict[str, str] | None = None) -> dict[str, int]:
    """The table's current data files and their sizes."""
    actions = pa.table(DeltaTable(uri, storage_options=storage_options).get_add_actions(flatten=True))
    return dict(zip(actions["path"].to_pylist(), actions["size_bytes"].to_pylist(), strict=True))


def _record(uri: str, rows: int, seconds: float, before: dict[str, int], after: dict[str, int]) -> MergeRecord:
    removed, added = before.keys() - after.keys(), after.keys() - before.keys()
    return MergeRecord(
        uri,
        rows,
        seconds,
        len(before),
        len(removed),
        len(added),
        sum(before[p] for p in removed),
        sum(after[p] for p in added),
    )


class MeasuredEngine:
    """A table engine whose every merge (silver and tombstone tables alike) is timed and its file rewrites counted;
    every other operation is the engine's own. A merge's `rows` are its change set's, or for a Spark frame
    (Delta on Spark, never counted on the driver) the rows it inserted, updated and deleted."""

    def __init__(self, engine: TableEngine) -> None:
        self.engine = engine
        self.storage_options: dict[str, str] | None = getattr(engine, "storage_options", None)
        self.merges: list[MergeRecord] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def merge(
        self,
        uri: str,
        changes: pa.Table | DataFrame,
        key_columns: list[str],
        order_columns: tuple[str, ...],
        commit_info: dict[str, str],
    ) -> MergeResult:
        before = file_sizes(uri, self.storage_options)
        started = time.perf_counter()
        result = self.engine.merge(uri, changes, key_columns, order_columns, commit_info)
        seconds = time.perf_counter() - started
        rows = changes.num_rows if isinstance(changes, pa.Table) else result.inserted + result.updated + result.deleted
        self.merges.append(_record(uri, rows, seconds, before, file_sizes(uri, self.storage_options)))
        return result


def bare_merge(uri: str, change_set: pa.Table, key: list[str], streamed: bool) -> MergeRecord:
    """The engine's own limit: one delta-rs MERGE of a deduplicated change set on the key, deleting, updating
    all columns or inserting, with no ordering condition, no partial images and no tombstones. `streamed`
    is delta-rs' `streamed_exec`, set as the apply engine sets it."""
    staging = [c for c in (E.RANK, E.PARTIAL, E.PRESENT) if c in change_set.column_names]
    source = change_set.drop_columns(staging)
    is_upsert, is_delete = f"s.{quote(E.ACTION)} = '{E.UPSERT}'", f"s.{quote(E.ACTION)} = '{E.DELETE}'"
    before = file_sizes(uri)
    started = time.perf_counter()
    (
        DeltaTable(uri)
        .merge(
            source,
            predicate=" AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key),
            source_alias="s",
            target_alias="t",
            streamed_exec=streamed,
        )
        .when_matched_delete(predicate=is_delete)
        .when_matched_update_all(predicate=is_upsert, except_cols=[E.ACTION])
        .when_not_matched_insert_all(predicate=is_upsert, except_cols=[E.ACTION])
        .execute()
    )
    seconds = time.perf_counter() - started
    return _record(uri, change_set.num_rows, seconds, before, file_sizes(uri))
