"""What a replay may do, checked before any Spark starts (no Spark here: the Airflow replay DAG validates with it).

A replay request names a source, a mode and, by mode:
- `reapply`: an hour range [from_hour, to_hour]; every hour must be in bronze. Re-runs the apply step over
  those hours' bronze change log, all tables (rows already up to date are left as they are), exactly as the
  hourly run's apply does.
- `rebuild`: optionally a list of tables (default: all of the source). Rebuilds each table from scratch out
  of the *whole* bronze change log and replaces the silver table in one commit; hours are not used.
`validate` returns the normalised plan or raises PlanError with every problem found, each said plainly.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from lakeloader.core import zones
from lakeloader.core.config import LakeloaderConfig, SourceConfig
from lakeloader.core.errors import LakeloaderError
from lakeloader.core.lake_index import bronze_hours, silver_tables
from lakeloader.core.storage import Store, open_store
from lakeloader.land.step import landed_empty

REAPPLY, REBUILD = "reapply", "rebuild"
MODES = (REAPPLY, REBUILD)
HOUR_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}$"
TABLE_PATTERN = r"^[^.\s]+\.[^.\s]+$"


class PlanError(LakeloaderError, ValueError):
    """The replay request cannot run; the message lists what to fix."""


def validate(config: LakeloaderConfig, request: dict[str, Any], lake: Store | None = None) -> dict[str, Any]:
    """The plan {source, mode, hours: [first, last] | None, tables: [...] | None} or PlanError."""
    problems: list[str] = []
    names = [s.name for s in config.sources]
    source_name = request.get("source")
    if source_name not in names:
        raise PlanError(f"unknown source {source_name!r}; configured sources: {', '.join(names)}")
    source: SourceConfig = config.source(source_name)
    mode = request.get("mode")
    if mode not in MODES:
        raise PlanError(f"unknown mode {mode!r}; expected one of: {', '.join(MODES)}")
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    tables = [t for t in (request.get("tables") or []) if t] or None
    first_text, last_text = request.get("from_hour") or None, request.get("to_hour") or None

    hours = None
    if mode == REAPPLY:
        hours = _hour_range(lake, source.name, first_text, last_text, problems)
        if tables:
            problems.append(
                "a table list is for mode 'rebuild'; 'reapply' replays whole hours (every table, and rows already "
                "up to date stay as they are): leave 'tables' empty"
            )
    else:
        if first_text or last_text:
            problems.append(
                "mode 'rebuild' reads the whole change log; leave 'from_hour' and 'to_hour' empty "
                "(or use mode 'reapply' for an hour range)"
            )
        if not bronze_hours(lake, source.name):
            problems.append(f"source {source.name!r} has no bronze change log yet: nothing to rebuild from")
    if tables:
        bad = [t for t in tables if not re.fullmatch(TABLE_PATTERN, t)]
        known = set(silver_tables(lake, source.name)) | set(source.tables or ())
        unknown = [t for t in tables if t not in known and t not in bad]
        if bad:
            problems.append(f"table names must be written 'db.table': {', '.join(bad)}")
        if unknown:
            listed = ", ".join(sorted(known)) or "none yet"
            problems.append(f"unknown table(s) of source {source.name!r}: {', '.join(unknown)} (known: {listed})")
    if problems:
        raise PlanError("replay request rejected:\n- " + "\n- ".join(problems))
    return {
        "source": source.name,
        "mode": mode,
        "hours": [zones.format_hour(h) for h in hours] if hours else None,
        "tables": sorted(set(tables)) if tables else None,
    }


def _hour_range(
    lake: Store, source: str, first_text: str | None, last_text: str | None, problems: list[str]
) -> tuple[datetime, datetime] | None:
    """[first, last] when both are valid, in order and inside what bronze holds; else None and problems."""
    if not first_text or not last_text:
        problems.append("mode 'reapply' needs both 'from_hour' and 'to_hour' (YYYY-MM-DDTHH, UTC)")
        return None
    parsed = []
    for name, text in (("from_hour", first_text), ("to_hour", last_text)):
        if not re.fullmatch(HOUR_PATTERN, text):
            problems.append(f"'{name}' must be an hour written YYYY-MM-DDTHH (UTC), got {text!r}")
        else:
            parsed.append(zones.parse_hour(text))
    if len(parsed) != 2:
        return None
    first, last = parsed
    if first > last:
        problems.append(f"'from_hour' {first_text} is after 'to_hour' {last_text}")
        return None
    held = bronze_hours(lake, source)
    if not held:
        problems.append(f"source {source!r} has no bronze change log yet: nothing to reapply")
        return None
    missing = [h for h in zones.hour_range(first, last) if h not in set(held) and not landed_empty(lake, source, h)]
    if missing:
        span = f"{zones.format_hour(held[0])} to {zones.format_hour(held[-1])}"
        shown = ", ".join(zones.format_hour(h) for h in missing[:5]) + (" …" if len(missing) > 5 else "")
        problems.append(
            f"bronze of source {source!r} holds hours {span} ({len(held)} hours); "
            f"{len(missing)} requested hour(s) are not there: {shown}"
        )
        return None
    return first, last
