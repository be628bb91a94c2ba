"""The DDL oracle: random changes with DDL interleaved (add, drop, rename and widen columns, truncate, drop or
rename the table), applied to an in-memory model in true order and written shuffled within each hour's files with
duplicates; loading the hours, then loading them all again, gives silver tables equal to the model."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeloader import zones
from lakeloader.config import SourceConfig
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.generator import dataworks as dw
from lakeloader.runner import run_hours

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
HOURS = [H5 + timedelta(hours=i) for i in range(3)]
STEPS_PER_HOUR = 40


@dataclass
class TableModel:
    """One source table as the source has it: name, columns (DataWorks types), rows by id; the DDL texts a
    change to it produces, and the messages that describe each data change under the current schema."""

    table: str = "items"
    columns: list[tuple[str, str]] = field(default_factory=lambda: [("id", "LONG"), ("name", "STRING")])
    rows: dict[int, dict] = field(default_factory=dict)
    widened: set[str] = field(default_factory=set)  # LONG columns now DECIMAL(30,0) in silver
    added: int = 0

    def spec(self) -> dw.TableSpec:
        return dw.TableSpec("shop", self.table, tuple(self.columns), ("id",))

    def value(self, rng: random.Random, kind: str, seq: int):
        return rng.randrange(10**6) if kind == "LONG" else f"v{seq}"

    def new_row(self, rng: random.Random, id_: int, seq: int) -> dict:
        return {name: id_ if name == "id" else self.value(rng, kind, seq) for name, kind in self.columns}

    def others(self) -> list[str]:
        return [name for name, _ in self.columns if name != "id"]


def stream(rng: random.Random) -> tuple[list[list[str]], TableModel]:
    """Three hours of messages in true order (applied to the model as written)."""
    model, hours, seq = TableModel(), [], 100
    for _ in HOURS:
        lines: list[str] = []
        for _ in range(STEPS_PER_HOUR):
            seq += 1
            at = H5 + timedelta(seconds=seq)
            lines += step(rng, model, seq, at)
        hours.append(lines)
    return hours, model


def step(rng: random.Random, model: TableModel, seq: int, at: datetime) -> list[str]:
    spec, choice = model.spec(), rng.random()
    ids = sorted(model.rows)
    if not ids or choice < 0.35:
        id_ = rng.randrange(30)
        if id_ in model.rows:
            return []
        model.rows[id_] = model.new_row(rng, id_, seq)
        return dw.insert(spec, seq, at, model.rows[id_])
    id_ = rng.choice(ids)
    if choice < 0.60:
        old = model.rows.pop(id_)
        new = {**old, **{c: model.value(rng, k, seq) for c, k in model.columns if c != "id" and rng.random() < 0.7}}
        if rng.random() < 0.1 and (moved := rng.randrange(30, 40)) not in model.rows:
            new["id"] = moved
        model.rows[new["id"]] = new
        return dw.update(spec, seq, at, old, new, one_message=rng.random() < 0.5)
    if choice < 0.72:
        return dw.delete(spec, seq, at, model.rows.pop(id_))
    return ddl(rng, model, seq, at, spec)


def ddl(rng: random.Random, model: TableModel, seq: int, at: datetime, spec: dw.TableSpec) -> list[str]:
    choice, others = rng.random(), model.others()
    table = f"`shop`.`{model.table}`" if rng.random() < 0.5 else model.table
    if choice < 0.30 or not others:
        model.added += 1
        name, kind = f"c{model.added}", rng.choice(("LONG", "STRING"))
        model.columns.append((name, kind))
        for row in model.rows.values():
            row[name] = None
        sql_type = "BIGINT" if kind == "LONG" else "VARCHAR(64)"
        return [dw.message(spec, "ALTER", seq, at, ddl=f"ALTER TABLE {table} ADD COLUMN `{name}` {sql_type}")]
    if choice < 0.50:
        name = rng.choice(others)
        model.columns = [c for c in model.columns if c[0] != name]
        model.widened.discard(name)
        for row in model.rows.values():
            del row[name]
        return [dw.message(spec, "ALTER", seq, at, ddl=f"ALTER TABLE {table} DROP COLUMN {name}")]
    if choice < 0.70:
        old = rng.choice(others)
        new = f"{old}_r{seq}"
        model.columns = [(new if c == old else c, k) for c, k in model.columns]
        if old in model.widened:
            model.widened = (model.widened - {old}) | {new}
        for row in model.rows.values():
            row[new] = row.pop(old)
        return [dw.message(spec, "ALTER", seq, at, ddl=f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")]
    if choice < 0.82 and (longs := [c for c, k in model.columns if k == "LONG" and c != "id"]):
        name = rng.choice(longs)
        model.widened.add(name)
        text = f"ALTER TABLE {table} MODIFY COLUMN `{name}` DECIMAL(30,0)"
        return [dw.message(spec, "ALTER", seq, at, ddl=text)]
    if choice < 0.90:
        model.rows.clear()
        return [dw.message(spec, "TRUNCATE", seq, at, ddl=f"TRUNCATE TABLE {table}")]
    if choice < 0.95:  # the rows that follow create a new table under the same name
        model.rows.clear()
        model.widened.clear()
        return [dw.message(spec, "ERASE", seq, at, ddl=f"DROP TABLE {table}")]
    new_table = f"items_{seq}"
    model.table = new_table
    return [dw.message(spec, "RENAME", seq, at, ddl=f"RENAME TABLE {table} TO `shop`.`{new_table}`")]


def silver_rows(source: SourceConfig, model: TableModel) -> tuple[list[str], list[tuple]]:
    """The table's columns and rows (a table dropped and not created again counts as the model's columns with
    no rows)."""
    uri = str(Path(source.lake_root) / zones.silver_table_dir(source.name, "shop", model.table))
    if not DeltaRsEngine().exists(uri):
        return sorted(c for c, _ in model.columns), []
    table = DeltaRsEngine().read(uri)
    names = sorted(n for n in table.column_names if not n.startswith("_cdc_"))
    plain = [{k: int(v) if isinstance(v, Decimal) else v for k, v in r.items()} for r in table.to_pylist()]
    return names, sorted((tuple(r[n] for n in names) for r in plain), key=repr)


def model_rows(model: TableModel) -> tuple[list[str], list[tuple]]:
    names = sorted(c for c, _ in model.columns)
    return names, sorted((tuple(r[n] for n in names) for r in model.rows.values()), key=repr)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_streams_with_interleaved_ddl_load_to_the_model_also_when_reloaded(spark, tmp_path_factory, seed):
    rng = random.Random(seed)
    hours, model = stream(rng)
    root = tmp_path_factory.mktemp("ddl-oracle")
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(root / "exports"), lake_root=str(root / "lake")
    )
    for hour, lines in zip(HOURS, hours, strict=True):
        lines = lines + rng.sample(lines, k=min(5, len(lines)))  # delivered twice within the hour
        rng.shuffle(lines)
        for part in (0, 1):
            path = root / "exports" / f"p{part}" / f"{hour:%H}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines[part::2]) + "\n")
            os.utime(path, (hour.timestamp() + 60, hour.timestamp() + 60))

    run_hours(spark, source, HOURS, emit=lambda _: None)
    assert silver_rows(source, model) == model_rows(model), f"seed {seed}"
    run_hours(spark, source, HOURS, emit=lambda _: None)  # a rerun of every hour changes nothing
    assert silver_rows(source, model) == model_rows(model), f"seed {seed} (rerun)"
