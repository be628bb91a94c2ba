"""What a source's lake holds, from object listings only (no Spark, no table reads): the hours in bronze and
the silver tables. Used to validate replays and to find every table to reconcile."""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import unquote

from lakeloader import zones
from lakeloader.storage import Store

_PARTITION = re.compile(r"dt=(\d{4}-\d{2}-\d{2})/hour=(\d{2})/")


def bronze_hours(lake: Store, source: str) -> list[datetime]:
    """Every hour the source's bronze change log holds (parsed hours, including empty ones), in order."""
    found = set()
    for item in lake.list(zones.bronze_changes_root(source) + "/"):
        match = _PARTITION.search(item.key)
        if match:
            found.add(zones.parse_hour(f"{match[1]}T{match[2]}"))
    return sorted(found)


def silver_tables(lake: Store, source: str) -> dict[str, str]:
    """'db.table' -> location of every silver table of the source (a directory holding a _delta_log)."""
    ids = silver_table_ids(lake, source)
    return {name: lake.child(zones.silver_table_dir(source, db, table)) for name, (db, table) in ids.items()}


def silver_table_ids(lake: Store, source: str) -> dict[str, tuple[str, str]]:
    """'db.table' -> (db, table) of every silver table of the source (db names may contain dots)."""
    prefix = f"silver/{source}/"
    tables = {}
    for item in lake.list(prefix):
        parts = item.key[len(prefix) :].split("/")
        if len(parts) >= 3 and parts[2] == "_delta_log":
            db, table = unquote(parts[0]), unquote(parts[1])
            tables[f"{db}.{table}"] = (db, table)
    return tables
