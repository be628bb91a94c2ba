"""Export files whose names Hadoop cannot hold (`:`) or Spark would take as a glob (`{}[]*?`) load like any other:
each is read exactly once, and quarantine and reconciliation name the export file, not its landed copy."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pyarrow.parquet as pq

from lakeloader.audit.reconcile import run_reconcile
from lakeloader.audit.reconcile_report import findings
from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))
NAMES = ["orders-2026-11-21T05:00:00.json", "[k].json", "k.json", "{l}.json", "*.json", "100%.json", "a b/c?.json"]


def test_odd_export_names_load_once_each_and_keep_their_names_in_quarantine_and_accounting(spark, tmp_path):
    source = SourceConfig(name="shop", format="dataworks_json", export_uri=str(tmp_path / "exports"),
                          lake_root=str(tmp_path / "lake"))  # fmt: skip
    for i, name in enumerate(NAMES):
        path = tmp_path / "exports" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join([*dw.insert(ORDERS, 100 + i, H5, {"id": i, "status": name}), "{bad"]) + "\n")
        os.utime(path, (H5.timestamp() + 600, H5.timestamp() + 600))

    unread = tmp_path / "exports" / "05:00 100%.json.zst"  # not read, but named in quarantine all the same
    unread.write_bytes(b"(\xb5/\xfd")
    os.utime(unread, (H5.timestamp() + 600, H5.timestamp() + 600))

    reports = run_hours(spark, source, [H5], emit=lambda _: None)
    accounting = run_reconcile(spark, source, [H5], ("accounting",), label="names")

    assert (reports[1]["lines"], reports[1]["outcomes"]["data"], reports[1]["outcomes"]["quarantined"]) == (15, 7, 8)
    quarantine = pq.read_table(tmp_path / "lake" / zones.bronze_quarantine_dir("shop", H5)).to_pylist()
    assert sorted((q["origin_file"], q["origin_line"]) for q in quarantine) == sorted(
        [*((n, 2) for n in NAMES), (unread.name, 1)]
    )
    silver = pq.read_table(tmp_path / "lake" / zones.silver_table_dir("shop", "shop", "orders")).to_pylist()
    assert sorted((r["id"], r["status"]) for r in silver) == list(enumerate(NAMES))
    assert accounting["ok"], findings(accounting)
    assert sorted(accounting["results"][0]["by_file"]) == sorted([*NAMES, unread.name])
