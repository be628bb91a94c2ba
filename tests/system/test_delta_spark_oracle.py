"""The DDL oracle (tests/system/test_ddl_oracle.py) with `engine: delta_spark`: the local runner, in its own process
(its Spark JVM starts with the pinned jars that `session_conf` names), loads a random stream of a keyed and a
keyless table with DDL interleaved (column adds, drops, renames and type changes, TRUNCATE, DROP and RENAME
TABLE) and re-deliveries; Delta Lake on Spark writes every table, and they equal the models (read with
delta-rs, as the Airflow side reads them)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_ddl_oracle import HOURS, TableModel, model_rows, silver_rows, source_settings, stream, write_hours

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.spark_conf import jars_dir

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
