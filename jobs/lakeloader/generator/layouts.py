"""Export files in each layout that lakeloader.messages reads: the same messages, framed as an exporter would.

A message here is what `generator.wire` writes for a change: JSON text, or (for a binary format) the Base64
of its bytes. Each function returns the bytes of one export file.
"""

from __future__ import annotations

import base64
import json
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
