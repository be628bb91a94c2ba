"""The oracles with `engine: delta_spark`, loaded by one process of their own (its Spark JVM starts with the
pinned jars that `session_conf` names; the two loads run in turn); Delta Lake on Spark writes every table, and
they equal the models (read with delta-rs, as the Airflow side reads them). One load per kind of order
(docs/semantics.md, "The total order"):

- the semantics oracle (tests/spark/test_semantics.py) in DataWorks JSON (the sequence orders), under a driver
  that refuses 1 MB from any Spark action;
- the format oracle's streams (tests/system/test_oracle_formats.py) in DebeziumSmt (the export position orders),
  one of them of every column kind;
- the DDL oracle's stream in Canal kcat envelopes (the topic offset orders; `stream_source`) is loaded by
  tests/system/test_spark_cluster.py, on a standalone cluster into a lake on S3."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import format_support
import pytest
import test_oracle_formats as formats_oracle
import yaml
from semantics_stream import AT, random_stream
from test_ddl_oracle import TableModel, source_settings, stream, write_hours

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.spark_conf import jars_dir
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw
from tools.cdcgen import wire

_TIMEOUT_SECONDS = 900


NO_JARS = pytest.mark.skipif(not any(jars_dir().glob("*.jar")), reason=f"no jars in {jars_dir()}: run `make jars`")


def stream_source(tmp_path: Path, seed: int = 11, **settings: str) -> tuple[SourceConfig, list[TableModel], Path]:
    """Write the random stream of `seed` as canal_json exports under `tmp_path`; its `engine: delta_spark` source
    (lake under `tmp_path` unless `settings` say otherwise), the models and the config file declaring the source."""
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
        **settings,
    }
    source = SourceConfig(**declared)
    config = tmp_path / "sources.yaml"
    config.write_text(yaml.safe_dump({"sources": [source.model_dump(mode="json", exclude_defaults=True)]}))
    return source, models, config


HOURS_SCRIPT = Path(__file__).parents[1] / "delta_spark_hours.py"


def run_hours_with_delta_spark(
    workdir: Path, loads: list[tuple[SourceConfig, list[datetime]]], max_result_size: str
) -> dict:
    """`tests/delta_spark_hours.py` on the sources (their engine set to delta_spark), each for its hours in that
    order, in one process; its record."""
    sources = [source.model_copy(update={"engine": "delta_spark"}) for source, _ in loads]
    config = workdir / "sources.yaml"
    config.write_text(
        yaml.safe_dump({"sources": [source.model_dump(mode="json", exclude_defaults=True) for source in sources]})
    )
    plans = [f"{source.name}={','.join(zones.format_hour(h) for h in hours)}" for source, (_, hours) in
             zip(sources, loads, strict=True)]  # fmt: skip
    completed = subprocess.run(
        [sys.executable, str(HOURS_SCRIPT), str(config), str(workdir), max_result_size, *plans],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@dataclass
class Loaded:
    """One oracle's stream as loaded: its source, and what the model says its tables hold."""

    source: SourceConfig
    model: object
    typed_rows: dict | None = None


@pytest.fixture(scope="module")
def delta_spark_loads(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Loaded, Loaded]:
    """Both streams below loaded by one process (one JVM start with the jars for both, which run in turn): its
    record, the semantics oracle's load and the format oracle's."""
    root = tmp_path_factory.mktemp("delta-spark")
    semantics, semantics_hours = _semantics_stream(root / "semantics")
    formats, formats_hours = _formats_streams(root / "formats")
    record = run_hours_with_delta_spark(
        root, [(semantics.source, semantics_hours), (formats.source, formats_hours)], max_result_size="1m"
    )
    return record, semantics, formats


