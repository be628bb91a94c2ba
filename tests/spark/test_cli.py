"""The `lakeloader` command: validate-config names each source's verdict, status and quarantine show read a
loaded lake without Spark."""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from pathlib import Path

from format_support import HOUR, run, source_for, write_export

from lakeloader.cli import commands as cli
from lakeloader.cli import progress
from lakeloader.cli.local_runner import run_hours
from tools.cdcgen import dataworks as dw

NEXT = HOUR + timedelta(hours=1)
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


def test_status_and_quarantine_show_include_the_changes_apply_left_out(spark, tmp_path: Path):
    """A value no silver column type can hold (text for a bigint column, no DDL) is left out at apply: status
    counts it with the hour's and the table's quarantine, and quarantine show lists it with its reason and
    origin beside the messages parse quarantined."""
    source = source_for("dataworks_json", tmp_path)
    counted = dw.TableSpec("shop", "counts", (("id", "LONG"), ("n", "LONG")), ("id",))
    as_text = dw.TableSpec("shop", "counts", (("id", "LONG"), ("n", "STRING")), ("id",))
    write_export(source, "counts/0005.json", [*dw.insert(counted, 1, HOUR, {"id": 1, "n": 7})])
    later = [
        *dw.insert(as_text, 2, NEXT, {"id": 2, "n": "many"}),
        "{broken",
        *dw.insert(counted, 3, NEXT, {"id": 3, "n": 9}),
    ]
    write_export(source, "counts/0006.json", later, NEXT)
    run(spark, source, [HOUR, NEXT])

    status = cli.status(source, hours=2, last=NEXT)
    rows = cli.quarantined(source, NEXT)

    reason = "column n: a string value that the silver column's bigint cannot hold, and no type holds both exactly"
    assert [line.split()[:4] for line in status.splitlines() if line.strip().startswith("shop.counts")] == [
        ["shop.counts", "2", "3", "1"]
    ]
    assert f"2026-11-21T06          2            2  1 x {reason}, 1 x malformed JSON: not a JSON object" in status
    assert [(r["step"], r["origin_file"], r["origin_line"], r["reason"]) for r in rows] == [
        ("apply", "counts/0006.json", 1, reason),
        ("parse", "counts/0006.json", 2, "malformed JSON: not a JSON object"),
    ]
    assert json.loads(rows[0]["message"])["n"] == "many"
    assert cli.render_quarantined(rows, limit=50).splitlines()[1] == (
        f"counts/0006.json:1  shop.counts  left out at apply: {reason}"
    )
    assert cli.quarantined(source, HOUR) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_run_on_a_terminal_shows_each_steps_spark_tasks_and_duration(spark, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.02)
    source = source_for("dataworks_json", tmp_path)
    write_export(source, "orders.json", list(dw.insert(ORDERS, 1, HOUR, {"id": 1, "status": "new"})))
    terminal = _Terminal()

    run_hours(spark, source, [HOUR], emit=lambda _: None, progress=terminal)

    finished = [part for part in terminal.getvalue().split("\r\x1b[K") if " done in " in part]
    assert [part.split(" done in ")[0] for part in finished] == [
        "land 2026-11-21T05", "parse 2026-11-21T05", "apply 2026-11-21T05"
    ]  # fmt: skip
    assert finished[-1].endswith("(3/3)\n")
    assert re.search(r"parse 2026-11-21T05 \[[#.]{24}\] \d+/\d+ tasks", terminal.getvalue())
