"""The oracle in every wire format: one random change stream over a keyed table and a table without a key
(inserts, updates in place and to a new key, deletes, truncates where the format can send DDL) applied to a
model in true order, written in each format with re-deliveries where the format's ordering key allows it. A
second stream over a table of every column kind (wire.TYPED), in the same export and load, must load to exactly
the model's Python values, with the Arrow types each format's type declarations (or its configured
`column_types`) give. One format per kind of order is shuffled over two hours' files, loaded in a random hour
order and the first hour again: silver equals the models; every other format is held to its parse contract
(tests/parse_contract.py) and loads both streams from one hour. Each export layout parses to the rows of the
same messages one per line, and one stream in kcat envelopes loads. Streams whose clocks tie, delivered with
their offsets in random hours and re-delivered 1-3 hours late or early, load in a random hour order
(docs/semantics.md, "The total order")."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from format_support import parse_files, run, silver_rows, silver_schema, source_for, write_export, write_export_file
from parse_contract import by_order, described, distinct_changes, parsed_rows

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.format_registry import FORMATS
from tools.cdcgen import layouts, wire

# two hours and the first again: each hour's run costs seconds, and two already order changes across hours and
# rerun one after a later one
HOURS = [wire.BASE + timedelta(hours=h) for h in range(2)]


class Model:
    """The source's tables: items by key, events as a multiset of rows."""

    def __init__(self) -> None:
        self.items: dict[int, dict] = {}
        self.events: Counter = Counter()

    def rows(self, table: wire.Table) -> list[dict]:
        if table.key:
            return list(self.items.values())
        return [dict(zip(("id", "name", "qty"), row, strict=True)) for row in self.events.elements()]


def _items_change(rng: random.Random, model: Model, seq: int) -> wire.Change:
    key = rng.randrange(8)
    if key not in model.items:
        model.items[key] = {"id": key, "name": f"n{seq}", "qty": seq}
        return wire.Change(wire.ITEMS, wire.INSERT, seq, None, model.items[key])
    if rng.random() < 0.3:
        return wire.Change(wire.ITEMS, wire.DELETE, seq, model.items.pop(key), None)
    new_key = key
    if rng.random() < 0.2 and (candidate := rng.randrange(8, 12)) not in model.items:
        new_key = candidate  # the update moves the row to a new key
    name = f"n{seq}" if rng.random() < 0.7 else model.items[key]["name"]
    after = {"id": new_key, "name": name, "qty": seq}
    change = wire.Change(wire.ITEMS, wire.UPDATE, seq, model.items.pop(key), after)
    model.items[new_key] = after
    return change


def _events_change(rng: random.Random, model: Model, seq: int) -> wire.Change:
    """Few distinct rows, so identical copies pile up."""
    present = sorted(model.events.elements())
    row = (rng.randrange(2), rng.choice("xy"), 1)
    if not present or rng.random() < 0.5:
        model.events[row] += 1
        return wire.Change(wire.EVENTS, wire.INSERT, seq, None, dict(zip(("id", "name", "qty"), row, strict=True)))
    old = rng.choice(present)
    model.events[old] -= 1
    before = dict(zip(("id", "name", "qty"), old, strict=True))
    if rng.random() < 0.5:
        return wire.Change(wire.EVENTS, wire.DELETE, seq, before, None)
    model.events[row] += 1
    return wire.Change(wire.EVENTS, wire.UPDATE, seq, before, dict(zip(("id", "name", "qty"), row, strict=True)))


def stream(rng: random.Random, tables: tuple[wire.Table, ...], truncates: bool) -> tuple[list[wire.Change], Model]:
    model, changes = Model(), []
    for seq in range(1, 81):
        table = rng.choice(tables)
        if truncates and rng.random() < 0.04:
            model.items, model.events = ({}, model.events) if table.key else (model.items, Counter())
            changes.append(wire.Change(table, wire.TRUNCATE, seq))
        elif table.key:
            changes.append(_items_change(rng, model, seq))
        else:
            changes.append(_events_change(rng, model, seq))
    return changes, model


