"""delta-rs keeps each table loaded while tables are held (apply, under the source's lock): reads see every
commit the engine makes, whether through the held table or by the table's URI, and a commit that fails lets
the table go, so the next read loads the log again, and beyond a bound the least recently used table is let go.
A commit from elsewhere is seen once the hold ends."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakeloader.engine import deltars
from lakeloader.engine.base import ACTION, UPSERT, Compare
from lakeloader.engine.deltars import DeltaRsEngine

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
ROWS = pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA)


def _table(tmp_path) -> str:
    uri = str(tmp_path / "orders")
    write_deltalake(uri, ROWS)
    return uri


def _view(engine: DeltaRsEngine, uri: str) -> tuple[int, list[str], dict[str, str], list[dict]]:
    rows = engine.read(uri).sort_by("id").to_pylist()
    return engine.version(uri), engine.schema(uri).names, engine.properties(uri), rows


def test_reads_while_held_see_every_commit_the_engine_makes(tmp_path) -> None:
    uri = _table(tmp_path)
    engine = DeltaRsEngine()
    changes = pa.table({"id": [2, 3], "name": ["B", "c"], ACTION: [UPSERT, UPSERT]})
    commits = [
        lambda: engine.set_properties(uri, {"key": "id"}, {}),
        lambda: engine.add_columns(uri, [pa.field("note", pa.string())], {}),
        lambda: engine.merge(uri, changes, ["id"], (), {}),
        lambda: engine.delete_where(uri, Compare("id", "=", 1), {}),
        lambda: engine.rewrite(uri, SCHEMA, lambda rows: rows.drop_columns(["note"]), {}),
        lambda: engine.append(uri, pa.table({"id": [4], "name": ["d"]})),
        lambda: engine.recluster(uri, ["id"], 1 << 20, {}),
    ]

    seen, loaded = [], []
    with engine.tables_held():
        assert engine.exists(uri)
        for commit in commits:
            commit()
            seen.append(_view(engine, uri))
            loaded.append(_view(DeltaRsEngine(), uri))

    assert seen == loaded
    assert seen[-1][1:] == (
        ["id", "name"],
        {"key": "id"},
        [{"id": 2, "name": "B"}, {"id": 3, "name": "c"}, {"id": 4, "name": "d"}],
    )


def test_a_held_table_is_read_once_and_a_commit_from_elsewhere_is_seen_after_the_hold(tmp_path) -> None:
    uri = _table(tmp_path)
    engine = DeltaRsEngine()

    with engine.tables_held():
        before = engine.version(uri)
        write_deltalake(uri, ROWS, mode="append")  # another writer, which a hold rules out
        during = engine.version(uri)
    after = engine.version(uri)

    assert (before, during, after) == (0, 0, 1)


def test_a_failed_commit_lets_the_held_table_go(tmp_path) -> None:
    uri = _table(tmp_path)
    engine = DeltaRsEngine()
    without_key = pa.table({"name": ["x"], ACTION: [UPSERT]})

    with engine.tables_held():
        engine.schema(uri)
        write_deltalake(uri, ROWS, mode="append")
        with pytest.raises(Exception, match="id"):
            engine.merge(uri, without_key, ["id"], (), {})
        assert engine.version(uri) == DeltaTable(uri).version() == 1


def test_holds_nest_and_end_with_the_outermost(tmp_path) -> None:
    uri = _table(tmp_path)
    engine = DeltaRsEngine()

    with engine.tables_held():
        with engine.tables_held():
            engine.version(uri)
        write_deltalake(uri, ROWS, mode="append")
        still_held = engine.version(uri)
    assert (still_held, engine.version(uri)) == (0, 1)


def test_the_least_recently_used_table_is_let_go_beyond_the_bound(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(deltars, "HELD_TABLES", 2)
    first, second, third = (_table(tmp_path / name) for name in ("a", "b", "c"))
    engine = DeltaRsEngine()

    with engine.tables_held():
        for uri in (first, second, first, third):  # `second` is the least recently used when `third` comes
            engine.version(uri)
        for uri in (first, second, third):
            write_deltalake(uri, ROWS, mode="append")
        versions = [engine.version(uri) for uri in (first, third, second)]  # the two held ones first

    assert versions == [0, 0, 1]