def _semantics_stream(root: Path) -> tuple[Loaded, list[datetime]]:
    """tests/spark/test_semantics.py's oracle stream with one seed; the first hour also carries 1,000 inserts of
    2 KB into another table (2 MB of change set)."""
    files, model, order = random_stream(7)
    rng = random.Random(5)
    docs = dw.TableSpec("shop", "docs", (("id", "LONG"), ("body", "STRING")), ("id",))
    bodies = [{"id": i, "body": rng.randbytes(1_000).hex()} for i in range(1_000)]
    files[order[0]] += [line for i, row in enumerate(bodies) for line in dw.insert(docs, 1_000 + i, AT, row)]
    for hour, lines in files.items():
        write_export(root / "exports", hour, lines)
    return Loaded(dataworks_source(root), model), [*order, order[0]]


def _formats_streams(root: Path) -> tuple[Loaded, list[datetime]]:
    """tests/system/test_oracle_formats.py's two streams in DebeziumSmt, shuffled over its hours."""
    fmt, tables = "debezium_smt", (wire.ITEMS,)
    rng, typed_rng = random.Random("delta-spark-formats"), random.Random("delta-spark-typed")
    changes, model = formats_oracle.stream(rng, tables, truncates=False)
    typed_changes, typed_rows = formats_oracle.typed_stream(typed_rng, 40, millis=True, first_seq=101)
    root.mkdir()
    source = format_support.source_for(fmt, root, **wire.settings(fmt, (*tables, wire.TYPED)))
    order = formats_oracle.export_shuffled(rng, fmt, source, changes, tables, formats_oracle.HOURS)
    formats_oracle.export_shuffled(typed_rng, fmt, source, typed_changes, (wire.TYPED,), formats_oracle.HOURS)
    return Loaded(source, model, typed_rows), order  # the semantics stream's load replays an hour


@NO_JARS
def test_delta_on_spark_loads_the_semantics_oracle_stream_to_the_model_and_never_collects_a_change_set(
    delta_spark_loads: tuple[dict, Loaded, Loaded],
) -> None:
    """tests/spark/test_semantics.py's oracle (inserts, updates in one or two messages, key changes, deletes,
    duplicates, hours shuffled, one replayed) with one seed, written by Delta on Spark under a driver that refuses
    to receive 1 MB from any Spark action (`spark.driver.maxResultSize=1m`). The first hour also carries 1,000
    inserts of 2 KB into another table (2 MB of change set); reading that table back to the driver as Arrow (what
    the delta-rs path does with a change set) fails under the limit."""
    record, semantics, _ = delta_spark_loads
    source = semantics.source
    uri = Path(source.lake_root) / zones.silver_table_dir(source.name, "shop", "items")
    assert sorted((r["id"], r["name"], r["qty"]) for r in DeltaRsEngine().read(str(uri)).to_pylist()) == semantics.model
    replayed = record["apply"][source.name]["shop.docs"]  # the replay of the first hour: 1,000 actions, nothing new
    assert (replayed["actions"], replayed["inserted"], replayed["rows"]) == (1_000, 0, 1_000)
    assert "maxResultSize" in record["collect"][source.name]


@NO_JARS
def test_delta_on_spark_loads_the_format_oracle_streams_ordered_by_export_position_and_of_every_column_kind(
    delta_spark_loads: tuple[dict, Loaded, Loaded],
) -> None:
    """tests/system/test_oracle_formats.py's two streams for the order the other loads here leave out: DebeziumSmt,
    whose messages carry no ordering key (the export position orders them; DataWorks' sequence and Canal's topic
    offset are above). Its random stream loads to the model row for row, and the stream of every column kind to
    the model's exact Python values with the Arrow types the delta-rs path writes (wall clocks as timestamps without
    a zone, decimals, binary, floats)."""
    _, _, formats = delta_spark_loads
    source, fmt = formats.source, formats.source.format

    formats_oracle.assert_equal_to_model(source, (wire.ITEMS,), formats.model)
    assert format_support.silver_schema(source, wire.DB, wire.TYPED.name) == formats_oracle.LOADED_TYPES[fmt]
    expected = {row["id"]: formats_oracle.loaded(fmt, row) for row in (formats.typed_rows or {}).values()}
    assert {row["id"]: row for row in format_support.silver_rows(source, wire.DB, wire.TYPED.name)} == expected


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
