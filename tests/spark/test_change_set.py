"""The two executions of a change set (lakeloader.apply.change_set) give the same results: Arrow in the driver
(delta-rs) and a Spark frame (Delta on Spark), on one small change set holding every case the rules tell apart.
The tables the operations read are written with delta-rs (the Spark side reads them with `spark_frame`)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lakeloader.apply import multiset
from lakeloader.apply.change_set import ArrowChangeSet, ChangeSet, SparkChangeSet
from lakeloader.engine import base as E
from lakeloader.engine.deltars import DeltaRsEngine

LOADED = datetime(2026, 11, 21, 12, tzinfo=UTC)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("v", pa.string()),
        ("n", pa.int64()),
        ("f", pa.float64()),
        (E.SEQ, pa.decimal128(38, 0)),
        (E.SEQ2, pa.decimal128(38, 0)),
        (E.SOURCE_FILE, pa.string()),
        (E.SOURCE_LINE, pa.int64()),
        (E.POSITION, pa.string()),
        (E.ACTION, pa.string()),
        (E.RANK, pa.int32()),
        (E.UNFIT, pa.list_(pa.string())),
    ]
)
# id, v, n, f, seq, action, unfit
ROWS = [
    (1, "12", 5, 1.5, 10, "upsert", []),  # fits every cast
    (2, "x", 5, 1.5, 11, "upsert", []),  # v: not an int
    (3, "x", 5, 1.5, 12, "delete", []),  # v: not an int, but a delete needs no v
    (4, "1", 2**40, 1.5, 13, "upsert", []),  # n: beyond int
    (5, "1", 5, 0.1, 14, "upsert", []),  # f: not exactly a float
    (6, "1", 5, 1.5, 15, "upsert", ["v"]),  # v: its text did not fit the batch's type
    (2**40, None, None, None, 16, "delete", []),  # the key: beyond int, a delete rejected too
    (8, None, 7, None, 9, "upsert", []),  # NULLs fit
]
REJECTED = "rejected"
CASTS = {"id": pa.int32(), "v": pa.int32(), "n": pa.int32(), "f": pa.float32()}


def change_table(rows: list[tuple] = ROWS) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": i, "v": v, "n": n, "f": f, E.SEQ: Decimal(seq), E.SEQ2: Decimal(0), E.SOURCE_FILE: "f",
                E.SOURCE_LINE: seq, E.POSITION: None if seq % 2 else f"p{seq}", E.ACTION: action, E.RANK: 1,
                E.UNFIT: unfit,
            }
            for i, v, n, f, seq, action, unfit in rows
        ],
        SCHEMA,
    )  # fmt: skip


@pytest.fixture
def both(spark) -> list[ChangeSet]:
    table = change_table()
    return [ArrowChangeSet(table), SparkChangeSet(spark.createDataFrame(table))]


def rows_of(change_set: ChangeSet, columns: list[str]) -> list[tuple]:
    data = change_set.data
    table = data if isinstance(data, pa.Table) else data.toArrow()
    return sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())


def test_both_executions_fit_types_and_reject_the_same_changes_for_the_same_columns(both):
    results = []
    for change_set in both:
        fitted = change_set.fitted(CASTS, ["id"])
        [rejected] = list(fitted.rejected)
        ids = rejected.rows["id"].to_pylist()
        flags = {
            kind: {name: sorted(i for i, flag in zip(ids, masks, strict=True) if flag) for name, masks in found.items()}
            for kind, found in (("text", rejected.text), ("cast", rejected.cast))
        }
        results.append((rows_of(fitted.kept, ["id", "v", "n", "f"]), sorted(ids), flags))
        assert [f.type for f in fitted.kept.schema if f.name in CASTS] == list(CASTS.values())
    assert results[0] == results[1]
    assert results[0] == (
        [(1, 12, 5, 1.5), (3, None, 5, 1.5), (8, None, 7, None)],
        [2, 4, 5, 6, 2**40],
        {"text": {"v": [6]}, "cast": {"id": [2**40], "v": [2], "n": [4], "f": [5]}},
    )


def test_rejected_changes_reach_the_driver_in_chunks_that_hold_each_rejected_change_once(spark, monkeypatch):
    """However many changes a segment rejects, the driver receives them a bounded chunk at a time, every one
    with the flags of the columns that reject it."""
    monkeypatch.setattr("lakeloader.apply.change_set.REJECTED_CHUNK_ROWS", 4)
    rows = [*ROWS, *[(100 + i, "x" if i % 2 else "1", 2**40, 1.5, 20 + i, "upsert", []) for i in range(13)]]
    table = change_table(rows)
    results = []
    for execution in (ArrowChangeSet(table), SparkChangeSet(spark.createDataFrame(table))):
        chunks = list(execution.fitted(CASTS, ["id"]).rejected)
        flagged = {}
        for chunk in chunks:
            for i, key in enumerate(chunk.rows["id"].to_pylist()):
                found = {n for masks in (chunk.text, chunk.cast) for n, flags in masks.items() if flags[i]}
                flagged[key] = sorted(found)
        assert len(chunks) == 5 and sum(c.rows.num_rows for c in chunks) == len(flagged) == 18
        results.append(flagged)
    assert [c.rows.num_rows for c in ArrowChangeSet(table).fitted(CASTS, ["id"]).rejected] == [4, 4, 4, 4, 2]
    assert results[0] == results[1]
    assert results[0][101] == ["n", "v"] and results[0][102] == ["n"] and results[0][2**40] == ["id"]


def upserts_of(values: list, value_type: pa.DataType) -> pa.Table:
    """One upsert per value, in column `v` of `value_type`, keyed by its index `k`."""
    metadata = [f for f in SCHEMA if f.name in (E.SEQ, E.SEQ2, E.SOURCE_FILE, E.SOURCE_LINE, E.POSITION, E.ACTION)]
    rows = [
        {"v": value, E.SEQ: Decimal(i), E.SEQ2: Decimal(0), E.SOURCE_FILE: "f", E.SOURCE_LINE: i, E.POSITION: None,
         E.ACTION: "upsert", "k": i}
        for i, value in enumerate(values)
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, pa.schema([("v", value_type), *metadata, ("k", pa.int64())]))


TEXTS = [
    "7", " 7", "7\n", "+7", "0x10", "7.50", "7.555", "1e-50", "1E+3", "NaN", "inf", "yes", "True", "0",
    "2026-01-01", "2026-1-1", "2026-01-01 00:00:00", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00.1234567",
    "2026-01-01T00:00:00+08:00", "12:30:00", "\uff11\uff12",  # fullwidth 12
]  # fmt: skip
TEXT_TARGETS = {
    "i": (pa.int32(), ["7", "0"]),
    "d": (pa.decimal128(10, 2), ["7", "+7", "7.50", "0"]),
    "g": (pa.float64(), ["7", "+7", "7.50", "7.555", "1e-50", "1E+3", "NaN", "0"]),
    "b": (pa.bool_(), ["True", "0"]),
    "dt": (pa.date32(), ["2026-01-01"]),
    "ts": (pa.timestamp("us", tz="UTC"), ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+08:00"]),
    "tn": (pa.timestamp("us"), ["2026-01-01", "2026-01-01 00:00:00"]),
}


def test_both_executions_cast_text_in_its_plain_forms_only(spark):
    """Spark and Arrow each read more than the plain forms, differently (Spark trims, reads 'yes' as true and
    rounds decimals; Arrow reads hexadecimal): both keep exactly the plain forms, so rows do not depend on the
    engine."""
    table = upserts_of(TEXTS, pa.string())
    for name, (target, accepted) in TEXT_TARGETS.items():
        results = [
            rows_of(execution.fitted({"v": target}, ["k"]).kept, ["k"])
            for execution in (ArrowChangeSet(table), SparkChangeSet(spark.createDataFrame(table)))
        ]
        assert results[0] == results[1] == [(TEXTS.index(t),) for t in accepted], name


NOON = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
MIDNIGHT = datetime(2026, 1, 1, tzinfo=UTC)
TYPED_CASTS = [  # source type, values, target type, what each value becomes (REJECTED: left out)
    (pa.float64(), [0.1, 123.456, 1e-300, math.nan, math.inf], pa.decimal128(10, 2),
     [Decimal("0.10"), REJECTED, REJECTED, REJECTED, REJECTED]),
    (pa.float64(), [0.5, 0.1, math.nan, -math.inf], pa.float32(), [0.5, REJECTED, math.nan, -math.inf]),
    (pa.float32(), [0.1], pa.decimal128(10, 2), [Decimal("0.10")]),
    (pa.int64(), [2**40, 2**24 + 1, 7], pa.float32(), [float(2**40), REJECTED, 7.0]),
    (pa.int64(), [7, -1, 2**40], pa.decimal128(5, 2), [Decimal("7.00"), Decimal("-1.00"), REJECTED]),
    (pa.int64(), [0, 1, 2], pa.bool_(), [False, True, REJECTED]),
    (pa.decimal128(20, 4), [Decimal("7.0000"), Decimal("7.5"), Decimal("99999999999999.9999")], pa.int64(),
     [7, REJECTED, REJECTED]),
    (pa.decimal128(20, 4), [Decimal("7.5"), Decimal("123456.0001")], pa.decimal128(10, 2),
     [Decimal("7.50"), REJECTED]),
    (pa.decimal128(20, 4), [Decimal("1.0000"), Decimal("0"), Decimal("0.5")], pa.bool_(), [True, False, REJECTED]),
    (pa.bool_(), [True, False], pa.decimal128(5, 2), [Decimal("1.00"), Decimal("0.00")]),
    (pa.timestamp("us", tz="UTC"), [MIDNIGHT, NOON], pa.date32(), [MIDNIGHT.date(), REJECTED]),
    (pa.timestamp("us", tz="UTC"), [NOON], pa.timestamp("us"), [NOON.replace(tzinfo=None)]),
    (pa.binary(), [b"ok", b"\xff"], pa.string(), ["ok", REJECTED]),
]  # fmt: skip


def test_both_executions_keep_a_typed_value_only_when_it_casts_back_to_itself(spark):
    """A value cast to the silver type is kept when casting it back gives the value again (NaN too), as Spark
    decides: Arrow's own checks round a float into a decimal and truncate an instant to its date, and refuse
    exact values (2**40 as a float, 7 as a decimal(5,2)); both executions keep the same values."""
    for source, values, target, expected in TYPED_CASTS:
        table = upserts_of(values, source)
        results = []
        for execution in (ArrowChangeSet(table), SparkChangeSet(spark.createDataFrame(table))):
            kept = dict(rows_of(execution.fitted({"v": target}, ["k"]).kept, ["k", "v"]))
            results.append([repr(kept.get(i, REJECTED)) for i in range(len(values))])
        assert results[0] == results[1] == [repr(e) for e in expected], (source, target)


def test_both_executions_select_count_and_blank_by_the_same_predicates(both):
    newer = E.after((E.SEQ, E.SEQ2), (Decimal(12), Decimal(0)))
    not_older = E.Not(E.before((E.SEQ, E.SEQ2), (Decimal(13), Decimal(0))))
    results = [
        (
            change_set.count(),
            change_set.count_where(E.Compare(E.ACTION, "=", E.UPSERT)),
            change_set.counts({"older": E.before((E.SEQ, E.SEQ2), (Decimal(13), Decimal(0)))}),
            rows_of(change_set.where(not_older), ["id"]),
            rows_of(change_set.values_only_where(["v"], newer).drop(["n", "f"]), ["id", "v"]),
            change_set.first_holding("f"),
        )
        for change_set in both
    ]
    assert results[0] == results[1]
    assert results[0][:4] == (8, 6, {"all": 8, "older": 4}, [(4,), (5,), (6,), (2**40,)])
    assert results[0][4][:3] == [(1, None), (2, None), (3, None)]
    assert results[0][5] == {E.SEQ: Decimal(10), E.SEQ2: Decimal(0), E.SOURCE_FILE: "f", E.SOURCE_LINE: 10}


def test_both_executions_drop_the_same_stale_upserts_and_write_the_same_tombstones(both, tmp_path: Path):
    engine, uri = DeltaRsEngine(), str(tmp_path / "tombstones")
    # tombstones of 1 (newer: its upsert is stale), 2 (older: kept), 5 (same seq, no position: the oldest, the
    # upsert is kept), 6 (same seq; the change has no position, the tombstone one: the upsert is stale)
    held = pa.table(
        {
            "id": pa.array([1, 2, 5, 6], pa.int64()),
            E.SEQ: pa.array([Decimal(20), Decimal(5), Decimal(14), Decimal(15)], pa.decimal128(38, 0)),
            E.SEQ2: pa.array([Decimal(0)] * 4, pa.decimal128(38, 0)),
            E.POSITION: pa.array([None, None, None, "p"], pa.string()),
            E.DELETED_AT: pa.array([LOADED] * 4, pa.timestamp("us", tz="UTC")),
        }
    )
    engine.create(uri, held.schema, {}, {})
    engine.merge(uri, held.append_column(E.ACTION, pa.array([E.UPSERT] * 4)), ["id"], E.ORDERING_COLUMNS, {})
    results = []
    for change_set in both:
        fresh = change_set.without_stale_upserts(engine, uri, ["id"])
        deletes = fresh.where(E.Compare(E.ACTION, "=", E.DELETE)).as_tombstones(["id"], LOADED)
        columns = ["id", E.SEQ, E.SEQ2, E.RANK, E.POSITION, E.ACTION, E.DELETED_AT]
        results.append((rows_of(fresh, ["id"]), rows_of(deletes, columns), deletes.schema.names))
    assert results[0] == results[1]
    assert results[0][0] == [(2,), (3,), (4,), (5,), (8,), (2**40,)]
    assert [row[0] for row in results[0][1]] == [3, 2**40]


def test_both_executions_delete_a_multisets_surplus_copies(spark, tmp_path: Path):
    engine, uri = DeltaRsEngine(), str(tmp_path / "silver")
    row, occurrence = multiset.ROW_ID, multiset.OCCURRENCE
    table = pa.table(
        {
            row: pa.array(["a", "a", "b"]),
            occurrence: pa.array([1, 0, 0], pa.int32()),
            "v": pa.array(["x", "x", "y"]),
            E.ACTION: pa.array([E.UPSERT, E.DELETE, E.DELETE]),
        }
    )
    held = pa.table({row: ["a", "a", "a", "b", "c"], occurrence: pa.array([1, 2, 3, 1, 1], pa.int32())})
    held = held.append_column("v", pa.array(["x", "x", "x", "y", "z"]))
    engine.create(uri, held.schema, {}, {})
    engine.merge(uri, held.append_column(E.ACTION, pa.array([E.UPSERT] * 5)), multiset.KEY, (), {})
    results = [
        rows_of(change_set.with_surplus_deletes(engine, uri), [row, occurrence, "v", E.ACTION])
        for change_set in (ArrowChangeSet(table), SparkChangeSet(spark.createDataFrame(table)))
    ]
    assert results[0] == results[1]
    assert results[0] == [
        ("a", 1, "x", E.UPSERT), ("a", 2, "x", E.DELETE), ("a", 3, "x", E.DELETE), ("b", 1, "y", E.DELETE),
    ]  # fmt: skip
