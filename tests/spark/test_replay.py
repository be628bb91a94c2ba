"""Replay: validation rejects each kind of bad request with a plain message; reapply re-runs apply over bronze
hours; rebuild replaces a table with the state of its whole change log (repairing a corrupted row)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from deltalake import DeltaTable

from lakeloader.audit.reconcile import check_state
from lakeloader.audit.replay import run_replay
from lakeloader.audit.replay_plan import PlanError, validate
from lakeloader.cli.local_runner import run_hours
from lakeloader.core.config import LakeloaderConfig, SourceConfig
from lakeloader.core.storage import open_store
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))
TAGS = dw.TableSpec("shop", "tags", (("id", "LONG"), ("tag", "STRING")), ("id",))


def _export(directory: Path, name: str, lines: list[str], hour: datetime) -> None:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (hour.timestamp() + 1800, hour.timestamp() + 1800))


def _source(root: Path) -> SourceConfig:
    return SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(root / "exports"), lake_root=str(root / "lake")
    )


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    at5, at6 = H5 + timedelta(minutes=5), H6 + timedelta(minutes=5)
    _export(
        root / "exports",
        "part-05.json",
        [
            *dw.insert(ORDERS, 1, at5, {"id": 1, "status": "new"}),
            *dw.insert(ORDERS, 2, at5, {"id": 2, "status": "new"}),
            *dw.insert(TAGS, 3, at5, {"id": 1, "tag": "a"}),
        ],
        H5,
    )
    _export(
        root / "exports",
        "part-06.json",
        [
            *dw.update(ORDERS, 4, at6, {"id": 1, "status": "new"}, {"id": 1, "status": "paid"}, one_message=True),
            *dw.insert(ORDERS, 5, at6, {"id": 3, "status": "new"}),
        ],
        H6,
    )
    run_hours(spark, _source(root), [H5, H6], emit=lambda _: None)
    return root


@pytest.fixture
def lake_copy(loaded: Path, tmp_path: Path) -> Path:
    shutil.copytree(loaded, tmp_path, dirs_exist_ok=True)
    return tmp_path


def _orders(root: Path) -> list[tuple]:
    rows = DeltaRsEngine().read(str(root / "lake/silver/shop/shop/orders")).to_pylist()
    return sorted((r["id"], r["status"]) for r in rows)


def _request(**values) -> dict:
    return {"source": "shop", "mode": "reapply", "from_hour": None, "to_hour": None, "tables": [], **values}


@pytest.mark.parametrize(
    ("request_values", "message"),
    [
        ({"source": "nope"}, "unknown source 'nope'; configured sources: shop"),
        ({"mode": "redo"}, "unknown mode 'redo'; expected one of: reapply, rebuild"),
        (
            {"mode": "rebuild", "tables": ["shop.orderz"]},
            "unknown table(s) of source 'shop': shop.orderz (known: shop.orders, shop.tags)",
        ),
        ({"mode": "rebuild", "tables": ["orders"]}, "table names must be written 'db.table': orders"),
        (
            {"from_hour": "2026-11-21T06", "to_hour": "2026-11-21T05"},
            "'from_hour' 2026-11-21T06 is after 'to_hour' 2026-11-21T05",
        ),
        (
            {"from_hour": "2026-11-21T05", "to_hour": "2026-11-21T08"},
            "bronze of source 'shop' holds hours 2026-11-21T05 to 2026-11-21T06 (2 hours); 2 requested hour(s) are "
            "not there: 2026-11-21T07, 2026-11-21T08",
        ),
        ({"from_hour": "2026-11-21 05:00", "to_hour": "2026-11-21T06"}, "'from_hour' must be an hour written"),
        ({"from_hour": "2026-11-21T05"}, "mode 'reapply' needs both 'from_hour' and 'to_hour'"),
        (
            {"from_hour": "2026-11-21T05", "to_hour": "2026-11-21T05", "tables": ["shop.orders"]},
            "a table list is for mode 'rebuild'",
        ),
        ({"mode": "rebuild", "from_hour": "2026-11-21T05"}, "mode 'rebuild' reads the whole change log"),
    ],
)
def test_bad_requests_are_rejected_with_a_plain_message(loaded, request_values, message):
    config = LakeloaderConfig(sources=(_source(loaded),))
    with pytest.raises(PlanError) as raised:
        validate(config, _request(**request_values))
    assert message in str(raised.value)


def test_good_requests_are_normalised(loaded):
    config = LakeloaderConfig(sources=(_source(loaded),))
    assert validate(config, _request(from_hour="2026-11-21T05", to_hour="2026-11-21T06")) == {
        "source": "shop",
        "mode": "reapply",
        "hours": ["2026-11-21T05", "2026-11-21T06"],
        "tables": None,
    }
    assert validate(config, _request(mode="rebuild", tables=["shop.tags", "shop.orders", ""])) == {
        "source": "shop",
        "mode": "rebuild",
        "hours": None,
        "tables": ["shop.orders", "shop.tags"],
    }


def test_rebuild_repairs_a_corrupted_table_and_leaves_the_others(spark, lake_copy):
    orders = DeltaTable(str(lake_copy / "lake/silver/shop/shop/orders"))
    orders.update(predicate="id = 1", updates={"status": "'tampered'"})
    orders.delete("id = 3")
    tags_version = DeltaTable(str(lake_copy / "lake/silver/shop/shop/tags")).version()
    source = _source(lake_copy)
    plan = {"source": "shop", "mode": "rebuild", "hours": None, "tables": ["shop.orders"]}

    report = run_replay(spark, source, plan, "manual__rebuild")

    assert _orders(lake_copy) == [(1, "paid"), (2, "new"), (3, "new")]
    assert report["tables"]["shop.orders"]["rows_before"] == 2 and report["tables"]["shop.orders"]["rows"] == 3
    assert DeltaTable(str(lake_copy / "lake/silver/shop/shop/tags")).version() == tags_version
    engine = DeltaRsEngine()
    assert engine.properties(str(lake_copy / "lake/silver/shop/shop/orders")) == {"lakeloader.primaryKey": '["id"]'}
    assert all(r["ok"] for r in check_state(spark, source, open_store(source.lake_root), "after-rebuild"))
    assert (lake_copy / "lake/audit/shop/replay/manual__rebuild.json").exists()


def test_reapply_merges_the_hours_again_like_the_apply_step(spark, lake_copy):
    DeltaTable(str(lake_copy / "lake/silver/shop/shop/orders")).delete("id = 2")
    plan = {"source": "shop", "mode": "reapply", "hours": ["2026-11-21T05", "2026-11-21T06"], "tables": None}

    report = run_replay(spark, _source(lake_copy), plan, "manual__reapply")

    assert _orders(lake_copy) == [(1, "paid"), (2, "new"), (3, "new")]
    assert report["hours"]["2026-11-21T05"]["shop.orders"]["inserted"] == 1  # only the deleted row came back
    assert report["hours"]["2026-11-21T06"]["shop.orders"]["inserted"] == 0
