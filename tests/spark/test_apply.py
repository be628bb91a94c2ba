"""Apply: scripted change scenarios give exactly the expected silver tables."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
T0 = datetime(2026, 11, 21, 5, 10, tzinfo=UTC)

ORDERS = dw.TableSpec(
    db="shop",
    table="orders",
    columns=(
        ("id", "LONG"),
        ("amount", "DOUBLE"),
        ("status", "STRING"),
        ("paid", "BOOLEAN"),
        ("created", "DATE"),
        ("note", "BYTES"),
    ),
    primary_key=("id",),
)
NO_PK = dw.TableSpec(
    db="shop", table="audit_log", columns=(("msg", "STRING"), ("#alibaba_rds_row_id#", "LONG")), primary_key=None
)
CREATED = datetime(2026, 11, 20, 12, 30, 15, 250000, tzinfo=UTC)


def order(id_: int, amount: float, status: str, paid: bool = False) -> dict:
    return {"id": id_, "amount": amount, "status": status, "paid": paid, "created": CREATED, "note": b"n%d" % id_}


def write_export(directory: Path, name: str, lines: list[str], hour: datetime) -> None:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (hour.timestamp() + 1800, hour.timestamp() + 1800))


def silver_rows(source: SourceConfig, db: str, table: str) -> list[dict]:
    uri = str(Path(source.lake_root) / zones.silver_table_dir(source.name, db, table))
    return sorted(DeltaRsEngine().read(uri).to_pylist(), key=lambda r: [str(v) for v in r.values()])


def user_columns(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if not k.startswith("_cdc_")} for row in rows]


@pytest.fixture
def source(tmp_path) -> SourceConfig:
    (tmp_path / "exports").mkdir()
    return SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(tmp_path / "exports"),
        lake_root=str(tmp_path / "lake"),
        column_types={"shop.orders": {"amount": "double"}},  # DataWorks DOUBLE is exact text unless configured
    )


def scenario_exports(exports: Path) -> None:
    at = T0
    hour5 = [
        *dw.insert(ORDERS, 100, at, order(1, 10.5, "new")),
        *dw.insert(ORDERS, 101, at, order(2, 7.0, "new")),
        *dw.insert(ORDERS, 102, at, order(3, 1.25, "new")),
        dw.heartbeat(at),
        dw.transaction_marker("TRANSACTION_BEGIN", 103, at),
        *dw.update(ORDERS, 103, at, order(1, 10.5, "new"), order(1, 10.5, "paid", True), one_message=False),
        dw.transaction_marker("TRANSACTION_END", 103, at),
        *dw.update(ORDERS, 104, at, order(2, 7.0, "new"), order(2, 20.0, "new"), one_message=True),
        *dw.delete(ORDERS, 105, at, order(3, 1.25, "new")),
        *dw.insert(ORDERS, 106, at, order(4, 4.0, "new")),
        *dw.update(ORDERS, 107, at, order(4, 4.0, "new"), order(5, 4.0, "new"), one_message=True),  # key change
        *dw.insert(NO_PK, 108, at, {"msg": "hello", "#alibaba_rds_row_id#": 1}),
        *dw.insert(NO_PK, 109, at, {"msg": "hello", "#alibaba_rds_row_id#": 2}),
        # first half of a two-message update whose second half lands an hour later
        *dw.update(ORDERS, 111, at, order(2, 20.0, "new"), order(2, 20.0, "packed"), one_message=False)[:1],
    ]
    at = T0 + timedelta(hours=1)
    hour6 = [
        *dw.update(ORDERS, 111, at, order(2, 20.0, "new"), order(2, 20.0, "packed"), one_message=False)[1:],
        *dw.update(ORDERS, 104, at, order(2, 7.0, "new"), order(2, 20.0, "new"), one_message=True),  # re-delivered
        *dw.update(ORDERS, 112, at, order(1, 10.5, "paid", True), order(1, 10.5, "shipped", True), one_message=False),
        *dw.insert(ORDERS, 113, at, order(3, 3.5, "again")),
        *dw.update(ORDERS, 114, at, order(5, 4.0, "new"), order(6, 4.0, "moved"), one_message=False),  # key change
        *dw.delete(NO_PK, 115, at, {"msg": "hello", "#alibaba_rds_row_id#": 1}),
        dw.heartbeat(at),
    ]
    write_export(exports, "orders/part-0005.json", hour5, H5)
    write_export(exports, "orders/part-0006.json", hour6, H6)


EXPECTED_ORDERS = [
    {"id": 1, "amount": 10.5, "status": "shipped", "paid": True, "created": CREATED, "note": b"n1"},
    {"id": 2, "amount": 20.0, "status": "packed", "paid": False, "created": CREATED, "note": b"n2"},
    {"id": 3, "amount": 3.5, "status": "again", "paid": False, "created": CREATED, "note": b"n3"},
    {"id": 6, "amount": 4.0, "status": "moved", "paid": False, "created": CREATED, "note": b"n6"},
]


def test_scripted_scenario_gives_exactly_the_expected_tables(spark, source):
    scenario_exports(Path(source.export_uri))
    reports = run_hours(spark, source, [H5, H6], emit=lambda _: None)

    assert user_columns(silver_rows(source, "shop", "orders")) == EXPECTED_ORDERS
    assert user_columns(silver_rows(source, "shop", "audit_log")) == [{"msg": "hello", "#alibaba_rds_row_id#": 2}]
    parse5 = next(r for r in reports if r["step"] == "parse" and r["hour"] == "2026-11-21T05")
    assert parse5["outcomes"] == {
        "data": 12,
        "ddl": 0,
        "heartbeat": 1,
        "control": 2,
        "excluded": 0,
        "quarantined": 0,
    }
    apply6 = next(r for r in reports if r["step"] == "apply" and r["hour"] == "2026-11-21T06")
    assert apply6["tables"]["shop.orders"]["rows"] == 4
    assert apply6["tables"]["shop.audit_log"]["rows"] == 1


def test_metadata_columns_record_each_rows_last_change(spark, source):
    scenario_exports(Path(source.export_uri))
    run_hours(spark, source, [H5, H6], emit=lambda _: None)
    rows = {r["id"]: r for r in silver_rows(source, "shop", "orders")}
    first = rows[1]
    assert first["_cdc_seq"] == Decimal(112) and first["_cdc_seq2"] == Decimal(0)
    assert first["_cdc_op"] == "UPDATE_AFTER"
    assert first["_cdc_event_time"] == T0 + timedelta(hours=1)
    assert (first["_cdc_source_file"], first["_cdc_source_line"]) == ("orders/part-0006.json", 4)
    assert first["_cdc_loaded_at"] is not None
    assert rows[3]["_cdc_op"] == "INSERT" and rows[6]["_cdc_op"] == "UPDATE_AFTER"


def test_rerunning_hours_in_any_order_leaves_the_same_tables(spark, source):
    scenario_exports(Path(source.export_uri))
    run_hours(spark, source, [H5, H6], emit=lambda _: None)
    once = silver_rows(source, "shop", "orders")

    run_hours(spark, source, [H6, H5, H6], emit=lambda _: None)

    assert silver_rows(source, "shop", "orders") == once  # metadata included: nothing was rewritten


def test_configured_primary_key_overrides_the_declared_one(spark, tmp_path):
    exports = tmp_path / "exports"
    spec = dw.TableSpec("shop", "tags", (("id", "LONG"), ("tag", "STRING")), primary_key=("id",))
    lines = [
        *dw.insert(spec, 1, T0, {"id": 1, "tag": "a"}),
        *dw.insert(spec, 2, T0, {"id": 1, "tag": "b"}),  # same declared key, another row by the configured key
    ]
    write_export(exports, "tags.json", lines, H5)
    source = SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(exports),
        lake_root=str(tmp_path / "lake"),
        primary_keys={"shop.tags": ("id", "tag")},
    )
    run_hours(spark, source, [H5], emit=lambda _: None)
    assert user_columns(silver_rows(source, "shop", "tags")) == [{"id": 1, "tag": "a"}, {"id": 1, "tag": "b"}]
