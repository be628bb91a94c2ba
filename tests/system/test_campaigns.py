"""Permanent, seeded fault and hostile-input campaigns (issue 14; figures in docs/reliability.md).

- kill -9: the local runner is killed at seeded random moments of land, parse and apply; a rerun of the hour
  then leaves the lake as an uninterrupted run does (tables, ledger).
- fuzzer: per wire format, the good messages of a change stream mixed with a thousand malformed ones
  (truncation, invalid UTF-8, NUL, BOM, deep nesting, huge numbers, wrong types, unknown ops, missing fields,
  hostile names): parsing never fails, every message ends in exactly one outcome, every message that cannot be
  valid is quarantined with a reason at its own line, the good ones parse as data; for DataWorks JSON the hour
  is loaded too and silver equals the good stream's rows.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from format_support import parse_files, run, silver_rows, source_for, write_export_file

from lakeloader.core import zones
from lakeloader.core.format_registry import FORMATS
from tools.cdcgen import wire

SEED = 14
H5 = wire.BASE
GOOD_CHANGES = 80
BAD_PER_KIND = 100
HOSTILE = ["my table", "订单", "🎉", "a/b", "..", "%2F", "x" * 70]
JSON_FORMATS = [f for f in wire.WRITERS if FORMATS[f].json]

# mutations whose result can never be a valid message of a JSON format, and the reason's beginning
CERTAIN = {
    "truncated": None,  # the parser's own reason (malformed JSON, missing field, ...)
    "invalid_utf8": "message is not valid UTF-8 text",
    "nul": "message holds a control character JSON does not allow unescaped (byte 0x00)",
    "deep_nesting": None,
    "too_large": "message too large:",
    "repeated_name": "ambiguous JSON: an object holds a name twice:",  # an image's map with it failed the hour
}
# mutations that may or may not leave a loadable message: they must not crash, and land in one outcome
UNCERTAIN = ("bom", "huge_numbers", "wrong_types", "unknown_op", "missing_field")


def _good_lines(fmt: str) -> tuple[list[str], dict]:
    changes, rows = wire.keyed_stream(wire.ITEMS, GOOD_CHANGES)
    return [line for change in changes for line in wire.WRITERS[fmt](change)], rows


def _json_mutation(rng: random.Random, line: str, kind: str) -> str:
    message = json.loads(line)

    def walk(node, change):
        if isinstance(node, dict):
            return {k: walk(change(k, v), change) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, change) for v in node]
        return node

    if kind == "huge_numbers":
        return json.dumps(walk(message, lambda k, v: 10**400 if isinstance(v, int) and not isinstance(v, bool) else v))
    if kind == "wrong_types":
        return json.dumps(walk(message, lambda k, v: [v] if isinstance(v, (int, str)) and rng.random() < 0.3 else v))
    if kind == "unknown_op":
        ops = {"INSERT", "UPDATE", "DELETE", "UPDATE_AFTER", "UPDATE_BEFOR", "I", "U", "D", "c", "u", "d", "insert"}
        return json.dumps(walk(message, lambda k, v: "BOGUS_OP" if isinstance(v, str) and v in ops else v))
    if kind == "repeated_name":  # a name of any object of the message sent twice, the second time with another value
        objects: list[dict] = []
        walk(message, lambda k, v: objects.append(v) or v if isinstance(v, dict) and v else v)
        target = rng.choice(objects or [message])
        name = rng.choice(sorted(target))
        target[_REPEAT] = "another value"
        return json.dumps(message).replace(json.dumps(_REPEAT), json.dumps(name))
    if kind == "missing_field" and isinstance(message, dict) and message:
        message.pop(rng.choice(sorted(message)))
        return json.dumps(message)
    return line


_REPEAT = "\u0001repeat"  # a placeholder name, replaced by the name it repeats once the message is JSON text


def _mutate(rng: random.Random, fmt: str, line: str, kind: str, max_bytes: int) -> bytes:
    data = line.encode()
    if kind == "truncated":
        return data[: rng.randrange(1, max(2, len(data) - 1))]
    if kind == "invalid_utf8":
        cut = rng.randrange(len(data))
        return data[:cut] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]) + data[cut:]
    if kind == "nul":
        return data + b"\x00"
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "deep_nesting":
        depth = rng.randrange(500, 5000)
        return b"[" * depth + b"]" * depth
    if kind == "too_large":
        return b'{"padding":"' + b"p" * (max_bytes + 1) + b'"}'
    if fmt in JSON_FORMATS:
        return _json_mutation(rng, line, kind).encode()
    return data


def _hostile(line: str, name: str) -> str:
    return line.replace('"items"', json.dumps(name)).replace("shop.items", "shop." + json.dumps(name)[1:-1])


@pytest.mark.parametrize("fmt", sorted(wire.WRITERS))
def test_fuzzed_messages_never_fail_a_run_and_each_lands_in_exactly_one_outcome(spark, tmp_path, fmt) -> None:
    rng = random.Random(f"{SEED}-{fmt}")
    source = source_for(fmt, tmp_path, **wire.settings(fmt, (wire.ITEMS,)), max_message_bytes=4096)
    good, _ = _good_lines(fmt)
    lines: list[tuple[bytes, str]] = [(g.encode(), "good") for g in good]
    kinds = [*CERTAIN, *UNCERTAIN]
    for kind in kinds:
        for _ in range(BAD_PER_KIND):
            lines.append((_mutate(rng, fmt, rng.choice(good), kind, source.max_message_bytes), kind))
    if fmt in JSON_FORMATS:
        for name in HOSTILE:
            lines += [(_hostile(g, name).encode(), "hostile") for g in good[:5]]
    rng.shuffle(lines)
    path = tmp_path / "dt=2026-11-21" / "hour=05" / "items-topic" / "fuzz.json"  # DebeziumSmt: topic = directory
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(data.replace(b"\n", b" ").replace(b"\r", b" ") + b"\n" for data, _ in lines))

    rows = parse_files(spark, source, path)

    by_line: dict[int, set[str]] = {}
    reasons: dict[int, str | None] = {}
    for row in rows:
        by_line.setdefault(row["origin_line"], set()).add(row["outcome"])
        reasons[row["origin_line"]] = row["reject_reason"]
    assert sorted(by_line) == list(range(1, len(lines) + 1))  # every message accounted for ...
    assert all(len(outcomes) == 1 for outcomes in by_line.values())  # ... in exactly one outcome
    for number, (_, kind) in enumerate(lines, start=1):
        (outcome,) = by_line[number]
        if outcome == "quarantined":
            assert reasons[number], (kind, number)
        if kind in ("good", "hostile"):
            assert outcome in ("data", "ddl"), (kind, number, reasons[number])
        elif kind in CERTAIN and (fmt in JSON_FORMATS or kind in ("invalid_utf8", "too_large")):
            assert outcome == "quarantined", (kind, number)
            if CERTAIN[kind]:
                assert reasons[number].startswith(CERTAIN[kind]), (kind, reasons[number])
    quarantined = sum(outcomes == {"quarantined"} for outcomes in by_line.values())
    print(f"fuzz {fmt}: {len(lines)} messages {dict(Counter(kind for _, kind in lines))}, quarantined {quarantined}")


def test_a_fuzzed_hour_loads_the_good_messages_exactly(spark, tmp_path) -> None:
    rng = random.Random(SEED)
    source = source_for("dataworks_json", tmp_path, max_message_bytes=4096)
    good, expected = _good_lines("dataworks_json")
    lines = [line.encode() for line in good]
    # not the mutations that can leave a valid message with other content (a column declared as ["id"] is read
    # as a column of that name): those only have to end in one outcome (the test above)
    for kind in [*CERTAIN, "bom", "huge_numbers", "unknown_op"]:
        for _ in range(20):
            mutated = _mutate(rng, "dataworks_json", rng.choice(good), kind, source.max_message_bytes)
            lines.insert(rng.randrange(len(lines) + 1), mutated.replace(b"\n", b" "))
    write_export_file(source, "fuzz.json", b"\n".join(lines) + b"\n", H5)

    reports = run(spark, source, [H5])

    parse = next(r for r in reports if r["step"] == "parse")
    assert parse["lines"] == len(lines) == sum(parse["outcomes"].values())  # one row per DataWorks message
    # a mutation that leaves a message valid (a wrapped value the parser reads as text, a dropped field it does
    # not need) re-delivers a good message: same ordering key, same outcome
    assert parse["outcomes"]["data"] >= len(good)
    items = silver_rows(source, wire.DB, "items")
    assert sorted(items, key=lambda r: r["id"]) == sorted(expected.values(), key=lambda r: r["id"])


# ------------------------------------------------------------------------------------------------ kill -9 campaign

KILL_POINTS = 3


def _config(tmp_path: Path, lake: Path, exports: Path) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(
        f"sources:\n  - name: src\n    format: dataworks_json\n    export_uri: {exports}\n    lake_root: {lake}\n"
    )
    return path


def _kill_during(config: Path, step: str, delay: float) -> str:
    """Start the local runner for hour H5 and kill -9 its process group `delay` seconds into `step`; returns
    where it was (the step's start seen, or the run finished first)."""
    runner = subprocess.Popen(
        [sys.executable, "-m", "lakeloader.cli.local_runner", "--source", "src", "--from", zones.format_hour(H5),
         "--config", str(config), "--master", "local[1]"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        for raw in runner.stderr:
            if raw.decode(errors="replace").startswith(f"{step} {zones.format_hour(H5)} ..."):
                time.sleep(delay)
                break
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait(timeout=60)
            return f"killed {delay:.1f}s into {step}"
        return "finished before the kill"
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait(timeout=60)


def test_kill_9_at_seeded_random_points_then_a_rerun_equals_an_uninterrupted_run(spark, tmp_path) -> None:
    rng = random.Random(SEED)
    (tmp_path / "reference").mkdir()
    reference = source_for("dataworks_json", tmp_path / "reference")
    good, expected = _good_lines("dataworks_json")
    hostile = [_hostile(line, "订单 x") for line in good[:10]]
    write_export_file(reference, "a.json", ("\n".join(good[:100]) + "\n").encode(), H5)
    write_export_file(reference, "b.json", ("\n".join(good[100:] + hostile) + "\n").encode(), H5)
    exports = Path(reference.export_uri)
    run(spark, reference, [H5])
    wanted = {name: silver_rows(reference, *ids) for name, ids in _tables(reference).items()}
    assert sorted(wanted["shop.items"], key=lambda r: r["id"]) == sorted(expected.values(), key=lambda r: r["id"])

    outcomes = []
    for trial, step in enumerate(rng.sample(["land", "parse", "apply"], KILL_POINTS)):
        lake = tmp_path / f"trial{trial}" / "lake"
        lake.parent.mkdir(parents=True)
        config = _config(lake.parent, lake, exports)
        outcomes.append(_kill_during(config, step, rng.uniform(0.0, 4.0)))
        source = reference.model_copy(update={"lake_root": str(lake)})
        run(spark, source, [H5])
        assert {name: silver_rows(source, *ids) for name, ids in _tables(source).items()} == wanted, outcomes
        ledger = list((lake / "audit" / "src" / "landed").iterdir())
        assert len(ledger) == 2  # every export file landed once
    print("kill -9 campaign:", outcomes)


def _tables(source) -> dict[str, tuple[str, str]]:
    from lakeloader.core.lake_index import silver_table_ids
    from lakeloader.core.storage import open_store

    return silver_table_ids(open_store(source.lake_root), source.name)