# The full load, over shuffled hours and a rerun, of one format per kind of order (docs/semantics.md, "The total
# order"): a sequence (DataWorks), a clock (Canal), the export position (DebeziumSmt), and SharePlex's partial
# images, whose updates fold onto the rows before them. Below the canonical rows apply knows no format: every
# other format is held to its parse contract and loads its streams in one hour (the test after this one).
FULLY_LOADED = ("canal_json", "dataworks_json", "debezium_smt", "shareplex_json")


@pytest.mark.parametrize("fmt", FULLY_LOADED)
def test_a_random_stream_and_every_column_type_load_to_the_model_over_shuffled_hours(spark, tmp_path, fmt):
    """Two streams in one export, loaded together (each hour's fixed cost is paid once for both; the tables are
    apart, each its own topic): a random stream of keyed and keyless changes equal to the model row for row, and
    every column kind equal to the model as exact Python values and Arrow types (`assert_typed`). Both load in
    a random hour order and the first hour again, shuffled unless the format is ordered by export position."""
    rng, typed_rng = random.Random(f"oracle-{fmt}"), random.Random(f"typed-{fmt}")
    tables, changes, model, typed_changes, typed_rows = streams(rng, typed_rng, fmt)
    source = source_for(fmt, tmp_path, **wire.settings(fmt, (*tables, wire.TYPED)))
    order = export_shuffled(rng, fmt, source, changes, tables, HOURS)
    export_shuffled(typed_rng, fmt, source, typed_changes, (wire.TYPED,), HOURS)

    run(spark, source, [*order, order[0]])  # the first hour replayed after the later ones

    assert_equal_to_model(source, tables, model)
    assert_typed(source, fmt, typed_rows)


@pytest.mark.parametrize("fmt", [name for name, f in FORMATS.items() if f.ddl and not f.unkeyed_ddl])
def test_formats_whose_ddl_is_never_placed_in_its_file_send_no_second_key(spark, tmp_path, fmt):
    """The registry's `unkeyed_ddl` False spares apply the query placing a DDL message without its key
    (lakeloader.apply.ddl.events): it holds where no message, DDL or data, has a second key part."""
    rng, typed_rng = random.Random(f"oracle-{fmt}"), random.Random(f"typed-{fmt}")
    tables, changes, _model, _typed_changes, _typed_rows = streams(rng, typed_rng, fmt)
    source = source_for(fmt, tmp_path, **wire.settings(fmt, tables))
    export_shuffled(rng, fmt, source, changes, tables, HOURS[:1])

    rows = parsed_rows(spark, source, sorted(Path(source.export_uri).rglob("*.json")))

    assert {row["outcome"] for row in rows} == {"data", "ddl"}
    assert {row["seq2"] for row in rows} == {0}


@pytest.mark.parametrize("fmt", sorted(set(wire.WRITERS) - set(FULLY_LOADED)))
def test_each_other_format_parses_the_streams_to_their_changes_in_true_order_and_loads_them(spark, tmp_path, fmt):
    """The parse contract (tests/parse_contract.py): the random stream's exports, shuffled with re-deliveries
    into one hour, parse to rows in which every delivery of a change has one content, and the distinct changes
    in (seq, seq2) order are the stream's changes in true order; loaded with the stream of every column kind,
    that hour gives the models, every column kind as exact Python values and Arrow types."""
    rng, typed_rng = random.Random(f"oracle-{fmt}"), random.Random(f"typed-{fmt}")
    tables, changes, model, typed_changes, typed_rows = streams(rng, typed_rng, fmt)
    source = source_for(fmt, tmp_path, **wire.settings(fmt, (*tables, wire.TYPED)))
    export_shuffled(rng, fmt, source, changes, tables, HOURS[:1])
    export_shuffled(typed_rng, fmt, source, typed_changes, (wire.TYPED,), HOURS[:1])

    rows = parsed_rows(spark, source, sorted(Path(source.export_uri).rglob("*.json")))
    run(spark, source, HOURS[:1])

    assert {row["outcome"] for row in rows} == {"data", "ddl"} - ({"ddl"} if fmt in wire.WITHOUT_DDL else set())
    random_stream = [row for row in rows if row["table"] != wire.TYPED.name]  # its values compare as text
    assert [described(c) for c in distinct_changes(random_stream, by_order, fmt)] == [described(c) for c in changes]
    assert_equal_to_model(source, tables, model)
    assert_typed(source, fmt, typed_rows)


