"""Truncations of tables that had no silver table yet, in `state/<source>/truncations.json`.

A TRUNCATE empties a table at its point in the sequence: a silver table records the point (its truncation mark),
and changes older than it are not loaded. A TRUNCATE performed while its table has no silver table yet (its older
changes are in an hour applied later) has no table to record the point in, so it is kept here, and the table
takes the point as its truncation mark when apply creates it: those older changes are then not loaded either.
"""

from __future__ import annotations

import json

from lakeloader.apply.table_identity import TableId
from lakeloader.core.storage import Store
from lakeloader.engine import base as E

Order = E.Point


def _ledger_key(source: str) -> str:
    return f"state/{source}/truncations.json"


def read_truncations(lake: Store, source: str) -> dict[TableId, Order]:
    """The latest truncation recorded for each table (db, table)."""
    key = _ledger_key(source)
    if lake.stat(key) is None:
        return {}
    return {(entry["db"], entry["table"]): E.point(entry["order"]) for entry in json.loads(lake.read_bytes(key))}


def record_truncation(lake: Store, source: str, table: TableId, order: Order) -> None:
    """Keep `order` as the table's truncation point, unless a later one is kept already."""
    truncations = read_truncations(lake, source)
    if table in truncations and truncations[table] >= order:
        return
    truncations[table] = order
    entries = [
        {"db": db, "table": name, "order": [str(v) for v in point]} for (db, name), point in sorted(truncations.items())
    ]
    lake.write_bytes(_ledger_key(source), json.dumps(entries, indent=1).encode())
