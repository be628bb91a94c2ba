"""An export file that cannot be read whole never fails the hour: a damaged `.gz` file's lines up to the damage
load, the rest is one quarantined message naming the file, the line where the damage begins and the damage; a
file in an unsupported compression is one quarantined message; reconciliation accounts for both, and the
hourly check alerts on them."""

from __future__ import annotations

import base64
import gzip
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
from format_support import parse_files, source_for

from lakeloader.audit.reconcile import run_reconcile
from lakeloader.audit.reconcile_report import findings
from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.compression import CUT_SHORT, UNSUPPORTED
from lakeloader.core.config import SourceConfig, WebhookAlert
from lakeloader.land.step import RawFiles
from lakeloader.parse.framing import DAMAGED_GZIP, read_messages
from lakeloader.parse.step import classify
from lakeloader_airflow import checks
from tools.cdcgen import dataworks as dw
from tools.cdcgen import layouts, wire

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
AT = H5 + timedelta(minutes=10)
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))
PARTIAL = '{"version":"0.0.1","schemaName":"sh'


def inserts(ids: range) -> list[str]:
    return [line for i in ids for line in dw.insert(ORDERS, 100 + i, AT, {"id": i, "status": f"s{i}"})]


def cut_gzip(lines: list[str]) -> tuple[bytes, int]:
    """The lines and the start of one more, as a gzip member followed by a second member cut inside its
    header (an export interrupted while it was written), and where that second member begins."""
    first = gzip.compress(("\n".join(lines) + "\n" + PARTIAL).encode(), mtime=0)
    return first + gzip.compress(b"never written", mtime=0)[:6], len(first)


def flagged_damaged(path: Path) -> RawFiles:
    return RawFiles([f"file://{path}"], damaged=frozenset([f"file://{path}"]))


def export(source: SourceConfig, name: str, content: bytes) -> None:
    path = Path(source.export_uri) / name
    path.write_bytes(content)
    os.utime(path, (H5.timestamp() + 1800, H5.timestamp() + 1800))


def test_unreadable_exports_are_quarantined_as_far_as_they_cannot_be_read_and_the_check_alerts(
    spark, tmp_path, http_receiver
):
    hook = (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),)
    source = source_for("dataworks_json", tmp_path).model_copy(update={"name": "shop", "alerts": hook})
    export(source, "orders-a.json.gz", gzip.compress(("\n".join(inserts(range(1, 4))) + "\n").encode(), mtime=0))
    cut, member_at = cut_gzip(inserts(range(4, 7)))
    export(source, "orders-b.json.gz", cut)
    export(source, "orders-c.json.zst", b"(\xb5/\xfd" + bytes(20))  # zstd: Spark here cannot read it

    reports = run_hours(spark, source, [H5], emit=lambda _: None)
    land, parse = reports[0], reports[1]

    assert land["damaged"] == ["orders-b.json.gz", "orders-c.json.zst"]
    cut_short, zstd = CUT_SHORT.format(member_at), UNSUPPORTED.format(".zst")
    reason = DAMAGED_GZIP.format(cut_short)
    assert (parse["lines"], parse["outcomes"]["data"], parse["quarantine_reasons"]) == (8, 6, {reason: 1, zstd: 1})
    quarantine = pq.read_table(Path(source.lake_root) / zones.bronze_quarantine_dir("shop", H5)).to_pylist()
    assert sorted((q["origin_file"], q["origin_line"], q["reason"], q["message"]) for q in quarantine) == [
        ("orders-b.json.gz", 4, reason, PARTIAL),
        ("orders-c.json.zst", 1, zstd, ""),
    ]
    silver = pq.read_table(Path(source.lake_root) / zones.silver_table_dir("shop", "shop", "orders")).to_pylist()
    assert sorted((r["id"], r["status"]) for r in silver) == [(i, f"s{i}") for i in range(1, 7)]
    accounting = run_reconcile(spark, source, [H5], ("accounting",), label="run-5")
    assert accounting["ok"], findings(accounting)
    by_file = accounting["results"][0]["by_file"]
    assert (by_file["orders-b.json.gz"], by_file["orders-c.json.zst"]) == ({"data": 3, "quarantined": 1},
                                                                          {"quarantined": 1})  # fmt: skip

    summary = checks.verify_reconciliation(source, "run-5", "lakeloader_shop_hourly", "scheduled__5")

    assert summary["damaged_exports"] == [
        {"file": "orders-b.json.gz", "damage": cut_short},
        {"file": "orders-c.json.zst", "damage": zstd},
    ]
    [alert] = [json.loads(r["body"]) for r in http_receiver.received()]
    assert (alert["kind"], alert["details"]["files"]) == (
        "damaged_export",
        [f"orders-b.json.gz: {cut_short}", f"orders-c.json.zst: {zstd}"],
    )
    assert alert["summary"].startswith("Source shop: 2 export file(s) landed in hour 2026-11-21T05 cannot be read")