def streams(
    rng: random.Random, typed_rng: random.Random, fmt: str
) -> tuple[tuple[wire.Table, ...], list[wire.Change], Model, list[wire.Change], dict[int, dict]]:
    """The oracle's two streams in format `fmt`: a random stream over a keyed and a keyless table (keyed only
    where the export position orders) with truncates where the format can send them, its model; then 40
    changes to the table of every column kind, and the rows they leave."""
    # DebeziumSmt messages carry no ordering key, so two identical ones in an hour count once (docs/semantics.md)
    tables = (wire.ITEMS,) if fmt in wire.ORDERED_BY_EXPORT_POSITION else (wire.ITEMS, wire.EVENTS)
    changes, model = stream(rng, tables, truncates=fmt not in wire.WITHOUT_DDL)
    # after the random stream's sequence numbers (1-80), as one source's would be
    typed_changes, typed_rows = typed_stream(typed_rng, 40, millis=fmt in MILLISECOND_CLOCKS, first_seq=101)
    return tables, changes, model, typed_changes, typed_rows


def assert_typed(source: SourceConfig, fmt: str, typed_rows: dict[int, dict]) -> None:
    """The table of every column kind holds exactly the model's rows as the Python values of the Arrow types
    the format's declarations (or its configured `column_types`) give."""
    assert silver_schema(source, wire.DB, wire.TYPED.name) == LOADED_TYPES[fmt]
    expected = [loaded(fmt, row) for row in typed_rows.values()]
    assert _by_key(silver_rows(source, wire.DB, wire.TYPED.name)) == _by_key(expected)


INSTANT = "timestamp[us, tz=UTC]"
LOADED = {
    "id": "int64",
    "small": "int32",
    "price": "decimal128(10, 2)",
    "wide": "string",
    "ratio": "double",
    "day": "date32[day]",
    "wall": "timestamp[us]",
    "instant": INSTANT,
    "raw": "binary",
    "label": "string",
    "flag": "bool",  # TINYINT(1)
    "ubig": "decimal128(20, 0)",  # BIGINT UNSIGNED
    "exact": "string",  # DECIMAL(65,30): beyond Spark's 38 digits, the exact text
    "bare": "string",  # DECIMAL without precision: any DECIMAL(65,30), the exact text
    "single": "float",
}
OMS_LOADED = LOADED | {"small": "int64"}
LOADED_TYPES = dict.fromkeys(wire.WRITERS, LOADED) | {
    "dataworks_json": LOADED
    | {"small": "int64", "price": "string", "ratio": "string", "day": INSTANT, "wall": INSTANT}
    | {"ubig": "string", "single": "string"},  # DOUBLE: the text sent
    "debezium_json": LOADED | {"ubig": "decimal128(38, 0)"},  # a Decimal without precision
    "dataworks_v2": OMS_LOADED,
    "oms_default_extend_column_type": OMS_LOADED,
    "dts_avro": LOADED | {"id": "decimal128(20, 0)", "small": "int64", "flag": "int16", "single": "double"},
    "debezium_flatten": dict.fromkeys(LOADED, "string"),
}
# formats whose date-times carry milliseconds: DataWorks DATE, DTS Avro's Timestamp and DateTime `millis`, and
# (DebeziumSmt) OMS's Debezium DATETIME, epoch milliseconds
MILLISECOND_CLOCKS = ("dataworks_json", "dts_avro", "debezium_smt")
LABELS = ("café ☕", "", "plain", 'quote " and \\ backslash', "𝄞 beyond the BMP", "中文")


