"""Export layouts (lakeloader.parse.framing): kcat envelopes with text or Base64 payloads, concatenated pretty-printed
JSON and length-prefixed `.bin` (and `.bin.gz`) files give the same canonical rows as one message per line, keep
the topic coordinates, and send framing problems to quarantine with their reason."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from format_support import FIXTURES, lines_of, parse_files, source_for

from lakeloader.parse.framing import (
    NO_PAYLOAD_FIELD,
    NO_POSITION,
    NOT_AN_ENVELOPE,
    PAYLOAD_NOT_BASE64,
    PAYLOAD_NOT_UTF8,
    TOMBSTONE_OP,
)
from tools.cdcgen import layouts, wire

_CHANGES = [*wire.keyed_stream(wire.ITEMS, 8)[0], wire.Change(wire.ITEMS, wire.TRUNCATE, 9)]
CANAL = [line for change in _CHANGES for line in wire.canal_json(change)]
SEEN = ("outcome", "kind", "op", "db", "table", "before", "after", "seq", "reject_reason")


def landed(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / "hour=05" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def seen(rows: list[dict]) -> list[tuple]:
    return [tuple(r[k] for k in SEEN) for r in rows]


def test_kcat_envelopes_give_the_rows_of_their_payloads_with_topic_partition_and_offset(spark, tmp_path):
    plain = parse_files(spark, source_for("canal_json"), landed(tmp_path, "plain.json", layouts.lines_file(CANAL)))
    positioned = [layouts.Positioned("orders", 3, 100 + i, text) for i, text in enumerate(CANAL)]
    for encoding, base64_payload in (("text", False), ("base64", True)):
        source = source_for("canal_json", export_layout="kcat", payload_encoding=encoding)
        path = landed(tmp_path, f"kcat-{encoding}.json", layouts.kcat_file(positioned, base64_payload))

        rows = parse_files(spark, source, path)

        assert seen(rows) == seen(plain), encoding
        assert [(r["origin_topic"], r["origin_partition"], r["origin_offset"], r["origin_line"]) for r in rows] == [
            ("orders", 3, 100 + r["origin_line"] - 1, r["origin_line"]) for r in plain
        ]
    assert [r["outcome"] for r in plain] == ["data"] * 8 + ["ddl"]


def test_bad_envelopes_are_quarantined_with_their_reason_and_tombstones_are_control(spark, tmp_path):
    good = layouts.kcat_file([layouts.Positioned("t", 0, 7, CANAL[0])], base64_payload=True).decode().strip()
    envelopes = [
        "not json",
        json.dumps({"topic": "t", "partition": 0, "offset": 8}),
        json.dumps({"topic": "t", "partition": 0, "payload": "e30="}),
        json.dumps({"topic": "t", "partition": 0, "offset": 9, "payload": "%%%"}),
        json.dumps({"topic": "t", "partition": 0, "offset": 10, "payload": "//79"}),  # bytes ff fe fd
        json.dumps({"topic": "t", "partition": 0, "offset": 11, "payload": None}),
        good,
    ]
    source = source_for("canal_json", export_layout="kcat", payload_encoding="base64")

    rows = parse_files(spark, source, landed(tmp_path, "kcat.json", "\n".join(envelopes).encode()))

    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows] == [
        (1, "quarantined", NOT_AN_ENVELOPE),
        (2, "quarantined", NO_PAYLOAD_FIELD),
        (3, "quarantined", NO_POSITION),
        (4, "quarantined", PAYLOAD_NOT_BASE64),
        (5, "quarantined", PAYLOAD_NOT_UTF8),
        (6, "control", None),
        (7, "data", None),
    ]
    assert (rows[5]["op"], rows[5]["origin_offset"], rows[5]["table"]) == (TOMBSTONE_OP, 11, None)
    assert rows[0]["text"] == "not json"  # the quarantine keeps the envelope as it came
    assert (rows[6]["table"], rows[6]["origin_offset"]) == ("items", 7)


def test_concatenated_pretty_printed_messages_parse_like_lines_and_a_truncated_one_stays_alone(spark, tmp_path):
    messages = lines_of(FIXTURES / "oms_default" / "consistent.jsonl")
    source = source_for("oms_default")
    plain = parse_files(spark, source, landed(tmp_path, "plain.json", layouts.lines_file(messages)))
    pretty = layouts.concatenated_file(messages).decode()
    truncated = json.dumps(json.loads(messages[0]), indent=4)[:40]  # cut mid-message
    text = truncated + "\n" + pretty

    rows = parse_files(
        spark, source.model_copy(update={"export_layout": "concatenated"}), landed(tmp_path, "p.json", text.encode())
    )

    assert rows[0]["outcome"] == "quarantined" and rows[0]["origin_line"] == 1
    assert seen(rows[1:]) == seen(plain)
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("{")]
    assert [r["origin_line"] for r in rows] == starts
    assert len(starts) == len(messages) + 1 and starts[2] - starts[1] > 5  # every message spans many lines


def test_length_prefixed_bin_files_and_kcat_envelopes_carry_dts_avro_records(spark, tmp_path):
    changes, _ = wire.keyed_stream(wire.ITEMS, 6)
    records = [line for change in changes for line in wire.dts_avro(change)]
    source = source_for("dts_avro", primary_keys={"shop.items": ("id",)})
    plain = parse_files(spark, source, landed(tmp_path, "plain.json", layouts.lines_file(records)))
    binary = layouts.binary_messages(records)
    cut = layouts.length_prefixed_file(binary) + len(binary[0]).to_bytes(4, "big") + binary[0][:5]
    kcat = layouts.kcat_file(
        [layouts.Positioned("dts", 0, i, r) for i, r in enumerate(records)], base64_payload=True, binary=True
    )

    from_bin = parse_files(spark, source, landed(tmp_path, "part-0.bin", cut))
    from_bin_gz = parse_files(spark, source, landed(tmp_path, "part-1.bin.gz", gzip.compress(cut, mtime=0)))
    from_kcat = parse_files(
        spark, source.model_copy(update={"export_layout": "kcat"}), landed(tmp_path, "k.json", kcat)
    )

    assert [r["outcome"] for r in plain] == ["data"] * 6
    assert seen(from_bin[:-1]) == seen(plain) == seen(from_kcat)
    assert [r["origin_line"] for r in from_bin] == [1, 2, 3, 4, 5, 6, 7]
    assert seen(from_bin_gz) == seen(from_bin)
    assert (from_bin[-1]["outcome"], from_bin[-1]["reject_reason"]) == (
        "quarantined",
        f"truncated message: its length prefix says {len(binary[0])} bytes, 5 are left in the file",
    )
