"""DDL text -> schema operations, with a real SQL parser (sqlglot); the text is data, never executed.

A statement becomes a list of operations on named tables and columns; the table engine performs them
with quoted identifiers, so a hostile name or a second statement hidden in the text can do nothing
beyond its parsed meaning. What cannot be parsed, or parses to something we do not support, becomes
`Unsupported` with the reason, for the source's DDL policy to handle.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from lakeloader.ddl.types import spark_type

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its fallbacks are handled here, not warnings

DIALECTS = {"mysql": "mysql", "oceanbase": "mysql", "oracle": "oracle", "oceanbase_oracle": "oracle"}


@dataclass(frozen=True)
class Column:
    name: str
    spark_type: str
    default: str | None = None


@dataclass(frozen=True)
class TableName:
    db: str | None
    table: str


@dataclass(frozen=True)
class AddColumns:
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class DropColumns:
    names: tuple[str, ...]


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True)
class ChangeColumnType:
    """MODIFY / ALTER COLUMN ... TYPE, and MySQL CHANGE (a rename when `old` differs from the new name)."""

    name: str
    spark_type: str
    old: str | None = None


@dataclass(frozen=True)
class RenameTable:
    new: TableName


@dataclass(frozen=True)
class CreateTable:
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]


@dataclass(frozen=True)
class TruncateTable:
    pass


@dataclass(frozen=True)
class DropTable:
    pass


@dataclass(frozen=True)
class NoOp:
    """Index, constraint, partition, comment, view, trigger, procedure and database statements."""

    what: str


Operation = AddColumns | DropColumns | RenameColumn | ChangeColumnType | RenameTable | CreateTable | TruncateTable
Operation = Operation | DropTable | NoOp


@dataclass(frozen=True)
class Statement:
    """One parsed DDL statement: the table it names (if any) and its operations, in order."""

    table: TableName | None
    operations: tuple[Operation, ...]


@dataclass(frozen=True)
class Unsupported:
    reason: str
    operations: tuple = field(default=())


def parse_ddl(text: str, dialect: str = "mysql") -> Statement | Unsupported:
    """Parse one message's DDL text. Several statements in one text are refused, not split."""
    read = DIALECTS.get(dialect, dialect)
    try:
        parsed = [p for p in sqlglot.parse(text, read=read) if p is not None]
    except (ParseError, TokenError) as error:
        return Unsupported(f"cannot parse: {_first_line(error)}")
    if len(parsed) != 1:
        return Unsupported(f"expected one statement, found {len(parsed)}")
    tree = parsed[0]
    if isinstance(tree, exp.Command):
        return _command(tree, read)
    handler = _HANDLERS.get(type(tree))
    if handler is None:
        return Unsupported(f"unsupported statement {type(tree).__name__.upper()}")
    return handler(tree)


def _alter(tree: exp.Alter) -> Statement | Unsupported:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        return Statement(None, (NoOp(f"ALTER {tree.args.get('kind')}"),))
    operations: list[Operation] = []
    for action in tree.args.get("actions") or []:
        operation = _alter_action(action)
        if isinstance(operation, Unsupported):
            return operation
        operations.append(operation)
    return Statement(_table_name(tree.this), tuple(operations) or (NoOp("ALTER TABLE options"),))


def _alter_action(action: exp.Expression) -> Operation | Unsupported:
    if isinstance(action, exp.ColumnDef):
        return AddColumns((_column(action),))
    if isinstance(action, exp.Schema):  # Oracle ADD (c1 type, c2 type)
        return AddColumns(tuple(_column(c) for c in action.expressions if isinstance(c, exp.ColumnDef)))
    if isinstance(action, exp.Drop):
        kind = (action.args.get("kind") or "").upper()
        if kind == "COLUMN":
            return DropColumns(tuple(c.name for c in action.args.get("tables") or []))
        return NoOp(f"DROP {kind or 'constraint'}")
    if isinstance(action, exp.RenameColumn):
        return RenameColumn(action.this.name, action.args["to"].name)
    if isinstance(action, exp.ModifyColumn | exp.AlterColumn):
        return _modify(action)
    if isinstance(action, exp.AlterRename):
        return RenameTable(_table_name(action.this))
    if isinstance(action, exp.AddConstraint | exp.Constraint | exp.AlterSet | exp.Comment):
        return NoOp(type(action).__name__)
    return Unsupported(f"unsupported ALTER TABLE action {type(action).__name__}: {action.sql()[:80]}")


def _modify(action: exp.Expression) -> Operation | Unsupported:
    if isinstance(action, exp.AlterColumn):
        target = action.args.get("dtype")
        if target is None:  # SET DEFAULT, DROP NOT NULL, ...
            return NoOp("ALTER COLUMN attribute")
        return ChangeColumnType(action.name, spark_type(target))
    definition = action.this
    if not isinstance(definition, exp.ColumnDef) or definition.args.get("kind") is None:
        return Unsupported(f"cannot read the column definition in {action.sql()[:80]}")
    old = action.args.get("rename_from")
    return ChangeColumnType(definition.name, spark_type(definition.args["kind"]), old.name if old else None)