def typed_stream(
    rng: random.Random, n: int, millis: bool, first_seq: int = 1
) -> tuple[list[wire.Change], dict[int, dict]]:
    """n changes to the typed table (inserts, updates of some columns and of the key, deletes), sequence numbers
    from `first_seq`, and the rows they leave; values are drawn anew for every change."""
    rows: dict[int, dict] = {}
    changes = []
    for seq in range(first_seq, first_seq + n):
        key = rng.randrange(8)
        if key not in rows:
            rows[key] = _typed_row(rng, key, millis)
            changes.append(wire.Change(wire.TYPED, wire.INSERT, seq, None, rows[key]))
        elif rng.random() < 0.25:
            changes.append(wire.Change(wire.TYPED, wire.DELETE, seq, rows.pop(key), None))
        else:
            before = rows.pop(key)
            new_key = key if rng.random() < 0.8 or (moved := rng.randrange(8, 12)) in rows else moved
            drawn = _typed_row(rng, new_key, millis)
            after = {name: drawn[name] if rng.random() < 0.5 else value for name, value in before.items()}
            rows[new_key] = after | {"id": new_key}
            changes.append(wire.Change(wire.TYPED, wire.UPDATE, seq, before, rows[new_key]))
    return changes, rows


# boundary clocks: around 1970 (negative epochs), before March 1973 (epoch milliseconds below 10^11, which a
# magnitude guess would read as seconds), leap days, the ends of the range
BOUNDARY_MOMENTS = (
    datetime(1969, 12, 31, 23, 59, 59, 999000),
    datetime(1970, 1, 1),
    datetime(1971, 12, 26, 2, 30, 53),
    datetime(1973, 3, 3, 9, 46, 39, 999000),
    datetime(1900, 2, 28, 12),
    datetime(2000, 2, 29, 23, 59, 59),
    datetime(2099, 12, 31, 23, 59, 59, 999000),
)
UNSIGNED_BIGINTS = (0, 2**63 - 1, 2**63, 2**64 - 1)
DECIMAL_65 = (wire.EXACT.scaleb(Decimal(10**65 - 1), -30), wire.EXACT.scaleb(Decimal(-(10**65) + 1), -30))
FLOATS = (0.0, -1.5, 3.0517578125e-05, 16777216.0)  # exact in 32 bits


def _typed_row(rng: random.Random, key: int, millis: bool) -> dict:
    """A row of random values and boundary values (a tenth of them NULL): clocks in whole milliseconds when
    `millis`, between 1901 and 2099, near 1970 often."""

    def moment() -> datetime:
        if rng.random() < 0.2:
            return rng.choice(BOUNDARY_MOMENTS)
        start = rng.choice((datetime(1901, 1, 1), datetime(1965, 1, 1), datetime(1975, 1, 1)))
        micros = rng.randrange(60 * 365 * 86_400 * 10**6 if start.year != 1965 else 10 * 365 * 86_400 * 10**6)
        return start + timedelta(microseconds=micros - micros % 1000 if millis else micros)

    def boundary(values: tuple, draw: object) -> object:
        return rng.choice(values) if rng.random() < 0.3 else draw

    values = {
        "small": rng.randrange(-(2**31), 2**31),
        "price": wire.EXACT.scaleb(Decimal(rng.randrange(-(10**10) + 1, 10**10)), -2),
        "wide": wire.EXACT.scaleb(Decimal(rng.randrange(-(10**50) + 1, 10**50)), -10),
        "ratio": rng.uniform(-1e9, 1e9),
        "day": moment().date(),
        "wall": moment(),
        "instant": moment().replace(tzinfo=UTC),
        "raw": rng.randbytes(rng.randrange(9)),
        "label": rng.choice(LABELS),
        "flag": rng.random() < 0.5,
        "ubig": boundary(UNSIGNED_BIGINTS, rng.randrange(2**64)),
        "exact": boundary(DECIMAL_65, wire.EXACT.scaleb(Decimal(rng.randrange(-(10**65) + 1, 10**65)), -30)),
        "bare": boundary(DECIMAL_65, wire.EXACT.scaleb(Decimal(rng.randrange(-(10**65) + 1, 10**65)), -30)),
        "single": boundary(FLOATS, rng.randrange(-(2**20), 2**20) / 256),
    }
    return {"id": key} | {name: None if rng.random() < 0.1 else value for name, value in values.items()}


