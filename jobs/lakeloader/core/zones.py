"""Where each zone keeps a source's data, relative to the lake root (see docs/architecture.md).

raw/<source>/dt=YYYY-MM-DD/hour=HH/<export file>      landed copies (named by raw_name)
raw/<source>/dt=YYYY-MM-DD/hour=HH/_manifest.json     what landed in that hour
bronze/<source>/changes/dt=YYYY-MM-DD/hour=HH/        canonical change log (Parquet)
bronze/<source>/quarantine/dt=YYYY-MM-DD/hour=HH/     rejected messages with reason and origin
bronze/<source>/apply_quarantine/                     Delta table: changes no silver column type could hold
silver/<source>/<db>/<table>/                         one Delta table per source table (names: `name_segment`)
archive/<source>/<db>/<table>/<seq>-<seq2>/           a dropped table
audit/<source>/landed/<file id>.json                  ledger: one entry per export file ever landed
audit/<source>/runs/dt=YYYY-MM-DD/hour=HH/<step>.json counts of each step's run for that hour
audit/<source>/reconcile/<label>.{json,md}            each reconciliation's results, machine- and human-readable
audit/<source>/reconciliation/                        Delta table: one row per reconciliation check ever run
audit/<source>/freshness.json                         newest change and heartbeat event times loaded
audit/<source>/replay/<label>.json                    what each replay did
audit/<source>/table_names/<db>/<table>.json          the real names of a table whose path segments are hashed
audit/<source>/lock.json                              the source's writer lock (lakeloader.core.lock)

Every key built from source data (db and table names) goes through `name_segment` and is checked by
`inside_lake`, which refuses any key that could leave the lake root.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta

from lakeloader.core.errors import LakeloaderError

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


def run_error_key(source: str, hour: datetime, step: str) -> str:
    """Why a spark-submit step last failed for that hour (read by the failure alert; removed when a run starts)."""
    return f"audit/{source}/runs/{hour_partition(hour)}/{step}.error.json"


def silver_table_dir(source: str, db: str, table: str) -> str:
    """A source table's silver Delta table; db and table become path segments by `name_segment`."""
    return inside_lake(f"silver/{source}/{name_segment(db)}/{name_segment(table)}")


def schema_history_dir(source: str) -> str:
    """Every DDL message seen and what was done with it (a Delta table)."""
    return f"audit/{source}/schema_history"


def tombstones_dir(source: str, db: str, table: str) -> str:
    """Deleted keys of one silver table (see lakeloader.apply.silver)."""
    return inside_lake(f"state/{source}/{name_segment(db)}/{name_segment(table)}/tombstones")


def archive_dir(source: str, db: str, table: str, order: tuple[object, object]) -> str:
    """Where DROP TABLE moves a table: named like its silver directory, plus the statement's ordering key."""
    return inside_lake(f"archive/{source}/{name_segment(db)}/{name_segment(table)}/{order[0]}-{order[1]}")


def table_names_key(source: str, db_segment: str, table_segment: str) -> str:
    """The record of a table's real (db, table) names, for tables whose path segments are hashed."""
    return inside_lake(f"audit/{source}/table_names/{db_segment}/{table_segment}.json")


# A name kept as its own path segment: characters every store, URL parser and engine takes literally (the
# characters `urllib.parse.quote` never escapes, so every name loaded before this rule keeps its directory).
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]{1,200}")
_HASHED = re.compile(r"~[0-9a-f]{16}$")  # the end of every hashed segment, never of a plain one
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
SLUG_LENGTH = 48
# The name of a Delta table's log directory: delta-rs and Spark take any path holding a segment of that name for
# (a path inside) a table's log, so a table or db named so could never load (held back at every run) and its
# directory would make its parent look like a broken Delta table.
DELTA_LOG = "_delta_log"


def name_segment(name: str) -> str:
    """The path segment of a db or table name: the name itself when it is plain (ASCII letters, digits and
    `_.~-`, at most 200 characters, not only dots, not `_delta_log`, not ending like a hashed segment);
    otherwise a readable slug of its ASCII letters and digits, `~` and 16 hex digits of the SHA-256 of its UTF-8
    bytes. Any Unicode, punctuation (`/`, `%`, `..`), control character or length maps to one segment that
    delta-rs, Spark and S3 take literally; distinct names get distinct segments (up to a 64-bit hash collision)."""
    if is_plain(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    slug = _SLUG_UNSAFE.sub("_", name).strip("_")[:SLUG_LENGTH]
    return f"{slug}~{digest}"


def is_plain(name: str) -> bool:
    """Whether a name is its own path segment (`name_segment`)."""
    return bool(_PLAIN.fullmatch(name)) and set(name) != {"."} and name != DELTA_LOG and not _HASHED.search(name)


class OutsideLake(LakeloaderError, ValueError):
    """A key that would leave the lake root (or its zone): a bug or hostile input, never written."""


def inside_lake(key: str) -> str:
    """`key` when it names a location under the lake root: relative, no empty, `.` or `..` segment, no
    backslash or NUL. Every key built from source data passes here; the stores check every key they touch."""
    segments = key.split("/")
    if (
        not key
        or key.startswith("/")
        or "\\" in key
        or "\x00" in key
        or any(s in ("", ".", "..") for s in segments[:-1])
        or segments[-1] in (".", "..")
    ):
        raise OutsideLake(f"refusing a lake key outside the lake root: {key!r}")
    return key


def reconcile_report_key(source: str, label: str, extension: str) -> str:
    """A reconciliation's report; the label (e.g. an Airflow run id) is reduced to path-safe characters."""
    return f"audit/{source}/reconcile/{re.sub(r'[^A-Za-z0-9._-]+', '_', label)}.{extension}"


def reconciliation_table_dir(source: str) -> str:
    return f"audit/{source}/reconciliation"


def freshness_key(source: str) -> str:
    return f"audit/{source}/freshness.json"


def alerts_prefix(source: str) -> str:
    """Where every alert of the source is recorded (also those with no channel configured), one JSON each."""
    return f"audit/{source}/alerts/"


def alert_key(source: str, sent_at: datetime, kind: str, token: str) -> str:
    """An alert's record; names sort by the time it was sent, so the newest are the last names listed."""
    return (
        f"{alerts_prefix(source)}{sent_at.astimezone(UTC):%Y%m%dT%H%M%SZ}-{re.sub(r'[^a-z_]+', '_', kind)}-{token}.json"
    )


def bronze_changes_root(source: str) -> str:
    return f"bronze/{source}/changes"


def replay_report_key(source: str, label: str) -> str:
    return f"audit/{source}/replay/{re.sub(r'[^A-Za-z0-9._-]+', '_', label)}.json"


def work_dir(source: str, purpose: str, label: str) -> str:
    """A scratch directory of one run (e.g. the replica a reconciliation builds); deleted when the run ends."""
    return f"work/{source}/{purpose}/{re.sub(r'[^A-Za-z0-9._-]+', '_', label)}"
