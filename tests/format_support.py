"""Helpers shared by the format tests (test_format_*.py): parse fixture files, run hours end to end, read silver."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.land.step import RawFiles
from lakeloader.parse.framing import read_messages
from lakeloader.parse.step import classify

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOUR = datetime(2026, 11, 21, 5, tzinfo=UTC)


def source_for(fmt: str, tmp_path: Path | None = None, **overrides) -> SourceConfig:
    """A source of format `fmt`; with `tmp_path`, exporting to and loading into directories under it."""
    exports, lake = (tmp_path / "exports", tmp_path / "lake") if tmp_path else ("/unused", "/unused")
    if tmp_path:
        exports.mkdir(exist_ok=True)
    return SourceConfig(name="src", format=fmt, export_uri=str(exports), lake_root=str(lake), **overrides)


def parse_files(spark, source: SourceConfig, *files: Path) -> list[dict]:
    """Classified rows (canonical columns, reject_reason, outcome) of the files, in file and line order."""
    messages = read_messages(spark, RawFiles([f"file://{f}" for f in files]), source, "2026-11-21T05")
    rows = classify(messages, source).orderBy("origin_file", "origin_line").collect()
    return [row.asDict(recursive=True) for row in rows]


def lines_of(path: Path) -> list[str]:
    """A fixture file's messages (blank lines skipped)."""
    return [line for line in path.read_text().splitlines() if line.strip()]


def parse_lines(spark, source: SourceConfig, tmp_path: Path, lines: list[str], name: str = "m.json") -> list[dict]:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return parse_files(spark, source, path)


def write_export(source: SourceConfig, name: str, lines: list[str], hour: datetime = HOUR) -> None:
    """An export file of lines that lands in `hour` (modified half an hour into it)."""
    write_export_file(source, name, ("\n".join(lines) + "\n").encode(), hour)


def write_export_file(source: SourceConfig, name: str, content: bytes, hour: datetime = HOUR) -> None:
    """An export file that lands in `hour` (modified half an hour into it)."""
    path = Path(source.export_uri) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.utime(path, (hour.timestamp() + 1800, hour.timestamp() + 1800))


def run(spark, source: SourceConfig, hours: list[datetime] | None = None) -> list[dict]:
    return run_hours(spark, source, hours or [HOUR], emit=lambda _: None)


def report(reports: list[dict], step: str, hour: datetime = HOUR) -> dict:
    return next(r for r in reports if r["step"] == step and r["hour"] == zones.format_hour(hour))


def silver_rows(source: SourceConfig, db: str, table: str, metadata: bool = False) -> list[dict]:
    """The table's rows sorted by their values; without the _cdc_* columns unless `metadata`."""
    uri = str(Path(source.lake_root) / zones.silver_table_dir(source.name, db, table))
    rows = DeltaRsEngine().read(uri).to_pylist()
    if not metadata:
        rows = [{k: v for k, v in row.items() if not k.startswith("_cdc_")} for row in rows]
    return sorted(rows, key=lambda r: [str(v) for v in r.values()])


def silver_schema(source: SourceConfig, db: str, table: str) -> dict[str, str]:
    """Column name -> Arrow type name of the silver table (user columns only)."""
    uri = str(Path(source.lake_root) / zones.silver_table_dir(source.name, db, table))
    return {f.name: str(f.type) for f in DeltaRsEngine().read(uri).schema if not f.name.startswith("_cdc_")}
