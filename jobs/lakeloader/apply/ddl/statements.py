"""DDL text -> schema operations; the text is data, never executed.

A statement becomes a list of operations on named tables and columns; the table engine performs them
with quoted identifiers, so a hostile name or a second statement hidden in the text can do nothing
beyond its parsed meaning. What cannot be read, or reads as something we do not perform, becomes
`Unsupported` with the reason (naming the clause), for the source's DDL policy to handle.

The statement's structure (its kind, its table, an ALTER TABLE's clauses, a CREATE TABLE's elements) is
read from sqlglot's tokens of the source dialect, which handle quoting and comments; each column
definition is then parsed by sqlglot and typed by `lakeloader.apply.ddl.types`. Reading the structure from
tokens rather than from sqlglot's statement parser keeps every MySQL/Oracle/OceanBase clause in view:
sqlglot gives up on whole statements (a multi-clause ALTER with `ADD COLUMN (...)`, `DROP PARTITION`,
`CREATE INDEX ... USING BTREE`, partitioned tables, trigger bodies) that we must still classify clause by
clause.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import pairwise

import sqlglot
from sqlglot import exp
from sqlglot.dialects import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from lakeloader.apply.ddl.types import spark_type

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its fallbacks are handled here, not warnings

DIALECTS = {"mysql": "mysql", "oceanbase": "mysql", "oracle": "oracle", "oceanbase_oracle": "oracle"}


@dataclass(frozen=True)
class Column:
    """A column a statement declares. `default`: the value existing rows get when ALTER TABLE adds it (see
    `_Reader.existing_rows_default`; None: NULL or unknown)."""

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

    @property
    def renamed_from(self) -> str | None:
        """The column's old name when it renames the column too (MySQL CHANGE with another name), else None."""
        return self.old if self.old != self.name else None


@dataclass(frozen=True)
class RenameTable:
    new: TableName


@dataclass(frozen=True)
class CreateTable:
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    # IF NOT EXISTS: the source may have kept a table of other columns, so the statement declares nothing sure
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateTableLike:
    """CREATE TABLE t LIKE s: an empty table with the columns and key of `s`."""

    like: TableName


@dataclass(frozen=True)
class TruncateTable:
    pass


@dataclass(frozen=True)
class DropTable:
    pass


@dataclass(frozen=True)
class NoOp:
    """Index, constraint, partition, comment, view, trigger, procedure, temporary-table, option and database
    statements and clauses: recorded, nothing to do in silver."""

    what: str


Operation = (
    AddColumns
    | DropColumns
    | RenameColumn
    | ChangeColumnType
    | RenameTable
    | CreateTable
    | TruncateTable
    | CreateTableLike
    | DropTable
    | NoOp
)


@dataclass(frozen=True)
class Statement:
    """One parsed DDL statement: the table it names (if any) and its operations, in order."""

    table: TableName | None
    operations: tuple[Operation, ...]


@dataclass(frozen=True)
class Statements:
    """A statement acting on several tables (`DROP TABLE a, b`, `RENAME TABLE a TO b, c TO d`): one
    `Statement` per table, performed in this order at the statement's place in the sequence."""

    statements: tuple[Statement, ...]


@dataclass(frozen=True)
class Unsupported:
    reason: str
    operations: tuple = field(default=())


Parsed = Statement | Statements | Unsupported


def columns_ignore_case(dialect: str) -> bool:
    """Whether the dialect's column names are case-insensitive (MySQL, OceanBase's MySQL mode): `MODIFY VAL BIGINT`
    changes the table's column `Val` (`spelled_as`)."""
    return DIALECTS.get(dialect, dialect) == "mysql"


def spelled_as(operations: Sequence[Operation], columns: Sequence[str]) -> tuple[Operation, ...]:
    """The operations naming each column of the table (`columns`, as the operations before leave them) the way the
    table spells it, where a name equals it ignoring case (for `columns_ignore_case` dialects, whose tables keep one
    column per such name): `DROP COLUMN qty` drops `Qty`. The name a rename or CHANGE gives stays as written, so
    `RENAME COLUMN abc TO Abc` renames `abc`."""
    spelled = {name.lower(): name for name in columns}

    def table_spelling(name: str) -> str:
        return spelled.get(name.lower(), name)

    def renamed(old: str, new: str) -> None:
        if spelled.pop(old.lower(), None) is not None:
            spelled[new.lower()] = new

    resolved: list[Operation] = []
    for op in operations:
        if isinstance(op, AddColumns):
            op = AddColumns(tuple(replace(c, name=table_spelling(c.name)) for c in op.columns))
            spelled.update({c.name.lower(): c.name for c in op.columns})
        elif isinstance(op, DropColumns):
            op = DropColumns(tuple(map(table_spelling, op.names)))
            for name in op.names:
                spelled.pop(name.lower(), None)
        elif isinstance(op, RenameColumn):
            op = RenameColumn(table_spelling(op.old), op.new)
            renamed(op.old, op.new)
        elif isinstance(op, ChangeColumnType) and op.old is not None:
            old = table_spelling(op.old)
            op = replace(op, old=old)
            renamed(old, op.name)
        elif isinstance(op, ChangeColumnType):
            op = replace(op, name=table_spelling(op.name))
        resolved.append(op)
    return tuple(resolved)


