"""The DDL oracle (tests/system/test_ddl_oracle.py) with `engine: delta_spark`: the local runner, in its own process
(its Spark JVM starts with the pinned jars that `session_conf` names), loads a random stream of a keyed and a
keyless table with DDL interleaved (column adds, drops, renames and type changes, TRUNCATE, DROP and RENAME
TABLE) and re-deliveries; Delta Lake on Spark writes every table, and they equal the models (read with
delta-rs, as the Airflow side reads them)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from semantics_stream import AT, random_stream
from test_ddl_oracle import HOURS, TableModel, model_rows, silver_rows, source_settings, stream, write_hours

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.spark_conf import jars_dir
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw

_TIMEOUT_SECONDS = 900


NO_JARS = pytest.mark.skipif(not any(jars_dir().glob("*.jar")), reason=f"no jars in {jars_dir()}: run `make jars`")


@NO_JARS
def test_delta_on_spark_loads_a_random_stream_with_ddl_to_the_model(tmp_path: Path) -> None:
    source, models = load_with_delta_spark(tmp_path, "local[2]")
    for model in models:
        assert silver_rows(source, model) == model_rows(model), f"{model.table}"
    history = (tmp_path / "lake").rglob("_delta_log/00000000000000000000.json")
    assert any('"userMetadata"' in path.read_text() for path in history)  # Delta on Spark wrote the tables


def stream_source(tmp_path: Path, seed: int = 11) -> tuple[SourceConfig, list[TableModel], Path]:
    """Write the random stream of `seed` as canal_json exports under `tmp_path`; its `engine: delta_spark` source,
    the models and the config file declaring the source."""
    fmt = "canal_json"
    rng = random.Random(seed)
    hours, models = stream(rng)
    framing = write_hours(rng, fmt, tmp_path, hours)
    declared = {
        "name": "shop",
        "format": fmt,
        "export_uri": str(tmp_path / "exports"),
        "lake_root": str(tmp_path / "lake"),
        "engine": "delta_spark",
        **framing,
        **source_settings(fmt, hours),
    }
    source = SourceConfig(**declared)
    config = tmp_path / "sources.yaml"
    config.write_text(yaml.safe_dump({"sources": [source.model_dump(mode="json", exclude_defaults=True)]}))
    return source, models, config


def load_with_delta_spark(tmp_path: Path, master: str, seed: int = 11) -> tuple[SourceConfig, list[TableModel]]:
    """`stream_source`'s hours loaded by the local runner (its own process) on `master`; the source and the
    models."""
    source, models, config = stream_source(tmp_path, seed)
    completed = subprocess.run(
        [sys.executable, "-m", "lakeloader.cli.local_runner", "--source", "shop", "--config", str(config),
         "--from", zones.format_hour(HOURS[0]), "--to", zones.format_hour(HOURS[-1]), "--master", master],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-5000:]
    return source, models


HOURS_SCRIPT = Path(__file__).parents[1] / "delta_spark_hours.py"


def run_hours_with_delta_spark(
    tmp_path: Path, source: SourceConfig, hours: list[datetime], max_result_size: str | None = None
) -> dict:
    """`tests/delta_spark_hours.py` on `source` (its engine set to delta_spark) for `hours` in that order; its
    record."""
    source = source.model_copy(update={"engine": "delta_spark"})
    config = tmp_path / "sources.yaml"
    config.write_text(yaml.safe_dump({"sources": [source.model_dump(mode="json", exclude_defaults=True)]}))
    hour_list = ",".join(zones.format_hour(h) for h in hours)
    completed = subprocess.run(
        [sys.executable, str(HOURS_SCRIPT), str(config), source.name, str(tmp_path), hour_list,
         *([max_result_size] if max_result_size else [])],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-5000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@NO_JARS
def test_delta_on_spark_loads_the_semantics_oracle_stream_to_the_model_and_never_collects_a_change_set(
    tmp_path: Path,
) -> None:
    """tests/spark/test_semantics.py's oracle (inserts, updates in one or two messages, key changes, deletes,
    duplicates, hours shuffled, one replayed) with one seed, written by Delta on Spark under a driver that refuses
    to receive 1 MB from any Spark action (`spark.driver.maxResultSize=1m`). The first hour also carries 3,000
    inserts of 2 KB into another table (6 MB of change set); reading that table back to the driver as Arrow (what
    the delta-rs path does with a change set) fails under the limit."""
    files, model, order = random_stream(7)
    rng = random.Random(5)
    docs = dw.TableSpec("shop", "docs", (("id", "LONG"), ("body", "STRING")), ("id",))
    bodies = [{"id": i, "body": rng.randbytes(1_000).hex()} for i in range(3_000)]
    files[order[0]] += [line for i, row in enumerate(bodies) for line in dw.insert(docs, 1_000 + i, AT, row)]
    for hour, lines in files.items():
        write_export(tmp_path / "exports", hour, lines)
    source = dataworks_source(tmp_path)
    record = run_hours_with_delta_spark(tmp_path, source, [*order, order[0]], max_result_size="1m")
    uri = tmp_path / "lake" / zones.silver_table_dir("shop", "shop", "items")
    assert sorted((r["id"], r["name"], r["qty"]) for r in DeltaRsEngine().read(str(uri)).to_pylist()) == model
    replayed = record["apply"]["shop.docs"]  # the replay of the first hour: 3,000 actions, nothing new
    assert (replayed["actions"], replayed["inserted"], replayed["rows"]) == (3_000, 0, 3_000)
    assert "maxResultSize" in record["collect"]


def write_export(exports: Path, hour: datetime, lines: list[str]) -> None:
    """One export file of DataWorks lines, modified a minute into `hour` (so that it lands in it)."""
    exports.mkdir(parents=True, exist_ok=True)
    part = exports / f"part-{hour:%H}.json"
    part.write_text("\n".join(lines) + "\n")
    os.utime(part, (hour.timestamp() + 60, hour.timestamp() + 60))


def dataworks_source(tmp_path: Path) -> SourceConfig:
    return SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(tmp_path / "exports"),
        lake_root=str(tmp_path / "lake"),
        engine="delta_spark",
    )
