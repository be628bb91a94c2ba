"""The DDL oracle: random changes to a keyed and a keyless table with DDL interleaved within hours and at hour
boundaries (add, drop, rename and widen columns, multi-clause ALTERs, truncate, temporary tables, drop or rename
one table or both in one statement), and messages from before a DDL delivered again after it, applied to
in-memory models in true order and written shuffled within each hour's files with duplicates, in every format
whose messages carry DDL text (`wire.WITH_DDL_TEXT`). Loading the hours, then the first hour again (after the
later hours' DDL), gives silver tables equal to the models: in full for one format per kind of message identity
(DataWorks: the sequence; Canal in kcat envelopes: the topic offset), and for every format at the parse contract
(its exports parse to the stream's changes in true order), below which apply knows no format."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from parse_contract import by_identity, described, distinct_changes, parsed_rows, true_order

from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.format_registry import FORMATS
from lakeloader.core.storage import open_store
from lakeloader.engine import reader_for
from tools.cdcgen import layouts, wire

HOURS = [wire.BASE + timedelta(hours=i) for i in range(3)]
STEPS_PER_HOUR = 30
SQL_TYPES = {wire.BIGINT: "BIGINT", wire.TEXT: "VARCHAR(64)", wire.WHOLE_DECIMAL: "DECIMAL(30,0)"}


@dataclass
class TableModel:
    """One source table as the source has it: name, columns (`wire` kinds: BIGINT, TEXT, and WHOLE_DECIMAL
    after a MODIFY), rows by id (a plain column of a keyless table); the DDL texts a change to it produces."""

    table: str = "items"
    keyed: bool = True
    columns: list[tuple[str, str]] = field(default_factory=lambda: [("id", wire.BIGINT), ("name", wire.TEXT)])
    rows: dict[int, dict] = field(default_factory=dict)
    added: int = 0
    exists: bool = False  # created by its first insert, gone after a DROP TABLE
    was_dropped: bool = False  # then created again by a CREATE TABLE

    def wire_table(self) -> wire.Table:
        """The table as a change to it now declares it."""
        return wire.Table(self.table, ("id",) if self.keyed else (), tuple(self.columns))

    def value(self, rng: random.Random, kind: str, seq: int):
        if kind == wire.TEXT:
            return f"v{seq}"
        number = rng.randrange(10**6)
        return Decimal(number) if kind == wire.WHOLE_DECIMAL else number

    def new_row(self, rng: random.Random, id_: int, seq: int) -> dict:
        return {name: id_ if name == "id" else self.value(rng, kind, seq) for name, kind in self.columns}

    def others(self) -> list[str]:
        return [name for name, _ in self.columns if name != "id"]

    def sql_name(self, rng: random.Random) -> str:
        return f"`shop`.`{self.table}`" if rng.random() < 0.5 else self.table

    def add(self, name: str, kind: str, rng: random.Random | None = None) -> str:
        """ADD COLUMN, with `rng` sometimes a DEFAULT or MySQL's implicit one (NOT NULL: 0, ''), which the
        source stores in every row it has."""
        self.columns.append((name, kind))
        choice = rng.random() if rng else 1.0
        implicit = 0 if kind == wire.BIGINT else ""
        default = rng.randrange(-99, 99) if kind == wire.BIGINT and rng else f"d{name}"
        value, attributes = (
            (default, f" NOT NULL DEFAULT {default!r}")
            if choice < 0.3
            else (implicit, " NOT NULL")
            if choice < 0.45
            else (None, "")
        )
        for row in self.rows.values():
            row[name] = value
        return f"ADD COLUMN `{name}` {SQL_TYPES[kind]}{attributes}"

    def drop(self, name: str) -> str:
        self.columns = [c for c in self.columns if c[0] != name]
        for row in self.rows.values():
            del row[name]
        return f"DROP COLUMN {name}"

    def rename(self, old: str, new: str) -> str:
        self.columns = [(new if c == old else c, k) for c, k in self.columns]
        for row in self.rows.values():
            row[new] = row.pop(old)
        return f"RENAME COLUMN {old} TO {new}"

    def widen(self, name: str) -> str:
        self.columns = [(c, wire.WHOLE_DECIMAL if c == name else k) for c, k in self.columns]
        for row in self.rows.values():
            row[name] = None if row[name] is None else Decimal(row[name])
        return f"MODIFY COLUMN `{name}` DECIMAL(30,0)"

    def dropped(self) -> None:
        """DROP TABLE: a CREATE TABLE with the same columns makes the table again (`created`)."""
        self.rows.clear()
        self.exists = False
        self.was_dropped = True

    def created(self, rng: random.Random) -> str:
        self.exists = True
        columns = [f"`{name}` {SQL_TYPES[kind]}" for name, kind in self.columns]
        return f"CREATE TABLE {self.sql_name(rng)} ({', '.join(columns + ['PRIMARY KEY (id)'] * self.keyed)})"


@dataclass
class Stream:
    """Two tables (keyed `items`, keyless `bag`) changed in one stream, and the data changes sent so far."""

    tables: list[TableModel] = field(
        default_factory=lambda: [
            TableModel("items", True),
            TableModel("bag", False, [("id", wire.BIGINT), ("n", wire.BIGINT)]),
        ]
    )
    sent: list[wire.Change] = field(default_factory=list)  # data changes, in true order
    sent_before_ddl: int = 0  # how many of them precede the last DDL


def stream(rng: random.Random) -> tuple[list[list[wire.Change]], list[TableModel]]:
    """Three hours of changes in true order (applied to the models as made), with DDL at the last step of the
    first hour and the first step of the next ones (hour boundaries) as well as anywhere within an hour; a
    change sent again (a re-delivery) appears again, as the same change."""
    state, hours, seq = Stream(), [], 100
    for hour in range(len(HOURS)):
        changes: list[wire.Change] = []
        for index in range(STEPS_PER_HOUR):
            seq += 1
            boundary = (hour == 0 and index == STEPS_PER_HOUR - 1) or (hour > 0 and index == 0)
            changes += step(rng, state, seq, force_ddl=boundary)
        hours.append(changes)
    return hours, state.tables


def step(rng: random.Random, state: Stream, seq: int, force_ddl: bool = False) -> list[wire.Change]:
    model, choice = rng.choice(state.tables), rng.random()
    if model.was_dropped and not model.exists:
        return [wire.Change(model.wire_table(), wire.DDL, seq, statement=model.created(rng))]
    if (force_ddl or choice >= 0.78) and model.exists:
        state.sent_before_ddl = len(state.sent)
        table, text = model.wire_table(), ddl(rng, state, model, seq)
        return [wire.Change(table, wire.DDL, seq, statement=text)] if text else []
    if choice >= 0.72 and state.sent_before_ddl:  # a change from before a DDL delivered again after it
        return [state.sent[rng.randrange(state.sent_before_ddl)]]
    changes = data(rng, model, seq)
    state.sent += changes
    return changes


def data(rng: random.Random, model: TableModel, seq: int) -> list[wire.Change]:
    ids, choice, table = sorted(model.rows), rng.random(), model.wire_table()
    if not ids or choice < 0.40:
        id_ = rng.randrange(30)
        if id_ in model.rows:
            return []
        model.rows[id_] = model.new_row(rng, id_, seq)
        model.exists = True
        return [wire.Change(table, wire.INSERT, seq, None, dict(model.rows[id_]))]
    id_ = rng.choice(ids)
    if choice < 0.80:
        old = model.rows.pop(id_)
        new = {**old, **{c: model.value(rng, k, seq) for c, k in model.columns if c != "id" and rng.random() < 0.7}}
        if model.keyed and rng.random() < 0.1 and (moved := rng.randrange(30, 40)) not in model.rows:
            new["id"] = moved
        model.rows[new["id"]] = new
        return [wire.Change(table, wire.UPDATE, seq, dict(old), dict(new))]
    return [wire.Change(table, wire.DELETE, seq, model.rows.pop(id_), None)]


def ddl(rng: random.Random, state: Stream, model: TableModel, seq: int) -> str | None:
    """A statement on `model`'s table (or on both tables), applied to the models; None: none fits now."""
    choice, others, table = rng.random(), model.others(), model.sql_name(rng)
    if choice < 0.18 or not others:
        model.added += 1
        return f"ALTER TABLE {table} " + model.add(f"c{model.added}", rng.choice((wire.BIGINT, wire.TEXT)), rng)
    if choice < 0.30:
        return f"ALTER TABLE {table} " + model.drop(rng.choice(others))
    if choice < 0.42:
        old = rng.choice(others)
        return f"ALTER TABLE {table} " + model.rename(old, f"{old}_r{seq}")
    if choice < 0.50 and (longs := [c for c, k in model.columns if k == wire.BIGINT and c != "id"]):
        return f"ALTER TABLE {table} " + model.widen(rng.choice(longs))
    if choice < 0.62:  # several clauses on distinct columns (as MySQL requires), in any order
        old = rng.choice(others)
        gone = [rng.choice([c for c in others if c != old])] if len(others) > 1 else []
        model.added += 1
        clauses = [model.rename(old, f"{old}_m{seq}"), *map(model.drop, gone), "ALGORITHM=INPLACE"]
        clauses.append(model.add(f"c{model.added}", wire.BIGINT))
        rng.shuffle(clauses)
        return f"ALTER TABLE {table} " + ", ".join(clauses)
    if choice < 0.70:
        model.rows.clear()
        return f"TRUNCATE TABLE {table}"
    if choice < 0.78:  # session-local: the real table of the same name is untouched
        return rng.choice((f"CREATE TEMPORARY TABLE {table} (id INT)", f"DROP TEMPORARY TABLE IF EXISTS {table}"))
    if choice < 0.83:
        model.dropped()
        return f"DROP TABLE {table}"
    if choice < 0.88:
        for each in state.tables:
            each.dropped()
        return "DROP TABLE IF EXISTS " + ", ".join(each.sql_name(rng) for each in state.tables)
    if choice < 0.94:
        model.table = f"{model.table.split('_')[0]}_{seq}"
        return f"RENAME TABLE {table} TO `shop`.`{model.table}`"
    if not all(each.exists for each in state.tables):
        return None
    renames = []
    for each in state.tables:
        old = each.sql_name(rng)
        each.table = f"{each.table.split('_')[0]}_{seq}"
        renames.append(f"{old} TO {each.table}")
    return "RENAME TABLE " + ", ".join(renames)


