"""Land: copy new export files into the raw zone under the run's hour, each file exactly once.

A ledger in the audit zone holds one entry per export file ever landed, naming the hour it landed in.
A run for hour H lands every export file that is not in the ledger and appeared before H ended (its
modification time is earlier than the end of H), then writes H's manifest from the ledger. So:
- a file lands exactly once, whichever runs see it;
- rerunning H copies nothing and rewrites the same manifest;
- a file that appears after H's run lands in the next run, never lost;
- rerunning H restores a raw copy of H that went missing, if the export file still has the landed bytes
  (otherwise it fails with LandError rather than write a manifest its raw copies do not match).
A `.gz` file is decoded as it is copied (lakeloader.core.compression): a damaged one still lands, with its damage
in `damage`, so that reading it salvages what decodes instead of failing the hour. A file in a compression
that cannot be read lands too, with that as its `damage`.
An export location that cannot be listed (missing, no permission) fails with LandError naming it; an empty one
lands an empty hour.
Runs of one source must not land concurrently (the hourly DAG has max_active_runs=1).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import BinaryIO, TypedDict

from lakeloader.core import zones
from lakeloader.core.compression import GZIP_SUFFIX, GzipStream, unsupported_compression
from lakeloader.core.config import SourceConfig
from lakeloader.core.errors import LakeloaderError
from lakeloader.core.lock import writes_source
from lakeloader.core.storage import Store, open_store, spark_path

log = logging.getLogger(__name__)


class LandError(LakeloaderError, RuntimeError):
    """Landing cannot go on without losing or corrupting data; the message says what an operator must fix."""


@dataclass(frozen=True)
class LandedFile:
    export_key: str
    raw_key: str
    size: int
    sha256: str
    hour: str
    damage: str | None = None  # why it cannot be read whole: a damaged gzip stream, an unsupported compression


class LandSummary(TypedDict):
    """The land step's report, as the DAG's land task and the local runner print and return it."""

    source: str
    hour: str
    files_in_manifest: int
    bytes_in_manifest: int
    copied: int
    already_landed: int
    not_yet_due: int
    changed_after_landing: list[str]
    damaged: list[str]


@dataclass(frozen=True)
class LandResult:
    source: str
    hour: str
    manifest: list[LandedFile]
    copied: int
    already_landed: int
    not_yet_due: int
    changed_after_landing: list[str]
    damaged: list[str]

    def summary(self) -> LandSummary:
        return {
            "source": self.source,
            "hour": self.hour,
            "files_in_manifest": len(self.manifest),
            "bytes_in_manifest": sum(f.size for f in self.manifest),
            "copied": self.copied,
            "already_landed": self.already_landed,
            "not_yet_due": self.not_yet_due,
            "changed_after_landing": self.changed_after_landing,
            "damaged": self.damaged,
        }


class _HashingReader:
    """Wraps a stream and hashes what is read through it, so a copy checksums in the same pass; with `gzip`,
    it also decodes what is read, to find damage (nothing decoded is kept)."""

    def __init__(self, stream: BinaryIO, gzip: GzipStream | None = None) -> None:
        self.stream = stream
        self.digest = hashlib.sha256()
        self.size = 0
        self.gzip = gzip

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size)
        self.digest.update(chunk)
        self.size += len(chunk)
        if self.gzip is not None:
            self.gzip.feed(chunk)
        return chunk


def land_hour(
    source: SourceConfig, hour: datetime, exports: Store | None = None, lake: Store | None = None
) -> LandResult:
    """Land the export files due by the end of `hour` and write that hour's manifest.

    `hour` is truncated to its hour; a naive datetime is taken as UTC. An export location that cannot be
    listed fails before anything, the source's lock included, is written to the lake.
    """
    exports = exports or open_store(source.export_uri, source.s3_endpoint_url)
    unlistable = exports.why_unlistable()
    if unlistable:
        raise LandError(
            f"source {source.name}: its export location cannot be listed ({unlistable}); check `export_uri` in its "
            "declaration (a location that exists and is empty is fine: nothing is due yet)"
        )
    return _land_listed(source, hour, exports, lake)


@writes_source("land")
def _land_listed(source: SourceConfig, hour: datetime, exports: Store, lake: Store | None = None) -> LandResult:
    lake = lake or open_store(source.lake_root, source.s3_endpoint_url)
    hour = _utc_hour(hour)
    hour_text = zones.format_hour(hour)
    cutoff = hour + timedelta(hours=1)
    manifest_key = zones.manifest_key(source.name, hour)
    ledger = _read_ledger(lake, source.name)

    copied = already = not_due = 0
    changed: list[str] = []
    present: set[str] = set()
    for item in exports.list():
        present.add(item.key)
        entry = ledger.get(item.key)
        if entry is not None:
            already += 1
            if entry.size != item.size:
                changed.append(item.key)
            continue
        if item.modified >= cutoff:
            not_due += 1
            continue
        raw_key = f"{zones.raw_dir(source.name, hour)}/{zones.raw_name(item.key)}"
        if raw_key == manifest_key:
            raise LandError(f"export file {item.key!r} would overwrite the hour's manifest {manifest_key}; rename it")
        entry = _copy(exports, lake, item.key, raw_key, hour_text)
        lake.write_bytes(_ledger_key(source.name, item.key), json.dumps(asdict(entry), sort_keys=True).encode())
        ledger[item.key] = entry
        copied += 1

    manifest = sorted((e for e in ledger.values() if e.hour == hour_text), key=lambda e: e.export_key)
    for entry in manifest:
        _restore_missing_copy(exports, lake, entry, entry.export_key in present)
    document = {"source": source.name, "hour": hour_text, "files": [asdict(e) for e in manifest]}
    lake.write_bytes(manifest_key, json.dumps(document, indent=1, sort_keys=True).encode())
    if changed:
        log.warning("export files changed after they were landed (not landed again): %s", changed)
    damaged = {e.export_key: e.damage for e in manifest if e.damage}
    if damaged:
        log.warning("export files that cannot be read whole (what cannot be read is quarantined): %s", damaged)
    return LandResult(source.name, hour_text, manifest, copied, already, not_due, changed, list(damaged))


def read_manifest(lake: Store, source: str, hour: datetime) -> list[LandedFile]:
    """The files landed in `hour` (empty when the hour has not been landed)."""
    key = zones.manifest_key(source, _utc_hour(hour))
    if lake.stat(key) is None:
        return []
    return [LandedFile(**f) for f in json.loads(lake.read_bytes(key))["files"]]


def landed_empty(lake: Store, source: str, hour: datetime) -> bool:
    """Whether `hour` was landed with no file in it: its parse and apply are skipped (no bronze, no reports)."""
    return lake.stat(zones.manifest_key(source, _utc_hour(hour))) is not None and not read_manifest(lake, source, hour)


@dataclass(frozen=True)
class RawFiles:
    """Landed files as Spark reads them: their paths, those of the copies that cannot be read whole, and the
    export key of each copy whose name under its hour directory differs from it (`zones.raw_name`)."""

    paths: list[str]
    damaged: frozenset[str] = frozenset()
    export_keys: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # bytes per path, as landed


def raw_files(lake: Store, entries: Iterable[LandedFile]) -> RawFiles:
    entries = list(entries)
    paths = [spark_path(lake.child(e.raw_key)) for e in entries]
    return RawFiles(
        paths=paths,
        damaged=frozenset(path for path, e in zip(paths, entries, strict=True) if e.damage),
        export_keys={name: e.export_key for e in entries if (name := zones.raw_copy_name(e.raw_key)) != e.export_key},
        sizes={path: e.size for path, e in zip(paths, entries, strict=True)},
    )


def _copy(exports: Store, lake: Store, export_key: str, raw_key: str, hour_text: str) -> LandedFile:
    gzip = GzipStream(keep=False) if raw_key.endswith(GZIP_SUFFIX) else None
    with exports.open_read(export_key) as stream:
        reader = _HashingReader(stream, gzip)
        lake.upload(raw_key, reader)  # type: ignore[arg-type]
    damage = gzip.close() if gzip is not None else unsupported_compression(export_key)
    return LandedFile(export_key, raw_key, reader.size, reader.digest.hexdigest(), hour_text, damage)


def _restore_missing_copy(exports: Store, lake: Store, entry: LandedFile, export_present: bool) -> None:
    """A rerun repairs a raw copy that went missing (or was cut short) after its ledger entry was written.

    The copy is restored only when the export file still has the landed bytes (same sha256), so a manifest
    never names a checksum its raw copy does not have.
    """
    raw = lake.stat(entry.raw_key)
    if raw is not None and raw.size == entry.size:
        return
    problem = "missing" if raw is None else f"{raw.size} bytes instead of {entry.size}"
    if not export_present:
        raise LandError(f"raw copy {entry.raw_key} is {problem} and export file {entry.export_key} is gone")
    with exports.open_read(entry.export_key) as stream:
        digest = _HashingReader(stream)
        while digest.read(1 << 20):
            pass
    if digest.digest.hexdigest() != entry.sha256:
        raise LandError(
            f"raw copy {entry.raw_key} is {problem} and export file {entry.export_key} changed since it landed "
            f"(sha256 {digest.digest.hexdigest()}, landed {entry.sha256}); cannot restore the landed bytes"
        )
    log.warning("raw copy %s is %s; copying %s again", entry.raw_key, problem, entry.export_key)
    _copy(exports, lake, entry.export_key, entry.raw_key, entry.hour)


def _utc_hour(hour: datetime) -> datetime:
    if hour.tzinfo is None:
        hour = hour.replace(tzinfo=UTC)
    return hour.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _ledger_key(source: str, export_key: str) -> str:
    return zones.ledger_prefix(source) + hashlib.sha256(export_key.encode()).hexdigest()[:40] + ".json"


def _read_ledger(lake: Store, source: str) -> dict[str, LandedFile]:
    entries = (LandedFile(**json.loads(lake.read_bytes(o.key))) for o in lake.list(zones.ledger_prefix(source)))
    return {entry.export_key: entry for entry in entries}
