"""The DDL messages of one batch: collected (DDL is rare), parsed, placed in each table's sequence, and
recorded in the schema history table (audit/<source>/schema_history, a Delta table)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply.ddl import statements as S
from lakeloader.engine import base as E
from lakeloader.engine.base import TableEngine
from lakeloader.parse import canonical as C


@dataclass
class DdlEvent:
    """One DDL message: where it sits in its table's sequence, what it says, and (later) what was done."""

    db: str
    table: str
    seq: Decimal | None
    seq2: Decimal
    origin_file: str
    origin_line: int
    origin_index: int
    raw_op: str
    text: str | None
    statement: S.Statement | S.Unsupported
    status: str = ""
    detail: str = ""
    schema_version: int | None = None
    unsupported: bool = False  # skipped under the source's ddl_policy (not merely older than the schema)
    # its place after (seq, seq2) as a change's `_cdc_position` is written (lakeloader.apply.key_actions.position)
    order_position: str = ""

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def position(self) -> tuple:
        return (self.seq, self.seq2, self.origin_file, self.origin_line, self.origin_index)

    @property
    def point(self) -> E.Point:
        """Where the statement takes effect in the silver tables' total order (E.ORDERING_COLUMNS): a change of
        its (seq, seq2) sent before it is older than it, one sent after it newer."""
        return (self.seq, self.seq2, self.order_position)  # type: ignore[return-value]  # seq is set by then


def ddl_events(
    bronze: DataFrame,
    dialect: str,
    unqualified_schemas: Sequence[str] = (),
    unkeyed: bool = True,
    order_position: Column | None = None,
) -> list[DdlEvent]:
    """The batch's DDL messages, parsed, each attributed to the table its statement names (else the
    message's table), in sequence order; the statement's names read in the message's database
    (`in_message_database`). `unkeyed`: the format's DDL messages may lack their ordering key
    (`_placed_in_file`); `order_position`: a message's place after its (seq, seq2) as changes hold it
    (`DdlEvent.order_position`)."""
    place = (F.lit("") if order_position is None else order_position).alias("order_position")
    columns = ["db", "schema_name", "table", "seq", "seq2", "origin_file", "origin_line", "origin_index", "raw_op"]
    rows = bronze.where(F.col("kind") == C.DDL).select(*columns, "ddl", place).collect()
    placed = _placed_in_file(bronze, rows) if unkeyed else {}
    events = []
    for r in rows:
        parsed = _statement(r["ddl"], r["raw_op"], r["db"], r["table"], dialect)
        in_database = in_message_database(r["db"], r["schema_name"], unqualified_schemas)
        # a statement on several tables (DROP TABLE a, b) is one event per table, in the statement's order
        for statement in parsed.statements if isinstance(parsed, S.Statements) else (parsed,):
            event = _event(r, in_database(statement) if isinstance(statement, S.Statement) else statement)
            event.seq, event.seq2 = placed.get((event.origin_file, event.origin_line), (event.seq, event.seq2))
            events.append(event)
    return sorted(events, key=lambda e: (e.seq is None, e.position if e.seq is not None else ()))


_LARGEST_SEQ = Decimal(10**38 - 1)