def source_settings(fmt: str, hours: list[list[wire.Change]]) -> dict:
    """What a source of `fmt` configures for every name the tables had (keys, and for the formats whose messages
    carry no types, each column's type as first declared)."""
    tables: dict[str, wire.Table] = {}
    for change in (c for changes in hours for c in changes):
        known = dict(tables[change.table.name].columns) if change.table.name in tables else {}
        columns = tuple((known | dict(change.table.columns) | known).items())
        tables[change.table.name] = wire.Table(change.table.name, change.table.key, columns)
    return wire.settings(fmt, tuple(tables.values()))


def write_hours(rng: random.Random, fmt: str, root: Path, hours: list[list[wire.Change]]) -> dict:
    """Each hour's messages, with 5 of them delivered twice, shuffled into two export files; returns the export
    layout. A format whose sequence identifies a message is written one message per line; the others as kcat
    envelopes, each message with its offset in the topic (a re-delivery keeps it), which is what identifies a
    keyless table's message delivered again."""
    offsets: dict[int, int] = {}  # id(change) -> the offset of its first message
    following = 0
    for change in (c for changes in hours for c in changes):
        if id(change) not in offsets:  # not a re-delivery
            offsets[id(change)] = following
            following += len(wire.WRITERS[fmt](change))
    for hour, changes in zip(HOURS, hours, strict=True):
        messages = [
            layouts.Positioned("shop", 0, offsets[id(change)] + i, text)
            for change in changes
            for i, text in enumerate(wire.WRITERS[fmt](change))
        ]
        messages += rng.sample(messages, k=min(5, len(messages)))  # delivered twice within the hour
        rng.shuffle(messages)
        for part in (0, 1):
            if FORMATS[fmt].sequence_identifies:
                content = layouts.lines_file([m.text or "" for m in messages[part::2]])
            else:
                content = layouts.kcat_file(messages[part::2], base64_payload=False)
            path = root / "exports" / f"p{part}" / f"{hour:%H}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            os.utime(path, (hour.timestamp() + 60, hour.timestamp() + 60))
    return {} if FORMATS[fmt].sequence_identifies else {"export_layout": "kcat"}


