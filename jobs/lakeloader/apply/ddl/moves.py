"""The table-moves ledger: every RENAME TABLE and DROP TABLE performed on a source's silver tables, with the
statement's ordering key, in `state/<source>/table_moves.json`.

A change (or DDL message) to a name that is no newer than a move of that name belongs where the table went:
under its new name, or nowhere when it was dropped. So rerunning an hour, or an hour that arrives late, never
recreates a table under a name it no longer has, and a replayed RENAME finds its table already moved. Changes
newer than the move stay with the name (a new table created under it later).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply.table_identity import TableId
from lakeloader.core.storage import Store
from lakeloader.parse import canonical as C

Order = tuple[Decimal, Decimal]


@dataclass(frozen=True)
class TableMove:
    old: TableId
    new: TableId | None  # None: dropped (archived)
    order: Order


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
            tuple(Decimal(v) for v in m["order"]),  # type: ignore[arg-type]  # the ledger holds (seq, seq2)
        )
        for m in json.loads(lake.read_bytes(key))
    ]
    return sorted(moves, key=lambda m: m.order)


def record_move(lake: Store, source: str, move: TableMove) -> None:
    moves = read_moves(lake, source)
    if move in moves:
        return
    entries = [
        {"old": list(m.old), "new": list(m.new) if m.new else None, "order": [str(v) for v in m.order]}
        for m in sorted([*moves, move], key=lambda m: m.order)
    ]
    lake.write_bytes(_ledger_key(source), json.dumps(entries, indent=1).encode())


def resolve(name: TableId, order: Order, moves: list[TableMove]) -> TableId | None:
    """Where a change to `name` at `order` belongs now: the name after every later move, None if dropped."""
    current: TableId | None = name
    for move in moves:
        if current == move.old and order <= move.order:
            current = move.new
            if current is None:
                return None
    return current


def with_moves(data: DataFrame, moves: list[TableMove]) -> DataFrame:
    """Changes resolved through the moves (as `resolve` does): renamed to where their table went, dropped with
    their table.

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
        runs: list[tuple[Order, TableId | None]] = []
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
            case = case.when(here & F.coalesce(_not_newer(bound), F.lit(False)), value)
    if case is F:
        return data
    moved = case.otherwise(destination(F.col("db"), F.col("table"), False))
    return (
        data.withColumn("_moved", moved)
        .where(~F.col("_moved.dropped"))
        .withColumns({"db": F.col("_moved.db"), "table": F.col("_moved.table")})
        .drop("_moved")
    )


def _not_newer(order: Order) -> Column:
    seq, seq2 = F.col("seq").cast(C.SEQ_TYPE), F.col("seq2").cast(C.SEQ_TYPE)
    first, second = F.lit(order[0]).cast(C.SEQ_TYPE), F.lit(order[1]).cast(C.SEQ_TYPE)
    return (seq < first) | ((seq == first) & (seq2 <= second))
