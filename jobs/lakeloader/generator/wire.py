"""One change stream, written in every wire format: the messages a source would publish for each change.

The oracle tests generate a stream of row changes (`Change`) for one table, apply it to an in-memory model,
and load the messages of each format: every format must give the model's table. A change's `seq` becomes
the format's own ordering key (sequence id, event time, SCN, `es`, `ts_ms`, ...), so any shuffle of the
messages across files and hours must give the same table; DebeziumSmt messages carry no order and must be
exported in order.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import fastavro

from lakeloader.formats.dts_avro_decode import record_schema
from lakeloader.generator import dataworks as dw

Row = dict[str, object]
DB = "shop"
BASE = datetime(2026, 11, 21, 5, tzinfo=UTC)
INSERT, UPDATE, DELETE, TRUNCATE = "insert", "update", "delete", "truncate"
COLUMNS = (("id", "LONG"), ("name", "STRING"), ("qty", "LONG"))  # DataWorks names; each format spells its own


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]  # empty: the table has no primary key (a multiset of rows)

    @property
    def spec(self) -> dw.TableSpec:
        return dw.TableSpec(DB, self.name, COLUMNS, self.key or None)

    @property
    def qualified(self) -> str:
        return f"{DB}.{self.name}"


ITEMS = Table("items", ("id",))
EVENTS = Table("events", ())


@dataclass(frozen=True)
class Change:
    table: Table
    op: str  # insert / update / delete / truncate
    seq: int  # position in the source's true order (positive, unique)
    before: Row | None = None
    after: Row | None = None

    @property
    def at(self) -> datetime:
        return BASE + timedelta(seconds=self.seq)

    @property
    def millis(self) -> int:
        return int(self.at.timestamp() * 1000)

    @property
    def ddl(self) -> str:
        return f"TRUNCATE TABLE `{self.table.name}`"


def keyed_stream(table: Table, n: int) -> tuple[list[Change], dict[object, Row]]:
    """n changes to a keyed table in true order, and the rows they leave: the first quarter insert keys, the
    rest update them, every tenth a delete (the key is inserted again on its next turn)."""
    keys = max(1, n // 4)
    rows: dict[object, Row] = {}
    stream = []
    for i in range(n):
        seq, key = i + 1, i % keys
        if key not in rows:
            rows[key] = {"id": key, "name": f"name-{seq}", "qty": seq}
            stream.append(Change(table, INSERT, seq, None, rows[key]))
        elif i % 10 == 0:
            stream.append(Change(table, DELETE, seq, rows.pop(key), None))
        else:
            after = {"id": key, "name": f"name-{seq}", "qty": seq}
            stream.append(Change(table, UPDATE, seq, rows[key], after))
            rows[key] = after
    return stream, rows


def _text(row: Row | None) -> dict[str, str] | None:
    return None if row is None else {k: None if v is None else str(v) for k, v in row.items()}


def dataworks_json(change: Change, two_message_updates: bool) -> list[str]:
    spec = change.table.spec
    if change.op == INSERT:
        return dw.insert(spec, change.seq, change.at, change.after)
    if change.op == DELETE:
        return dw.delete(spec, change.seq, change.at, change.before)
    if change.op == TRUNCATE:
        return [dw.message(spec, "TRUNCATE", change.seq, change.at, ddl=change.ddl)]
    return dw.update(spec, change.seq, change.at, change.before, change.after, one_message=not two_message_updates)


def dataworks_v2(change: Change) -> list[str]:
    message = {
        "version": "2.0",
        "schema": {
            "source": {"dbType": "mysql", "dbName": DB, "schema": None, "table": change.table.name},
            "column": [{"name": n, "type": t} for n, t in (("id", "INT64"), ("name", "VARCHAR"), ("qty", "INT64"))],
            "pk": list(change.table.key),
        },
        "payload": {
            "op": change.op.upper(),
            "before": {"data": change.before} if change.before is not None else None,
            "after": {"data": change.after} if change.after is not None else None,
            "timestamp": {"eventTime": change.millis},
            "ddl": {"text": change.ddl} if change.op == TRUNCATE else None,
            "scn": None,
        },
    }
    return [json.dumps(message)]


def datahub_tuple(change: Change) -> list[str]:
    """DataHub TUPLE rows (an update is a before row and an after row with the same sequence id)."""

    def row(image: Row, op: str, before: str, after: str) -> str:
        meta = {"_sequence_id_": str(change.seq), "_operation_type_": op, "_excute_time_": change.millis}
        flags = {"_source_table_": change.table.name, "_before_image_": before, "_after_image_": after}
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
        "table_name": change.table.name,
        "record_primary_key": "\u0001".join(change.table.key) or None,
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
        "recordType": "DDL" if change.op == TRUNCATE else change.op.upper(),
        "prevStruct": image(change.before),
        "postStruct": {"ddl": change.ddl} if change.op == TRUNCATE else image(change.after),
    }
    return [json.dumps(message)]


def canal_json(change: Change) -> list[str]:
    """Canal JSON: an update's `old` holds the changed columns' earlier values."""
    if change.op == UPDATE:
        data = [_text(change.after)]
        old = [{k: v for k, v in _text(change.before).items() if _text(change.after)[k] != v}]
    elif change.op == TRUNCATE:
        data, old = None, None
    else:
        data, old = [_text(change.after if change.op == INSERT else change.before)], None
    message = {
        "data": data,
        "old": old,
        "database": DB,
        "table": change.table.name,
        "type": change.op.upper(),
        "isDdl": change.op == TRUNCATE,
        "es": change.millis,
        "ts": change.millis + 300,
        "id": change.seq,
        "pkNames": list(change.table.key) or None,
        "mysqlType": {"id": "bigint", "name": "varchar(20)", "qty": "bigint"},
        "sql": change.ddl if change.op == TRUNCATE else "",
    }
    return [json.dumps(message)]


def shareplex_json(change: Change) -> list[str]:
    """SharePlex JSON: an update's `data` holds only the changed columns, its `key` the row before."""
    meta = {"op": {INSERT: "ins", UPDATE: "upd", DELETE: "del", TRUNCATE: "ddl"}[change.op]}
    meta |= {"table": change.table.qualified, "scn": str(change.seq), "seq": 1}
    meta |= {"time": change.at.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if change.op == TRUNCATE:
        return [json.dumps({"meta": meta, "sql": {"ddl": change.ddl}})]
    if change.op == UPDATE:
        before, after = _text(change.before), _text(change.after)
        return [json.dumps({"meta": meta, "data": {k: v for k, v in after.items() if before[k] != v}, "key": before})]
    row = change.after if change.op == INSERT else change.before
    return [json.dumps({"meta": meta, "data": row})]


def _debezium_payload(change: Change) -> dict:
    origin = {"connector": "mysql", "name": "server1", "ts_ms": change.millis, "db": DB, "table": change.table.name}
    op = {INSERT: "c", UPDATE: "u", DELETE: "d", TRUNCATE: "t"}[change.op]
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
    emits it (and so is any update of a table without a key, whose rows are their values)."""
    if change.op == DELETE:
        return [json.dumps({**change.before, "__deleted": "true"})]
    deleted_old_row = []
    if change.op == UPDATE and (
        not change.table.key or any(change.before[k] != change.after[k] for k in change.table.key)
    ):
        deleted_old_row = [json.dumps({**change.before, "__deleted": "true"})]
    return [*deleted_old_row, json.dumps({**change.after, "__deleted": "false"})]


def dts_avro(change: Change) -> list[str]:
    """A DTS Avro record (MySQL type numbers: 8 LONGLONG, 15 VARCHAR), Base64 of its Avro binary per line."""
    namespace = "com.alibaba.dts.formats.avro."

    def value(name: str, v: object) -> tuple[str, dict] | None:
        if v is None:
            return None
        if name == "name":
            return (namespace + "Character", {"charset": "utf8mb4", "value": str(v).encode()})
        return (namespace + "Integer", {"precision": 20, "value": str(v)})

    def image(row: Row | None) -> list | None:
        return None if row is None else [value(name, row.get(name)) for name, _ in COLUMNS]

    truncate = change.op == TRUNCATE
    record = {
        "version": 1,
        "id": change.seq,
        "sourceTimestamp": int(change.at.timestamp()),
        "sourcePosition": f"{change.seq}@mysql-bin.000001",
        "safeSourcePosition": "",
        "sourceTxid": "0",
        "source": {"sourceType": "MySQL", "version": "8.0"},
        "operation": "DDL" if truncate else change.op.upper(),
        "objectName": change.table.qualified,
        "processTimestamps": None,
        "tags": {},
        "fields": None if truncate else [{"name": n, "dataTypeNumber": 15 if n == "name" else 8} for n, _ in COLUMNS],
        "beforeImages": None if truncate else image(change.before),
        "afterImages": change.ddl if truncate else image(change.after),
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, record_schema(), record)
    return [base64.b64encode(out.getvalue()).decode("ascii")]


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
    "dts_avro": dts_avro,
}
ORDERED_BY_EXPORT_POSITION = ("debezium_smt",)  # no ordering key in the messages: exported in order
WITHOUT_DDL = ("datahub_tuple", "debezium_smt")  # no way to send a TRUNCATE
MESSAGES_NAME_NO_KEY = (
    "datahub_tuple",
    "shareplex_json",
    "debezium_json",
    "debezium_flatten",
    "debezium_smt",
    "dts_avro",
)
"""Formats whose messages name no primary key: the source configures it."""
TYPED_BY_CONFIGURATION = ("datahub_tuple", "oms_default", "shareplex_json")


def settings(fmt: str, tables: tuple[Table, ...]) -> dict:
    """What a source of format `fmt` needs configured for these tables."""
    result: dict = {}
    if fmt in MESSAGES_NAME_NO_KEY:
        result["primary_keys"] = {t.qualified: t.key for t in tables if t.key}
    if fmt in TYPED_BY_CONFIGURATION:
        result["column_types"] = {t.qualified: {"id": "bigint", "qty": "bigint"} for t in tables}
    if fmt == "datahub_tuple":
        result["db"] = DB
    if fmt == "debezium_smt":
        result["topic_tables"] = {f"{t.name}-topic": t.qualified for t in tables}
    return result
