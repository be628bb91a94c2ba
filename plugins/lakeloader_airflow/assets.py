"""Airflow Assets for the silver tables: every table an hour changed gets an asset event with the hour's counts.

The set of tables is only known when an hour is applied, so the hourly DAG's `verify` task declares one
asset alias per source (`lakeloader_<source>_silver`) and adds, once the hour's reconciliation passed, one
event per silver table in the apply step's report. Each table is the asset `lakeloader.<source>.<db>.<table>`
whose URI is the Delta table's location (`file:///…` or `s3://…`). Downstream DAGs can be scheduled on a
table (`schedule=[Asset(name="lakeloader.shop.shop.orders", uri=...)]`) or on the alias, and the Assets page
shows each table's updates with the counts in the event's extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from airflow.sdk import Asset, AssetAlias


def silver_alias(source: str) -> AssetAlias:
    return AssetAlias(f"lakeloader_{source}_silver")


def table_uri(location: str) -> str:
    """A table location as an asset URI: `s3://bucket/path` as is (path percent-encoded), a local path as
    `file:///absolute/path`."""
    parts = urlsplit(location)
    if parts.scheme and parts.scheme != "file":
        return f"{parts.scheme}://{parts.netloc}{quote(parts.path)}"
    path = parts.path if parts.scheme == "file" else location
    return "file://" + quote(str(Path(path).resolve()))


def silver_asset(source: str, table: str, location: str) -> Asset:
    return Asset(name=f"lakeloader.{source}.{table}", uri=table_uri(location))


EXTRA_COUNTS = ("changes", "duplicates", "rows", "version", "stale_upserts", "inserted", "updated", "deleted")


def silver_events(source: str, summary: dict[str, Any]) -> list[tuple[Asset, dict[str, Any]]]:
    """One (asset, extra) per silver table the hour's apply step wrote (`summary` is verify's, holding the
    apply report's `silver_tables`), with the hour and the table's counts."""
    events = []
    for table, counts in sorted(summary.get("silver_tables", {}).items()):
        if counts.get("uri"):
            extra = {"hour": summary["hour"], **{k: counts[k] for k in EXTRA_COUNTS if k in counts}}
            events.append((silver_asset(source, table, counts["uri"]), extra))
    return events
