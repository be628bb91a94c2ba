"""The tables a DDL statement names, read in its message's database (`events.in_message_database`): a schema
qualifier in a message that names a schema (PostgreSQL, SQL Server, Oracle), the database alone in a message of
OMS's `tenant.database`, a database in a MySQL message. No Spark."""

from __future__ import annotations

import pytest

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.events import in_message_database
from lakeloader.apply.ddl.statements import parse_ddl

UNQUALIFIED = ("public", "dbo")


def _names(db: str, schema: str | None, text: str, dialect: str = "mysql") -> list[tuple[str | None, str]]:
    """The statement's table, then every table its operations name, as read in the message's database."""
    parsed = parse_ddl(text, dialect)
    statements = parsed.statements if isinstance(parsed, S.Statements) else (parsed,)
    names = []
    for statement in statements:
        assert isinstance(statement, S.Statement), statement
        read = in_message_database(db, schema, UNQUALIFIED)(statement)
        names.append((read.table.db, read.table.table))
        for op in read.operations:
            if isinstance(op, S.RenameTable):
                names.append((op.new.db, op.new.table))
            if isinstance(op, S.CreateTableLike):
                names.append((op.like.db, op.like.table))
    return names


@pytest.mark.parametrize(
    ("db", "schema", "text", "expected"),
    [
        # a schema qualifies the database: the statement's qualifier is a schema of the same database
        ("shop.sales", "sales", "ALTER TABLE sales.orders ADD COLUMN note VARCHAR(10)", [("shop.sales", "orders")]),
        ("shop.sales", "sales", "ALTER TABLE public.orders ADD COLUMN note INT", [("shop", "orders")]),
        ("shop.sales", "sales", "ALTER TABLE archive.orders ADD COLUMN note INT", [("shop.archive", "orders")]),
        ("shop.sales", "sales", "ALTER TABLE orders ADD COLUMN note INT", [(None, "orders")]),
        ("shop", "public", "ALTER TABLE sales.orders ADD COLUMN note INT", [("shop.sales", "orders")]),
        ("shop", "public", "ALTER TABLE public.orders ADD COLUMN note INT", [("shop", "orders")]),
        ("ORCL.HR", "HR", 'ALTER TABLE "HR"."EMP" ADD ("NOTE" NUMBER(5,2))', [("ORCL.HR", "EMP")]),
        (
            "shop.sales",
            "sales",
            "RENAME TABLE sales.a TO archive.b",
            [("shop.sales", "a"), ("shop.archive", "b")],
        ),
        ("shop.sales", "sales", "CREATE TABLE sales.c LIKE sales.a", [("shop.sales", "c"), ("shop.sales", "a")]),
        # OMS's tenant.database: SQL names the database without its tenant
        ("t1.shop", None, "TRUNCATE TABLE shop.trunc_q", [("t1.shop", "trunc_q")]),
        ("t1.shop", None, "ALTER TABLE `shop`.`dropq` DROP COLUMN gone", [("t1.shop", "dropq")]),
        ("t1.shop", None, "RENAME TABLE shop.a TO other.b", [("t1.shop", "a"), ("t1.other", "b")]),
        ("t_ora.SCOTT", None, 'ALTER TABLE "SCOTT"."ALLT" ADD ("NEWC" NUMBER(5,2))', [("t_ora.SCOTT", "ALLT")]),
        # MySQL: a qualifier names a database, as written (also where the schema is the database itself)
        ("shop", None, "ALTER TABLE other.orders ADD COLUMN note INT", [("other", "orders")]),
        ("shop", "shop", "ALTER TABLE other.orders ADD COLUMN note INT", [("other", "orders")]),
        ("shop", None, "ALTER TABLE orders ADD COLUMN note INT", [(None, "orders")]),
    ],
)
def test_a_statement_names_tables_in_its_message_database(db, schema, text, expected):
    dialect = "oracle" if '"' in text else "mysql"
    assert _names(db, schema, text, dialect) == expected


def test_a_name_qualified_by_the_message_db_itself_stays_that_table():
    # a TRUNCATE message without text names the message's own table, qualified by the message's db
    statement = S.Statement(S.TableName("shop.sales", "orders"), (S.TruncateTable(),))
    read = in_message_database("shop.sales", "sales", UNQUALIFIED)(statement)
    assert read.table == S.TableName("shop.sales", "orders")


@pytest.mark.parametrize("dialect", ["oracle", "oceanbase_oracle"])
@pytest.mark.parametrize(
    ("db", "text", "expected"),
    [
        ("t1.S", "alter table s.t add (d varchar2(10))", [("t1.S", "T")]),
        ("t1.S", "ALTER TABLE t_ora DROP (a, b)", [(None, "T_ORA")]),
        ("t1.S", "RENAME t_r TO t_r2", [(None, "T_R"), (None, "T_R2")]),
        ("t1.S", "CREATE TABLE s.t_new LIKE s.t", [("t1.S", "T_NEW"), ("t1.S", "T")]),
        ("t1.S", 'TRUNCATE TABLE s."Mixed"', [("t1.S", "Mixed")]),
        ("S", 'DROP TABLE "s".t', [("s", "T")]),
    ],
)
def test_an_oracle_statements_unquoted_table_names_are_upper_case_and_quoted_ones_exact(db, text, expected, dialect):
    assert _names(db, None, text, dialect) == expected
