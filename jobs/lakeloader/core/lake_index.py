"""What a source's lake holds, from object listings only (no Spark, no table reads): the hours in bronze and
the silver tables. Used to validate replays and to find every table to reconcile."""

from __future__ import annotations

import json
import re
from datetime import datetime
from urllib.parse import unquote

from lakeloader.core import zones
from lakeloader.core.storage import Store

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
    """'db.table' -> (db, table) of every silver table of the source (db names may contain dots). A plain path
    segment is its name; a hashed one's names are in the record `record_names` keeps."""
    prefix = f"silver/{source}/"
    segments = set()
    for item in lake.list(prefix):
        parts = item.key[len(prefix) :].split("/")
        if len(parts) >= 3 and parts[2] == "_delta_log":
            segments.add((parts[0], parts[1]))
    tables = {}
    for db_segment, table_segment in sorted(segments):
        db, table = _names(lake, source, db_segment, table_segment)
        tables[f"{db}.{table}"] = (db, table)
    return tables


def record_names(lake: Store, source: str, db: str, table: str) -> None:
    """Keep a table's real names when its path segments are hashed (zones.name_segment), so listings name it."""
    if zones.is_plain(db) and zones.is_plain(table):
        return
    key = zones.table_names_key(source, zones.name_segment(db), zones.name_segment(table))
    if lake.stat(key) is None:
        lake.write_bytes(key, json.dumps({"db": db, "table": table}, ensure_ascii=False).encode())


def _names(lake: Store, source: str, db_segment: str, table_segment: str) -> tuple[str, str]:
    if zones.is_plain(db_segment) and zones.is_plain(table_segment):
        return db_segment, table_segment
    key = zones.table_names_key(source, db_segment, table_segment)
    if lake.stat(key) is not None:
        record = json.loads(lake.read_bytes(key))
        return record["db"], record["table"]
    return unquote(db_segment), unquote(table_segment)  # percent-encoded by an earlier version
