"""DDL text parsed into operations (never executed): each statement kind in MySQL and Oracle flavour, multi-clause
ALTERs, temporary tables, ordinary statements that are no-ops, multi-table DROP and RENAME; and a multi-clause
ALTER that cannot perform one clause changes nothing. No Spark: tests/spark/test_ddl.py performs DDL in streams."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakeloader.apply import schema_changes as D
from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.statements import parse_ddl
from lakeloader.core.storage import Store, open_store
from lakeloader.engine import base as E
from lakeloader.engine.deltars import DeltaRsEngine


@pytest.mark.parametrize(
    ("dialect", "text", "expected"),
    [
        (
            "mysql",
            "/* Query from DMS-WEBSQL-0-Qid_1 */ ALTER TABLE `shop`.`items` ADD COLUMN `price` DECIMAL(10,2) "
            "DEFAULT 5 COMMENT 'p' AFTER `id`, ADD COLUMN note VARCHAR(20) FIRST",
            S.Statement(
                S.TableName("shop", "items"),
                (S.AddColumns((S.Column("price", "decimal(10,2)", "5"),)), S.AddColumns((S.Column("note", "string"),))),
            ),
        ),
        (
            "oracle",
            'ALTER TABLE "SHOP"."ITEMS" ADD ("PRICE" NUMBER(10,2), "N" NUMBER(5))',
            S.Statement(
                S.TableName("SHOP", "ITEMS"),
                (S.AddColumns((S.Column("PRICE", "decimal(10,2)"), S.Column("N", "decimal(5,0)"))),),
            ),
        ),
        (
            "mysql",
            "ALTER TABLE items DROP COLUMN a, DROP b",
            S.Statement(S.TableName(None, "items"), (S.DropColumns(("a",)), S.DropColumns(("b",)))),
        ),
        (
            "oracle",
            "ALTER TABLE ITEMS DROP COLUMN A",
            S.Statement(S.TableName(None, "ITEMS"), (S.DropColumns(("A",)),)),
        ),
        (
            "mysql",
            "ALTER TABLE items RENAME COLUMN a TO b",
            S.Statement(S.TableName(None, "items"), (S.RenameColumn("a", "b"),)),
        ),
        (
            "oracle",
            "ALTER TABLE ITEMS RENAME COLUMN A TO B",
            S.Statement(S.TableName(None, "ITEMS"), (S.RenameColumn("A", "B"),)),
        ),
        (
            "mysql",
            "ALTER TABLE items CHANGE a b BIGINT",
            S.Statement(S.TableName(None, "items"), (S.ChangeColumnType("b", "bigint", "a"),)),
        ),
        (
            "mysql",
            "ALTER TABLE items MODIFY COLUMN qty BIGINT NOT NULL",
            S.Statement(S.TableName(None, "items"), (S.ChangeColumnType("qty", "bigint"),)),
        ),
        (
            "oracle",
            "ALTER TABLE ITEMS MODIFY (A NUMBER(12,2), B VARCHAR2(40))",
            S.Statement(
                S.TableName(None, "ITEMS"),
                (S.ChangeColumnType("A", "decimal(12,2)"), S.ChangeColumnType("B", "string")),
            ),
        ),
        (
            "mysql",
            "RENAME TABLE `shop`.`a` TO `shop`.`b`",
            S.Statement(S.TableName("shop", "a"), (S.RenameTable(S.TableName("shop", "b")),)),
        ),
        (
            "oracle",
            "ALTER TABLE A RENAME TO B",
            S.Statement(S.TableName(None, "A"), (S.RenameTable(S.TableName(None, "B")),)),
        ),
        ("mysql", "TRUNCATE TABLE items", S.Statement(S.TableName(None, "items"), (S.TruncateTable(),))),
        ("oracle", "DROP TABLE ITEMS PURGE", S.Statement(S.TableName(None, "ITEMS"), (S.DropTable(),))),
        (
            "mysql",
            "CREATE TABLE t (id BIGINT, k INT, v DECIMAL(5,1), PRIMARY KEY (id, k))",
            S.Statement(
                S.TableName(None, "t"),
                (
                    S.CreateTable(
                        (S.Column("id", "bigint"), S.Column("k", "int"), S.Column("v", "decimal(5,1)")), ("id", "k")
                    ),
                ),
            ),
        ),
        ("mysql", "CREATE INDEX i ON items (a)", S.Statement(None, (S.NoOp("CREATE INDEX"),))),
        (
            "mysql",
            "ALTER TABLE items ADD COLUMN `x``; DROP TABLE y; --` INT",
            S.Statement(S.TableName(None, "items"), (S.AddColumns((S.Column("x`; DROP TABLE y; --", "int"),)),)),
        ),
    ],
)
def test_statements_parse_into_operations(dialect, text, expected):
    assert parse_ddl(text, dialect) == expected


@pytest.mark.parametrize("dialect", ["oracle", "oceanbase_oracle"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "alter table s.t add (d varchar2(10) default 'dd', \"e\" number(3,1))",
            S.Statement(
                S.TableName("S", "T"),
                (S.AddColumns((S.Column("D", "string", "dd"), S.Column("e", "decimal(3,1)"))),),
            ),
        ),
        (
            "ALTER TABLE t modify (amt number(12,2))",
            S.Statement(S.TableName(None, "T"), (S.ChangeColumnType("AMT", "decimal(12,2)"),)),
        ),
        ('ALTER TABLE t drop (a, "b")', S.Statement(S.TableName(None, "T"), (S.DropColumns(("A", "b")),))),
        ("ALTER TABLE t drop column z", S.Statement(S.TableName(None, "T"), (S.DropColumns(("Z",)),))),
        (
            'ALTER TABLE "S"."t" rename column title to "Title2"',
            S.Statement(S.TableName("S", "t"), (S.RenameColumn("TITLE", "Title2"),)),
        ),
        ("alter table t set unused (c)", S.Statement(S.TableName(None, "T"), (S.DropColumns(("C",)),))),
        (
            'create table s.t_new (id number(10), "Nm" varchar2(10), constraint pk primary key (id, "Nm"))',
            S.Statement(
                S.TableName("S", "T_NEW"),
                (S.CreateTable((S.Column("ID", "decimal(10,0)"), S.Column("Nm", "string")), ("ID", "Nm")),),
            ),
        ),
        ("create table t2 like s.t", S.Statement(S.TableName(None, "T2"), (S.CreateTableLike(S.TableName("S", "T")),))),
        ("rename t to t_old", S.Statement(S.TableName(None, "T"), (S.RenameTable(S.TableName(None, "T_OLD")),))),
        ("truncate table s.t", S.Statement(S.TableName("S", "T"), (S.TruncateTable(),))),
        ("drop table s.t purge", S.Statement(S.TableName("S", "T"), (S.DropTable(),))),
    ],
)
def test_an_oracle_unquoted_identifier_names_its_upper_case_form_and_a_quoted_one_its_exact_name(
    dialect, text, expected
):
    assert parse_ddl(text, dialect) == expected


def test_a_mysql_identifier_is_the_name_as_written():
    assert parse_ddl("ALTER TABLE Shop.t_Case RENAME COLUMN qty TO Amount") == S.Statement(
        S.TableName("Shop", "t_Case"), (S.RenameColumn("qty", "Amount"),)
    )


def test_several_statements_in_one_text_are_refused_not_split():
    assert parse_ddl("ALTER TABLE items ADD COLUMN a INT; DROP TABLE items") == S.Unsupported(
        "expected one statement, found 2"
    )


def test_a_multi_clause_alter_table_gives_every_clause_in_order():
    text = (
        "ALTER TABLE t ADD COLUMN v4 INT, MODIFY COLUMN v1 VARCHAR(20), "
        "ADD COLUMN (v5 DOUBLE, v6 DECIMAL(5,3) COMMENT 'x'), MODIFY v2 BIGINT"
    )
    assert parse_ddl(text) == S.Statement(
        S.TableName(None, "t"),
        (
            S.AddColumns((S.Column("v4", "int"),)),
            S.ChangeColumnType("v1", "string"),
            S.AddColumns((S.Column("v5", "double"), S.Column("v6", "decimal(5,3)"))),
            S.ChangeColumnType("v2", "bigint"),
        ),
    )


def test_a_clause_that_cannot_be_read_sends_the_whole_statement_to_the_policy_naming_it():
    parsed = parse_ddl("ALTER TABLE t ADD COLUMN v4 INT, FROBNICATE v4, DROP COLUMN v1")
    assert parsed == S.Unsupported("ALTER TABLE clause 'FROBNICATE v4': not a clause we can perform")


ITEMS = [pa.field("id", pa.int64()), pa.field("qty", pa.int64()), *E.METADATA_FIELDS]


def items_table(tmp_path) -> tuple[DeltaRsEngine, Store, D.TableLocation, str]:
    """A silver table shop.items (id key, qty) under `tmp_path`: the engine, lake, location and uri."""
    engine, lake = DeltaRsEngine(), open_store(str(tmp_path))
    location = D.TableLocation("shop", "shop", "items")
    uri = lake.child(location.silver_key())
    engine.create(uri, pa.schema(ITEMS), {"lakeloader.primaryKey": '["id"]'}, {})
    return engine, lake, location, uri


def test_a_multi_clause_alter_that_cannot_perform_one_clause_changes_nothing(tmp_path):
    engine, lake, location, uri = items_table(tmp_path)
    statement = parse_ddl("ALTER TABLE items ADD COLUMN note TEXT, MODIFY COLUMN qty INT")  # the second narrows
    with pytest.raises(D.UnsupportedOperation, match="type change of qty from bigint to int is not a widening"):
        D.perform(engine, lake, location, statement, (Decimal(5), Decimal(0), ""), {})
    assert engine.schema(uri).names[:2] == ["id", "qty"] and "note" not in engine.schema(uri).names


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("ALTER TABLE items ADD COLUMN _cdc_op INT", "(prefix _cdc_, any case): _cdc_op"),
        ("ALTER TABLE items ADD COLUMN note TEXT, ADD COLUMN _CDC_Seq INT", "(prefix _cdc_, any case): _CDC_Seq"),
        ("ALTER TABLE items RENAME COLUMN qty TO _cdc_qty", "(prefix _cdc_, any case): _cdc_qty"),
        (
            'ALTER TABLE items ADD ("QTY" NUMBER(5))',  # Oracle: two columns; MySQL: its one column qty
            "differ only by case (Delta column names are case-insensitive): QTY, qty",
        ),
        ('ALTER TABLE items ADD ("note" VARCHAR2(5), "Note" NUMBER(5))', "case-insensitive): Note, note"),
        ("ALTER TABLE items RENAME COLUMN qty TO ID", "case-insensitive): ID, id"),
        ("ALTER TABLE items CHANGE COLUMN qty Id BIGINT", "case-insensitive): Id, id"),
    ],
)
def test_a_column_name_the_table_cannot_store_sends_the_statement_to_the_policy_and_changes_nothing(
    tmp_path, text, refusal
):
    # data messages naming such columns are quarantined (lakeloader.parse.framing.name_problem): the loader's
    # metadata columns would be overwritten, and Delta takes names differing only by case as one column
    engine, lake, location, uri = items_table(tmp_path)
    versions = len(DeltaTable(uri).history())
    dialect = "oracle" if '"' in text else "mysql"
    with pytest.raises(D.UnsupportedOperation) as refused:
        statement = parse_ddl(text, dialect)
        D.perform(engine, lake, location, statement, (5, 0, ""), {}, ignore_case=S.columns_ignore_case(dialect))
    assert str(refused.value).endswith(refusal)
    assert engine.schema(uri) == pa.schema(ITEMS) and len(DeltaTable(uri).history()) == versions


def test_a_mysql_statement_names_the_tables_column_equal_to_it_ignoring_case_and_a_rename_gives_its_new_name():
    text = (
        "ALTER TABLE t MODIFY VAL BIGINT, CHANGE COLUMN VAL amount INT, DROP COLUMN NM, ADD COLUMN Nm INT, "
        "RENAME COLUMN ABC TO Abc, RENAME COLUMN abc TO x, DROP COLUMN gone"
    )
    statement = parse_ddl(text)
    assert isinstance(statement, S.Statement)
    assert S.spelled_as(statement.operations, ["id", "Val", "nm", "abc"]) == (
        S.ChangeColumnType("Val", "bigint"),
        S.ChangeColumnType("amount", "int", "Val"),
        S.DropColumns(("nm",)),
        S.AddColumns((S.Column("Nm", "int"),)),
        S.RenameColumn("abc", "Abc"),
        S.RenameColumn("Abc", "x"),
        S.DropColumns(("gone",)),
    )


@pytest.mark.parametrize(
    ("text", "detail", "columns"),
    [
        ("ALTER TABLE items RENAME COLUMN QTY TO Amount", "renamed column qty to Amount", ["id", "Amount"]),
        ("ALTER TABLE items MODIFY QTY DECIMAL(30,0)", "widened qty from bigint to decimal(30,0)", ["id", "qty"]),
        ("ALTER TABLE items ADD COLUMN QTY INT", "columns exist", ["id", "qty"]),
        ("ALTER TABLE items DROP COLUMN Qty, ADD COLUMN QTY INT", "dropped qty; added QTY", ["id", "QTY"]),
    ],
)
def test_a_mysql_statement_acts_on_the_column_its_name_equals_ignoring_case(tmp_path, text, detail, columns):
    engine, lake, location, uri = items_table(tmp_path)
    assert D.perform(engine, lake, location, parse_ddl(text), (5, 0, ""), {}, ignore_case=True).detail == detail
    assert [name for name in engine.schema(uri).names if not name.startswith("_cdc_")] == columns


def test_a_rename_changing_only_a_columns_case_is_performed(tmp_path):
    engine, lake, location, uri = items_table(tmp_path)
    outcome = D.perform(engine, lake, location, parse_ddl("ALTER TABLE items RENAME COLUMN qty TO QTY"), (5, 0, ""), {})
    assert outcome == D.Outcome(D.APPLIED, "renamed column qty to QTY")
    assert engine.schema(uri).names[:2] == ["id", "QTY"]


@pytest.mark.parametrize(
    "text", ["CREATE TABLE t2 (id INT PRIMARY KEY, _cdc_op INT)", "CREATE TABLE t2 (id INT PRIMARY KEY, ID INT)"]
)
def test_a_create_table_naming_a_column_the_table_cannot_store_is_refused_and_creates_nothing(tmp_path, text):
    engine, lake = DeltaRsEngine(), open_store(str(tmp_path))
    location = D.TableLocation("shop", "shop", "t2")
    with pytest.raises(D.UnsupportedOperation, match=r"prefix _cdc_|case-insensitive"):
        D.perform(engine, lake, location, parse_ddl(text), (Decimal(5), Decimal(0), ""), {})
    assert not engine.exists(lake.child(location.silver_key()))


def test_an_alter_adding_many_columns_adds_them_in_one_commit_in_order_each_name_once(tmp_path):
    # one commit per column read the table's growing log each time: 400 columns took two minutes
    engine, lake = DeltaRsEngine(), open_store(str(tmp_path))
    location = D.TableLocation("shop", "shop", "items")
    uri = lake.child(location.silver_key())
    engine.create(
        uri, pa.schema([pa.field("id", pa.int64()), *E.METADATA_FIELDS]), {"lakeloader.primaryKey": '["id"]'}, {}
    )
    adds = ", ".join(f"ADD COLUMN c{i} INT" for i in range(300))
    statement = parse_ddl(f"ALTER TABLE items {adds}, ADD COLUMN c7 TEXT, DROP COLUMN c1, ADD COLUMN z TEXT")
    versions = len(DeltaTable(uri).history())

    outcome = D.perform(engine, lake, location, statement, (Decimal(5), Decimal(0), ""), {})

    assert outcome.status == D.APPLIED
    names = [n for n in engine.schema(uri).names if not n.startswith("_cdc_")]
    assert names == ["id", "c0", *[f"c{i}" for i in range(2, 300)], "z"]
    assert engine.schema(uri).field("c7").type == pa.int32()  # the first clause's type: the second is a no-op
    # a few commits for the adds, the drop, the add after it and the statement's order mark, not one per column
    assert len(DeltaTable(uri).history()) - versions < 10


@pytest.mark.parametrize(
    "text",
    [
        "DROP TEMPORARY TABLE items",
        "DROP TEMPORARY TABLE IF EXISTS `shop`.`items`, other",
        "CREATE TEMPORARY TABLE items (id INT PRIMARY KEY)",
        "CREATE TEMPORARY TABLE IF NOT EXISTS items AS SELECT * FROM other",
    ],
)
def test_temporary_tables_are_session_local_no_ops(text):
    parsed = parse_ddl(text)
    assert isinstance(parsed, S.Statement) and parsed.table is None
    assert all(isinstance(op, S.NoOp) for op in parsed.operations)


@pytest.mark.parametrize(
    ("dialect", "text", "kind"),
    [
        ("mysql", "CREATE TABLE t (id INT PRIMARY KEY, v INT) PARTITION BY HASH (id) PARTITIONS 4", S.CreateTable),
        ("mysql", "CREATE ALGORITHM=MERGE DEFINER=`root`@`%` SQL SECURITY DEFINER VIEW v AS SELECT 1", S.NoOp),
        ("mysql", "CREATE INDEX i USING BTREE ON t (a)", S.NoOp),
        ("mysql", "CREATE INDEX i ON t (a) USING BTREE", S.NoOp),
        ("mysql", "ALTER TABLE t DROP PARTITION p0, p1", S.NoOp),
        (
            "mysql",
            "CREATE DEFINER=`root`@`%` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; END",
            S.NoOp,
        ),
        ("mysql", "CREATE FUNCTION f() RETURNS INT BEGIN DECLARE n INT; SET n = 1; RETURN n; END", S.NoOp),
        ("oracle", "CREATE OR REPLACE PROCEDURE p AS BEGIN UPDATE t SET a = 1; COMMIT; END;", S.NoOp),
    ],
)
def test_ordinary_statements_are_performed_or_no_ops_not_sent_to_the_policy(dialect, text, kind):
    parsed = parse_ddl(text, dialect)
    assert isinstance(parsed, S.Statement) and [type(op) for op in parsed.operations] == [kind]


def test_multi_table_drop_and_rename_are_one_statement_per_table():
    assert parse_ddl("DROP TABLE a, shop.b") == S.Statements(
        (S.Statement(S.TableName(None, "a"), (S.DropTable(),)), S.Statement(S.TableName("shop", "b"), (S.DropTable(),)))
    )
    assert parse_ddl("RENAME TABLE a TO b, c TO d") == S.Statements(
        (
            S.Statement(S.TableName(None, "a"), (S.RenameTable(S.TableName(None, "b")),)),
            S.Statement(S.TableName(None, "c"), (S.RenameTable(S.TableName(None, "d")),)),
        )
    )


def test_hostile_statements_are_read_or_sent_to_the_policy_never_an_error():
    # each once raised out of the parser and failed the whole hour's apply
    nested = "ALTER TABLE items ADD COLUMN z INT DEFAULT (" + "(" * 40 + "1" + ")" * 40 + ")"
    long_precision = "ALTER TABLE items ADD COLUMN d DECIMAL(" + "9" * 4301 + ",2)"

    assert parse_ddl(nested) == S.Unsupported("cannot parse: the statement nests too deeply")
    # a precision no int holds reads as none, as the message path's try_cast reads it (source_types.declarations)
    assert parse_ddl(long_precision) == S.Statement(
        S.TableName(None, "items"), (S.AddColumns((S.Column("d", "string"),)),)
    )


def test_any_error_reading_a_statement_sends_it_to_the_policy_with_the_error(monkeypatch):
    # the reader runs a third-party SQL parser over text from the stream: whatever it raises, the hour goes on
    def broken(_self, _tokens):
        raise KeyError("an AST shape the reader did not expect")

    monkeypatch.setattr(S._Reader, "alter", broken)

    assert parse_ddl("ALTER TABLE items ADD COLUMN a INT") == S.Unsupported(
        "cannot parse: KeyError: 'an AST shape the reader did not expect'"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a", {"id": [1], "a": ["y"], "b": ["x"]}),
        ("ALTER TABLE t CHANGE a b VARCHAR(5), CHANGE b a VARCHAR(5)", {"id": [1], "a": ["y"], "b": ["x"]}),
        ("ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO c", {"id": [1], "b": ["x"], "c": ["y"]}),
    ],
)
def test_a_statements_column_renames_name_the_columns_the_table_had_before_it(tmp_path, text, expected):
    # MySQL performs them at once: a swap swaps the values (performed one by one, a onto b merged the two columns
    # as for a column newer changes added, and b's values were lost)
    engine, lake = DeltaRsEngine(), open_store(str(tmp_path))
    location = D.TableLocation("shop", "shop", "t")
    uri = lake.child(location.silver_key())
    rows = pa.table({"id": [1], "a": ["x"], "b": ["y"]})
    engine.create(uri, rows.schema, {"lakeloader.primaryKey": '["id"]'}, {})
    engine.append(uri, rows)

    outcome = D.perform(engine, lake, location, parse_ddl(text), (Decimal(5), Decimal(0), ""), {})

    assert outcome.status == D.APPLIED
    assert engine.read(uri).sort_by("id").to_pydict() == expected


@pytest.mark.parametrize(
    ("dialect", "text", "column"),
    [
        ("mysql", "ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 5 VISIBLE", S.Column("c", "int", "5")),
        ("mysql", "ALTER TABLE t ADD COLUMN c INT DEFAULT -3 COLUMN_FORMAT FIXED", S.Column("c", "int", "-3")),
        ("mysql", "ALTER TABLE t ADD COLUMN c INT NOT NULL STORAGE DISK", S.Column("c", "int", "0")),
        (
            "mysql",
            "ALTER TABLE t ADD COLUMN c VARCHAR(9) NOT NULL DEFAULT _utf8mb4'intro'",
            S.Column("c", "string", "intro"),
        ),
        ("oracle", 'ALTER TABLE T ADD ("C" NUMBER(1) DEFAULT 0 NOT NULL ENABLE)', S.Column("C", "decimal(1,0)", "0")),
        (
            "oracle",
            """ALTER TABLE T ADD ("F" CHAR(1) DEFAULT 'N' CONSTRAINT "CK_F" CHECK (F IN ('Y','N')) ENABLE)""",
            S.Column("F", "string", "N"),
        ),
        ("mysql", "ALTER TABLE t /*!50100 ADD COLUMN c INT NOT NULL DEFAULT 4 */", S.Column("c", "int", "4")),
        ("mysql", "/*!50100 ALTER TABLE t ADD COLUMN c INT DEFAULT 4 */", S.Column("c", "int", "4")),
    ],
)
def test_a_columns_default_is_read_past_attributes_sqlglot_does_not_know_and_versioned_comments_are_read(
    dialect, text, column
):
    # the default was lost (existing rows NULL) when the definition held VISIBLE, Oracle's ENABLE, a named CHECK or
    # a character set introducer; MySQL executes the text of a /*!NNNNN ... */ comment, which was dropped
    table = S.TableName(None, "T" if dialect == "oracle" else "t")
    assert parse_ddl(text, dialect) == S.Statement(table, (S.AddColumns((column,)),))


@pytest.mark.parametrize(
    ("dialect", "text", "operations"),
    [
        ("mysql", "ALTER TABLE t DROP period", (S.DropColumns(("period",)),)),
        ("mysql", "ALTER TABLE t ADD period INT DEFAULT 3", (S.AddColumns((S.Column("period", "int", "3"),)),)),
        ("mysql", "ALTER TABLE t MODIFY lob BIGINT", (S.ChangeColumnType("lob", "bigint"),)),
        ("mysql", "ALTER TABLE t ADD INDEX date (a), DROP PERIOD FOR p", (S.NoOp("ADD INDEX"), S.NoOp("DROP PERIOD"))),
        (
            "oracle",
            "ALTER TABLE t ADD (key VARCHAR2(10) DEFAULT 'k')",
            (S.AddColumns((S.Column("KEY", "string", "k"),)),),
        ),
        ("oracle", "ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY (id)", (S.NoOp("ADD CONSTRAINT"),)),
    ],
)
def test_a_column_named_by_a_word_that_begins_other_clauses_is_a_column_when_a_type_follows(dialect, text, operations):
    # PERIOD, LOB and Oracle's KEY are not reserved: `DROP period` dropped nothing, `ADD (key ...)` added nothing
    assert parse_ddl(text, dialect) == S.Statement(S.TableName(None, "T" if dialect == "oracle" else "t"), operations)


def test_a_create_table_keeps_columns_named_by_unreserved_clause_words():
    statement = parse_ddl("CREATE TABLE T (ID NUMBER(10) PRIMARY KEY, KEY VARCHAR2(10), PERIOD NUMBER(4))", "oracle")
    assert isinstance(statement, S.Statement) and isinstance(statement.operations[0], S.CreateTable)
    assert [c.name for c in statement.operations[0].columns] == ["ID", "KEY", "PERIOD"]