def loaded(fmt: str, row: dict) -> dict:
    """The row as silver holds it in format `fmt`: each value as the Python value of its loaded Arrow type."""
    if fmt == "debezium_flatten":  # no types: the JSON text of what was sent
        sent = wire.DEBEZIUM.image(wire.TYPED, row)
        return {k: v if v is None or isinstance(v, str) else json.dumps(v) for k, v in sent.items()}
    return {name: _as_loaded(value, LOADED_TYPES[fmt][name]) for name, value in row.items()}


def _as_loaded(value: object, arrow_type: str) -> object:
    if value is None:
        return None
    if arrow_type in ("int16", "int32", "int64"):
        return int(value)
    if arrow_type.startswith("decimal128"):
        return Decimal(value)
    if arrow_type == "double":
        return float(value)
    if arrow_type == "string" and isinstance(value, Decimal):
        return wire.plain_number(value)  # exact text
    if arrow_type == "string" and isinstance(value, float | int):
        return repr(value)  # a DataWorks DOUBLE: the text the source sent
    if arrow_type == INSTANT:
        return _instant(value)
    return value


def _instant(value: date) -> datetime:
    """An instant in UTC; a date is its midnight, a wall clock read as UTC."""
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _by_key(rows: list[dict]) -> dict:
    return {row["id"]: row for row in rows}


def export_shuffled(
    rng: random.Random,
    fmt: str,
    source: SourceConfig,
    changes: list[wire.Change],
    tables: tuple[wire.Table, ...],
    hours: list[datetime],
) -> list[datetime]:
    """Writes the changes' messages in format `fmt` as the hours' export files, each table its own topic:
    shuffled with re-deliveries, or in order for a format without an ordering key. Returns the hours in the
    order to load them (later hours last where the export position orders)."""
    messages = [(change.table, line) for change in changes for line in wire.WRITERS[fmt](change)]
    if fmt in wire.ORDERED_BY_EXPORT_POSITION:
        part = len(messages) // len(hours)
        last = len(hours) - 1
        by_hour = {hour: messages[i * part : (i + 1) * part if i < last else None] for i, hour in enumerate(hours)}
        order = hours  # later hours win: they must hold the later messages
    else:
        # delivered twice; without offsets a keyless table's message re-delivered in another file is a new message
        # unless the format's sequence identifies it (docs/semantics.md, "The total order")
        redeliverable = [m for m in messages if m[0].key or FORMATS[fmt].sequence_identifies]
        messages += rng.sample(redeliverable, 10)
        rng.shuffle(messages)
        by_hour = {hour: messages[i :: len(hours)] for i, hour in enumerate(hours)}
        order = rng.sample(hours, len(hours))
    for hour, hour_messages in by_hour.items():
        for table in tables:
            lines = [line for t, line in hour_messages if t == table]
            if lines:
                write_export(source, f"{table.name}-topic/part-{hour:%H}.json", lines, hour)
    return order


# (format, layout): kcat envelopes with text and Base64 payloads (the binary format's always Base64),
# pretty-printed concatenated JSON, length-prefixed .bin files
LAYOUTS = [
    ("canal_json", "kcat"),
    ("dataworks_json", "kcat-base64"),
    ("debezium_smt", "kcat"),
    ("shareplex_json", "concatenated"),
    ("dts_avro", "kcat"),
    ("dts_avro", "bin"),
]
FRAMING = {
    "kcat": {"export_layout": "kcat"},
    "kcat-base64": {"export_layout": "kcat", "payload_encoding": "base64"},
    "concatenated": {"export_layout": "concatenated"},
}


