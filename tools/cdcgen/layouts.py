"""Export files in each layout that lakeloader.parse.framing reads: the same messages, framed as an exporter would.

A message here is what `generator.wire` writes for a change: JSON text, or (for a binary format) the Base64
of its bytes. Each function returns the bytes of one export file.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Positioned:
    """A message with its topic coordinates (a re-delivered message keeps its offset)."""

    topic: str
    partition: int
    offset: int
    text: str | None  # None: a tombstone


def lines_file(messages: Sequence[str]) -> bytes:
    return "".join(m + "\n" for m in messages).encode()


def concatenated_file(messages: Sequence[str]) -> bytes:
    """Pretty-printed JSON messages one after another (4-space indent, as the vendor documents print them)."""
    return "".join(json.dumps(json.loads(m), indent=4, ensure_ascii=False) + "\n" for m in messages).encode()


def kcat_file(messages: Sequence[Positioned], base64_payload: bool, binary: bool = False) -> bytes:
    """One `kcat -J` envelope per line. `binary`: the messages are already Base64 (a binary format)."""
    out = []
    for m in messages:
        payload = m.text
        if payload is not None and base64_payload and not binary:
            payload = base64.b64encode(payload.encode()).decode()
        envelope = {
            "topic": m.topic,
            "partition": m.partition,
            "offset": m.offset,
            "tstype": "create",
            "ts": 1763701200000 + m.offset,
            "broker": 1,
            "key": None,
            "payload": payload,
        }
        out.append(json.dumps(envelope) + "\n")
    return "".join(out).encode()


def length_prefixed_file(messages: Sequence[bytes]) -> bytes:
    """Each message preceded by its length, a 4-byte big-endian unsigned integer (`.bin` files)."""
    return b"".join(len(m).to_bytes(4, "big") + m for m in messages)


def binary_messages(base64_messages: Sequence[str]) -> list[bytes]:
    """The bytes of a binary format's messages (wire writes them as Base64 text)."""
    return [base64.b64decode(m) for m in base64_messages]


def offset_file_name(topic: str, partition: int, start: int) -> str:
    """The Kafka Connect S3 sink's name of a file whose first message is at `start`."""
    return f"{topic}/{topic}+{partition}+{start:010d}.json"


@dataclass(frozen=True)
class Delivery:
    """One export file: the hour it appears in (an index), its name and its bytes."""

    hour: int
    name: str
    content: bytes


def deliveries(
    rng: random.Random, messages: Sequence[Positioned], hours: int, layout: str, redelivered: int
) -> list[Delivery]:
    """Positioned messages (offsets in true order per topic) as export files spread over `hours` hours in any
    order, plus `redelivered` re-deliveries, each 1 to 3 hours after or before its original.

    `kcat`: every message goes to a random hour's file of its topic, a re-delivery is a copy of one message.
    `offset_names`: runs of 1-4 consecutive messages of a topic form files named by their first offset
    (`offset_file_name`, one message per line) in random hours; a re-delivery is a run's suffix, named by its
    own first offset (under `redelivered/<n>/`, another export key)."""
    if layout == "kcat":
        placed = [(rng.randrange(hours), [m]) for m in messages]
        copies = [(_shifted(rng, hour, hours), run) for hour, run in rng.sample(placed, min(redelivered, len(placed)))]
        by_file: dict[tuple[int, str], list[Positioned]] = {}
        for hour, run in placed + copies:
            by_file.setdefault((hour, run[0].topic), []).extend(run)
        return [
            Delivery(hour, f"{topic}/part-{hour}.json", kcat_file(sorted(ms, key=lambda m: m.offset), False))
            for (hour, topic), ms in sorted(by_file.items())
        ]
    runs: list[list[Positioned]] = []
    for topic in sorted({m.topic for m in messages}):
        ordered = sorted((m for m in messages if m.topic == topic), key=lambda m: m.offset)
        while ordered:
            size = rng.randint(1, 4)
            runs.append(ordered[:size])
            ordered = ordered[size:]
    placed = [(rng.randrange(hours), run) for run in runs]
    copies = []
    for hour, run in rng.sample(placed, min(redelivered, len(placed))):
        copies.append((_shifted(rng, hour, hours), run[rng.randrange(len(run)) :]))
    files = [(hour, "", run) for hour, run in placed]
    files += [(hour, f"redelivered/{n}/", run) for n, (hour, run) in enumerate(copies)]
    return [
        Delivery(
            hour, prefix + offset_file_name(run[0].topic, run[0].partition, run[0].offset), lines_file(_texts(run))
        )
        for hour, prefix, run in files
    ]


def _texts(run: Sequence[Positioned]) -> list[str]:
    return [m.text or "" for m in run]


def _shifted(rng: random.Random, hour: int, hours: int) -> int:
    """An hour 1 to 3 hours after or before `hour` (within 0..hours-1; `hour` itself when none is)."""
    choices = [hour + d for d in (-3, -2, -1, 1, 2, 3) if 0 <= hour + d < hours]
    return rng.choice(choices) if choices else hour
