"""One change stream, written in every wire format: the messages a source would publish for each change.

The oracle tests generate a stream of row changes (`Change`) for a table, apply it to an in-memory model,
and load the messages of each format: every format must give the model's table. A change's `seq` becomes
the format's own ordering key (sequence id, event time, SCN, `es`, `ts_ms`, ...), so any shuffle of the
messages across files and hours must give the same table; DebeziumSmt messages carry no order and must be
exported in order. A DDL change (`DDL`, its `statement`; `TRUNCATE` without one) is written where each format's
document puts a statement (WITH_DDL_TEXT): DataWorks `ddl.text`, OMS `postStruct.ddl`, Canal `sql`, SharePlex
`sql.ddl`, DTS Avro's after-image; the DDL oracle (tests/system/test_ddl_oracle.py) writes its streams so.

Rows hold Python values (int, Decimal, float, date, naive datetime for a wall clock, UTC datetime for an
instant, bytes, str). Each column has a *kind* (BIGINT ... TEXT); each format declares a kind with its own
type name and encodes its values as its specification says (`Dialect`): e.g. a DATE is 'YYYY-MM-DD' text in
OMS formats, epoch days in Debezium, epoch milliseconds of a DataWorks DATE; bytes are Base64, ISO-8859-1
text (open-source Canal) or Base16 (OMS's DebeziumSmt). What a format cannot express it sends as the nearest
kind it has (DataWorks JSON: decimals as DOUBLE, dates and wall clocks as DATE epoch milliseconds).
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Context, Decimal
from functools import cache
from importlib import resources
from typing import Any

import fastavro

from lakeloader.core.format_registry import FORMATS, names
from tools.cdcgen import dataworks as dw


@cache
def record_schema() -> Any:
    """DTS Avro's writer schema for fastavro: the copy of Alibaba's dts_record.avsc that the parser's package ships."""
    text = resources.files("lakeloader.parse.formats").joinpath("dts_record.avsc").read_text(encoding="utf-8")
    return fastavro.parse_schema(json.loads(text))


Row = dict[str, object]
DB = "shop"
BASE = datetime(2026, 11, 21, 5, tzinfo=UTC)
INSERT, UPDATE, DELETE, TRUNCATE, DDL = "insert", "update", "delete", "truncate", "ddl"