def layout_stream(rng: random.Random, fmt: str, layout: str) -> tuple[list, Model]:
    """The random stream's messages as (table, Positioned), each table its own topic, 10 of them delivered twice
    (in kcat envelopes any message, as its offset identifies it; otherwise only where a key or the format's
    sequence does), shuffled; in kcat envelopes every DebeziumSmt delete is followed by a tombstone."""
    tables = (wire.ITEMS, wire.EVENTS)
    changes, model = stream(rng, tables, truncates=fmt not in wire.WITHOUT_DDL)
    offsets: Counter = Counter()
    messages = []
    for change in changes:
        texts: list[str | None] = list(wire.WRITERS[fmt](change))
        if layout == "kcat" and fmt == "debezium_smt" and change.op == wire.DELETE:
            texts.append(None)
        for text in texts:
            topic = f"{change.table.name}-topic"
            messages.append((change.table, layouts.Positioned(topic, 0, offsets[topic], text)))
            offsets[topic] += 1
    identified = layout.startswith("kcat") or FORMATS[fmt].sequence_identifies  # else only keyed messages re-deliver
    messages += rng.sample([m for m in messages if m[0].key or identified], 10)  # delivered twice
    rng.shuffle(messages)
    return messages, model


def test_a_random_stream_in_kcat_envelopes_ordered_by_offset_loads_to_the_model(spark, tmp_path):
    """The layout whose positions decide the load: in kcat envelopes the offset orders DebeziumSmt (which has no
    ordering key of its own), so its messages are shuffled too, and it identifies a keyless table's message
    delivered again; every delete is followed by a tombstone. Loaded in a random hour order and the first hour again."""
    fmt, layout, tables = "debezium_smt", "kcat", (wire.ITEMS, wire.EVENTS)
    rng = random.Random(f"layout-{fmt}-{layout}")
    messages, model = layout_stream(rng, fmt, layout)
    by_hour = {hour: messages[i :: len(HOURS)] for i, hour in enumerate(HOURS)}
    source = source_for(fmt, tmp_path, **wire.settings(fmt, tables), **FRAMING[layout])
    for hour, hour_messages in by_hour.items():
        for table in tables:
            part = [m for t, m in hour_messages if t == table]
            if part:
                write_export_file(source, f"{table.name}-topic/part-{hour:%H}.json", _framed(fmt, layout, part), hour)

    order = rng.sample(HOURS, len(HOURS))
    run(spark, source, [*order, order[0]])  # the first hour replayed after the later ones

    assert_equal_to_model(source, tables, model)


POSITIONS = ("origin_topic", "origin_partition", "origin_offset")


@pytest.mark.parametrize(("fmt", "layout"), [each for each in LAYOUTS if each != ("debezium_smt", "kcat")])
def test_each_export_layout_parses_to_the_rows_of_the_same_messages_one_per_line(spark, tmp_path, fmt, layout):
    """A layout is framing: the messages it frames parse to exactly the canonical rows (images, types, sequence,
    DDL, outcome) of the same messages one per line, which the test above and the format's own oracle load to the
    model; in kcat envelopes each row also carries its message's topic, partition and offset (re-deliveries
    keep theirs), which is all that apply reads of a layout (the test above loads offsets to the model)."""
    rng = random.Random(f"layout-{fmt}-{layout}")
    messages = [m for _, m in layout_stream(rng, fmt, layout)[0]]
    tables = (wire.ITEMS, wire.EVENTS)
    (tmp_path / "plain").mkdir()
    (tmp_path / "framed").mkdir()
    plain = source_for(fmt, tmp_path / "plain", **wire.settings(fmt, tables))
    framed = source_for(fmt, tmp_path / "framed", **wire.settings(fmt, tables), **FRAMING.get(layout, {}))
    plain_file = tmp_path / "plain" / "m.json"
    framed_file = tmp_path / "framed" / ("m.bin" if layout == "bin" else "m.json")
    plain_file.write_text("".join(f"{m.text}\n" for m in messages))
    framed_file.write_bytes(_framed(fmt, layout, messages))

    plain_rows = parse_files(spark, plain, plain_file)
    framed_rows = parse_files(spark, framed, framed_file)

    outcomes = Counter(row["outcome"] for row in plain_rows)
    # (SharePlex quarantines an update that changes no column: "upd message without data", in any layout)
    assert outcomes["data"] > 0 and "excluded" not in outcomes, outcomes
    expected = []
    for row in plain_rows:  # line n of the plain file is message n
        message = messages[row["origin_line"] - 1]
        kcat = layout.startswith("kcat")
        positions = (message.topic, message.partition, message.offset) if kcat else (None, None, None)
        expected.append(_content(row | dict(zip(POSITIONS, positions, strict=True))))
    assert sorted(_content(row) for row in framed_rows) == sorted(expected)


