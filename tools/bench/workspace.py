"""Where a benchmark keeps its data, and how it prepares it cheaply.

    <workdir>/exports/<id>/      generated export of one change stream (reused while its parameters match)
    <workdir>/base/<id>/silver/  generated pre-existing silver tables of one size and layout (reused likewise)
    <workdir>/runs/<name>/lake/  a lake a run writes: a clone of a base plus what land/parse/apply write

A clone hard-links the base's Parquet files (Delta never modifies a data file, it only adds and removes
them) and copies the small transaction log, so every run starts from the same tables in a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lakeloader.core.config import SourceConfig
from tools.bench.scenario import COLUMNS, DB, SOURCE

COMPLETE = ".complete.json"


@dataclass(frozen=True)
class Layout:
    """How the pre-existing silver files are laid out: rows per file (in key order), and the table's
    `delta.targetFileSize` (what delta-rs aims for when it rewrites files; None = delta-rs' default)."""

    rows_per_file: int
    target_file_size: int | None = None

    def label(self) -> str:
        size = f", target {self.target_file_size / 2**20:g} MiB" if self.target_file_size else ""
        return f"{self.rows_per_file} rows/file{size}"


def fingerprint(parameters: dict) -> str:
    return hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest()[:12]


def cached(directory: Path, parameters: dict, build: Callable[[Path], object]) -> bool:
    """Build `directory` unless it holds a complete build with the same parameters; True when it was reused."""
    marker = directory / COMPLETE
    if marker.exists() and json.loads(marker.read_text()) == parameters:
        return True
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    build(directory)
    marker.write_text(json.dumps(parameters, sort_keys=True))
    return False


def clone_tables(base_silver: Path, lake: Path) -> None:
    """A fresh lake holding a copy of the base's silver tables (data files hard-linked)."""
    shutil.rmtree(lake, ignore_errors=True)
    target = lake / "silver"
    for log in base_silver.rglob("_delta_log"):
        table = log.parent
        copy = target / table.relative_to(base_silver)
        shutil.copytree(log, copy / "_delta_log")
        for data in table.glob("*.parquet"):
            os.link(data, copy / data.name)


def source_config(exports: Path, lake: Path, tables: list[str]) -> SourceConfig:
    """The benchmark's source. Its tables come laid out by `Layout`, so the apply step does not recluster them
    (the benchmark's first hour is midnight, a recluster hour by default); `layout` measures reclustering.
    DOUBLE columns are configured as double, the type the pre-written tables have (DataWorks DOUBLE is the exact
    text otherwise)."""
    doubles = {name: "double" for name, kind in COLUMNS if kind == "DOUBLE"}
    return SourceConfig(
        name=SOURCE,
        format="dataworks_json",
        export_uri=str(exports),
        lake_root=str(lake),
        recluster_every_hours=0,
        column_types={f"{DB}.{table}": doubles for table in tables},
    )
