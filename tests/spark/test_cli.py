"""The `lakeloader` command: validate-config names each source's verdict, status and quarantine show read a
loaded lake without Spark."""

from __future__ import annotations

from pathlib import Path

from format_support import HOUR, run, source_for, write_export

from lakeloader.cli import commands as cli
from tools.cdcgen import dataworks as dw

ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))


def test_validate_config_gives_each_sources_verdict_and_fails_on_a_broken_one(tmp_path: Path, capsys):
    config = tmp_path / "sources.yaml"
    config.write_text(
        "sources:\n"
        "  - {name: shop, format: dataworks_json, export_uri: exports, lake_root: lake}\n"
        "  - {name: billing, format: dataworks_jsn, export_uri: exports, lake_root: lake}\n"
    )

    assert cli.main(["validate-config", "--config", str(config)]) == 1

    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ok      shop: dataworks_json from {tmp_path / 'exports'} into {tmp_path / 'lake'}"
    assert out[1].startswith("BROKEN  billing: invalid config file") and "dataworks_jsn" in "\n".join(out[2:])


def test_status_and_quarantine_show_read_a_loaded_hour(spark, tmp_path: Path, capsys):
    source = source_for("dataworks_json", tmp_path)
    lines = [*dw.insert(ORDERS, 1, HOUR, {"id": 1, "status": "new"}), "{broken", dw.heartbeat(HOUR)]
    write_export(source, "orders.json", lines)
    run(spark, source)

    status = cli.status(source, hours=2, last=HOUR)

    assert "hours loaded: 1, newest 2026-11-21T05" in status
    assert [line.split() for line in status.splitlines() if line.strip().startswith("shop.orders")] == [
        ["shop.orders", "1", "1", "0"]
    ]
    assert "2026-11-21T05          1            1  1 x malformed JSON" in status
    [row] = cli.quarantined(source, HOUR)
    assert (row["origin_file"], row["origin_line"], row["message"]) == ("orders.json", 2, "{broken")
    assert cli.render_quarantined([row], limit=50).splitlines()[1] == f"orders.json:2  (no table)  {row['reason']}"