def _content(row: dict) -> str:
    """A classified row without where its message lay in the file and its text as framed (line numbers differ
    between layouts, and concatenated JSON is pretty-printed)."""
    kept = {k: v for k, v in row.items() if k not in ("origin_file", "origin_line", "text")}
    return json.dumps(kept, sort_keys=True, default=str)


def _framed(fmt: str, layout: str, messages: list[layouts.Positioned]) -> bytes:
    texts = [m.text for m in messages]
    if layout == "bin":
        return layouts.length_prefixed_file(layouts.binary_messages(texts))
    if layout == "concatenated":
        return layouts.concatenated_file(texts)
    return layouts.kcat_file(messages, base64_payload=layout == "kcat-base64", binary=FORMATS[fmt].binary)


def assert_equal_to_model(source: SourceConfig, tables: tuple[wire.Table, ...], model: Model) -> None:
    """Row for row, values as text; the column order is not compared (a table first seen through a partial
    image, as SharePlex sends updates, orders its columns as that image did)."""
    for table in tables:
        expected = sorted(_text(row) for row in model.rows(table))
        loaded = silver_rows(source, wire.DB, table.name) if expected or _exists(source, table) else []
        assert sorted(_text(row) for row in loaded) == expected, table.name


def _text(row: dict) -> str:
    return str(sorted((k, str(v)) for k, v in row.items()))


def _exists(source: SourceConfig, table: wire.Table) -> bool:
    return (Path(source.lake_root) / zones.silver_table_dir(source.name, wire.DB, table.name)).exists()


# --------------------------------------------------------------------------------------------------------------
# Ties, re-deliveries and delivery order (docs/semantics.md, "The total order")
# --------------------------------------------------------------------------------------------------------------


def tied(rng: random.Random, changes: list[wire.Change]) -> list[wire.Change]:
    """The changes with the source clock shared by runs of consecutive changes, so that a format ordered by a
    clock sends equal ordering keys within and across hours: an update and then a delete of its row in one run
    is a same-second update-then-delete, two equal inserts into the keyless table identical genuine changes."""
    result, tick = [], 0
    for change in changes:
        if rng.random() < 0.4:
            tick = change.seq
        result.append(dataclasses.replace(change, tick=tick))
    return result


def positioned(fmt: str, changes: list[wire.Change]) -> list[layouts.Positioned]:
    """Each change's messages at its topic's next offsets, in true order."""
    offsets: Counter = Counter()
    messages = []
    for change in changes:
        for text in wire.WRITERS[fmt](change):
            topic = f"{change.table.name}-topic"
            messages.append(layouts.Positioned(topic, 0, offsets[topic], text))
            offsets[topic] += 1
    return messages


DELIVERY_HOURS = [wire.BASE + timedelta(hours=h) for h in range(4)]


# one clock that ties (Canal `es`/`id`; Debezium's `ts_ms` ties as it does) and the format without an ordering
# key, each in one of the layouts that give offsets: each case loads four hours and one again (about 25 s)
@pytest.mark.parametrize(("fmt", "layout", "seed"), [("canal_json", "kcat", 0), ("debezium_smt", "offset_names", 1)])
def test_ties_and_redeliveries_in_any_delivery_and_hour_order_load_to_the_model(spark, tmp_path, fmt, layout, seed):
    """Equal clocks in runs of changes (DebeziumSmt has none), delivered with their offsets (kcat envelopes or
    offset-named files) in a random hour each, some re-delivered 1-3 hours later or earlier, the hours loaded in
    a random order and one of them again: the tables equal the model."""
    rng = random.Random(seed)
    tables = (wire.ITEMS,) if fmt in wire.ORDERED_BY_EXPORT_POSITION else (wire.ITEMS, wire.EVENTS)
    changes, model = stream(rng, tables, truncates=False)
    changes = tied(rng, changes[:30])
    model = _replayed(changes)
    framing = {"export_layout": "kcat"} if layout == "kcat" else {}
    source = source_for(fmt, tmp_path, **wire.settings(fmt, tables), **framing)
    for delivery in layouts.deliveries(rng, positioned(fmt, changes), len(DELIVERY_HOURS), layout, redelivered=6):
        write_export_file(source, delivery.name, delivery.content, DELIVERY_HOURS[delivery.hour])
    order = rng.sample(DELIVERY_HOURS, len(DELIVERY_HOURS))

    run(spark, source, [*order, order[0]])

    assert_equal_to_model(source, tables, model)


