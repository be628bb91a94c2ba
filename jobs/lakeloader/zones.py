"""Where each zone keeps a source's data, relative to the lake root (see docs/architecture.md).

raw/<source>/dt=YYYY-MM-DD/hour=HH/<export file>      landed copies (named by raw_name)
raw/<source>/dt=YYYY-MM-DD/hour=HH/_manifest.json     what landed in that hour
bronze/<source>/changes/dt=YYYY-MM-DD/hour=HH/        canonical change log (Parquet)
bronze/<source>/quarantine/dt=YYYY-MM-DD/hour=HH/     rejected messages with reason and origin
bronze/<source>/apply_quarantine/                     Delta table: changes no silver column type could hold
silver/<source>/<db>/<table>/                         one Delta table per source table
audit/<source>/landed/<file id>.json                  ledger: one entry per export file ever landed
audit/<source>/runs/dt=YYYY-MM-DD/hour=HH/<step>.json counts of each step's run for that hour
audit/<source>/reconcile/<label>.{json,md}            each reconciliation's results, machine- and human-readable
audit/<source>/reconciliation/                        Delta table: one row per reconciliation check ever run
audit/<source>/freshness.json                         newest change and heartbeat event times loaded
audit/<source>/replay/<label>.json                    what each replay did
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

HOUR_FORMAT = "%Y-%m-%dT%H"


def parse_hour(text: str) -> datetime:
    """An hour given as 'YYYY-MM-DDTHH' (or any ISO timestamp, truncated to its hour), in UTC."""
    try:
        moment = datetime.strptime(text, HOUR_FORMAT)
    except ValueError:
        moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def format_hour(hour: datetime) -> str:
    return hour.astimezone(UTC).strftime(HOUR_FORMAT)


def hour_range(first: datetime, last: datetime) -> list[datetime]:
    """Every hour from first to last, both included."""
    hours = []
    current = first
    while current <= last:
        hours.append(current)
        current += timedelta(hours=1)
    return hours


def hour_partition(hour: datetime) -> str:
    utc = hour.astimezone(UTC)
    return f"dt={utc:%Y-%m-%d}/hour={utc:%H}"


def raw_dir(source: str, hour: datetime) -> str:
    return f"raw/{source}/{hour_partition(hour)}"


# characters Hadoop paths cannot hold (`:`) or that Spark's readers take as a glob pattern, and `%` itself
_NOT_IN_RAW_NAMES = re.compile(r"[%:{}\[\]*?\\]")


def raw_name(export_key: str) -> str:
    """The name a landed copy gets under its hour directory: the export file's key, with `%`, `:` and the glob
    characters `{}[]*?\\` percent-encoded, so Spark reads exactly that file (an export named
    `orders-2026-11-21T05:00:00.json` would fail the job, one named `[a].json` would read `a.json`)."""
    return _NOT_IN_RAW_NAMES.sub(lambda m: f"%{ord(m.group()):02X}", export_key)


# a landed copy's name: what follows its hour directory in its key or path
UNDER_HOUR_DIR = r"/hour=\d{2}/(.*)$"


def raw_copy_name(raw_key_or_path: str) -> str:
    """The name of a landed copy under its hour directory (`raw/<source>/dt=…/hour=…/<name>`), from its raw key
    or a plain-text path to it (the whole text when it names no hour directory)."""
    found = re.search(UNDER_HOUR_DIR, raw_key_or_path)
    return found.group(1) if found else raw_key_or_path


def manifest_key(source: str, hour: datetime) -> str:
    return f"{raw_dir(source, hour)}/_manifest.json"


def ledger_prefix(source: str) -> str:
    return f"audit/{source}/landed/"


def bronze_changes_dir(source: str, hour: datetime) -> str:
    return f"bronze/{source}/changes/{hour_partition(hour)}"


def bronze_quarantine_dir(source: str, hour: datetime) -> str:
    return f"bronze/{source}/quarantine/{hour_partition(hour)}"


def apply_quarantine_dir(source: str) -> str:
    """Changes the apply step left out because a value fits neither its column nor a safe widening of it."""
    return f"bronze/{source}/apply_quarantine"


def run_report_key(source: str, hour: datetime, step: str) -> str:
    return f"audit/{source}/runs/{hour_partition(hour)}/{step}.json"


def silver_table_dir(source: str, db: str, table: str) -> str:
    """Names are percent-encoded, so no source name can escape its directory ('../x' stays inside)."""
    return f"silver/{source}/{_path_safe(db)}/{_path_safe(table)}"


def schema_history_dir(source: str) -> str:
    """Every DDL message seen and what was done with it (a Delta table)."""
    return f"audit/{source}/schema_history"


def tombstones_dir(source: str, db: str, table: str) -> str:
    """Deleted keys of one silver table (see lakeloader.silver)."""
    return f"state/{source}/{_path_safe(db)}/{_path_safe(table)}/tombstones"


def _path_safe(name: str) -> str:
    encoded = quote(name, safe="")
    return encoded.replace(".", "%2E") if set(encoded) == {"."} else encoded


def reconcile_report_key(source: str, label: str, extension: str) -> str:
    """A reconciliation's report; the label (e.g. an Airflow run id) is reduced to path-safe characters."""
    return f"audit/{source}/reconcile/{re.sub(r'[^A-Za-z0-9._-]+', '_', label)}.{extension}"


def reconciliation_table_dir(source: str) -> str:
    return f"audit/{source}/reconciliation"


def freshness_key(source: str) -> str:
    return f"audit/{source}/freshness.json"


def bronze_changes_root(source: str) -> str:
    return f"bronze/{source}/changes"


def replay_report_key(source: str, label: str) -> str:
    return f"audit/{source}/replay/{re.sub(r'[^A-Za-z0-9._-]+', '_', label)}.json"


def work_dir(source: str, purpose: str, label: str) -> str:
    """A scratch directory of one run (e.g. the replica a reconciliation builds); deleted when the run ends."""
    return f"work/{source}/{purpose}/{re.sub(r'[^A-Za-z0-9._-]+', '_', label)}"
