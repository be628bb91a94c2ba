"""The oracles with `engine: delta_spark`, each load in a process of its own (its Spark JVM starts with the pinned
jars that `session_conf` names); Delta Lake on Spark writes every table, and they equal the models (read with
delta-rs, as the Airflow side reads them). One load per kind of order (docs/semantics.md, "The total order"):

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


@NO_JARS
def test_delta_on_spark_loads_the_format_oracle_streams_ordered_by_export_position_and_of_every_column_kind(
    tmp_path: Path,
) -> None:
    """tests/system/test_oracle_formats.py's two streams for the order the other loads here leave out: DebeziumSmt,
    whose messages carry no ordering key (the export position orders them; DataWorks' sequence and Canal's topic
    offset are above). Its random stream loads to the model row for row, and the stream of every column kind to
    the model's exact Python values with the Arrow types the delta-rs path writes (wall clocks as timestamps without
    a zone, decimals, binary, floats); the first hour replayed after the later ones changes nothing."""
    fmt, tables = "debezium_smt", (wire.ITEMS,)
    rng, typed_rng = random.Random("delta-spark-formats"), random.Random("delta-spark-typed")
    changes, model = formats_oracle.stream(rng, tables, truncates=False)
    typed_changes, typed_rows = formats_oracle.typed_stream(typed_rng, 40, millis=True, first_seq=101)
    source = format_support.source_for(fmt, tmp_path, **wire.settings(fmt, (*tables, wire.TYPED)))
    order = formats_oracle.export_shuffled(rng, fmt, source, changes, tables)
    formats_oracle.export_shuffled(typed_rng, fmt, source, typed_changes, (wire.TYPED,))

    run_hours_with_delta_spark(tmp_path, source, [*order, order[0]])

    formats_oracle.assert_equal_to_model(source, tables, model)
    assert format_support.silver_schema(source, wire.DB, wire.TYPED.name) == formats_oracle.LOADED_TYPES[fmt]
    expected = {row["id"]: formats_oracle.loaded(fmt, row) for row in typed_rows.values()}
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