def _replayed(changes: list[wire.Change]) -> Model:
    """The model after `changes` (a prefix of a stream), in true order."""
    model = Model()
    for change in changes:
        if change.table.key:
            if change.before is not None:
                model.items.pop(change.before["id"], None)
            if change.after is not None:
                model.items[change.after["id"]] = change.after
        else:
            if change.before is not None:
                model.events[tuple(change.before[c] for c in ("id", "name", "qty"))] -= 1
            if change.after is not None:
                model.events[tuple(change.after[c] for c in ("id", "name", "qty"))] += 1
    return model


def _recased(rng: random.Random, line: str) -> str:
    """A Canal message naming its table (also in a DDL statement) and key columns in a random case."""
    message = json.loads(line)
    name = message["table"]
    spelled = rng.choice([name, name.upper(), name.title()])
    message["table"] = spelled
    message["sql"] = (message.get("sql") or "").replace(f"`{name}`", f"`{spelled}`")
    if message.get("pkNames"):
        message["pkNames"] = [rng.choice([k, k.upper()]) for k in message["pkNames"]]
    return json.dumps(message)


def test_mixed_case_names_with_case_insensitive_table_names_load_to_one_table_each(spark, tmp_path):
    """Canal messages spelling `items`, its key and its TRUNCATE statements in any case: one table each."""
    rng = random.Random("mixed-case")
    tables = (wire.ITEMS, wire.EVENTS)
    changes, model = stream(rng, tables, truncates=True)
    source = source_for("canal_json", tmp_path, lower_case_table_names=True)
    lines = [(change.table, _recased(rng, line)) for change in changes for line in wire.canal_json(change)]
    for i, hour in enumerate(HOURS):
        write_export(source, f"part-{hour:%H}.json", [line for _, line in lines[i :: len(HOURS)]], hour)

    run(spark, source, rng.sample(HOURS, len(HOURS)))

    assert_equal_to_model(source, tables, model)
    assert sorted(p.name for p in (Path(source.lake_root) / "silver" / source.name / wire.DB).iterdir()) == [
        "events",
        "items",
    ]


PUBLIC_ITEMS, SALES_ITEMS = (dataclasses.replace(wire.ITEMS, schema=schema) for schema in ("public", "sales"))


def test_tables_of_one_name_in_two_schemas_load_apart(spark, tmp_path):
    """Debezium JSON from PostgreSQL: `items` in schemas `public` and `sales` of one database, shuffled together
    over two hours: two tables, `shop.items` and `shop.sales.items`, each equal to its own model."""
    rng = random.Random("schemas")
    public, public_model = stream(rng, (wire.ITEMS,), truncates=False)
    public = [dataclasses.replace(change, table=PUBLIC_ITEMS) for change in public]
    sales, sales_model = stream(rng, (wire.ITEMS,), truncates=False)
    sales = [dataclasses.replace(change, table=SALES_ITEMS, seq=change.seq + 1000) for change in sales]
    source = source_for("debezium_json", tmp_path, **wire.settings("debezium_json", (wire.ITEMS, SALES_ITEMS)))
    lines = [line for change in public + sales for line in wire.debezium_json(change)]
    rng.shuffle(lines)
    for i, hour in enumerate(HOURS):
        write_export(source, f"part-{hour:%H}.json", lines[i :: len(HOURS)], hour)

    run(spark, source, rng.sample(HOURS, len(HOURS)))

    for table, model in ((wire.ITEMS, public_model), (SALES_ITEMS, sales_model)):
        loaded = silver_rows(source, table.db, table.name)
        assert sorted(_text(row) for row in loaded) == sorted(_text(row) for row in model.rows(table))
