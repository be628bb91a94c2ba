"""The table-moves ledger: every RENAME TABLE and DROP TABLE performed on a source's silver tables, with the
statement's point in the total order (E.Point: seq, seq2 and its place after them, as a change's
`_cdc_position`), in `state/<source>/table_moves.json`.

A change (or DDL message) to a name that is no newer than a move of that name belongs where the table went:
under its new name, or nowhere when it was dropped. So rerunning an hour, or an hour that arrives late, never
recreates a table under a name it no longer has, and a replayed RENAME finds its table already moved. Changes
newer than the move stay with the name (a new table created under it later), also those sharing its (seq, seq2)
but sent after it (Canal's `es` has seconds: `DROP TABLE t; CREATE TABLE t; INSERT` in one second).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply.ddl.points import change_point, point_literal
from lakeloader.apply.table_identity import TableId
from lakeloader.core.storage import Store
from lakeloader.engine import base as E

# The place of a move recorded as (seq, seq2) alone (before moves recorded their point): after every change of
# that key, as those moves were read (positions start with a digit, and '~' sorts after every character they use)
_AFTER_EVERY_POSITION = "~"


@dataclass(frozen=True)
class TableMove:
    old: TableId
    new: TableId | None  # None: dropped (archived)
    order: E.Point


def _ledger_key(source: str) -> str:
    return f"state/{source}/table_moves.json"


def read_moves(lake: Store, source: str) -> list[TableMove]:
    """The source's moves in sequence order."""
    key = _ledger_key(source)
    if lake.stat(key) is None:
        return []
    moves = [
        TableMove(
            tuple(m["old"]),
            tuple(m["new"]) if m["new"] else None,
            _point(m["order"]),
        )
        for m in json.loads(lake.read_bytes(key))
    ]
    return sorted(moves, key=lambda m: m.order)


def _point(recorded: list[str]) -> E.Point:
    seq, seq2 = Decimal(recorded[0]), Decimal(recorded[1])
    return seq, seq2, recorded[2] if len(recorded) > 2 else _AFTER_EVERY_POSITION


def record_move(lake: Store, source: str, move: TableMove) -> None:
    moves = read_moves(lake, source)
    if any(_same(m, move) for m in moves):
        return
    entries = [
        {"old": list(m.old), "new": list(m.new) if m.new else None, "order": [str(v) for v in m.order]}
        for m in sorted([*moves, move], key=lambda m: m.order)
    ]
    lake.write_bytes(_ledger_key(source), json.dumps(entries, indent=1).encode())


def _same(recorded: TableMove, move: TableMove) -> bool:
    """Whether `recorded` is `move` (recorded again by a rerun; recorded before moves held their point: by key)."""
    if recorded.order[2] == _AFTER_EVERY_POSITION:
        return (recorded.old, recorded.new, recorded.order[:2]) == (move.old, move.new, move.order[:2])
    return recorded == move


def resolve(name: TableId, order: tuple, moves: list[TableMove]) -> TableId | None:
    """Where a change to `name` at `order` belongs now: the name after every later move, None if dropped.
    `order`: a point, or a (seq, seq2) alone, which counts as the first place of that key (no newer than a move
    sharing it)."""
    current: TableId | None = name
    for move in moves:
        if current == move.old and order <= move.order:
            current = move.new
            if current is None:
                return None
    return current


def with_moves(data: DataFrame, moves: list[TableMove], place: Column) -> DataFrame:
    """Changes resolved through the moves (as `resolve` does at their point: seq, seq2 and `place`, the change's
    `_cdc_position` as apply writes it): renamed to where their table went, dropped with their table.

    One flat CASE over the change's own name and order: between two consecutive move orders, where a name
    resolves to is constant, so each (name, interval) is one branch. (One CASE per move, chained, nests each
    move's expression inside the next one's and grows exponentially with the number of moves.)"""
    if not moves:
        return data

    def destination(db: Column, table: Column, dropped: bool) -> Column:
        return F.struct(
            db.cast("string").alias("db"), table.cast("string").alias("table"), F.lit(dropped).alias("dropped")
        )

    bounds = sorted({m.order for m in moves})
    case: Any = F  # the functions module until the first `when`, then a Column
    for name in dict.fromkeys(m.old for m in moves):
        here = (F.col("db") == name[0]) & (F.col("table") == name[1])
        # ascending bounds, the first branch that holds is the change's interval; a run of intervals with one
        # destination is one branch (its last bound), and the trailing run that stays under `name` none
        runs: list[tuple[E.Point, TableId | None]] = []
        for bound in bounds:
            where = resolve(name, bound, moves)
            if runs and runs[-1][1] == where:
                runs[-1] = (bound, where)
            else:
                runs.append((bound, where))
        if runs and runs[-1][1] == name:
            runs.pop()
        for bound, where in runs:
            value = (
                destination(F.lit(None), F.lit(None), True)
                if where is None
                else destination(F.lit(where[0]), F.lit(where[1]), False)
            )
            case = case.when(here & F.coalesce(_not_newer(bound, place), F.lit(False)), value)
    if case is F:
        return data
    moved = case.otherwise(destination(F.col("db"), F.col("table"), False))
    return (
        data.withColumn("_moved", moved)
        .where(~F.col("_moved.dropped"))
        .withColumns({"db": F.col("_moved.db"), "table": F.col("_moved.table")})
        .drop("_moved")
    )


def _not_newer(point: E.Point, place: Column) -> Column:
    return change_point(F.col("seq"), F.col("seq2"), place) <= point_literal(point)
