"""The value an ALTER TABLE ... ADD gives the rows a table has (no Spark: tests/spark/test_ddl.py loads it)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import pytest

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.defaults import fill
from lakeloader.apply.ddl.statements import parse_ddl


def added(text: str, dialect: str = "mysql") -> S.Column:
    statement = parse_ddl(text, dialect)
    assert isinstance(statement, S.Statement)
    (operation,) = statement.operations
    assert isinstance(operation, S.AddColumns)
    return operation.columns[0]


@pytest.mark.parametrize(
    ("definition", "text", "value"),
    [
        ("c INT NOT NULL DEFAULT 5", "5", 5),
        ("c INT DEFAULT -5", "-5", -5),
        ("c INT DEFAULT '1.5'", "2", 2),  # MySQL rounds a fraction half up into an integer column
        ("c DECIMAL(10,2) DEFAULT '1.555'", "1.56", Decimal("1.56")),
        ("c DECIMAL(65,30) DEFAULT 0", "0", "0"),  # no Spark decimal holds DECIMAL(65,30): exact text
        ("c BOOLEAN DEFAULT TRUE", "true", True),
        ("c TINYINT(1) NOT NULL DEFAULT '0'", "false", False),
        ("c DOUBLE DEFAULT 1e3", "1000.0", 1000.0),
        ("c VARCHAR(8) DEFAULT 'it''s'", "it's", "it's"),
        ("c ENUM('a','b') DEFAULT 'b'", "b", "b"),
        ("c DATE DEFAULT '2024-02-29'", "2024-02-29", date(2024, 2, 29)),
        (
            "c DATETIME(3) DEFAULT '2024-01-02 03:04:05.678'",
            "2024-01-02 03:04:05.678000",
            datetime(2024, 1, 2, 3, 4, 5, 678000),
        ),
        ("c BIGINT NOT NULL", "0", 0),  # MySQL's implicit default of a NOT NULL number
        ("c VARCHAR(8) NOT NULL", "", ""),  # and of a NOT NULL string
    ],
)
def test_existing_rows_get_a_constant_default_in_the_columns_type(definition, text, value):
    filled = fill(added(f"ALTER TABLE t ADD COLUMN {definition}"))

    assert filled is not None
    assert (filled.text, filled.value.as_py()) == (text, value)


@pytest.mark.parametrize(
    "definition",
    [
        "c INT",
        "c INT DEFAULT NULL",
        "c INT NULL",
        "c DATETIME DEFAULT CURRENT_TIMESTAMP",
        "c INT DEFAULT (1 + 1)",
        "c TIMESTAMP NOT NULL DEFAULT '2024-01-01 00:00:00'",  # an instant in the session's zone, which is unknown
        "c INT NOT NULL AUTO_INCREMENT PRIMARY KEY",  # the rows are numbered
        "c INT GENERATED ALWAYS AS (id + 1) STORED NOT NULL",
        "c ENUM('a','b') NOT NULL",  # its first member: not worked out
        "c DATE NOT NULL",  # the zero date, which no date column holds
        "c TINYINT DEFAULT 300",  # MySQL refuses the statement
        "c VARBINARY(4) DEFAULT 'ab'",
    ],
)
def test_existing_rows_read_null_when_the_default_is_null_or_not_knowable(definition):
    assert fill(added(f"ALTER TABLE t ADD COLUMN {definition}")) is None


def test_an_oracle_default_fills_and_a_not_null_without_one_does_not():
    # Oracle refuses ADD ... NOT NULL without a default on a table with rows, so it has none to fill
    number = added('ALTER TABLE "T" ADD ("C" NUMBER(10,2) DEFAULT -1.5 NOT NULL)', "oracle")
    text = added("ALTER TABLE T ADD (C VARCHAR2(10) DEFAULT 'a')", "oracle")
    bare = added("ALTER TABLE T ADD (C NUMBER(10) NOT NULL)", "oracle")
    computed = added("ALTER TABLE T ADD (C DATE DEFAULT SYSDATE)", "oracle")

    assert [fill(c).text if fill(c) else None for c in (number, text, bare, computed)] == ["-1.50", "a", None, None]
