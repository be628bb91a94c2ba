"""A replica of a source's silver tables, rebuilt from its whole bronze change log in a scratch zone.

The reconciliation's state check compares silver with it, and a rebuild replay copies tables from it. It is
written by the apply step's own code (`apply.apply_changes`) with every bronze hour as one batch, so DDL,
table renames and drops, truncations, tombstones and update pairs take effect exactly as in the hourly runs
(the rules hold for any batching; see docs/semantics.md). The scratch zone is `work/<source>/<purpose>/<label>`
under the lake root and is deleted when the caller is done with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from lakeloader.apply.step import apply_changes, read_change_log
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import Store, open_store
from lakeloader.engine.factory import engine_for


@contextmanager
def replica(spark: SparkSession, source: SourceConfig, lake: Store, purpose: str, label: str) -> Iterator[Store]:
    """A store whose silver zone holds every table as the whole change log implies (empty without bronze)."""
    root = zones.work_dir(source.name, purpose, label)
    lake.delete_tree(root)  # a crashed earlier run with the same label may have left a partial replica
    scratch = open_store(lake.child(root), source.s3_endpoint_url)
    try:
        log = read_change_log(spark, lake, source.name)
        engine = engine_for(source)
        commit_info = {"lakeloader.step": f"{purpose} replica", "lakeloader.label": label}
        with engine.tables_held():
            apply_changes(source, log, lambda: log, scratch, engine, "all", commit_info)
        yield scratch
    finally:
        lake.delete_tree(root)