def _create(tree: exp.Create) -> Statement | Unsupported:
    kind = (tree.args.get("kind") or "").upper()
    if kind != "TABLE":
        return Statement(None, (NoOp(f"CREATE {kind}"),))
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        return Unsupported("CREATE TABLE without a column list (e.g. CREATE TABLE ... AS SELECT)")
    columns = tuple(_column(c) for c in schema.expressions if isinstance(c, exp.ColumnDef))
    key: list[str] = [
        c.name
        for c in schema.expressions
        if isinstance(c, exp.ColumnDef)
        and any(isinstance(k.args.get("kind"), exp.PrimaryKeyColumnConstraint) for k in c.args.get("constraints") or [])
    ]
    for constraint in schema.find_all(exp.PrimaryKey):
        key += [e.name for e in constraint.expressions]
    return Statement(_table_name(schema.this), (CreateTable(columns, tuple(key)),))


def _drop(tree: exp.Drop) -> Statement | Unsupported:
    kind = (tree.args.get("kind") or "").upper()
    if kind != "TABLE":
        return Statement(None, (NoOp(f"DROP {kind}"),))
    tables = tree.args.get("tables") or [tree.this]
    if len(tables) != 1:
        return Unsupported("DROP TABLE of several tables in one statement")
    return Statement(_table_name(tables[0]), (DropTable(),))


def _truncate(tree: exp.TruncateTable) -> Statement | Unsupported:
    tables = tree.expressions
    if len(tables) != 1:
        return Unsupported("TRUNCATE of several tables in one statement")
    return Statement(_table_name(tables[0]), (TruncateTable(),))


_RENAME_TABLE = re.compile(r"^\s*TABLE\s+(?P<old>\S+)\s+TO\s+(?P<new>\S+)\s*;?\s*$", re.IGNORECASE)
_ORACLE_MODIFY = re.compile(
    r"^\s*TABLE\s+(?P<table>\S+)\s+MODIFY\s*\((?P<columns>.*)\)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)


def _command(tree: exp.Command, read: str) -> Statement | Unsupported:
    """Statements sqlglot keeps as raw commands: MySQL RENAME TABLE and Oracle MODIFY (...)."""
    keyword = str(tree.this).upper()
    rest = tree.expression.name if isinstance(tree.expression, exp.Literal) else str(tree.expression or "")
    if keyword == "RENAME" and (match := _RENAME_TABLE.match(rest)):
        old, new = (_table_name(sqlglot.parse_one(match[n], read=read, into=exp.Table)) for n in ("old", "new"))
        return Statement(old, (RenameTable(new),))
    if keyword == "ALTER" and (match := _ORACLE_MODIFY.match(rest)):
        table = _table_name(sqlglot.parse_one(match["table"], read=read, into=exp.Table))
        changes = []
        for column in _split_top_level(match["columns"]):
            definition = sqlglot.parse_one(f"CREATE TABLE x ({column})", read=read).find(exp.ColumnDef)
            if definition is None or definition.args.get("kind") is None:
                return Unsupported(f"cannot read the column definition {column[:60]!r}")
            changes.append(ChangeColumnType(definition.name, spark_type(definition.args["kind"])))
        return Statement(table, tuple(changes))
    if keyword == "ALTER" and re.search(r"\b(PARTITION|PARTITIONS|INDEX|CONSTRAINT|COMMENT)\b", rest, re.I):
        return Statement(None, (NoOp("ALTER TABLE partition/index/constraint/comment"),))
    if keyword in {"GRANT", "REVOKE", "ANALYZE", "OPTIMIZE", "FLUSH", "COMMENT", "PURGE"}:
        return Statement(None, (NoOp(keyword),))
    return Unsupported(f"unsupported statement {keyword} {rest[:60]}".strip())


def _split_top_level(text: str) -> list[str]:
    """Split 'a NUMBER(10,2), b VARCHAR2(5)' on the commas outside parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _column(definition: exp.ColumnDef) -> Column:
    kind = definition.args.get("kind")
    default = None
    for constraint in definition.args.get("constraints") or []:
        if isinstance(constraint.args.get("kind"), exp.DefaultColumnConstraint):
            value = constraint.args["kind"].this
            default = value.name if isinstance(value, exp.Literal) else None
    return Column(definition.name, spark_type(kind) if kind is not None else "string", default)


def _table_name(table: exp.Expression) -> TableName:
    return TableName(table.args.get("db").name if table.args.get("db") else None, table.name)


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:160]


_NOOP_STATEMENTS = (exp.Use, exp.Comment, exp.Set, exp.Grant) if hasattr(exp, "Grant") else (exp.Use, exp.Comment)

_HANDLERS = {
    exp.Alter: _alter,
    exp.Create: _create,
    exp.Drop: _drop,
    exp.TruncateTable: _truncate,
    **{kind: (lambda tree: Statement(None, (NoOp(type(tree).__name__.upper()),))) for kind in _NOOP_STATEMENTS},
}