# Column kinds (what a column holds), named after the Spark type a configured source gives them (SPARK_TYPES).
BIGINT, INT, DECIMAL, WIDE_DECIMAL, DOUBLE = "bigint", "int", "decimal(10,2)", "decimal(50,10)", "double"
DATE, DATETIME, TIMESTAMP, BYTES, TEXT = "date", "datetime", "timestamp", "bytes", "text"
# MySQL's boundary types: TINYINT(1) (BOOL), BIGINT UNSIGNED (beyond int64), DECIMAL(65,30), DECIMAL declared
# without precision (as DTS and OMS send it; values with 30 fraction digits), FLOAT (values exact in 32 bits)
FLAG, UNSIGNED_BIGINT, DECIMAL_65, BARE_DECIMAL, FLOAT = "tinyint(1)", "ubigint", "decimal(65,30)", "decimal", "float"
WHOLE_DECIMAL = "decimal(30,0)"  # what the DDL oracle's MODIFY widens a BIGINT column to
Columns = tuple[tuple[str, str], ...]
PLAIN_COLUMNS: Columns = (("id", BIGINT), ("name", TEXT), ("qty", BIGINT))
TYPED_COLUMNS: Columns = (
    ("id", BIGINT),
    ("small", INT),  # 32-bit
    ("price", DECIMAL),
    ("wide", WIDE_DECIMAL),  # beyond Spark's 38 digits: exact text
    ("ratio", DOUBLE),
    ("day", DATE),
    ("wall", DATETIME),  # a wall clock without zone (naive datetime)
    ("instant", TIMESTAMP),  # a point in time (UTC datetime)
    ("raw", BYTES),
    ("label", TEXT),
    ("flag", FLAG),
    ("ubig", UNSIGNED_BIGINT),
    ("exact", DECIMAL_65),
    ("bare", BARE_DECIMAL),
    ("single", FLOAT),
)
SPARK_TYPES = {
    BIGINT: "bigint",
    INT: "int",
    DECIMAL: "decimal(10,2)",
    WIDE_DECIMAL: "string",
    DOUBLE: "double",
    DATE: "date",
    DATETIME: "timestamp_ntz",
    TIMESTAMP: "timestamp",
    BYTES: "binary",
    TEXT: "string",
    FLAG: "boolean",
    UNSIGNED_BIGINT: "decimal(20,0)",
    DECIMAL_65: "string",
    BARE_DECIMAL: "string",
    FLOAT: "float",
    WHOLE_DECIMAL: "decimal(30,0)",
}
"""The Spark type `column_types` gives each kind, for the formats whose messages carry no types."""


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]  # empty: the table has no primary key (a multiset of rows)
    columns: Columns = PLAIN_COLUMNS
    # the schema within the database, for formats that send one (Debezium `source.schema`): any but `public`
    # is part of the table's name in the lake, 'shop.<schema>.<table>' (README, "Configuration")
    schema: str | None = None

    @property
    def spec(self) -> dw.TableSpec:
        columns = tuple((name, DATAWORKS.types[kind]) for name, kind in self.columns)
        return dw.TableSpec(DB, self.name, columns, self.key or None)

    @property
    def db(self) -> str:
        """The table's database as the lake names it."""
        return DB if self.schema in (None, "public") else f"{DB}.{self.schema}"

    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.name}"


ITEMS = Table("items", ("id",))
EVENTS = Table("events", ())
TYPED = Table("typed", ("id",), TYPED_COLUMNS)


@dataclass(frozen=True)
class Change:
    table: Table
    op: str  # insert / update / delete / truncate / ddl
    seq: int  # position in the source's true order (positive, unique)
    before: Row | None = None
    after: Row | None = None
    # the source clock (seconds after BASE) when several changes share a reading, so that a format ordered by
    # a clock (Canal `es` and `id`, Debezium `ts_ms`, DataWorks 2.0 `eventTime`) sends equal ordering keys;
    # formats with a sequence per change still send `seq`. None: `seq`.
    tick: int | None = None
    statement: str | None = None  # a DDL change's statement text (op `ddl`)

    @property
    def at(self) -> datetime:
        return BASE + timedelta(seconds=self.seq if self.tick is None else self.tick)

    @property
    def millis(self) -> int:
        return int(self.at.timestamp() * 1000)

    @property
    def ddl(self) -> str:
        return self.statement or f"TRUNCATE TABLE `{self.table.name}`"

    @property
    def is_ddl(self) -> bool:
        return self.op in (TRUNCATE, DDL)

    @property
    def ddl_type(self) -> str:
        """The statement's event type as Canal names it (and DataWorks, whose DDL ops are Canal's): CREATE,
        ALTER, ERASE (DROP TABLE), TRUNCATE, RENAME, CINDEX, DINDEX, QUERY for any other statement."""
        words = re.sub(r"\b(TEMPORARY|UNIQUE|FULLTEXT|SPATIAL)\s+", "", self.ddl.upper()).split()[:2]
        kinds = {("CREATE", "TABLE"): "CREATE", ("ALTER", "TABLE"): "ALTER", ("DROP", "TABLE"): "ERASE"}
        kinds |= {("RENAME", "TABLE"): "RENAME", ("CREATE", "INDEX"): "CINDEX", ("DROP", "INDEX"): "DINDEX"}
        return "TRUNCATE" if words[:1] == ["TRUNCATE"] else kinds.get(tuple(words), "QUERY")


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


