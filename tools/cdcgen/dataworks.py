"""Write DataWorks JSON messages (the shape real producers emit) for the demo, tests and benchmarks."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

Row = dict[str, Any]


@dataclass(frozen=True)
class TableSpec:
    """A source table: columns with DataWorks types (LONG, DOUBLE, BOOLEAN, STRING, DATE, BYTES)."""

    db: str
    table: str
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...] | None

    def schema(self) -> dict[str, Any]:
        return {
            "dataColumn": [{"name": name, "type": kind} for name, kind in self.columns],
            "primaryKey": list(self.primary_key) if self.primary_key else None,
            "source": {"dbType": "MySQL", "dbName": self.db, "tableName": self.table},
        }

    def wire_value(self, column: str, value: Any) -> Any:
        """A Python value as DataWorks sends it: DATE as epoch milliseconds, BYTES as Base64."""
        kind = dict(self.columns)[column]
        if value is None:
            return None
        if kind == "DATE":
            return int(value.timestamp() * 1000) if isinstance(value, datetime) else value
        if kind == "BYTES":
            return base64.b64encode(value).decode() if isinstance(value, bytes) else value
        return value

    def image(self, row: Row) -> dict[str, Any]:
        return {"dataColumn": {name: self.wire_value(name, row.get(name)) for name, _ in self.columns}}


def _epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def message(
    spec: TableSpec | None,
    op: str,
    seq: int | None,
    at: datetime,
    before: Row | None = None,
    after: Row | None = None,
    ddl: str | None = None,
) -> str:
    """One message as a JSON line (sequenceId sent as a string, as producers do)."""
    payload = {
        "before": spec.image(before) if spec and before is not None else None,
        "after": spec.image(after) if spec and after is not None else None,
        "sequenceId": None if seq is None else str(seq),
        "timestamp": {"eventTime": _epoch_ms(at), "systemTime": _epoch_ms(at) + 500, "checkpointTime": _epoch_ms(at)},
        "op": op,
        "ddl": {"text": ddl} if ddl else None,
    }
    schema = spec.schema() if spec else {"dataColumn": None, "primaryKey": None, "source": None}
    return json.dumps({"schema": schema, "payload": payload, "version": "0.0.1"}, separators=(",", ":"))


def insert(spec: TableSpec, seq: int, at: datetime, row: Row) -> list[str]:
    return [message(spec, "INSERT", seq, at, after=row)]


def update(spec: TableSpec, seq: int, at: datetime, before: Row, after: Row, one_message: bool) -> list[str]:
    """An update in either mode: one UPDATE_AFTER with both images, or UPDATE_BEFOR + UPDATE_AFTER."""
    if one_message:
        return [message(spec, "UPDATE_AFTER", seq, at, before=before, after=after)]
    return [message(spec, "UPDATE_BEFOR", seq, at, before=before), message(spec, "UPDATE_AFTER", seq, at, after=after)]


def delete(spec: TableSpec, seq: int, at: datetime, row: Row) -> list[str]:
    return [message(spec, "DELETE", seq, at, before=row)]


def heartbeat(at: datetime) -> str:
    return message(None, "MHEARTBEAT", None, at)


def transaction_marker(op: str, seq: int, at: datetime) -> str:
    return message(None, op, seq, at)