def _placed_in_file(bronze: DataFrame, rows: list) -> dict[tuple[str, int], tuple[Decimal, Decimal]]:
    """The ordering key of each DDL message sent without one, from the data messages of its file around it.

    OMS sends a DDL message without `storeDataSequence`, DataWorks 2.0 with `"scn": "null"` and OMS's SharePlex with
    `"scn": "null"` (seed 002), while their data messages carry one: such a statement's key is 0 in that part, and it
    would sort before every change of its second (millisecond), or (SharePlex) before every change with a scn,
    wherever it was sent (a TRUNCATE sent after an INSERT kept the row, an ADD COLUMN ... DEFAULT missed it). Its
    place in the export says where it is (of its `seq` when only its `seq2` is 0):
    - after the data messages its file sent before it: the greatest of their keys, with `seq2` one more;
    - first in its file (often: the first message of an hour's export): the key of the first data message after
      it, whose export position (line, offset) then puts the statement before it and after every change with
      that key sent in an earlier file or hour;
    - first in its file with no change of its second after it there (alone in the file, or only later seconds
      follow), when only its `seq2` is missing: the last place of its second. The changes of its second sent
      after it would be in its file (an export file holds what its period sent), those sent before it are in
      earlier files or hours. (Changes of its second after it whose `seq2` is 0 too, DataWorks 2.0 without a
      scn, tie with it and their export position orders them: it keeps its key.)
    A file's data before it that are of no use (an earlier second) leave it first in its second. One small query,
    only for a batch holding such a message. A statement missing its `seq` (SharePlex) with no data in its file
    keeps its key."""
    unplaced = {
        (r["origin_file"], r["seq"], r["seq2"], r["origin_line"])
        for r in rows
        if r["seq"] is not None and (r["seq"] == 0 or r["seq2"] == 0)
    }
    if not unplaced:
        return {}
    statements = bronze.sparkSession.createDataFrame(
        sorted(unplaced), "ddl_file string, ddl_seq decimal(38,0), ddl_seq2 decimal(38,0), ddl_line bigint"
    )
    seq, seq2, ddl_seq = F.col("seq"), F.col("seq2"), F.col("ddl_seq")
    usable = ((ddl_seq == 0) & (seq > 0)) | ((F.col("ddl_seq2") == 0) & (seq == ddl_seq) & (seq2 > 0))
    before, after = F.col("origin_line") < F.col("ddl_line"), F.col("origin_line") > F.col("ddl_line")
    key = F.struct(seq.alias("seq"), seq2.alias("seq2"))
    found = (
        bronze.where(F.col("kind") == C.DATA)
        .join(F.broadcast(statements), F.col("origin_file") == F.col("ddl_file"))
        .groupBy("ddl_file", "ddl_line")
        .agg(
            F.max(F.when(before & usable, key)).alias("before"),
            F.max(before).alias("any_before"),
            F.min(F.when(after & usable, key)).alias("after"),
            F.max(after & (seq == ddl_seq)).alias("its_second_after"),
        )
        .collect()
    )
    around = {(r["ddl_file"], r["ddl_line"]): r for r in found}
    placed: dict[tuple[str, int], tuple[Decimal, Decimal]] = {}
    for name, first, second, line in unplaced:
        r = around.get((name, line))
        if r is not None and r["before"] is not None:
            placed[(name, line)] = (r["before"]["seq"], min(r["before"]["seq2"] + 1, _LARGEST_SEQ))
        elif r is not None and r["any_before"]:
            continue
        elif r is not None and r["after"] is not None:
            placed[(name, line)] = (r["after"]["seq"], r["after"]["seq2"])
        elif first > 0 and second == 0 and not (r is not None and r["its_second_after"]):
            placed[(name, line)] = (first, _LARGEST_SEQ)
    return placed


def in_message_database(
    db: str | None, schema: str | None, unqualified: Sequence[str]
) -> Callable[[S.Statement], S.Statement]:
    """How a DDL message's statement names tables, read in the message's database (`db`, as the parsers name it).

    - A message naming a schema other than its database (PostgreSQL, SQL Server, Oracle) is of table
      `<database>.<schema>.<table>` (`db` '<database>.<schema>'), or `<database>.<table>` for a schema in
      `unqualified` (the parsers' common.schema_qualified): its statement's `sales.orders` names schema `sales` of
      that database, qualified the same way.
    - A `db` of two parts without a schema is OMS's '<tenant>.<database>' (seed 002): SQL text names the database
      alone, so `shop.orders` in a message of `t1.shop` is `t1.shop.orders`.
    - Otherwise (MySQL) a qualifier names a database, as written.
    A name qualified by `db` itself (a TRUNCATE message without text) and an unqualified one are of `db`."""
    if db is None:
        return lambda statement: statement
    if schema and schema.lower() != db.lower():
        lowered = {name.lower() for name in unqualified}
        database = db if schema.lower() in lowered else db.removesuffix(f".{schema}")

        def named(qualifier: str) -> str:
            plain = qualifier.lower() == database.lower() or qualifier.lower() in lowered
            return qualifier if qualifier == db else database if plain else f"{database}.{qualifier}"

    elif "." in db:
        tenant = db.rsplit(".", 1)[0]

        def named(qualifier: str) -> str:
            return qualifier if qualifier == db else f"{tenant}.{qualifier}"

    else:
        return lambda statement: statement

    def qualified(name: S.TableName) -> S.TableName:
        return name if name.db is None else S.TableName(named(name.db), name.table)

    def operation(op: S.Operation) -> S.Operation:
        if isinstance(op, S.RenameTable):
            return replace(op, new=qualified(op.new))
        if isinstance(op, S.CreateTableLike):
            return replace(op, like=qualified(op.like))
        return op

    return lambda statement: S.Statement(
        None if statement.table is None else qualified(statement.table), tuple(map(operation, statement.operations))
    )


