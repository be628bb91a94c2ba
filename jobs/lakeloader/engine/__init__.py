"""Table engines: the one seam through which the loader reads and writes Delta tables.

`base.TableEngine` is the neutral interface (Arrow data, typed predicates, no SQL strings); `deltars` is the
embedded implementation (delta-rs). Product code gets its engine from `engine_for(source)`, never by
constructing one, and never imports `deltalake` itself (tests/unit/test_engine_seam.py enforces both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakeloader.config import SourceConfig
    from lakeloader.engine.base import TableEngine


def engine_for(source: SourceConfig) -> TableEngine:
    """The table engine for a source's lake: delta-rs (the embedded engine, today the only one), with the
    storage options of the source's lake root. Imported lazily so that importing `engine.base` (the column
    names and the interface) never loads delta-rs."""
    from lakeloader.engine.deltars import DeltaRsEngine
    from lakeloader.storage import delta_storage_options

    return DeltaRsEngine(delta_storage_options(source.lake_root, source.s3_endpoint_url))
