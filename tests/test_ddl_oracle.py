"""The DDL oracle: random changes to a keyed and a keyless table with DDL interleaved within hours and at hour
boundaries (add, drop, rename and widen columns, multi-clause ALTERs, truncate, temporary tables, drop or rename
one table or both in one statement), and messages from before a DDL delivered again after it, applied to
in-memory models in true order and written shuffled within each hour's files with duplicates; loading the
hours, then loading them all again, gives silver tables equal to the models."""

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
STEPS_PER_HOUR = 30


@dataclass
class TableModel:
    """One source table as the source has it: name, columns (DataWorks types), rows by id (a plain column of a
    keyless table, which DataWorks sends without a primary key); the DDL texts a change to it produces, and the
    messages that describe each data change under the current schema."""

    table: str = "items"
    keyed: bool = True
    columns: list[tuple[str, str]] = field(default_factory=lambda: [("id", "LONG"), ("name", "STRING")])
    rows: dict[int, dict] = field(default_factory=dict)
    widened: set[str] = field(default_factory=set)  # LONG columns now DECIMAL(30,0) in silver
    added: int = 0
    exists: bool = False  # created by its first insert, gone after a DROP TABLE

    def spec(self) -> dw.TableSpec:
        return dw.TableSpec("shop", self.table, tuple(self.columns), ("id",) if self.keyed else None)

    def value(self, rng: random.Random, kind: str, seq: int):
        return rng.randrange(10**6) if kind == "LONG" else f"v{seq}"

    def new_row(self, rng: random.Random, id_: int, seq: int) -> dict:
        return {name: id_ if name == "id" else self.value(rng, kind, seq) for name, kind in self.columns}

    def others(self) -> list[str]:
        return [name for name, _ in self.columns if name != "id"]

    def sql_name(self, rng: random.Random) -> str:
        return f"`shop`.`{self.table}`" if rng.random() < 0.5 else self.table

    def add(self, name: str, kind: str) -> str:
        self.columns.append((name, kind))
        for row in self.rows.values():
            row[name] = None
        return f"ADD COLUMN `{name}` {'BIGINT' if kind == 'LONG' else 'VARCHAR(64)'}"

    def drop(self, name: str) -> str:
        self.columns = [c for c in self.columns if c[0] != name]
        self.widened.discard(name)
        for row in self.rows.values():
            del row[name]
        return f"DROP COLUMN {name}"

    def rename(self, old: str, new: str) -> str:
        self.columns = [(new if c == old else c, k) for c, k in self.columns]
        if old in self.widened:
            self.widened = (self.widened - {old}) | {new}
        for row in self.rows.values():
            row[new] = row.pop(old)
        return f"RENAME COLUMN {old} TO {new}"

    def dropped(self) -> None:
        """DROP TABLE: the rows that follow create a new table under the same name."""
        self.rows.clear()
        self.widened.clear()
        self.exists = False


@dataclass
class Stream:
    """Two tables (keyed `items`, keyless `bag`) changed in one stream, and the data messages sent so far."""

    tables: list[TableModel] = field(
        default_factory=lambda: [TableModel("items", True), TableModel("bag", False, [("id", "LONG"), ("n", "LONG")])]
    )
    sent: list[list[str]] = field(default_factory=list)  # data messages, in true order
    sent_before_ddl: int = 0  # how many of them precede the last DDL


def stream(rng: random.Random) -> tuple[list[list[str]], list[TableModel]]:
    """Three hours of messages in true order (applied to the models as written), with DDL at the last step of
    the first hour and the first step of the next ones (hour boundaries) as well as anywhere within an hour."""
    state, hours, seq = Stream(), [], 100
    for hour in range(len(HOURS)):
        lines: list[str] = []
        for index in range(STEPS_PER_HOUR):
            seq += 1
            at = H5 + timedelta(seconds=seq)
            boundary = (hour == 0 and index == STEPS_PER_HOUR - 1) or (hour > 0 and index == 0)
            lines += step(rng, state, seq, at, force_ddl=boundary)
        hours.append(lines)
    return hours, state.tables


def step(rng: random.Random, state: Stream, seq: int, at: datetime, force_ddl: bool = False) -> list[str]:
    model = rng.choice(state.tables)
    spec, choice = model.spec(), rng.random()
    if (force_ddl or choice >= 0.78) and model.exists:
        state.sent_before_ddl = len(state.sent)
        return ddl(rng, state, model, seq, at, spec)
    if choice >= 0.72 and state.sent_before_ddl:  # a message from before a DDL delivered again after it
        return list(state.sent[rng.randrange(state.sent_before_ddl)])
    lines = data(rng, model, seq, at, spec)
    state.sent.append(lines)
    return lines