# MySQL's (and MariaDB's /*M!) versioned comment: the server executes the text inside (a dump's
# `/*!50100 PARTITION BY ... */`, `ALTER TABLE t /*!50100 ADD COLUMN c INT */`); the sources' servers are newer
_VERSIONED_COMMENT = re.compile(r"/\*M?!(?:[0-9]{5,6})?(.*?)\*/", re.DOTALL)


def parse_ddl(text: str, dialect: str = "mysql") -> Parsed:
    """Parse one message's DDL text. Several statements in one text are refused, not split (a routine or
    trigger definition, whose body holds semicolons, is one statement and a no-op)."""
    read = DIALECTS.get(dialect, dialect)
    if read == "mysql":
        text = _VERSIONED_COMMENT.sub(r"\1", text)
    try:
        tokens = _single_words(_tokenizer(read).tokenize(text), text)
    except (TokenError, ValueError) as error:
        return Unsupported(f"cannot parse: {_first_line(error)}")
    if not tokens:
        return Unsupported("empty statement")
    if _word(tokens, 0) == "CREATE" and _object_kind(tokens)[0] in _ROUTINES:
        return _noop(f"CREATE {_object_kind(tokens)[0]} (its body is not executed)")
    if _word(tokens, 0) in ("BEGIN", "DECLARE", "CALL", "EXEC", "EXECUTE"):
        return Unsupported("a PL/SQL block or procedure call, not a DDL statement")
    parts = _split(tokens, TokenType.SEMICOLON)
    if len(parts) != 1:
        return Unsupported(f"expected one statement, found {len(parts)}")
    try:
        return _Reader(text, read).statement(parts[0])
    except RecursionError:  # sqlglot's parser recurses once per nested parenthesis
        return Unsupported("cannot parse: the statement nests too deeply")
    except Exception as error:  # hostile text must reach the DDL policy, not fail the hour's apply
        return Unsupported(f"cannot parse: {type(error).__name__}: {_first_line(error)}")


# ------------------------------------------------------------------------------------------------ tokens


@cache
def _tokenizer(read: str) -> Tokenizer:
    """The dialect's tokenizer, without its 'commands' (RENAME, SHOW, ...), whose rest it keeps as one string."""
    dialect = Dialect.get_or_raise(read)
    plain = type("PlainTokenizer", (dialect.tokenizer_class,), {"COMMANDS": set()})
    return plain(dialect=dialect)


def _single_words(tokens: list[Token], text: str) -> list[Token]:
    """Multi-word keyword tokens (PRIMARY KEY, PARTITION BY, ...) as one token per word."""
    words: list[Token] = []
    for token in tokens:
        if token.token_type in _NAME_TYPES or " " not in token.text.strip():
            words.append(token)
            continue
        for match in re.finditer(r"\S+", text[token.start : token.end + 1]):
            start = token.start + match.start()
            words.append(
                Token(TokenType.VAR, match.group(), token.line, token.col, start, start + len(match.group()) - 1)
            )
    return words


_NAME_TYPES = {TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER, TokenType.PARAMETER}


def _word(tokens: Sequence[Token], i: int) -> str | None:
    """The keyword at position i (upper case), None for a quoted identifier, a string or past the end."""
    if i >= len(tokens) or tokens[i].token_type in _NAME_TYPES:
        return None
    return tokens[i].text.upper()


def _words(tokens: Sequence[Token]) -> list[str | None]:
    return [_word(tokens, i) for i in range(len(tokens))]


