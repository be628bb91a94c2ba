"""Table engines: the one seam through which the loader reads and writes Delta tables.

`base.TableEngine` is the neutral interface (Arrow data, typed predicates, no SQL strings); `deltars` is the
embedded implementation (delta-rs), `deltaspark` the cluster one (Delta Lake on Spark). Product code gets its
engine from `factory.engine_for(source)` (Spark jobs) or `reader_for(source)` (reads without Spark), never by
constructing one, and never imports `deltalake` itself (tests/unit/test_engine_seam.py enforces both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakeloader.core.config import SourceConfig
    from lakeloader.engine.base import TableEngine


def reader_for(source: SourceConfig) -> TableEngine:
    """The engine that reads a source's tables without Spark (the Airflow side, the CLI): delta-rs, with the
    storage options of the source's lake root. It reads the tables either engine writes. Imported lazily so
    that importing `engine.base` (the column names and the interface) never loads delta-rs."""
    from lakeloader.core.storage import delta_storage_options
    from lakeloader.engine.deltars import DeltaRsEngine

    return DeltaRsEngine(delta_storage_options(source.lake_root, source.s3_endpoint_url))