def data(rng: random.Random, model: TableModel, seq: int, at: datetime, spec: dw.TableSpec) -> list[str]:
    ids, choice = sorted(model.rows), rng.random()
    if not ids or choice < 0.40:
        id_ = rng.randrange(30)
        if id_ in model.rows:
            return []
        model.rows[id_] = model.new_row(rng, id_, seq)
        model.exists = True
        return dw.insert(spec, seq, at, model.rows[id_])
    id_ = rng.choice(ids)
    if choice < 0.80:
        old = model.rows.pop(id_)
        new = {**old, **{c: model.value(rng, k, seq) for c, k in model.columns if c != "id" and rng.random() < 0.7}}
        if model.keyed and rng.random() < 0.1 and (moved := rng.randrange(30, 40)) not in model.rows:
            new["id"] = moved
        model.rows[new["id"]] = new
        return dw.update(spec, seq, at, old, new, one_message=rng.random() < 0.5)
    return dw.delete(spec, seq, at, model.rows.pop(id_))


def ddl(rng: random.Random, state: Stream, model: TableModel, seq: int, at: datetime, spec: dw.TableSpec) -> list[str]:
    choice, others, table = rng.random(), model.others(), model.sql_name(rng)

    def alter(text: str) -> list[str]:
        return [dw.message(spec, "ALTER", seq, at, ddl=f"ALTER TABLE {table} {text}")]

    if choice < 0.18 or not others:
        model.added += 1
        return alter(model.add(f"c{model.added}", rng.choice(("LONG", "STRING"))))
    if choice < 0.30:
        return alter(model.drop(rng.choice(others)))
    if choice < 0.42:
        old = rng.choice(others)
        return alter(model.rename(old, f"{old}_r{seq}"))
    if choice < 0.50 and (longs := [c for c, k in model.columns if k == "LONG" and c != "id"]):
        name = rng.choice(longs)
        model.widened.add(name)
        return alter(f"MODIFY COLUMN `{name}` DECIMAL(30,0)")
    if choice < 0.62:  # several clauses on distinct columns (as MySQL requires), in any order
        old = rng.choice(others)
        gone = [rng.choice([c for c in others if c != old])] if len(others) > 1 else []
        model.added += 1
        clauses = [model.rename(old, f"{old}_m{seq}"), *map(model.drop, gone), "ALGORITHM=INPLACE"]
        clauses.append(model.add(f"c{model.added}", "LONG"))
        rng.shuffle(clauses)
        return alter(", ".join(clauses))
    if choice < 0.70:
        model.rows.clear()
        return [dw.message(spec, "TRUNCATE", seq, at, ddl=f"TRUNCATE TABLE {table}")]
    if choice < 0.78:  # session-local: the real table of the same name is untouched
        text = rng.choice((f"CREATE TEMPORARY TABLE {table} (id INT)", f"DROP TEMPORARY TABLE IF EXISTS {table}"))
        return [dw.message(spec, "CREATE" if text.startswith("CREATE") else "ERASE", seq, at, ddl=text)]
    if choice < 0.83:
        model.dropped()
        return [dw.message(spec, "ERASE", seq, at, ddl=f"DROP TABLE {table}")]
    if choice < 0.88:
        for each in state.tables:
            each.dropped()
        names = ", ".join(each.sql_name(rng) for each in state.tables)
        return [dw.message(spec, "ERASE", seq, at, ddl=f"DROP TABLE IF EXISTS {names}")]
    if choice < 0.94:
        model.table = f"{model.table.split('_')[0]}_{seq}"
        return [dw.message(spec, "RENAME", seq, at, ddl=f"RENAME TABLE {table} TO `shop`.`{model.table}`")]
    if not all(each.exists for each in state.tables):
        return []
    renames = []
    for each in state.tables:
        old = each.sql_name(rng)
        each.table = f"{each.table.split('_')[0]}_{seq}"
        renames.append(f"{old} TO {each.table}")
    return [dw.message(spec, "RENAME", seq, at, ddl="RENAME TABLE " + ", ".join(renames))]


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


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_streams_with_interleaved_ddl_load_to_the_model_also_when_reloaded(spark, tmp_path_factory, seed):
    loads_to_the_models(spark, tmp_path_factory.mktemp("ddl-oracle"), seed)


def loads_to_the_models(spark, root: Path, seed: int) -> None:
    rng = random.Random(seed)
    hours, models = stream(rng)
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
    for model in models:
        assert silver_rows(source, model) == model_rows(model), f"seed {seed}, {model.table}"
    run_hours(spark, source, HOURS, emit=lambda _: None)  # a rerun of every hour changes nothing
    for model in models:
        assert silver_rows(source, model) == model_rows(model), f"seed {seed}, {model.table} (rerun)"
