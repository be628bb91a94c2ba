"""Column DDL that reaches apply after a newer statement was applied to its table (an hour exported late, or run
after a later hour): performed as in its place in the table's sequence.

Each of its operations is carried forward through the statements the schema history records after it
(`in_the_past`): a late `DROP COLUMN name` still drops `name` after a newer `ADD COLUMN c1` was applied, a late
`ADD COLUMN c` that a newer statement renamed to `d` (a no-op then: no `c`) adds `d`, with the newer type if one
changed it, and a late type change that a newer one overrides changes nothing. An operation removing a name that
a newer statement gave again (`DROP COLUMN c`, then `ADD COLUMN c`) cannot be placed: the table's values under
that name mix the two columns. It goes to the source's `ddl_policy`.

Where the source's column names are case-insensitive (MySQL; `S.columns_ignore_case`), a name is the same column
as any name equal to it ignoring case: a late `DROP COLUMN qty` follows a newer `RENAME COLUMN Qty TO q2`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from lakeloader.apply.ddl import statements as S
from lakeloader.core.errors import LakeloaderError


class NamedAgain(LakeloaderError):
    """A late operation removes a column name that a newer statement applied already gave again."""


def in_the_past(
    operations: Sequence[S.Operation], later: Sequence[S.Operation], ignore_case: bool = False
) -> tuple[S.Operation, ...]:
    """The operations to perform now on the table's schema for `operations` to take effect as at their place,
    before `later` (the newer column operations the table has had, in sequence order)."""
    names = _Names(ignore_case)
    placed: list[S.Operation] = []
    for op in operations:
        if isinstance(op, S.AddColumns):
            added = tuple(
                S.Column(now[0], now[1] or c.spark_type, c.default)
                for c in op.columns
                if (now := names.carried(c.name, c.spark_type, later)) is not None
            )
            placed += [S.AddColumns(added)] if added else []
        elif isinstance(op, S.CreateTable):
            placed.append(S.CreateTable(names.replayed(op.columns, later), op.primary_key, op.if_not_exists))
        elif isinstance(op, S.DropColumns):
            names.refuse_named_again(op.names, later)
            placed.append(op)
        elif isinstance(op, S.RenameColumn):
            placed.append(names.renamed(op.old, op.new, None, later))
        elif isinstance(op, S.ChangeColumnType) and (old := op.renamed_from) is not None:
            placed.append(names.renamed(old, op.name, op.spark_type, later))
        elif isinstance(op, S.ChangeColumnType):
            now = names.carried(op.name, op.spark_type, later)
            placed += [S.ChangeColumnType(now[0], now[1] or op.spark_type)] if now is not None else []
        else:
            placed.append(op)
    return tuple(placed)


class _Names:
    """Column names compared as the source compares them (ignoring case, or exactly)."""

    def __init__(self, ignore_case: bool) -> None:
        self.fold: Callable[[str], str] = str.lower if ignore_case else (lambda name: name)

    def same(self, a: str, b: str) -> bool:
        return self.fold(a) == self.fold(b)

    def among(self, name: str, names: Sequence[str]) -> bool:
        return any(self.same(name, other) for other in names)

    def replayed(self, columns: Sequence[S.Column], later: Sequence[S.Operation]) -> tuple[S.Column, ...]:
        """A table's columns after `later`: renamed, retyped, dropped, and with the columns it adds."""
        now = list(columns)
        for op in later:
            if isinstance(op, S.AddColumns):
                now += [c for c in op.columns if not self.among(c.name, [had.name for had in now])]
            elif isinstance(op, S.DropColumns):
                now = [c for c in now if not self.among(c.name, op.names)]
            elif isinstance(op, S.RenameColumn | S.ChangeColumnType):
                old, new = (op.old, op.new) if isinstance(op, S.RenameColumn) else (op.old or op.name, op.name)
                retyped = op.spark_type if isinstance(op, S.ChangeColumnType) else None
                now = [
                    replace(c, name=new, spark_type=retyped or c.spark_type) if self.same(c.name, old) else c
                    for c in now
                ]
        return tuple(now)

    def renamed(self, old: str, new: str, spark_type: str | None, later: Sequence[S.Operation]) -> S.Operation:
        """A rename of `old` to `new` (with a type change, for MySQL's CHANGE) as at its place before `later`."""
        self.refuse_named_again((old,), later)
        now = self.carried(new, spark_type, later)
        if now is None:
            return S.DropColumns((old,))
        return S.RenameColumn(old, now[0]) if now[1] is None else S.ChangeColumnType(now[0], now[1], old)

    def carried(self, name: str, spark_type: str | None, later: Sequence[S.Operation]) -> tuple[str, str | None] | None:
        """The name and type a column has after `later` (None: a later statement dropped it)."""
        for op in later:
            if isinstance(op, S.DropColumns) and self.among(name, op.names):
                return None
            if isinstance(op, S.RenameColumn) and self.same(op.old, name):
                name = op.new
            elif isinstance(op, S.ChangeColumnType) and self.same(op.old or op.name, name):
                name, spark_type = op.name, op.spark_type
        return name, spark_type

    def refuse_named_again(self, names: Sequence[str], later: Sequence[S.Operation]) -> None:
        for op in later:
            if isinstance(op, S.AddColumns):
                given = [c.name for c in op.columns]
            elif isinstance(op, S.RenameColumn):
                given = [op.new]
            elif isinstance(op, S.ChangeColumnType) and op.renamed_from is not None:
                given = [op.name]
            else:
                continue
            again = sorted(name for name in names if self.among(name, given))
            if again:
                raise NamedAgain(
                    f"removes column(s) {', '.join(again)}, which a newer statement already applied gave again: the "
                    "table's values under the name are of both columns"
                )
