"""A format's parse contract, shared by the oracles that hold formats to it (tests/system/test_ddl_oracle.py,
tests/system/test_oracle_formats.py): the exports of a random stream, shuffled with re-deliveries, parse to
rows in which every delivery of a change has the same content, and the distinct changes, ordered by (seq,
seq2) with no two tied, are the stream's changes in true order. Below the canonical rows apply knows no format,
so a format that keeps its contract loads as the formats whose full loads the oracles run."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from decimal import Decimal
from pathlib import Path

from lakeloader.apply.key_actions import message_identity
from lakeloader.core.config import SourceConfig
from lakeloader.land.step import RawFiles
from lakeloader.parse import canonical as C
from lakeloader.parse.framing import read_messages
from lakeloader.parse.step import classify
from tools.cdcgen import wire

CHANGES = ("data", "ddl")  # the outcomes of a change's rows (the rest: heartbeats, quarantine, ...)


def parsed_rows(spark, source: SourceConfig, files: list[Path], hour: str = "2026-11-21T05") -> list[dict]:
    """The classified rows of `files` with apply's identity of their message."""
    messages = read_messages(spark, RawFiles([f"file://{f}" for f in files]), source, hour)
    rows = classify(messages, source).withColumn("identity", message_identity(source.format))
    return [row.asDict(recursive=True) for row in rows.collect()]


def distinct_changes(rows: list[dict], delivery: Callable[[dict], Hashable], fmt: str) -> list[dict]:
    """The change rows (outcome data or ddl) once per `delivery` (what makes two rows one change delivered
    twice), checking that every delivery has one content, in the order of (seq, seq2) with the two halves of a
    two-message update (DataWorks) joined into one UPDATE; no two of them may tie on (seq, seq2)."""
    by_delivery: dict[Hashable, dict] = {}
    for row in (r for r in rows if r["outcome"] in CHANGES):
        content = {k: v for k, v in row.items() if not k.startswith("origin_") and k != "identity"}
        assert by_delivery.setdefault(delivery(row), content) == content, f"{fmt}: one change, two contents"
    ordered = sorted(by_delivery.values(), key=lambda r: (r["seq"], r["seq2"], r["op"] != C.UPDATE_BEFORE))
    changes = _joined(ordered)
    orders = [(r["seq"], r["seq2"]) for r in changes]
    assert len(set(orders)) == len(orders), f"{fmt}: two changes tie on (seq, seq2)"
    return changes


def by_identity(row: dict) -> Hashable:
    """Apply's identity of a row's message (`message_identity`)."""
    return tuple(row["identity"].items())


def by_order(row: dict) -> Hashable:
    """A row's place in the total order: what makes two deliveries one change in a stream whose changes never
    tie, whatever identifies a message in the format."""
    return (row["seq"], row["seq2"], row["op"], row["origin_index"])


def true_order(hours: list[list[wire.Change]]) -> list[wire.Change]:
    """The stream's changes in true order, each once (a re-delivery is the same change)."""
    seen: set[int] = set()
    ordered = []
    for change in (c for changes in hours for c in changes):
        if id(change) not in seen:
            seen.add(id(change))
            ordered.append(change)
    return ordered


def _joined(rows: list[dict]) -> list[dict]:
    """Rows in order with the two halves of a two-message update (DataWorks) joined into one UPDATE."""
    joined: list[dict] = []
    for row in rows:
        if row["op"] == C.UPDATE_AFTER and joined and joined[-1]["op"] == C.UPDATE_BEFORE:
            joined[-1] = {**joined[-1], "op": C.UPDATE, "after": row["after"], "after_partial": row["after_partial"]}
        else:
            joined.append(row)
    return joined


def described(change: wire.Change | dict) -> tuple:
    """What apply reads of a change, comparable between a generated change and a parsed row: the DDL statement
    with its table, or the table, operation and images with each value as text (numbers as integers)."""
    if isinstance(change, wire.Change):
        if change.is_ddl:
            return ("ddl", change.table.name, change.ddl)
        op = {wire.INSERT: C.INSERT, wire.UPDATE: C.UPDATE, wire.DELETE: C.DELETE}[change.op]
        return (change.table.name, op, _text_image(change.before), _text_image(change.after))
    if change["kind"] == C.DDL:
        return ("ddl", change["table"], change["ddl"])
    return (change["table"], change["op"], _text_image(change["before"]), _text_image(change["after"]))


def _text_image(image: dict | None) -> tuple | None:
    if image is None:
        return None
    return tuple(sorted((name, None if v is None else _number_or_text(v)) for name, v in image.items()))


def _number_or_text(value: object) -> str:
    text = str(value)
    try:
        return str(int(Decimal(text)))
    except ArithmeticError:
        return text
