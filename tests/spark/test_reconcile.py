"""Reconciliation: passes on a clean load; detects a corrupted silver row, a missing landed file, a dropped
message and a snapshot export that disagrees with silver; writes the report, the audit table and the watermark."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakeloader.audit.reconcile import run_reconcile
from lakeloader.audit.reconcile_report import findings
from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SnapshotExport, SourceConfig, WebhookAlert
from lakeloader_airflow import alerts, checks
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
T5, T6 = H5 + timedelta(minutes=10), H6 + timedelta(minutes=10)
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING"), ("note", "BYTES")), ("id",))
SKIPPED = dw.TableSpec("shop", "sessions", (("id", "LONG"),), ("id",))  # outside the include list


def order(id_: int, status: str) -> dict:
    return {"id": id_, "status": status, "note": b"n%d" % id_}


def _export(directory: Path, name: str, lines: list[str], hour: datetime) -> None:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (hour.timestamp() + 1800, hour.timestamp() + 1800))


def _source(root: Path, **extra) -> SourceConfig:
    return SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(root / "exports"),
        lake_root=str(root / "lake"),
        tables=("shop.orders",),
        **extra,
    )


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory) -> Path:
    """Two hours loaded with the local runner: changes, a heartbeat, control markers, a malformed line and a
    table outside the include list. Tests copy it before changing anything."""
    root = tmp_path_factory.mktemp("reconcile")
    exports = root / "exports"
    hour5 = [
        *dw.insert(ORDERS, 100, T5, order(1, "new")),
        *dw.insert(ORDERS, 101, T5, order(2, "new")),
        dw.transaction_marker("TRANSACTION_BEGIN", 102, T5),
        *dw.update(ORDERS, 102, T5, order(1, "new"), order(1, "paid"), one_message=False),
        dw.transaction_marker("TRANSACTION_END", 102, T5),
        *dw.insert(SKIPPED, 103, T5, {"id": 9}),
        "{not json",
        dw.heartbeat(T5 + timedelta(minutes=5)),
    ]
    hour6 = [
        *dw.insert(ORDERS, 104, T6, order(3, "new")),
        *dw.delete(ORDERS, 105, T6, order(2, "new")),
        *dw.update(ORDERS, 106, T6, order(3, "new"), order(4, "moved"), one_message=True),  # key change
        dw.heartbeat(T6 + timedelta(minutes=20)),
    ]
    _export(exports, "orders-05.json", hour5, H5)
    _export(exports, "orders-06.json", hour6, H6)
    run_hours(spark, _source(root), [H5, H6], emit=lambda _: None)
    return root


@pytest.fixture
def lake_copy(loaded: Path, tmp_path: Path) -> Path:
    shutil.copytree(loaded, tmp_path, dirs_exist_ok=True)
    return tmp_path


def _reconcile(spark, root: Path, checks: tuple[str, ...], source: SourceConfig | None = None) -> dict:
    return run_reconcile(spark, source or _source(root), [H5, H6], checks, label="test-run")


def test_clean_load_reconciles_with_every_message_accounted_for(spark, lake_copy):
    report = _reconcile(spark, lake_copy, ("accounting", "state"))

    assert report["ok"], findings(report)
    hour5, hour6, state = report["results"]
    assert (hour5["hour"], hour5["landed"], hour5["files"]) == ("2026-11-21T05", 9, 1)
    assert hour5["outcomes"] == {
        "data": 4,
        "ddl": 0,
        "heartbeat": 1,
        "control": 2,
        "quarantined": 1,
        "excluded": 1,
    }
    assert hour5["by_file"] == {"orders-05.json": {"data": 4, "control": 2, "heartbeat": 1, "quarantined": 1,
                                                   "excluded": 1}}  # fmt: skip
    assert hour6["outcomes"]["data"] == 3 and hour6["outcomes"]["heartbeat"] == 1 and hour6["landed"] == 4
    assert (state["table"], state["expected_rows"], state["actual_rows"]) == ("shop.orders", 2, 2)
    assert state["expected_checksum"] == state["actual_checksum"] and state["differing_keys"] == 0


def test_report_audit_table_and_watermark_are_written(spark, lake_copy):
    _reconcile(spark, lake_copy, ("accounting", "state"))
    lake = lake_copy / "lake"

    saved = json.loads((lake / zones.reconcile_report_key("shop", "test-run", "json")).read_text())
    assert saved["ok"] is True and saved["hours"] == ["2026-11-21T05", "2026-11-21T06"]
    markdown = (lake / zones.reconcile_report_key("shop", "test-run", "md")).read_text()
    assert "OK: everything reconciles" in markdown
    assert "| 2026-11-21T05 | 1 | 9 | 4 | 0 | 1 | 2 | 1 | 1 | 0 | yes |" in markdown
    audit = pa.table(pa.RecordBatchReader.from_stream(DeltaTable(str(lake / "audit/shop/reconciliation")).scan()))
    rows = sorted(audit.select(["check", "subject", "ok", "expected", "actual"]).to_pylist(), key=str)
    assert rows == sorted(
        [
            {"check": "accounting", "subject": "2026-11-21T05", "ok": True, "expected": 9, "actual": 9},
            {"check": "accounting", "subject": "2026-11-21T06", "ok": True, "expected": 4, "actual": 4},
            {"check": "state", "subject": "shop.orders", "ok": True, "expected": 2, "actual": 2},
        ],
        key=str,
    )
    freshness = json.loads((lake / "audit/shop/freshness.json").read_text())
    assert freshness["newest_change"] == T6.isoformat()
    assert freshness["newest_heartbeat"] == (T6 + timedelta(minutes=20)).isoformat()
    assert freshness["watermark"] == freshness["newest_heartbeat"]


def test_corrupted_silver_row_is_reported_with_its_key(spark, lake_copy):
    table = DeltaTable(str(lake_copy / "lake/silver/shop/shop/orders"))
    table.update(predicate="id = 4", updates={"status": "'tampered'"})

    report = _reconcile(spark, lake_copy, ("state",))

    assert not report["ok"]
    [state] = report["results"]
    assert (state["expected_rows"], state["actual_rows"], state["differing_keys"]) == (2, 2, 1)
    assert state["expected_checksum"] != state["actual_checksum"]
    assert state["sample"] == [{"key": {"id": "4"}, "problem": "values differ"}]
    assert findings(report) == [
        f"state shop.orders: expected 2 rows, silver has 2; checksum {state['expected_checksum']} vs "
        f"{state['actual_checksum']}; 1 key(s) differ: id=4 (values differ)"
    ]


def test_deleted_and_extra_silver_rows_are_reported(spark, lake_copy):
    table = DeltaTable(str(lake_copy / "lake/silver/shop/shop/orders"))
    table.delete("id = 1")

    [state] = _reconcile(spark, lake_copy, ("state",))["results"]

    assert (state["ok"], state["expected_rows"], state["actual_rows"]) == (False, 2, 1)
    assert state["sample"] == [{"key": {"id": "1"}, "problem": "missing from silver"}]


def test_missing_landed_file_fails_accounting(spark, lake_copy):
    (lake_copy / "lake/raw/shop/dt=2026-11-21/hour=06/orders-06.json").unlink()

    report = _reconcile(spark, lake_copy, ("accounting",))

    hour5, hour6 = report["results"]
    assert hour5["ok"] and not hour6["ok"]
    assert hour6["file_problems"] == [
        {"file": "orders-06.json", "raw_key": "raw/shop/dt=2026-11-21/hour=06/orders-06.json", "problem": "missing"}
    ]
    assert hour6["gaps"]["unexpected"] == 4  # its bronze rows now come from no landed line
    assert findings(report)[0] == (
        "accounting 2026-11-21T06: landed file orders-06.json (raw/shop/dt=2026-11-21/hour=06/orders-06.json): missing"
    )


def test_verify_alerts_on_a_failed_reconciliation_and_fails_its_task(spark, lake_copy, http_receiver):
    (lake_copy / "lake/raw/shop/dt=2026-11-21/hour=06/orders-06.json").unlink()
    hook = (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),)
    source = _source(lake_copy, alerts=hook)
    run_reconcile(spark, source, [H6], ("accounting",), label="run-6")

    with pytest.raises(alerts.AlertSent, match="reconciliation failed: accounting 2026-11-21T06: landed file"):
        checks.verify_reconciliation(source, "run-6", "lakeloader_shop_hourly", "scheduled__6")

    [alert] = [json.loads(r["body"]) for r in http_receiver.received()]
    assert (alert["kind"], alert["run_id"]) == ("reconciliation_mismatch", "scheduled__6")
    assert alert["summary"] == "Source shop: reconciliation found 2 problem(s) (accounting, hours 2026-11-21T06)"
    assert alert["details"]["problems"][0].startswith("accounting 2026-11-21T06: landed file orders-06.json")


def test_dropped_message_fails_accounting_naming_its_line(spark, lake_copy):
    bronze = lake_copy / "lake" / zones.bronze_changes_dir("shop", H5)
    [part] = [p for p in bronze.glob("*.parquet") if 2 in pq.read_table(p).column("origin_line").to_pylist()]
    rows = pq.read_table(part)
    keep = [i for i, line in enumerate(rows.column("origin_line").to_pylist()) if line != 2]
    pq.write_table(rows.take(keep), part, coerce_timestamps="us")
    part.with_name(f".{part.name}.crc").unlink()  # Hadoop's checksum of the file as Spark wrote it

    report = _reconcile(spark, lake_copy, ("accounting",))

    hour5 = report["results"][0]
    assert not hour5["ok"]
    assert hour5["gaps"] == {"dropped": 1, "unexpected": 0, "double_counted": 0}
    assert hour5["outcomes"]["data"] == 3 and hour5["outcomes"]["excluded"] == 1
    [dropped] = hour5["samples"]["dropped"]
    assert (dropped["origin_file"], dropped["origin_line"], dropped["would_be"]) == ("orders-05.json", 2, "data")
    assert "accounting 2026-11-21T05: 1 landed message(s) are neither in bronze nor in quarantine" in findings(report)


def _snapshot(root: Path, rows: list[dict]) -> SnapshotExport:
    directory = root / "snapshot" / "shop" / "orders"
    directory.mkdir(parents=True)
    (directory / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return SnapshotExport(uri=str(root / "snapshot"), format="json")


def test_snapshot_export_equal_to_silver_passes_and_a_changed_row_fails(spark, lake_copy, tmp_path_factory):
    # note: Base64 of the binary column, as canonical text has it
    current = [{"id": 1, "status": "paid", "note": "bjE="}, {"id": 4, "status": "moved", "note": "bjQ="}]
    good = _source(lake_copy, snapshot=_snapshot(tmp_path_factory.mktemp("good"), current))
    assert _reconcile(spark, lake_copy, ("snapshot",), good)["ok"]

    changed = [current[0], {"id": 4, "status": "lost", "note": "bjQ="}, {"id": 7, "status": "new", "note": "bjc="}]
    bad = _source(lake_copy, snapshot=_snapshot(tmp_path_factory.mktemp("bad"), changed))
    [result] = _reconcile(spark, lake_copy, ("snapshot",), bad)["results"]
    assert (result["ok"], result["expected_rows"], result["actual_rows"], result["differing_keys"]) == (
        False,
        3,
        2,
        2,
    )
    assert result["sample"] == [
        {"key": {"id": "4"}, "problem": "values differ"},
        {"key": {"id": "7"}, "problem": "missing from silver"},
    ]


def test_state_check_replays_ddl_truncation_and_renames_and_still_finds_a_tampered_row(spark, tmp_path):
    """The replica follows the log's DDL: a renamed column keeps its data, a truncation empties the table at
    its point, a renamed table continues under its new name; so a clean load passes, and tampering fails."""
    exports = tmp_path / "exports"
    items = dw.TableSpec("shop", "items", (("id", "LONG"), ("name", "STRING")), ("id",))
    renamed = dw.TableSpec("shop", "items", (("id", "LONG"), ("title", "STRING")), ("id",))
    goods = dw.TableSpec("shop", "goods", (("id", "LONG"), ("title", "STRING")), ("id",))
    hour5 = [
        *dw.insert(items, 1, T5, {"id": 1, "name": "old"}),
        dw.message(items, "TRUNCATE", 2, T5, ddl="TRUNCATE TABLE items"),
        *dw.insert(items, 3, T5, {"id": 2, "name": "kept"}),
        dw.message(items, "ALTER", 4, T5, ddl="ALTER TABLE items RENAME COLUMN name TO title"),
        *dw.insert(renamed, 5, T5, {"id": 3, "title": "renamed"}),
    ]
    hour6 = [
        dw.message(renamed, "RENAME", 6, T6, ddl="RENAME TABLE `shop`.`items` TO `shop`.`goods`"),
        *dw.update(goods, 7, T6, {"id": 2, "title": "kept"}, {"id": 2, "title": "moved on"}, one_message=True),
    ]
    _export(exports, "items-05.json", hour5, H5)
    _export(exports, "items-06.json", hour6, H6)
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(exports), lake_root=str(tmp_path / "lake")
    )
    run_hours(spark, source, [H5, H6], emit=lambda _: None)

    [clean] = run_reconcile(spark, source, [H5, H6], ("state",), label="clean")["results"]
    assert (clean["ok"], clean["table"], clean["expected_rows"]) == (True, "shop.goods", 2)
    assert not (tmp_path / "lake/work/shop/reconcile").exists() or not any(
        (tmp_path / "lake/work/shop/reconcile").iterdir()
    )  # the replica is gone

    DeltaTable(str(tmp_path / "lake/silver/shop/shop/goods")).update(predicate="id = 3", updates={"title": "'x'"})
    [tampered] = run_reconcile(spark, source, [H5, H6], ("state",), label="tampered")["results"]
    assert (tampered["ok"], tampered["sample"]) == (False, [{"key": {"id": "3"}, "problem": "values differ"}])
