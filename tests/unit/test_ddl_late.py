"""Column DDL performed in its place among newer statements the table has had (`lakeloader.apply.ddl.late`)."""

from __future__ import annotations

import pytest

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.late import NamedAgain, in_the_past
from lakeloader.apply.ddl.statements import parse_ddl


def ops(*texts: str) -> list[S.Operation]:
    statements = [parse_ddl(text) for text in texts]
    return [op for statement in statements for op in statement.operations]  # type: ignore[union-attr]


def test_a_late_drop_is_performed_whatever_newer_statements_added():
    placed = in_the_past(ops("ALTER TABLE t DROP COLUMN name"), ops("ALTER TABLE t ADD COLUMN c1 BIGINT"))
    assert placed == (S.DropColumns(("name",)),)


def test_a_late_add_takes_the_name_and_type_newer_statements_gave_the_column():
    later = ops("ALTER TABLE t RENAME COLUMN c TO d", "ALTER TABLE t MODIFY COLUMN d DECIMAL(30,0)")
    assert in_the_past(ops("ALTER TABLE t ADD COLUMN c INT"), later) == (
        S.AddColumns((S.Column("d", "decimal(30,0)"),)),
    )


def test_a_late_add_of_a_column_a_newer_statement_dropped_adds_nothing():
    assert in_the_past(ops("ALTER TABLE t ADD COLUMN c INT, ADD COLUMN e INT"), ops("ALTER TABLE t DROP COLUMN c")) == (
        S.AddColumns((S.Column("e", "int"),)),
    )


def test_a_late_rename_follows_newer_renames_and_drops_of_its_new_name():
    later = ops("ALTER TABLE t RENAME COLUMN b TO c")
    assert in_the_past(ops("ALTER TABLE t RENAME COLUMN a TO b"), later) == (S.RenameColumn("a", "c"),)
    dropped = ops("ALTER TABLE t DROP COLUMN b", "ALTER TABLE t ADD COLUMN b INT")
    assert in_the_past(ops("ALTER TABLE t RENAME COLUMN a TO b"), dropped) == (S.DropColumns(("a",)),)


def test_a_late_type_change_that_a_newer_one_overrides_takes_the_newer_type():
    later = ops("ALTER TABLE t MODIFY COLUMN qty DECIMAL(30,0)")
    assert in_the_past(ops("ALTER TABLE t MODIFY COLUMN qty BIGINT"), later) == (
        S.ChangeColumnType("qty", "decimal(30,0)"),
    )


@pytest.mark.parametrize(
    "late, newer",
    [
        ("ALTER TABLE t DROP COLUMN c", "ALTER TABLE t ADD COLUMN c INT"),
        ("ALTER TABLE t DROP COLUMN c", "ALTER TABLE t RENAME COLUMN x TO c"),
        ("ALTER TABLE t RENAME COLUMN c TO d", "ALTER TABLE t ADD COLUMN c INT"),
        ("ALTER TABLE t CHANGE c d INT", "ALTER TABLE t CHANGE x c INT"),
    ],
)
def test_a_late_operation_removing_a_name_a_newer_statement_gave_again_cannot_be_placed(late, newer):
    with pytest.raises(NamedAgain, match="c"):
        in_the_past(ops(late), ops(newer))


def test_table_operations_and_unrelated_columns_pass_unchanged():
    late = ops("ALTER TABLE t ADD COLUMN e INT", "TRUNCATE TABLE t")
    assert in_the_past(late, ops("ALTER TABLE t RENAME COLUMN a TO b")) == tuple(late)


def test_a_late_create_table_declares_its_columns_as_newer_statements_left_them_with_those_they_added():
    later = ops(
        "ALTER TABLE t RENAME COLUMN qty TO amount", "ALTER TABLE t DROP COLUMN note", "ALTER TABLE t ADD COLUMN c INT",
        "ALTER TABLE t MODIFY COLUMN id DECIMAL(30,0)",
    )  # fmt: skip
    created = ops("CREATE TABLE t (id BIGINT PRIMARY KEY, qty DECIMAL(30,0), note TEXT)")
    columns = (S.Column("id", "decimal(30,0)"), S.Column("amount", "decimal(30,0)"), S.Column("c", "int"))
    assert in_the_past(created, later) == (S.CreateTable(columns, ("id",)),)


def test_create_table_if_not_exists_is_told_from_a_plain_create_table():
    assert ops("CREATE TABLE IF NOT EXISTS t (id INT)") == [S.CreateTable((S.Column("id", "int"),), (), True)]
    assert ops("CREATE TABLE t (id INT)") == [S.CreateTable((S.Column("id", "int"),), (), False)]


def test_a_mysql_late_operation_follows_newer_statements_naming_its_column_in_another_case():
    renamed = ops("ALTER TABLE t RENAME COLUMN Qty TO q2")
    assert in_the_past(ops("ALTER TABLE t MODIFY COLUMN qty BIGINT"), renamed, ignore_case=True) == (
        S.ChangeColumnType("q2", "bigint"),
    )
    assert in_the_past(ops("ALTER TABLE t ADD COLUMN note INT"), ops("ALTER TABLE t DROP COLUMN NOTE"), True) == ()
    created = ops("CREATE TABLE t (id BIGINT PRIMARY KEY, Qty INT)")
    assert in_the_past(created, renamed, ignore_case=True) == (
        S.CreateTable((S.Column("id", "bigint"), S.Column("q2", "int")), ("id",)),
    )
    with pytest.raises(NamedAgain, match="c"):
        in_the_past(ops("ALTER TABLE t DROP COLUMN c"), ops("ALTER TABLE t ADD COLUMN C INT"), ignore_case=True)


def test_an_oracle_or_exact_late_operation_leaves_a_column_named_in_another_case_alone():
    renamed = ops("ALTER TABLE t RENAME COLUMN Qty TO q2")
    assert in_the_past(ops("ALTER TABLE t MODIFY COLUMN qty BIGINT"), renamed) == (S.ChangeColumnType("qty", "bigint"),)