def _split(tokens: Sequence[Token], separator: TokenType) -> list[list[Token]]:
    """Tokens split at `separator` outside parentheses; empty parts are left out."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        depth += token.token_type == TokenType.L_PAREN
        depth -= token.token_type == TokenType.R_PAREN
        if token.token_type == separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


def _group(tokens: Sequence[Token], start: int) -> tuple[list[Token], int]:
    """The tokens inside the parenthesis opening at `start`, and the position after its closing one."""
    depth = 0
    for i in range(start, len(tokens)):
        depth += tokens[i].token_type == TokenType.L_PAREN
        depth -= tokens[i].token_type == TokenType.R_PAREN
        if depth == 0:
            return list(tokens[start + 1 : i]), i + 1
    return list(tokens[start + 1 :]), len(tokens)


def _is_paren(tokens: Sequence[Token], i: int) -> bool:
    return i < len(tokens) and tokens[i].token_type == TokenType.L_PAREN


def _object_kind(tokens: Sequence[Token]) -> tuple[str | None, int]:
    """The kind of object a CREATE/ALTER/DROP names (TABLE, VIEW, ...) and its position: the first kind
    keyword before any parenthesis, skipping modifiers (OR REPLACE, DEFINER=..., ALGORITHM=..., UNIQUE,
    TEMPORARY, ...)."""
    for i in range(1, len(tokens)):
        if tokens[i].token_type == TokenType.L_PAREN:
            break
        if (word := _word(tokens, i)) in _OBJECTS:
            return word, i
    return None, 0


def _clauses(tokens: Sequence[Token]) -> list[list[Token]]:
    """An ALTER TABLE's clauses: split at commas, except those inside a partition clause's list of names
    (`DROP PARTITION p1, p2`, `MERGE PARTITIONS p1, p2 INTO ...`)."""
    clauses: list[list[Token]] = []
    for part in _split(tokens, TokenType.COMMA):
        previous = _words(clauses[-1][:2]) if clauses else []
        in_partitions = any(word in _PARTITIONS for word in previous)
        if in_partitions and _word(part, 0) not in _CLAUSE_WORDS:
            clauses[-1] += part
        else:
            clauses.append(part)
    return clauses


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:160] if str(error) else type(error).__name__


def _noop(what: str, table: TableName | None = None) -> Statement:
    return Statement(table, (NoOp(what),))


_ROUTINES = {"TRIGGER", "PROCEDURE", "FUNCTION", "EVENT", "PACKAGE", "TYPE", "LIBRARY", "JAVA"}
# Objects whose CREATE/ALTER/DROP leaves every silver table as it is (routines' bodies are not executed).
_NOOP_OBJECTS = _ROUTINES | {
    "VIEW",
    "MATERIALIZED",
    "INDEX",
    "SEQUENCE",
    "SYNONYM",
    "USER",
    "ROLE",
    "TABLESPACE",
    "DIRECTORY",
    "SERVER",
    "LOGFILE",
    "TABLEGROUP",
    "OUTLINE",
    "CONTEXT",
    "PROFILE",
    "RESOURCE",
    "SESSION",
    "SYSTEM",
    "INSTANCE",
    "AUDIT",
    "DIMENSION",
    "CLUSTER",
    "OPERATOR",
    "INDEXTYPE",
    "EDITION",
    "TENANT",
    "SPATIAL",
}
_OBJECTS = _NOOP_OBJECTS | {"TABLE", "DATABASE", "SCHEMA"}
# Statements that only touch privileges, statistics, caches, comments or the session.
_NOOP_STATEMENTS = {
    "GRANT",
    "REVOKE",
    "ANALYZE",
    "OPTIMIZE",
    "FLUSH",
    "PURGE",
    "SET",
    "USE",
    "COMMENT",
    "AUDIT",
    "NOAUDIT",
    "CHECK",
    "CHECKSUM",
    "REPAIR",
    "INSTALL",
    "UNINSTALL",
    "ASSOCIATE",
    "DISASSOCIATE",
    "LOCK",
    "UNLOCK",
}
# words of clauses that cannot name a column unquoted, reserved in the dialect (so `INDEX date (a)` is an index);
# the others (PERIOD, Oracle's KEY, ...) name one when a type follows (`_Reader.defines_column`)
_RESERVED = {
    "mysql": {"INDEX", "KEY", "PRIMARY", "UNIQUE", "CONSTRAINT", "CHECK", "FOREIGN", "FULLTEXT", "SPATIAL", "DEFAULT"},
    "oracle": {"INDEX", "UNIQUE", "CHECK", "DEFAULT"},
}
_INDEXES = {"INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "PRIMARY", "FOREIGN", "CONSTRAINT", "CHECK", "BITMAP"}
_PARTITIONS = {"PARTITION", "PARTITIONS", "SUBPARTITION", "SUBPARTITIONS", "PARTITIONING"}
# Leading words of ALTER TABLE clauses that act on a partition (`<word> PARTITION ...`).
_PARTITION_ACTIONS = {
    "ANALYZE",
    "CHECK",
    "OPTIMIZE",
    "REBUILD",
    "REPAIR",
    "TRUNCATE",
    "COALESCE",
    "REORGANIZE",
    "EXCHANGE",
    "DISCARD",
    "IMPORT",
    "SPLIT",
    "MERGE",
    "MOVE",
    "REMOVE",
    "MODIFY",
    "RENAME",
    "ADD",
    "DROP",
    "SET",
}
# Leading words of ALTER TABLE clauses that set table options or storage attributes (MySQL, Oracle,
# OceanBase); any `<word> = <value>` clause is one as well.
_TABLE_OPTIONS = {
    "ENGINE",
    "AUTO_INCREMENT",
    "AVG_ROW_LENGTH",
    "DEFAULT",
    "CHARACTER",
    "CHARSET",
    "COLLATE",
    "CHECKSUM",
    "COMMENT",
    "COMPRESSION",
    "CONNECTION",
    "DATA",
    "DELAY_KEY_WRITE",
    "ENCRYPTION",
    "INSERT_METHOD",
    "KEY_BLOCK_SIZE",
    "MAX_ROWS",
    "MIN_ROWS",
    "PACK_KEYS",
    "ROW_FORMAT",
    "STATS_AUTO_RECALC",
    "STATS_PERSISTENT",
    "STATS_SAMPLE_PAGES",
    "TABLESPACE",
    "UNION",
    "ALGORITHM",
    "LOCK",
    "CONVERT",
    "ORDER",
    "FORCE",
    "ENABLE",
    "DISABLE",
    "WITH",
    "WITHOUT",
    "DISCARD",
    "IMPORT",
    "AUTOEXTEND_SIZE",
    "SECONDARY_ENGINE",
    "SECONDARY_LOAD",
    "SECONDARY_UNLOAD",
    "PARALLEL",
    "NOPARALLEL",
    "LOGGING",
    "NOLOGGING",
    "COMPRESS",
    "NOCOMPRESS",
    "CACHE",
    "NOCACHE",
    "MOVE",
    "SHRINK",
    "READ",
    "PCTFREE",
    "PCTUSED",
    "INITRANS",
    "MAXTRANS",
    "STORAGE",
    "MONITORING",
    "NOMONITORING",
    "ROW",
    "INMEMORY",
    "NO",
    "ILM",
    "UPGRADE",
    "ALLOCATE",
    "DEALLOCATE",
    "RESULT_CACHE",
    "REPLICA_NUM",
    "PRIMARY_ZONE",
    "TABLEGROUP",
    "BLOCK_SIZE",
    "PROGRESSIVE_MERGE_NUM",
    "USE_BLOOM_FILTER",
    "LOCALITY",
    "TABLET_SIZE",
    "DUPLICATE_SCOPE",
    "TTL",
    "KV_ATTRIBUTES",
}
# Words that begin an ALTER TABLE clause.
_CLAUSE_WORDS = {"ADD", "DROP", "MODIFY", "CHANGE", "RENAME", "ALTER", "SET"} | _PARTITION_ACTIONS | _TABLE_OPTIONS

# Words after which a column definition's type ends (its attributes follow).
_ATTRIBUTES = {
    "NOT",
    "NULL",
    "DEFAULT",
    "COMMENT",
    "AUTO_INCREMENT",
    "GENERATED",
    "AS",
    "PRIMARY",
    "UNIQUE",
    "KEY",
    "CHECK",
    "REFERENCES",
    "COLLATE",
    "CHARACTER",
    "CHARSET",
    "ON",
    "VISIBLE",
    "INVISIBLE",
    "CONSTRAINT",
    "ENCRYPT",
    "SRID",
    "STORAGE",
    "COLUMN_FORMAT",
    "ENGINE_ATTRIBUTE",
    "SECONDARY_ENGINE_ATTRIBUTE",
    "FIRST",
    "AFTER",
}


# ------------------------------------------------------------------------------------------------ statements


def _constant(value: exp.Expression) -> str | None:
    """The text of a constant DEFAULT (`-5`, `'x'`, TRUE as 1); None for NULL and for anything computed."""
    if isinstance(value, exp.Paren):
        return _constant(value.this)
    if isinstance(value, exp.Introducer):  # MySQL's character set introducer: _utf8mb4'x' is 'x'
        return _constant(value.expression)
    if isinstance(value, exp.Literal):
        return value.name
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal) and not value.this.is_string:
        return "-" + value.this.name
    if isinstance(value, exp.Boolean):
        return "1" if value.this else "0"
    return None


# the name a column has between the two steps of a statement's renames (`_renamed_at_once`)
_RENAMING = "__lakeloader_renaming_{}"


def _renamed_at_once(operations: list[Operation]) -> list[Operation]:
    """A statement's column renames as MySQL performs them: at once, each naming a column as the table had it
    before the statement, so `RENAME COLUMN a TO b, RENAME COLUMN b TO a` swaps two columns and `a TO b, b TO c`
    shifts them. Performed one by one, a rename onto a name another one frees would take that column for one a
    newer change added (the two are merged); so when one does, every rename of the statement first gives its
    column a temporary name, then its own (MySQL CHANGE keeps its type change in the second step)."""
    renames = {
        i: op
        for i, op in enumerate(operations)
        if isinstance(op, RenameColumn) or (isinstance(op, ChangeColumnType) and op.renamed_from is not None)
    }
    old = {i: (op.old if isinstance(op, RenameColumn) else op.renamed_from) or "" for i, op in renames.items()}
    new = {i: op.new if isinstance(op, RenameColumn) else op.name for i, op in renames.items()}
    # onto the name another column had (not the same column renamed again, as in a change of case)
    if not any(new[i].lower() == old[j].lower() != old[i].lower() for i in renames for j in renames):
        return operations
    temporary = {i: _RENAMING.format(n) for n, i in enumerate(renames)}
    first = [RenameColumn(old[i], temporary[i]) for i in renames]
    second = [
        RenameColumn(temporary[i], new[i]) if isinstance(op, RenameColumn) else replace(op, old=temporary[i])
        for i, op in renames.items()
    ]
    at = min(renames)
    others = [op for i, op in enumerate(operations) if i not in renames]
    return [*others[:at], *first, *second, *others[at:]]


class _Reader:
    """Reads one statement's tokens (positions into `text`) in dialect `read`."""

    def __init__(self, text: str, read: str) -> None:
        self.text, self.read = text, read

    def identifier(self, token: Token) -> str:
        """A table, schema or column name as the source keeps it: Oracle (and OceanBase's Oracle mode) folds an
        unquoted identifier to upper case (`s.t` names `S.T`); a quoted one, and every MySQL one, is as written."""
        return token.text.upper() if self.read == "oracle" and token.token_type != TokenType.IDENTIFIER else token.text

    def source(self, tokens: Sequence[Token]) -> str:
        return self.text[tokens[0].start : tokens[-1].end + 1] if tokens else ""

    def statement(self, tokens: list[Token]) -> Parsed:
        first = _word(tokens, 0)
        if first == "CREATE":
            return self.create(tokens)
        if first == "DROP":
            return self.drop(tokens)
        if first == "ALTER":
            return self.alter(tokens)
        if first == "RENAME":
            return self.rename(tokens)
        if first == "TRUNCATE":
            return self.truncate(tokens)
        if first == "FLASHBACK":
            return Unsupported("FLASHBACK restores a table or its earlier rows, which the change stream does not carry")
        if first in _NOOP_STATEMENTS:
            return _noop(first)
        return Unsupported(f"unsupported statement {self.source(tokens)[:60]}")

    def name(self, tokens: Sequence[Token], i: int) -> tuple[TableName | None, int]:
        """A possibly qualified table name at i (`db.t`, `"S"."T"`), and the position after it."""
        parts: list[str] = []
        while i < len(tokens) and tokens[i].token_type not in (TokenType.L_PAREN, TokenType.COMMA):
            parts.append(self.identifier(tokens[i]))
            i += 1
            if i < len(tokens) and tokens[i].token_type == TokenType.DOT:
                i += 1
            else:
                break
        if not parts:
            return None, i
        return TableName(parts[-2] if len(parts) > 1 else None, parts[-1]), i

    def skip_if_exists(self, tokens: Sequence[Token], i: int) -> int:
        words = _words(tokens[i : i + 3])
        if words[:2] == ["IF", "EXISTS"]:
            return i + 2
        if words == ["IF", "NOT", "EXISTS"]:
            return i + 3
        return i

    # CREATE ...

    def create(self, tokens: list[Token]) -> Parsed:
        kind, at = _object_kind(tokens)
        if kind is None:
            return Unsupported(f"unsupported statement {self.source(tokens)[:60]}")
        if kind != "TABLE":
            return _noop(f"CREATE {kind}")
        if "TEMPORARY" in _words(tokens[1:at]):
            return _noop("CREATE TEMPORARY TABLE (session-local)")
        named_at = self.skip_if_exists(tokens, at + 1)
        table, i = self.name(tokens, named_at)
        if table is None:
            return Unsupported("CREATE TABLE without a table name")
        if _word(tokens, i) == "LIKE":
            like, _ = self.name(tokens, i + 1)
            return Statement(table, (CreateTableLike(like),)) if like else Unsupported("CREATE TABLE ... LIKE")
        if not _is_paren(tokens, i):
            return Unsupported("CREATE TABLE without a column list (e.g. CREATE TABLE ... AS SELECT)")
        elements, after = _group(tokens, i)
        if _word(elements, 0) == "LIKE":
            like, _ = self.name(elements, 1)
            return Statement(table, (CreateTableLike(like),)) if like else Unsupported("CREATE TABLE (LIKE ...)")
        if "SELECT" in _words(tokens[after:]):
            return Unsupported("CREATE TABLE ... AS SELECT: the columns and rows come from a query")
        columns: list[Column] = []
        key: list[str] = []
        for element in _split(elements, TokenType.COMMA):
            words = _words(element)
            if (words[0] in _INDEXES or words[0] == "PERIOD") and not self.defines_column(element):
                if "PRIMARY" in words and (at_key := words.index("PRIMARY")) + 1 < len(words):
                    key += self.key_columns(element, at_key + 2)
                continue
            column = self.column(element)
            if isinstance(column, Unsupported):
                return column
            if column is None:
                return Unsupported(f"CREATE TABLE column {self.source(element)[:60]!r} has no type")
            columns.append(column)
            if any(a == "PRIMARY" and b == "KEY" for a, b in pairwise(words)):
                key.append(column.name)
        if not columns:
            return Unsupported("CREATE TABLE without columns")
        return Statement(table, (CreateTable(tuple(columns), tuple(dict.fromkeys(key)), named_at > at + 1),))

    def key_columns(self, tokens: Sequence[Token], i: int) -> list[str]:
        """The column names of `(a, b(10) DESC, ...)` at or after i (skipping USING BTREE and the like)."""
        while i < len(tokens) and not _is_paren(tokens, i):
            i += 1
        inner, _ = _group(tokens, i) if i < len(tokens) else ([], i)
        return [self.identifier(part[0]) for part in _split(inner, TokenType.COMMA)]

    def column(self, tokens: Sequence[Token]) -> Column | Unsupported | None:
        """A column definition (`name type attributes...`); None when it declares no type (Oracle
        `MODIFY (c NOT NULL)`, `c DEFAULT 0`)."""
        tokens = list(tokens)
        words = _words(tokens)
        if words[-1:] == ["FIRST"]:  # positions are not reproduced: new columns go last
            tokens = tokens[:-1]
        elif len(words) > 2 and words[-2] == "AFTER":
            tokens = tokens[:-2]
        if len(tokens) < 2 or _word(tokens, 1) in _ATTRIBUTES:
            return None if tokens else Unsupported("empty column definition")
        opened = sum(t.token_type == TokenType.L_PAREN for t in tokens)
        if opened != sum(t.token_type == TokenType.R_PAREN for t in tokens):
            return Unsupported(f"unbalanced parentheses in the column definition {self.source(tokens)[:60]!r}")
        type_end = next((i for i in range(2, len(tokens)) if _word(tokens, i) in _ATTRIBUTES), len(tokens))
        type_text = self.source(tokens[1:type_end])
        definition = self.column_def(self.source(tokens)) or self.column_def(
            self.source(tokens[:type_end]) + self.null_and_default(tokens[type_end:])
        )
        if definition is None:  # sqlglot does not know the type's words either: read the type alone
            try:
                built = exp.DataType.build(type_text, dialect=self.read, udt=True)
            except (ParseError, TokenError, ValueError):
                return Unsupported(f"cannot read the column definition {self.source(tokens)[:60]!r}")
            return Column(self.identifier(tokens[0]), spark_type(built, self.read, type_text))
        kind = definition.args.get("kind")
        if kind is None or kind.this == exp.DataType.Type.NULL:
            return None
        name = self.identifier(tokens[0])
        return Column(name, spark_type(kind, self.read, type_text), self.existing_rows_default(definition))

    def defines_column(self, tokens: Sequence[Token]) -> bool:
        """Whether `tokens` define a column (`name type ...`) whose name is a word that also begins other clauses
        (`period INT`, `lob BIGINT`, Oracle `key VARCHAR2(10)`, none reserved): a type follows it."""
        type_end = next((i for i in range(2, len(tokens)) if _word(tokens, i) in _ATTRIBUTES), len(tokens))
        if len(tokens) < 2 or _is_paren(tokens, 1) or _word(tokens, 0) in _RESERVED.get(self.read, ()):
            return False
        try:
            exp.DataType.build(self.source(tokens[1:type_end]), dialect=self.read)
        except (ParseError, TokenError, ValueError):
            return False
        return True

    def null_and_default(self, attributes: Sequence[Token]) -> str:
        """A column's NOT NULL and DEFAULT <value> as written, without its other attributes (those sqlglot cannot
        read: MySQL's VISIBLE or COLUMN_FORMAT, Oracle's ENABLE or a named CHECK constraint)."""
        kept = []
        for i in range(len(attributes)):
            if _word(attributes, i) == "NOT" and _word(attributes, i + 1) == "NULL":
                kept.append("NOT NULL")
            elif _word(attributes, i) == "DEFAULT" and i + 1 < len(attributes):
                start = i + 1
                signed = attributes[start].token_type in (TokenType.DASH, TokenType.PLUS, TokenType.INTRODUCER)
                end = start + 1 + signed  # 5, -5, _utf8mb4'x'
                if _is_paren(attributes, start) or _is_paren(attributes, end):  # (expression), NOW(6)
                    end = _group(attributes, start if _is_paren(attributes, start) else end)[1]
                kept.append(f"DEFAULT {self.source(attributes[start:end])}")
        return "".join(f" {clause}" for clause in kept)

    def existing_rows_default(self, definition: exp.ColumnDef) -> str | None:
        """The value a column added by ALTER TABLE gives the table's existing rows, as the statement writes it: a
        constant DEFAULT (a number, a string, TRUE/FALSE as 1/0); in MySQL, a NOT NULL number or character column
        without one takes its type's implicit default (0, ''). None: the rows read NULL, or a value this loader
        cannot know (CURRENT_TIMESTAMP, an expression, AUTO_INCREMENT's numbering, a generated column)."""
        kinds = {type(c.args.get("kind")): c.args["kind"] for c in definition.args.get("constraints") or []}
        if exp.AutoIncrementColumnConstraint in kinds or exp.ComputedColumnConstraint in kinds:
            return None
        if exp.DefaultColumnConstraint in kinds:
            return _constant(kinds[exp.DefaultColumnConstraint].this)
        null = kinds.get(exp.NotNullColumnConstraint)
        if self.read != "mysql" or null is None or null.args.get("allow_null"):  # NULL allowed: it reads NULL
            return None
        kind = definition.args["kind"]
        if kind.is_type(*exp.DataType.NUMERIC_TYPES, exp.DataType.Type.BOOLEAN):
            return "0"
        return "" if kind.is_type(*exp.DataType.TEXT_TYPES) else None

    def column_def(self, text: str) -> exp.ColumnDef | None:
        try:
            parsed = sqlglot.parse_one(f"CREATE TABLE x ({text})", read=self.read)
        except (ParseError, TokenError):
            return None
        definitions = list(parsed.find_all(exp.ColumnDef)) if parsed is not None else []
        return definitions[0] if len(definitions) == 1 else None

    # DROP ...

    def drop(self, tokens: list[Token]) -> Parsed:
        kind, at = _object_kind(tokens)
        words = _words(tokens)
        if kind in ("DATABASE", "SCHEMA"):
            return Unsupported(f"DROP {kind} drops every table of the {kind.lower()}: not performed")
        if kind == "USER" and "CASCADE" in words:
            return Unsupported("DROP USER ... CASCADE drops the user's tables: not performed")
        if kind is None:
            return Unsupported(f"unsupported statement {self.source(tokens)[:60]}")
        if kind != "TABLE":
            return _noop(f"DROP {kind}")
        if "TEMPORARY" in words[1:at]:
            return _noop("DROP TEMPORARY TABLE (session-local)")
        names = _split(tokens[self.skip_if_exists(tokens, at + 1) :], TokenType.COMMA)
        tables = []
        for part in names:
            table, _ = self.name(part, 0)  # trailing CASCADE [CONSTRAINTS] / PURGE / RESTRICT are ignored
            if table is None:
                return Unsupported(f"DROP TABLE without a table name: {self.source(tokens)[:60]}")
            tables.append(Statement(table, (DropTable(),)))
        return tables[0] if len(tables) == 1 else Statements(tuple(dict.fromkeys(tables)))

    # RENAME / TRUNCATE

    def rename(self, tokens: list[Token]) -> Parsed:
        """MySQL `RENAME TABLE a TO b[, c TO d]`, Oracle `RENAME a TO b`; RENAME USER is a no-op."""
        start = 1
        if _word(tokens, 1) == "USER":
            return _noop("RENAME USER")
        if _word(tokens, 1) in ("TABLE", "TABLES"):
            start = 2
        statements = []
        for part in _split(tokens[start:], TokenType.COMMA):
            old, i = self.name(part, 0)
            new, end = self.name(part, i + 1) if _word(part, i) == "TO" else (None, i)
            if old is None or new is None or end != len(part):
                return Unsupported(f"cannot read RENAME {self.source(part)[:60]!r}")
            statements.append(Statement(old, (RenameTable(new),)))
        if len(statements) == 1:
            return statements[0]
        olds = [s.table for s in statements]
        news = [op.new for s in statements for op in s.operations]  # type: ignore[union-attr]  # RenameTable only
        if len({*olds, *news}) != len(olds) + len(news):
            return Unsupported("RENAME TABLE that uses a name twice (a swap or chain of names): not performed")
        return Statements(tuple(statements))

    def truncate(self, tokens: list[Token]) -> Parsed:
        start = 2 if _word(tokens, 1) == "TABLE" else 1
        if _word(tokens, 1) == "CLUSTER":
            return Unsupported("TRUNCATE CLUSTER empties tables we cannot name")
        parts = _split(tokens[start:], TokenType.COMMA)
        if len(parts) != 1:
            return Unsupported("TRUNCATE of several tables in one statement")
        table, _ = self.name(parts[0], 0)  # Oracle DROP/REUSE STORAGE etc. follow
        return Statement(table, (TruncateTable(),)) if table else Unsupported("TRUNCATE without a table name")

    # ALTER ...

    def alter(self, tokens: list[Token]) -> Parsed:
        kind, at = _object_kind(tokens)
        if kind is None:
            return Unsupported(f"unsupported statement {self.source(tokens)[:60]}")
        if kind != "TABLE":
            return _noop(f"ALTER {kind}")
        table, i = self.name(tokens, at + 1)
        if table is None:
            return Unsupported("ALTER TABLE without a table name")
        operations: list[Operation] = []
        for clause in _clauses(tokens[i:]):
            performed = self.clause(clause)
            if isinstance(performed, Unsupported):
                return Unsupported(f"ALTER TABLE clause {self.source(clause)[:80]!r}: {performed.reason}")
            operations += performed
        return Statement(table, tuple(_renamed_at_once(operations)) or (NoOp("ALTER TABLE without clauses"),))

    def clause(self, tokens: list[Token]) -> list[Operation] | Unsupported:
        """One ALTER TABLE clause -> its operations."""
        words = _words(tokens)
        first, second = words[0], words[1] if len(words) > 1 else None
        if first == "ADD":
            return self.add(tokens[1:])
        if first == "DROP":
            return self.drop_clause(tokens[1:])
        if first == "MODIFY":
            return self.modify(tokens[1:])
        if first == "CHANGE":
            rest = tokens[2:] if second == "COLUMN" else tokens[1:]
            rest = rest[self.skip_if_exists(rest, 0) :]
            column = self.column(rest[1:]) if len(rest) > 1 else None
            if not isinstance(column, Column):
                return column or Unsupported("CHANGE without a column type")
            return [ChangeColumnType(column.name, column.spark_type, self.identifier(rest[0]))]
        if first == "RENAME":
            return self.rename_clause(tokens[1:])
        if first == "ALTER":
            return self.alter_column(tokens[1:])
        if first == "SET" and second == "UNUSED":  # Oracle: the column is gone for every reader
            rest = tokens[3:] if _word(tokens, 2) == "COLUMN" else tokens[2:]
            names = self.names(rest)
            return [DropColumns(tuple(names))] if names else Unsupported("SET UNUSED without columns")
        if first == "SET":  # Oracle SET INTERVAL / SUBPARTITION TEMPLATE, OceanBase SET <table option>
            return [NoOp(f"SET {second or ''}".strip())]
        if first in _PARTITIONS:  # PARTITION BY ..., PARTITIONS n
            return [NoOp("partitioning")]
        if first in _PARTITION_ACTIONS and second in _PARTITIONS:
            return [NoOp(f"{first} {second} (its rows are not changed in silver)")]
        if first in _TABLE_OPTIONS or second == "=":
            return [NoOp(f"table option {first or ''}".strip())]
        return Unsupported("not a clause we can perform")

    def names(self, tokens: Sequence[Token]) -> list[str]:
        """`a` or `(a, b)` -> column names."""
        if _is_paren(tokens, 0):
            inner, _ = _group(tokens, 0)
            return [self.identifier(part[0]) for part in _split(inner, TokenType.COMMA)]
        return [self.identifier(tokens[0])] if tokens else []

    def add(self, tokens: list[Token]) -> list[Operation] | Unsupported:
        first = _word(tokens, 0)
        clause = first in _INDEXES or first in _PARTITIONS or first in ("SUPPLEMENTAL", "PERIOD", "OVERFLOW")
        if clause and not self.defines_column(tokens):
            return [NoOp(f"ADD {first}")]
        if first in ("COLUMN", "COLUMNS"):
            tokens = tokens[1:]
        tokens = tokens[self.skip_if_exists(tokens, 0) :]
        if _is_paren(tokens, 0):  # MySQL ADD [COLUMN] (a INT, b INT), Oracle ADD (a NUMBER, CONSTRAINT ...)
            inner, _ = _group(tokens, 0)
            elements = _split(inner, TokenType.COMMA)
        else:
            elements = [tokens]
        columns = []
        for element in elements:
            if _word(element, 0) in _INDEXES and not self.defines_column(element):
                continue
            if _word(element, 1) in ("AS", "GENERATED"):  # Oracle virtual column: not in the change stream
                continue
            column = self.column(element)
            if not isinstance(column, Column):
                return column or Unsupported(f"column {self.source(element)[:60]!r} has no type")
            columns.append(column)
        return [AddColumns(tuple(columns))] if columns else [NoOp("ADD constraint")]

    def drop_clause(self, tokens: list[Token]) -> list[Operation] | Unsupported:
        first = _word(tokens, 0)
        if first in _PARTITIONS:
            return [NoOp(f"DROP {first} (its rows are not deleted in silver)")]
        if (first in _INDEXES or first in ("UNUSED", "SUPPLEMENTAL", "PERIOD", "COLUMNS")) and len(tokens) > 1:
            return [NoOp(f"DROP {first}")]  # DROP period alone drops a column of that name
        if first == "COLUMN":
            tokens = tokens[1:]
        tokens = tokens[self.skip_if_exists(tokens, 0) :]
        names = self.names(tokens)  # Oracle CASCADE CONSTRAINTS / CHECKPOINT n may follow
        return [DropColumns(tuple(names))] if names else Unsupported("DROP without a column")

    def modify(self, tokens: list[Token]) -> list[Operation] | Unsupported:
        first = _word(tokens, 0)
        clause = first in _INDEXES or first in _PARTITIONS or first in ("LOB", "DEFAULT", "NESTED", "VARRAY", "OPAQUE")
        if clause and not self.defines_column(tokens):
            return [NoOp(f"MODIFY {first}")]
        if first == "COLUMN":
            tokens = tokens[1:]
        if _is_paren(tokens, 0):  # Oracle MODIFY (a NUMBER(12), b NOT NULL)
            inner, _ = _group(tokens, 0)
            elements = _split(inner, TokenType.COMMA)
        else:
            elements = [tokens]
        operations: list[Operation] = []
        for element in elements:
            column = self.column(element)
            if isinstance(column, Unsupported):
                return column
            if column is None:
                operations.append(NoOp("MODIFY column attribute"))
            else:
                operations.append(ChangeColumnType(column.name, column.spark_type))
        return operations

    def rename_clause(self, tokens: list[Token]) -> list[Operation] | Unsupported:
        first = _word(tokens, 0)
        if first == "COLUMN":
            if len(tokens) == 4 and _word(tokens, 2) == "TO":
                return [RenameColumn(self.identifier(tokens[1]), self.identifier(tokens[3]))]
            return Unsupported("cannot read RENAME COLUMN")
        if first in ("INDEX", "KEY", "CONSTRAINT") or first in _PARTITIONS:
            return [NoOp(f"RENAME {first}")]
        new, end = self.name(tokens, 1 if first in ("TO", "AS") else 0)
        if new is None or end != len(tokens):
            return Unsupported("cannot read the new table name")
        return [RenameTable(new)]

    def alter_column(self, tokens: list[Token]) -> list[Operation] | Unsupported:
        first = _word(tokens, 0)
        if first in _INDEXES:
            return [NoOp(f"ALTER {first}")]
        if first == "COLUMN":
            tokens = tokens[1:]
        if not tokens:
            return Unsupported("ALTER COLUMN without a column")
        words = _words(tokens[1:])
        if words[:1] == ["TYPE"] or words[:3] == ["SET", "DATA", "TYPE"]:
            type_tokens = tokens[2:] if words[0] == "TYPE" else tokens[4:]
            column = self.column([tokens[0], *type_tokens])
            if isinstance(column, Column):
                return [ChangeColumnType(column.name, column.spark_type)]
            return column or Unsupported("ALTER COLUMN ... TYPE without a type")
        if words[:1] in (["SET"], ["DROP"]):  # SET/DROP DEFAULT, NOT NULL, VISIBLE, INVISIBLE
            return [NoOp("ALTER COLUMN attribute")]
        return Unsupported("not an ALTER COLUMN we can perform")