# --------------------------------------------------------------------------------------------------------------
# Value encodings shared by the formats
# --------------------------------------------------------------------------------------------------------------

EPOCH = datetime(1970, 1, 1)
EXACT = Context(prec=100)
"""Decimal arithmetic without rounding (the default context keeps 28 digits)."""
Encoder = Callable[[object], object]


def epoch_micros(moment: datetime) -> int:
    """Microseconds since 1970 of an instant, or of a wall clock read as UTC."""
    naive = moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    return (naive - EPOCH) // timedelta(microseconds=1)


def epoch_millis(moment: datetime) -> int:
    return epoch_micros(moment) // 1000


def epoch_days(day: date) -> int:
    return (day - EPOCH.date()).days


def midnight_millis(day: date) -> int:
    return epoch_millis(datetime(day.year, day.month, day.day))


def plain_number(value: Decimal) -> str:
    return format(value, "f")


def wall_text(moment: datetime, separator: str = " ") -> str:
    """'YYYY-MM-DD HH:MM:SS.ffffff' of a wall clock, or of an instant in UTC."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return utc.strftime(f"%Y-%m-%d{separator}%H:%M:%S.%f")


def oms_clock(moment: datetime) -> str:
    """OMS DATETIME text: 'YYYY-MM-DD HH:mm:ss[.nnnnnnnnn]', trailing zeros of the fraction not displayed."""
    return wall_text(moment).rstrip("0").rstrip(".")


def oms_epoch_seconds(moment: datetime) -> str:
    """OMS TIMESTAMP text: '[seconds][.nnnnnnnnn]' since 1970, trailing zeros not displayed."""
    micros = epoch_micros(moment)
    sign, magnitude = "-" if micros < 0 else "", abs(micros)
    return f"{sign}{magnitude // 10**6}.{magnitude % 10**6:06d}".rstrip("0").rstrip(".")


def iso_utc(moment: datetime) -> str:
    """'YYYY-MM-DDTHH:mm:ss.ffffffZ' (Debezium ZonedTimestamp, OMS Debezium TIMESTAMP)."""
    return wall_text(moment, "T") + "Z"


def base64_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unscaled_base64(scale: int) -> Encoder:
    """Kafka Connect's Decimal in JsonConverter: Base64 of the unscaled value's big-endian two's complement."""

    def encode(value: Decimal) -> str:
        unscaled = int(EXACT.scaleb(value, scale))
        return base64_text(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True))

    return encode


