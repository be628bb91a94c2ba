"""One change stream, written in every wire format: the messages a source would publish for each change.

The oracle tests generate a stream of row changes (`Change`) for one table, apply it to an in-memory model,
and load the messages of each format: every format must give the model's table. A change's `seq` becomes
the format's own ordering key (sequence id, event time, SCN, `es`, `ts_ms`, ...), so any shuffle of the
messages across files and hours must give the same table; DebeziumSmt messages carry no order and must be
exported in order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lakeloader.generator import dataworks as dw

Row = dict[str, object]
DB, TABLE = "shop", "items"
KEY = ("id",)
COLUMNS = (("id", "LONG"), ("name", "STRING"), ("qty", "LONG"))  # DataWorks names; each format spells its own
SPEC = dw.TableSpec(DB, TABLE, COLUMNS, KEY)
BASE = datetime(2026, 11, 21, 5, tzinfo=UTC)
INSERT, UPDATE, DELETE = "insert", "update", "delete"


@dataclass(frozen=True)
class Change:
    op: str  # insert / update / delete
    seq: int  # position in the source's true order (positive, unique)
    before: Row | None
    after: Row | None

    @property
    def at(self) -> datetime:
        return BASE + timedelta(seconds=self.seq)

    @property
    def millis(self) -> int:
        return int(self.at.timestamp() * 1000)


def _text(row: Row | None) -> dict[str, str] | None:
    return None if row is None else {k: None if v is None else str(v) for k, v in row.items()}


def dataworks_json(change: Change, two_message_updates: bool) -> list[str]:
    if change.op == INSERT:
        return dw.insert(SPEC, change.seq, change.at, change.after)
    if change.op == DELETE:
        return dw.delete(SPEC, change.seq, change.at, change.before)
    return dw.update(SPEC, change.seq, change.at, change.before, change.after, one_message=not two_message_updates)


def dataworks_v2(change: Change) -> list[str]:
    message = {
        "version": "2.0",
        "schema": {
            "source": {"dbType": "mysql", "dbName": DB, "schema": None, "table": TABLE},
            "column": [{"name": n, "type": t} for n, t in (("id", "BIGINT"), ("name", "VARCHAR"), ("qty", "BIGINT"))],
            "pk": list(KEY),
        },
        "payload": {
            "op": change.op.upper(),
            "before": {"data": change.before} if change.before is not None else None,
            "after": {"data": change.after} if change.after is not None else None,
            "timestamp": {"eventTime": change.millis},
            "ddl": None,
            "scn": None,
        },
    }
    return [json.dumps(message)]


def datahub_tuple(change: Change) -> list[str]:
    """DataHub TUPLE rows (an update is a before row and an after row with the same sequence id)."""

    def row(image: Row, op: str, before: str, after: str) -> str:
        meta = {"_sequence_id_": str(change.seq), "_operation_type_": op, "_excute_time_": change.millis}
        flags = {"_source_table_": TABLE, "_before_image_": before, "_after_image_": after}
        return json.dumps({**image, **meta, **flags})

    if change.op == INSERT:
        return [row(change.after, "I", "N", "Y")]
    if change.op == DELETE:
        return [row(change.before, "D", "Y", "N")]
    return [row(change.before, "U", "Y", "N"), row(change.after, "U", "N", "Y")]


def oms_default(change: Change, light_types: bool = False) -> list[str]:
    """OMS Default (seconds since 1970 and storeDataSequence order it); with `light_types`, the
    DefaultExtendColumnType variant."""
    metadata = {
        "db": DB,
        "table_name": TABLE,
        "record_primary_key": "\u0001".join(KEY),
        "timestamp": str(int(change.at.timestamp())),
        "storeDataSequence": change.seq,
    }
    types = {"id": {"schemaType": "INT64"}, "name": {"schemaType": "VARCHAR(20)"}, "qty": {"schemaType": "INT64"}}

    def image(row: Row | None) -> dict | None:
        if row is None:
            return None
        return {**_text(row), "__light_type": types} if light_types else _text(row)

    message = {
        "allMetaData": metadata,
        "recordType": change.op.upper(),
        "prevStruct": image(change.before),
        "postStruct": image(change.after),
    }
    return [json.dumps(message)]


def canal_json(change: Change) -> list[str]:
    """Canal JSON: an update's `old` holds the changed columns' earlier values."""
    if change.op == UPDATE:
        data = [_text(change.after)]
        old = [{k: v for k, v in _text(change.before).items() if _text(change.after)[k] != v}]
    else:
        data, old = [_text(change.after if change.op == INSERT else change.before)], None
    message = {
        "data": data,
        "old": old,
        "database": DB,
        "table": TABLE,
        "type": change.op.upper(),
        "isDdl": False,
        "es": change.millis,
        "ts": change.millis + 300,
        "id": change.seq,
        "pkNames": list(KEY),
        "mysqlType": {"id": "bigint", "name": "varchar(20)", "qty": "bigint"},
        "sql": "",
    }
    return [json.dumps(message)]


def shareplex_json(change: Change) -> list[str]:
    """SharePlex JSON: an update's `data` holds only the changed columns, its `key` the row before."""
    meta = {"op": {INSERT: "ins", UPDATE: "upd", DELETE: "del"}[change.op], "table": f"{DB}.{TABLE}"}
    meta |= {"scn": str(change.seq), "seq": 1, "time": change.at.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if change.op == UPDATE:
        before, after = _text(change.before), _text(change.after)
        return [json.dumps({"meta": meta, "data": {k: v for k, v in after.items() if before[k] != v}, "key": before})]
    row = change.after if change.op == INSERT else change.before
    return [json.dumps({"meta": meta, "data": row})]


def _debezium_payload(change: Change) -> dict:
    origin = {"connector": "mysql", "name": "server1", "ts_ms": change.millis, "db": DB, "table": TABLE}
    op = {INSERT: "c", UPDATE: "u", DELETE: "d"}[change.op]
    return {"op": op, "before": change.before, "after": change.after, "source": origin, "ts_ms": change.millis + 5}


def debezium_json(change: Change) -> list[str]:
    fields = [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": True},
        {"field": "qty", "type": "int64", "optional": True},
    ]
    schema = {
        "type": "struct",
        "fields": [{"field": image, "type": "struct", "fields": fields} for image in ("before", "after")],
    }
    return [json.dumps({"schema": schema, "payload": _debezium_payload(change)})]


def debezium_flatten(change: Change) -> list[str]:
    return [json.dumps(_debezium_payload(change))]


def debezium_smt(change: Change) -> list[str]:
    """The row's new state, or the deleted row; a key-changing update is a delete and a create, as Debezium
    emits it."""
    if change.op == DELETE:
        return [json.dumps({**change.before, "__deleted": "true"})]
    deleted_old_key = []
    if change.op == UPDATE and any(change.before[k] != change.after[k] for k in KEY):
        deleted_old_key = [json.dumps({**change.before, "__deleted": "true"})]
    return [*deleted_old_key, json.dumps({**change.after, "__deleted": "false"})]


WRITERS: dict[str, Callable[[Change], list[str]]] = {
    "dataworks_json": lambda c: dataworks_json(c, two_message_updates=c.seq % 2 == 0),
    "dataworks_v2": dataworks_v2,
    "datahub_tuple": datahub_tuple,
    "oms_default": oms_default,
    "oms_default_extend_column_type": lambda c: oms_default(c, light_types=True),
    "canal_json": canal_json,
    "shareplex_json": shareplex_json,
    "debezium_json": debezium_json,
    "debezium_flatten": debezium_flatten,
    "debezium_smt": debezium_smt,
}
ORDERED_BY_EXPORT_POSITION = ("debezium_smt",)  # no ordering key in the messages: exported in order

SETTINGS: dict[str, dict] = {  # what a source of each format needs configured for this table
    "datahub_tuple": {"db": DB, "column_types": {f"{DB}.{TABLE}": {"id": "bigint", "qty": "bigint"}}},
    "oms_default": {"column_types": {f"{DB}.{TABLE}": {"id": "bigint", "qty": "bigint"}}},
    "shareplex_json": {"column_types": {f"{DB}.{TABLE}": {"id": "bigint", "qty": "bigint"}}},
    "debezium_smt": {"topic_tables": {"items-topic": f"{DB}.{TABLE}"}},
}
UNKEYED = ("datahub_tuple", "shareplex_json", "debezium_json", "debezium_flatten", "debezium_smt")
"""Formats whose messages name no primary key: the source configures it."""


def settings(fmt: str) -> dict:
    keys = {"primary_keys": {f"{DB}.{TABLE}": KEY}} if fmt in UNKEYED else {}
    return SETTINGS.get(fmt, {}) | keys
