"""The table-moves ledger (`lakeloader.apply.ddl.moves`): moves recorded at their point, read back in order."""

from __future__ import annotations

import json
from decimal import Decimal

from lakeloader.apply.ddl.moves import TableMove, read_moves, record_move, resolve
from lakeloader.core.storage import open_store

SECOND = Decimal(1795237800000)
BEFORE, AFTER = "1f2026-11-21T05.61.00000000000000000002", "1f2026-11-21T05.61.00000000000000000004"
MOVE = TableMove(("shop", "t"), ("shop", "t_2025"), (SECOND, Decimal(7), "1f2026-11-21T05.61.00000000000000000003"))


def test_a_change_sharing_a_moves_second_goes_by_its_place_before_or_after_the_move(tmp_path):
    lake = open_store(str(tmp_path))
    record_move(lake, "src", MOVE)

    moves = read_moves(lake, "src")

    assert moves == [MOVE]
    assert resolve(("shop", "t"), (SECOND, Decimal(7), BEFORE), moves) == ("shop", "t_2025")
    assert resolve(("shop", "t"), (SECOND, Decimal(7), AFTER), moves) == ("shop", "t")  # a new table under t
    assert resolve(("shop", "t"), (SECOND, Decimal(7)), moves) == ("shop", "t_2025")  # no place: the first


def test_a_move_recorded_before_moves_held_their_place_counts_after_every_change_of_its_second(tmp_path):
    lake = open_store(str(tmp_path))
    old = [{"old": ["shop", "t"], "new": None, "order": [str(SECOND), "7"]}]
    lake.write_bytes("state/src/table_moves.json", json.dumps(old).encode())

    moves = read_moves(lake, "src")
    record_move(lake, "src", TableMove(("shop", "t"), None, (SECOND, Decimal(7), BEFORE)))  # a rerun records it

    assert resolve(("shop", "t"), (SECOND, Decimal(7), AFTER), moves) is None
    assert resolve(("shop", "t"), (SECOND, Decimal(8), BEFORE), moves) == ("shop", "t")
    assert len(read_moves(lake, "src")) == 1