def text_of(value: object) -> str:
    """A value as MySQL-style text (open-source Canal sends every value so)."""
    if isinstance(value, Decimal):
        return plain_number(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        return wall_text(value)
    if isinstance(value, bytes):
        return value.decode("latin-1")  # Canal: one ISO-8859-1 character per byte
    if isinstance(value, bool):
        return "1" if value else "0"  # a TINYINT(1)
    return str(value)


@dataclass(frozen=True)
class Dialect:
    """How a format declares each column kind (`types`) and writes its values (`values`; a kind without an
    encoder is sent as the Python value: JSON numbers and strings, a Decimal as an exact JSON number)."""

    types: Mapping[str, object]
    values: Mapping[str, Encoder] = field(default_factory=dict)

    def image(self, table: Table, row: Row | None) -> Row | None:
        if row is None:
            return None
        encode = {name: self.values.get(kind) for name, kind in table.columns}
        return {k: v if v is None or encode[k] is None else encode[k](v) for k, v in row.items()}


_EXACT = "\u0000exact:"


def dumps(message: object) -> str:
    """JSON text in which a Decimal is a number with exactly its digits (json itself writes only floats)."""
    return re.sub(r'"\\u0000exact:([-0-9.]+)"', r"\1", json.dumps(message, default=_exact_number))


def _exact_number(value: object) -> str:
    if isinstance(value, Decimal):
        return _EXACT + plain_number(value)
    raise TypeError(f"not JSON serializable: {value!r}")


# --------------------------------------------------------------------------------------------------------------
# The formats' dialects
# --------------------------------------------------------------------------------------------------------------

DATAWORKS = Dialect(  # six types (seed 000): decimals are DOUBLE, every date-time a DATE of epoch milliseconds
    types={BIGINT: "LONG", INT: "LONG", DECIMAL: "DOUBLE", WIDE_DECIMAL: "DOUBLE", DOUBLE: "DOUBLE"}
    | {DATE: "DATE", DATETIME: "DATE", TIMESTAMP: "DATE", BYTES: "BYTES", TEXT: "STRING", FLAG: "BOOLEAN"}
    | {UNSIGNED_BIGINT: "DOUBLE", DECIMAL_65: "DOUBLE", BARE_DECIMAL: "DOUBLE", FLOAT: "DOUBLE"}
    | {WHOLE_DECIMAL: "DOUBLE"},
    # a DOUBLE's value is the source value's exact text, as real producers send it ("1.100000")
    values={DECIMAL: plain_number, WIDE_DECIMAL: plain_number, DOUBLE: repr, DATE: midnight_millis}
    | {DATETIME: epoch_millis, DECIMAL_65: plain_number, BARE_DECIMAL: plain_number, FLOAT: repr}
    | {TIMESTAMP: epoch_millis, BYTES: base64_text, WHOLE_DECIMAL: plain_number},
)
OMS = Dialect(  # OMS type names and its MySQL-tenant value formats (seed 002), for every OMS format but Debezium
    types={BIGINT: "INT64", INT: "INT", DECIMAL: "DECIMAL(10,2)", WIDE_DECIMAL: "DECIMAL(50,10)", DOUBLE: "DOUBLE"}
    | {DATE: "DATE", DATETIME: "DATETIME", TIMESTAMP: "TIMESTAMP", BYTES: "BLOB", TEXT: "VARCHAR(64)", FLAG: "BOOL"}
    | {UNSIGNED_BIGINT: "BIGINT", DECIMAL_65: "DECIMAL(65,30)", BARE_DECIMAL: "DECIMAL", FLOAT: "FLOAT"}
    | {WHOLE_DECIMAL: "DECIMAL(30,0)"},
    values={DATE: date.isoformat, DATETIME: oms_clock, TIMESTAMP: oms_epoch_seconds, BYTES: base64_text, FLAG: int},
)
JDBC_TYPES = {BIGINT: -5, INT: 4, DECIMAL: 3, WIDE_DECIMAL: 3, DOUBLE: 8, DATE: 91, DATETIME: 93, TIMESTAMP: 93}
JDBC_TYPES |= {BYTES: 2004, TEXT: 12, FLAG: -7, UNSIGNED_BIGINT: 3, DECIMAL_65: 3, BARE_DECIMAL: 3, FLOAT: 7}
JDBC_TYPES |= {WHOLE_DECIMAL: 3}
"""Canal's `sqlType`: the java.sql.Types code of each column kind (the loader types columns by `mysqlType`)."""
CANAL = Dialect(  # mysqlType declarations, every value as text
    types={BIGINT: "bigint", INT: "int", DECIMAL: "decimal(10,2)", WIDE_DECIMAL: "decimal(50,10)", DOUBLE: "double"}
    | {DATE: "date", DATETIME: "datetime(6)", TIMESTAMP: "timestamp(6)", BYTES: "blob", TEXT: "varchar(20)"}
    | {FLAG: "tinyint(1)", UNSIGNED_BIGINT: "bigint(20) unsigned", DECIMAL_65: "decimal(65,30)"}
    | {BARE_DECIMAL: "decimal", FLOAT: "float", WHOLE_DECIMAL: "decimal(30,0)"},
    values=dict.fromkeys(SPARK_TYPES, text_of),
)


def _connect(kind: str, logical: str | None = None, **parameters: str) -> dict:
    """A Kafka Connect field schema (without its name)."""
    schema: dict = {"type": kind, "optional": True}
    if logical:
        schema["name"] = logical
    if parameters:
        schema["parameters"] = parameters
    return schema


_DECIMAL_LOGICAL = "org.apache.kafka.connect.data.Decimal"
DEBEZIUM = Dialect(  # Debezium's MySQL connector through JsonConverter: logical types in the schema envelope
    types={
        BIGINT: _connect("int64"),
        INT: _connect("int32"),
        DECIMAL: _connect("bytes", _DECIMAL_LOGICAL, scale="2", **{"connect.decimal.precision": "10"}),
        WIDE_DECIMAL: _connect("bytes", _DECIMAL_LOGICAL, scale="10", **{"connect.decimal.precision": "50"}),
        DOUBLE: _connect("double"),
        DATE: _connect("int32", "io.debezium.time.Date"),
        DATETIME: _connect("int64", "io.debezium.time.MicroTimestamp"),
        TIMESTAMP: _connect("string", "io.debezium.time.ZonedTimestamp"),
        BYTES: _connect("bytes"),
        TEXT: _connect("string"),
        FLAG: _connect("boolean"),
        UNSIGNED_BIGINT: _connect("bytes", _DECIMAL_LOGICAL, scale="0"),  # precise mode: no precision
        DECIMAL_65: _connect("bytes", _DECIMAL_LOGICAL, scale="30", **{"connect.decimal.precision": "65"}),
        BARE_DECIMAL: _connect("bytes", _DECIMAL_LOGICAL, scale="30"),
        FLOAT: _connect("float"),
    },
    values={DECIMAL: unscaled_base64(2), WIDE_DECIMAL: unscaled_base64(10), DATE: epoch_days}
    | {DATETIME: epoch_micros, TIMESTAMP: iso_utc, BYTES: base64_text, UNSIGNED_BIGINT: unscaled_base64(0)}
    | {DECIMAL_65: unscaled_base64(30), BARE_DECIMAL: unscaled_base64(30)},
)
DEBEZIUM_SMT = Dialect(  # OMS's Debezium type mapping (seed 002): no types in the message
    types={},
    values={DECIMAL: plain_number, WIDE_DECIMAL: plain_number, DATE: epoch_days, DATETIME: epoch_millis}
    | {TIMESTAMP: iso_utc, BYTES: lambda data: data.hex().upper(), UNSIGNED_BIGINT: str, DECIMAL_65: plain_number}
    | {BARE_DECIMAL: plain_number},
)
DATAHUB = Dialect(  # TUPLE field types: DECIMAL, DOUBLE, TIMESTAMP (epoch microseconds), STRING for the rest
    types={},
    values={WIDE_DECIMAL: plain_number, DATE: date.isoformat, DATETIME: epoch_micros, TIMESTAMP: epoch_micros}
    | {BYTES: base64_text, DECIMAL_65: plain_number, BARE_DECIMAL: plain_number},
)


# --------------------------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------------------------


def dataworks_json(change: Change, two_message_updates: bool) -> list[str]:
    spec = change.table.spec
    before, after = (DATAWORKS.image(change.table, row) for row in (change.before, change.after))
    if change.op == INSERT:
        return dw.insert(spec, change.seq, change.at, after)
    if change.op == DELETE:
        return dw.delete(spec, change.seq, change.at, before)
    if change.is_ddl:
        return [dw.message(spec, change.ddl_type, change.seq, change.at, ddl=change.ddl)]
    return dw.update(spec, change.seq, change.at, before, after, one_message=not two_message_updates)


def _declared(dialect: Dialect, table: Table) -> dict[str, object]:
    return {name: dialect.types[kind] for name, kind in table.columns}


def dataworks_v2(change: Change) -> list[str]:
    """DataWorks 2.0; a DDL message declares no columns and no key (seed 002's example)."""
    before, after = (OMS.image(change.table, row) for row in (change.before, change.after))
    columns = [{"name": n, "type": t} for n, t in _declared(OMS, change.table).items()]
    message = {
        "version": "2.0",
        "schema": {
            "source": {"dbType": "mysql", "dbName": DB, "schema": None, "table": change.table.name},
            "column": None if change.is_ddl else columns,
            "pk": None if change.is_ddl else list(change.table.key),
        },
        "payload": {
            "op": change.ddl_type if change.is_ddl else change.op.upper(),
            "before": {"data": before} if before is not None else None,
            "after": {"data": after} if after is not None else None,
            "timestamp": {"eventTime": change.millis},
            "ddl": {"text": change.ddl} if change.is_ddl else None,
            "scn": None,
        },
    }
    return [dumps(message)]


def datahub_tuple(change: Change) -> list[str]:
    """DataHub TUPLE rows (an update is a before row and an after row with the same sequence id)."""

    def row(image: Row, op: str, before: str, after: str) -> str:
        meta = {"_sequence_id_": str(change.seq), "_operation_type_": op, "_excute_time_": change.millis}
        flags = {"_source_table_": change.table.name, "_before_image_": before, "_after_image_": after}
        return dumps({**DATAHUB.image(change.table, image), **meta, **flags})

    if change.op == INSERT:
        return [row(change.after, "I", "N", "Y")]
    if change.op == DELETE:
        return [row(change.before, "D", "Y", "N")]
    return [row(change.before, "U", "Y", "N"), row(change.after, "U", "N", "Y")]


def oms_default(change: Change, light_types: bool = False) -> list[str]:
    """OMS Default (seconds since 1970 and storeDataSequence order it); with `light_types`, the
    DefaultExtendColumnType variant. A DDL record carries its statement as `postStruct.ddl` (and declares it
    VAR_STRING in the variant's `__light_type`), without a key (seed 002's examples)."""
    metadata = {
        "db": DB,
        "table_name": change.table.name,
        "record_primary_key": None if change.is_ddl else "\u0001".join(change.table.key) or None,
        "timestamp": str(int(change.at.timestamp())),
        "storeDataSequence": change.seq,
    }
    types = {name: {"schemaType": declared} for name, declared in _declared(OMS, change.table).items()}

    def image(row: Row | None) -> dict | None:
        values = OMS.image(change.table, row)
        return {**values, "__light_type": types} if light_types and values is not None else values

    statement: dict = {"ddl": change.ddl}
    if light_types:
        statement["__light_type"] = {"ddl": {"schemaType": "VAR_STRING"}}
    message = {
        "allMetaData": metadata,
        "recordType": "DDL" if change.is_ddl else change.op.upper(),
        "prevStruct": image(change.before),
        "postStruct": statement if change.is_ddl else image(change.after),
    }
    return [dumps(message)]


def canal_json(change: Change) -> list[str]:
    """Canal JSON: an update's `old` holds the changed columns' earlier values. A DDL message has `isDdl`, the
    statement in `sql` and no data, key or types; its `type` is the event type (OMS, open-source Canal) for an
    even `seq`, DTS's `DDL` for an odd one (seeds 002 and 004)."""
    before, after = (CANAL.image(change.table, row) for row in (change.before, change.after))
    if change.op == UPDATE:
        data, old = [after], [{k: v for k, v in before.items() if after[k] != v}]
    elif change.is_ddl:
        data, old = None, None
    else:
        data, old = [after if change.op == INSERT else before], None
    message = {
        "data": data,
        "old": old,
        "database": DB,
        "table": change.table.name,
        "type": ("DDL" if change.seq % 2 else change.ddl_type) if change.is_ddl else change.op.upper(),
        "isDdl": change.is_ddl,
        "es": change.millis,
        "ts": change.millis + 300,
        "id": change.seq if change.tick is None else change.tick,
        "pkNames": None if change.is_ddl else list(change.table.key) or None,
        "mysqlType": None if change.is_ddl else _declared(CANAL, change.table),
        "sqlType": None if change.is_ddl else {n: JDBC_TYPES[k] for n, k in change.table.columns},
        "sql": change.ddl if change.is_ddl else "",
    }
    return [json.dumps(message)]


def shareplex_json(change: Change) -> list[str]:
    """SharePlex JSON: an update's `data` holds only the changed columns, its `key` the row before; a DDL is op
    `ddl` with empty `data` and the statement in `sql.ddl` (seed 002)."""
    meta = {"op": {INSERT: "ins", UPDATE: "upd", DELETE: "del", TRUNCATE: "ddl", DDL: "ddl"}[change.op]}
    meta |= {"table": change.table.qualified, "scn": str(change.seq), "seq": 1}
    meta |= {"time": change.at.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if change.is_ddl:
        return [dumps({"data": {}, "meta": meta, "sql": {"ddl": change.ddl}})]
    before, after = (OMS.image(change.table, row) for row in (change.before, change.after))
    if change.op == UPDATE:
        return [dumps({"meta": meta, "data": {k: v for k, v in after.items() if before[k] != v}, "key": before})]
    return [dumps({"meta": meta, "data": after if change.op == INSERT else before})]


def _debezium_payload(change: Change) -> dict:
    origin = {"connector": "mysql", "name": "server1", "ts_ms": change.millis, "db": DB, "table": change.table.name}
    if change.table.schema is not None:
        origin |= {"connector": "postgresql", "schema": change.table.schema}
    op = {INSERT: "c", UPDATE: "u", DELETE: "d", TRUNCATE: "t"}[change.op]
    before, after = (DEBEZIUM.image(change.table, row) for row in (change.before, change.after))
    return {"op": op, "before": before, "after": after, "source": origin, "ts_ms": change.millis + 5}


def debezium_json(change: Change) -> list[str]:
    fields = [{"field": name, **declared} for name, declared in _declared(DEBEZIUM, change.table).items()]
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
    before, after = (DEBEZIUM_SMT.image(change.table, row) for row in (change.before, change.after))
    if change.op == DELETE:
        return [json.dumps({**before, "__deleted": "true"})]
    deleted_old_row = []
    if change.op == UPDATE and (not change.table.key or any(before[k] != after[k] for k in change.table.key)):
        deleted_old_row = [json.dumps({**before, "__deleted": "true"})]
    return [*deleted_old_row, json.dumps({**after, "__deleted": "false"})]


_AVRO = "com.alibaba.dts.formats.avro."


def _avro_decimal(precision: int, scale: int) -> Encoder:
    return lambda v: (_AVRO + "Decimal", {"value": plain_number(v), "precision": precision, "scale": scale})


def _avro_date_time(moment: date) -> tuple[str, dict]:
    """DateTime's parts: a date's, or a wall clock's with its microseconds (field `millis`, as DTS's SDK reads it)."""
    parts = {"year": moment.year, "month": moment.month, "day": moment.day}
    if isinstance(moment, datetime):
        parts |= {"hour": moment.hour, "minute": moment.minute, "second": moment.second}
        parts |= {"millis": moment.microsecond}
    return _AVRO + "DateTime", parts


def _avro_timestamp(moment: datetime) -> tuple[str, dict]:
    micros = epoch_micros(moment)
    return _AVRO + "Timestamp", {"timestamp": micros // 1_000_000, "millis": micros % 1_000_000}


DTS_AVRO = Dialect(  # MySQL protocol type numbers, values as the record schema's union branches
    types={BIGINT: 8, INT: 3, DECIMAL: 246, WIDE_DECIMAL: 246, DOUBLE: 5}
    | {DATE: 10, DATETIME: 12, TIMESTAMP: 7, BYTES: 252, TEXT: 15}
    | {FLAG: 1, UNSIGNED_BIGINT: 8, DECIMAL_65: 246, BARE_DECIMAL: 246, FLOAT: 4, WHOLE_DECIMAL: 246},
    values={
        BIGINT: lambda v: (_AVRO + "Integer", {"precision": 20, "value": str(v)}),
        INT: lambda v: (_AVRO + "Integer", {"precision": 11, "value": str(v)}),
        DECIMAL: _avro_decimal(10, 2),
        WIDE_DECIMAL: _avro_decimal(50, 10),
        DOUBLE: lambda v: (_AVRO + "Float", {"value": v, "precision": 22, "scale": 0}),
        DATE: _avro_date_time,
        DATETIME: _avro_date_time,
        TIMESTAMP: _avro_timestamp,
        BYTES: lambda v: (_AVRO + "BinaryObject", {"type": "BLOB", "value": v}),
        TEXT: lambda v: (_AVRO + "Character", {"charset": "utf8mb4", "value": v.encode()}),
        FLAG: lambda v: (_AVRO + "Integer", {"precision": 4, "value": str(int(v))}),
        UNSIGNED_BIGINT: lambda v: (_AVRO + "Integer", {"precision": 20, "value": str(v)}),
        DECIMAL_65: _avro_decimal(65, 30),
        BARE_DECIMAL: _avro_decimal(65, 30),
        FLOAT: lambda v: (_AVRO + "Float", {"value": v, "precision": 12, "scale": 0}),
        WHOLE_DECIMAL: _avro_decimal(30, 0),
    },
)


def dts_avro(change: Change) -> list[str]:
    """A DTS Avro record, Base64 of its Avro binary per line."""

    def image(row: Row | None) -> list | None:
        values = DTS_AVRO.image(change.table, row)
        return None if values is None else [values.get(name) for name, _ in change.table.columns]

    ddl = change.is_ddl  # a DDL record: the statement (a string) as its after-image, no fields
    fields = [{"name": n, "dataTypeNumber": number} for n, number in _declared(DTS_AVRO, change.table).items()]
    record = {
        "version": 1,
        "id": change.seq,
        "sourceTimestamp": int(change.at.timestamp()),
        "sourcePosition": f"{change.seq}@mysql-bin.000001",
        "safeSourcePosition": "",
        "sourceTxid": "0",
        "source": {"sourceType": "MySQL", "version": "8.0"},
        "operation": "DDL" if ddl else change.op.upper(),
        "objectName": change.table.qualified,
        "processTimestamps": None,
        "tags": {"pk_uk_info": json.dumps({"PRIMARY": list(change.table.key)})} if change.table.key else {},
        "fields": None if ddl else fields,
        "beforeImages": None if ddl else image(change.before),
        "afterImages": change.ddl if ddl else image(change.after),
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
ORDERED_BY_EXPORT_POSITION = names(lambda f: not f.ordered)  # exported in order
WITHOUT_DDL = names(lambda f: not f.ddl)  # no way to send a TRUNCATE
WITH_DDL_TEXT = tuple(f for f in WRITERS if f not in (*WITHOUT_DDL, "debezium_json", "debezium_flatten"))
"""Formats whose messages carry a DDL statement's text (Debezium's send only a truncate, as op `t`)."""


def settings(fmt: str, tables: tuple[Table, ...]) -> dict:
    """What a source of format `fmt` needs configured for these tables: what its messages lack
    (lakeloader.core.format_registry), column types as SPARK_TYPES."""
    result: dict = {}
    if not FORMATS[fmt].names_key:
        result["primary_keys"] = {t.qualified: t.key for t in tables if t.key}
    if not FORMATS[fmt].typed:
        result["column_types"] = {t.qualified: {name: SPARK_TYPES[kind] for name, kind in t.columns} for t in tables}
    if not FORMATS[fmt].names_db:
        result["db"] = DB
    if not FORMATS[fmt].names_table:
        result["topic_tables"] = {f"{t.name}-topic": t.qualified for t in tables}
    return result