def _event(r, statement: S.Statement | S.Unsupported) -> DdlEvent:
    """The event of one statement of a DDL message row, attributed to the table the statement names (else
    the message's table)."""
    db, table = r["db"], r["table"]
    if isinstance(statement, S.Statement) and statement.table is not None:
        db, table = statement.table.db or db, statement.table.table
    if db is None or table is None:
        if isinstance(statement, S.Statement) and all(isinstance(op, S.NoOp) for op in statement.operations):
            db, table = db or "", table or ""  # a database-level no-op (CREATE DATABASE, GRANT, ...)
        else:
            statement = S.Unsupported("the statement names no table and the message has none")
            db, table = db or "", table or ""
    if r["seq"] is None and isinstance(statement, S.Statement):
        statement = S.Unsupported("DDL message without an ordering key")
    return DdlEvent(
        db,
        table,
        r["seq"],
        r["seq2"],
        r["origin_file"],
        r["origin_line"],
        r["origin_index"],
        r["raw_op"],
        r["ddl"],
        statement,
        order_position=r["order_position"],
    )


def _statement(text: str | None, raw_op: str | None, db: str | None, table: str | None, dialect: str) -> S.Parsed:
    if text and text.strip():
        return S.parse_ddl(text, dialect)
    if raw_op == C.TRUNCATE and table:
        return S.Statement(S.TableName(db, table), (S.TruncateTable(),))
    return S.Unsupported(f"{raw_op} message without DDL text")


HISTORY_KEY = ["db", "table", E.SEQ, E.SEQ2, "origin_file", "origin_line", "origin_index"]
HISTORY_SCHEMA = pa.schema(
    [
        ("db", pa.string()),
        ("table", pa.string()),
        (E.SEQ, pa.decimal128(38, 0)),
        (E.SEQ2, pa.decimal128(38, 0)),
        ("origin_file", pa.string()),
        ("origin_line", pa.int64()),
        ("origin_index", pa.int32()),
        ("raw_op", pa.string()),
        ("ddl", pa.string()),
        ("operations", pa.string()),
        ("status", pa.string()),
        ("detail", pa.string()),
        ("schema_version", pa.int64()),
        ("batch_hour", pa.string()),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
    ]
)


def record_history(
    engine: TableEngine, uri: str, events: list[DdlEvent], batch_hour: str, at: datetime, commit_info: dict
) -> None:
    """Add the batch's DDL messages to the schema history; a rerun adds nothing (keyed by position)."""
    if not events:
        return
    rows = [
        {
            "db": e.db,
            "table": e.table,
            E.SEQ: e.seq if e.seq is not None else Decimal(-1),
            E.SEQ2: e.seq2,
            "origin_file": e.origin_file,
            "origin_line": e.origin_line,
            "origin_index": e.origin_index,
            "raw_op": e.raw_op,
            "ddl": e.text,
            "operations": _describe(e.statement),
            "status": e.status,
            "detail": e.detail,
            "schema_version": e.schema_version,
            "batch_hour": batch_hour,
            "recorded_at": at,
        }
        for e in events
    ]
    table = pa.Table.from_pylist(rows, HISTORY_SCHEMA)
    if not engine.exists(uri):
        engine.create(uri, HISTORY_SCHEMA, {}, commit_info)
    else:  # a rerun adds nothing, whatever the merge's file pruning sees (the history is a small table)
        recorded = engine.read(uri).select(HISTORY_KEY).to_pylist()
        seen = {tuple(r[k] for k in HISTORY_KEY) for r in recorded}
        table = table.filter(pa.array([tuple(r[k] for k in HISTORY_KEY) not in seen for r in rows], pa.bool_()))
        if table.num_rows == 0:
            return
    changes = table.append_column(E.ACTION, pa.array([E.UPSERT] * table.num_rows))
    engine.merge(uri, changes, HISTORY_KEY, E.ORDERING_COLUMNS, commit_info)


def _describe(statement: S.Statement | S.Unsupported) -> str:
    if isinstance(statement, S.Unsupported):
        return f"unsupported: {statement.reason}"
    return "; ".join(repr(op) for op in statement.operations)
