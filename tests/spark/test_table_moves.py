"""The table-moves ledger read by Spark: `with_moves` sends each change where `resolve` says its table went."""

from __future__ import annotations

import random
from decimal import Decimal

from pyspark.sql import functions as F

from lakeloader.apply.ddl.moves import TableMove, resolve, with_moves

PLACES = ("1a", "1b", "1c")  # places after a (seq, seq2), as changes' `_cdc_position` and moves' points hold them


def chained_moves(rng: random.Random, count: int) -> list[TableMove]:
    """`count` moves in sequence order: tables renamed along chains, some dropped, names reused after a drop."""
    names, moves = ["a", "b"], []
    for index in range(count):
        old = rng.choice(names)
        order = (Decimal(10 * (index + 1)), Decimal(rng.randrange(2)), rng.choice(PLACES))
        if rng.random() < 0.2:
            moves.append(TableMove(("db", old), None, order))  # the name is free again for a later table
        else:
            new = f"{old.split('_')[0]}_{index}"
            moves.append(TableMove(("db", old), ("db", new), order))
            names.append(new)
    return moves


def test_changes_go_where_forty_chained_renames_and_drops_sent_their_table(spark):
    """Also the changes sharing a move's (seq, seq2): those placed before or at it go with the table, those after
    it stay with the name."""
    rng = random.Random(7)
    moves = chained_moves(rng, 40)
    names = sorted({m.old[1] for m in moves} | {"other"})
    rows = [
        ("db", name, Decimal(seq), Decimal(seq2), place)
        for name in names
        for seq in range(0, 420, 5)
        for seq2 in (0, 1)
        for place in PLACES
    ]
    data = spark.createDataFrame(rows, "db string, table string, seq decimal(38,0), seq2 decimal(38,0), place string")
    got = sorted(tuple(r) for r in with_moves(data, moves, F.col("place")).collect())
    expected = sorted(
        (*where, seq, seq2, place)
        for db, name, seq, seq2, place in rows
        if (where := resolve((db, name), (seq, seq2, place), moves)) is not None
    )
    assert got == expected
    assert len(expected) < len(rows)  # some changes went with a dropped table
    assert any(r[1] != "other" and r[1] not in names for r in got)  # and some were renamed
    ties = {(db, name, seq, seq2) for db, name, seq, seq2, _ in rows}
    split = [t for t in ties if len({resolve(t[:2], (*t[2:], place), moves) for place in PLACES}) > 1]
    assert split  # some changes tie with a move on (seq, seq2) and go apart by their place