def test_a_damaged_kcat_export_keeps_the_topic_positions_of_the_envelopes_before_the_damage(spark, tmp_path):
    changes, _ = wire.keyed_stream(wire.ITEMS, 4)
    canal = [line for change in changes for line in wire.canal_json(change)]
    envelopes = layouts.kcat_file([layouts.Positioned("orders", 2, 40 + i, text) for i, text in enumerate(canal)],
                                  base64_payload=False).decode().splitlines()  # fmt: skip
    cut, member_at = cut_gzip(envelopes[:3])
    path = tmp_path / "hour=05" / "kcat.json.gz"
    path.parent.mkdir()
    path.write_bytes(cut)
    source = source_for("canal_json", export_layout="kcat")
    plain = parse_files(spark, source.model_copy(update={"export_layout": "lines"}), *_lines_file(tmp_path, canal))

    messages = read_messages(spark, flagged_damaged(path), source, "2026-11-21T05")
    rows = [r.asDict() for r in classify(messages, source).orderBy("origin_line").collect()]

    assert [(r["origin_line"], r["outcome"], r["origin_offset"], r["after"]) for r in rows] == [
        *[(i + 1, "data", 40 + i, plain[i]["after"]) for i in range(3)],
        (4, "quarantined", None, None),
    ]
    assert (rows[3]["reject_reason"], rows[3]["text"]) == (DAMAGED_GZIP.format(CUT_SHORT.format(member_at)), PARTIAL)


def _lines_file(tmp_path: Path, lines: list[str]) -> list[Path]:
    path = tmp_path / "hour=05" / "plain.json"
    path.write_text("\n".join(lines) + "\n")
    return [path]


def test_a_damaged_bin_gz_export_keeps_its_whole_messages_and_quarantines_the_first_it_does_not_hold(spark, tmp_path):
    changes, _ = wire.keyed_stream(wire.ITEMS, 4)
    records = layouts.binary_messages([line for change in changes for line in wire.dts_avro(change)])
    framed = layouts.length_prefixed_file(records[:4])
    kept = len(layouts.length_prefixed_file(records[:3])) + 4 + 10  # three messages, the next one's prefix and 10 bytes
    first = gzip.compress(framed[:kept], mtime=0)
    path = tmp_path / "hour=05" / "part-0.bin.gz"
    path.parent.mkdir()
    path.write_bytes(first + gzip.compress(framed[kept:], mtime=0)[:6])  # the second member cut in its header
    source = source_for("dts_avro", primary_keys={"shop.items": ("id",)})

    messages = read_messages(spark, flagged_damaged(path), source, "2026-11-21T05")
    rows = [r.asDict() for r in classify(messages, source).orderBy("origin_line").collect()]

    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows] == [
        (1, "data", None),
        (2, "data", None),
        (3, "data", None),
        (4, "quarantined", DAMAGED_GZIP.format(CUT_SHORT.format(len(first)))),
    ]
    assert rows[3]["text"] == base64.b64encode(records[3][:10]).decode()
