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
        TableMove(tuple(m["old"]), tuple(m["new"]) if m["new"] else None, tuple(Decimal(v) for v in m["order"]))
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
    """Changes resolved through the moves: renamed to where their table went, dropped with their table."""
    for move in moves:
        hit = (
            (F.col("db") == move.old[0])
            & (F.col("table") == move.old[1])
            & F.coalesce(_not_newer(move.order), F.lit(False))
        )
        if move.new is None:
            data = data.where(~hit)
        else:
            data = data.withColumns(
                {
                    "db": F.when(hit, F.lit(move.new[0])).otherwise(F.col("db")),
                    "table": F.when(hit, F.lit(move.new[1])).otherwise(F.col("table")),
                }
            )
    return data


def _not_newer(order: Order) -> Column:
    seq, seq2 = F.col("seq").cast(C.SEQ_TYPE), F.col("seq2").cast(C.SEQ_TYPE)
    first, second = F.lit(order[0]).cast(C.SEQ_TYPE), F.lit(order[1]).cast(C.SEQ_TYPE)
    return (seq < first) | ((seq == first) & (seq2 <= second))