def silver_rows(source: SourceConfig, model: TableModel) -> tuple[list[str], list[tuple]]:
    """The table's columns and rows, decimals as integers (a table dropped and not created again counts as the
    model's columns with no rows)."""
    uri = open_store(source.lake_root, source.s3_endpoint_url).child(
        zones.silver_table_dir(source.name, wire.DB, model.table)
    )
    reader = reader_for(source)  # the lake's storage options (an S3 lake's endpoint)
    if not reader.exists(uri):
        return sorted(c for c, _ in model.columns), []
    table = reader.read(uri)
    names = sorted(n for n in table.column_names if not n.startswith("_cdc_"))
    plain = [{k: int(v) if isinstance(v, Decimal) else v for k, v in r.items()} for r in table.to_pylist()]
    return names, sorted((tuple(r[n] for n in names) for r in plain), key=repr)


def model_rows(model: TableModel) -> tuple[list[str], list[tuple]]:
    names = sorted(c for c, _ in model.columns)
    plain = [{k: int(v) if isinstance(v, Decimal) else v for k, v in r.items()} for r in model.rows.values()]
    return names, sorted((tuple(r[n] for n in names) for r in plain), key=repr)


@example(seed=0)  # two-table DROPs, a DROP TABLE at an hour boundary, then the keyless table created again, renamed
@settings(
    max_examples=1,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # no shrinking: each example is a 2-minute load
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_streams_with_interleaved_ddl_load_to_the_model_also_when_reloaded(spark, tmp_path_factory, seed):
    loads_to_the_models(spark, tmp_path_factory.mktemp("ddl-oracle"), "dataworks_json", seed)


# The full load of one format per kind of message identity (docs/semantics.md): DataWorks above (the sequence
# identifies a message), Canal here (the topic offset does; tests/system/test_spark_cluster.py loads it with
# Delta on Spark too). Below the canonical rows apply knows no format, so every other format is held to its parse
# contract (the test after this one), which proves the same for it at a fraction of a load's cost.
def test_a_random_stream_with_interleaved_ddl_in_kcat_envelopes_loads_to_the_model(spark, tmp_path):
    loads_to_the_models(spark, tmp_path, "canal_json", seed=int.from_bytes(b"cana", "big"))


@pytest.mark.parametrize("seed, order", [(1, [2, 1, 0]), (5, [0, 2, 1]), (4, [1, 0, 2])])
def test_random_streams_with_interleaved_ddl_load_to_the_model_with_their_hours_run_out_of_order(
    spark, tmp_path, seed, order
):
    """Each hour's exports written just before it runs, the hours run out of order: DDL reaches apply after newer
    DDL and rows of its table (a drop, a truncate, column renames, drops and additions), and changes after DDL
    newer than them. (Fixed seeds: a random one can meet the out-of-order limits docs/ddl.md lists.)"""
    _, models, source = written_stream(random.Random(seed), "dataworks_json", tmp_path)
    staged = tmp_path / "staged"
    (tmp_path / "exports").rename(staged)
    for index in order:
        for export in staged.rglob(f"{HOURS[index]:%H}.json"):
            destination = tmp_path / "exports" / export.relative_to(staged)
            destination.parent.mkdir(parents=True, exist_ok=True)
            export.rename(destination)  # keeps its modification time, in its hour
        run_hours(spark, source, [HOURS[index]], emit=lambda _: None)
    for model in models:
        assert silver_rows(source, model) == model_rows(model), f"seed {seed}, hours {order}, {model.table}"


@pytest.mark.parametrize("fmt", sorted(wire.WITH_DDL_TEXT))
def test_each_ddl_carrying_format_parses_a_random_stream_to_its_changes_in_true_order(spark, tmp_path, fmt):
    """The parse contract of the DDL oracle: the hours' exports (shuffled, with re-deliveries) parse to rows in
    which every delivery of a message (apply's `message_identity`) has the same content, and the distinct
    messages, ordered by (seq, seq2) with no two changes tied, are the stream's changes in true order: each
    DDL with its table and statement text, each data change with its table, operation and images (values as
    text, numbers as integers)."""
    hours, _, source = written_stream(random.Random(f"ddl-contract-{fmt}"), fmt, tmp_path)
    rows = parsed_rows(spark, source, sorted((tmp_path / "exports").rglob("*.json")), zones.format_hour(HOURS[0]))

    reasons = {row["reject_reason"] for row in rows if row["outcome"] not in ("data", "ddl")}
    assert reasons <= ({NO_DATA} if fmt in SENDS_CHANGED_COLUMNS_ONLY else set()), reasons
    expected = [described(c) for c in true_order(hours) if fmt not in SENDS_CHANGED_COLUMNS_ONLY or changes_data(c)]
    assert [described(c) for c in distinct_changes(rows, by_identity, fmt)] == expected, fmt


# SharePlex sends an update's changed columns only: an update that changes none has no data to apply and is
# quarantined as such (docs/formats.md)
SENDS_CHANGED_COLUMNS_ONLY, NO_DATA = {"shareplex_json"}, "upd message without data"


def changes_data(change: wire.Change) -> bool:
    return change.op != wire.UPDATE or change.before != change.after


def written_stream(
    rng: random.Random, fmt: str, root: Path
) -> tuple[list[list[wire.Change]], list[TableModel], SourceConfig]:
    """A random stream's hours written as `fmt` exports under `root`, its models, and the source loading them."""
    hours, models = stream(rng)
    framing = write_hours(rng, fmt, root, hours)
    source = SourceConfig(
        name="shop",
        format=fmt,
        export_uri=str(root / "exports"),
        lake_root=str(root / "lake"),
        **framing,
        **source_settings(fmt, hours),
    )
    return hours, models, source


def loads_to_the_models(spark, root: Path, fmt: str, seed: int) -> None:
    _, models, source = written_stream(random.Random(seed), fmt, root)
    run_hours(spark, source, HOURS, emit=lambda _: None)
    for model in models:
        assert silver_rows(source, model) == model_rows(model), f"{fmt}, seed {seed}, {model.table}"
    run_hours(spark, source, HOURS[:1], emit=lambda _: None)  # the first hour's rerun, after the DDL of the later ones
    for model in models:
        assert silver_rows(source, model) == model_rows(model), f"{fmt}, seed {seed}, {model.table} (first hour rerun)"
