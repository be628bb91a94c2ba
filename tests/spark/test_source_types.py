"""The one type mapping of source declarations (lakeloader.parse.formats.source_types): the whole MySQL and
Oracle/OceanBase type lists map to the documented Spark types, the message path's Spark expression agrees with
the Python mapping on every declaration, and the DDL path types each declaration as its data arrives."""

from __future__ import annotations

import pytest
import sqlglot
from pyspark.sql import Column
from pyspark.sql import functions as F
from sqlglot import exp

from lakeloader.apply.ddl.types import spark_type
from lakeloader.parse.formats import ob_types, source_types

MYSQL = {
    "TINYINT(1)": "boolean",  # MySQL's BOOL
    "tinyint(1) unsigned": "boolean",
    "BOOL": "boolean",
    "BOOLEAN": "boolean",
    "TINYINT": "tinyint",
    "TINYINT(4)": "tinyint",
    "TINYINT UNSIGNED": "smallint",
    "TINYINT(2) UNSIGNED ZEROFILL": "smallint",
    "SMALLINT": "smallint",
    "SMALLINT(6) UNSIGNED": "int",
    "MEDIUMINT": "int",
    "MEDIUMINT UNSIGNED": "int",
    "INT": "int",
    "INT(11)": "int",
    "INTEGER": "int",
    "INT UNSIGNED": "bigint",
    "INT(8) UNSIGNED ZEROFILL": "bigint",
    "BIGINT": "bigint",
    "BIGINT(20)": "bigint",
    "BIGINT UNSIGNED": "decimal(20,0)",
    "SERIAL": "decimal(20,0)",
    "YEAR": "int",
    "FLOAT": "float",
    "FLOAT(24)": "float",
    "FLOAT(7,3)": "float",
    "FLOAT UNSIGNED": "float",
    "FLOAT(25)": "double",  # MySQL makes it a DOUBLE
    "DOUBLE": "double",
    "DOUBLE PRECISION": "double",
    "DOUBLE(10,7) UNSIGNED ZEROFILL": "double",
    "REAL": "double",
    "DECIMAL": "string",  # no precision (DTS, OMS): any DECIMAL(65,30) value, as exact text
    "DECIMAL(10)": "decimal(10,0)",
    "DECIMAL(18,0)": "decimal(18,0)",  # DECIMAL(p,0) is decimal(p,0) at every p
    "DECIMAL(20, 0)": "decimal(20,0)",
    "DECIMAL(38,10)": "decimal(38,10)",
    "DECIMAL(39,0)": "string",
    "DECIMAL(65,30)": "string",
    "DECIMAL(8,3) UNSIGNED ZEROFILL": "decimal(8,3)",
    "NUMERIC(8,3)": "decimal(8,3)",
    "FIXED(40,3)": "string",
    "DEC(5,2)": "decimal(5,2)",
    "DATE": "date",
    "DATETIME": "timestamp_ntz",
    "DATETIME(6)": "timestamp_ntz",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP(3)": "timestamp",
    "TIME": "string",
    "TIME(6)": "string",
    "CHAR(10)": "string",
    "VARCHAR(20)": "string",
    "TINYTEXT": "string",
    "TEXT": "string",
    "MEDIUMTEXT": "string",
    "LONGTEXT": "string",
    "JSON": "string",
    "ENUM('a','b')": "string",
    "SET('a','b')": "string",
    "BINARY(16)": "binary",
    "VARBINARY(20)": "binary",
    "TINYBLOB": "binary",
    "BLOB": "binary",
    "MEDIUMBLOB": "binary",
    "LONGBLOB": "binary",
    "BIT(1)": "binary",
    "BIT(64)": "binary",
    "GEOMETRY": "binary",
    "POINT": "binary",
    "LINESTRING": "binary",
    "POLYGON": "binary",
    "MULTIPOINT": "binary",
    "MULTILINESTRING": "binary",
    "MULTIPOLYGON": "binary",
    "GEOMETRYCOLLECTION": "binary",
}
ORACLE = {
    "NUMBER": "string",  # any number: exact text
    "NUMBER(10)": "decimal(10,0)",
    "NUMBER(10,2)": "decimal(10,2)",
    "NUMBER(38)": "decimal(38,0)",
    "NUMBER(5,-2)": "string",
    "INTEGER": "decimal(38,0)",
    "FLOAT": "string",  # binary precision: exact text
    "FLOAT(126)": "string",
    "BINARY_FLOAT": "float",
    "BINARY_DOUBLE": "double",
    "DATE": "timestamp_ntz",  # an Oracle DATE has a time of day
    "TIMESTAMP": "timestamp_ntz",
    "TIMESTAMP(6)": "timestamp_ntz",
    "TIMESTAMP(6) WITH TIME ZONE": "timestamp",
    "TIMESTAMP WITH LOCAL TIME ZONE": "timestamp",
    "CHAR(10)": "string",
    "VARCHAR2(20)": "string",
    "NVARCHAR2(5)": "string",
    "CLOB": "string",
    "NCLOB": "string",
    "BLOB": "binary",
    "RAW(16)": "binary",
    "LONG RAW": "binary",
    "BFILE": "binary",
    "ROWID": "string",
    "UROWID": "string",
    "INTERVAL DAY TO SECOND": "string",
    "INTERVAL YEAR TO MONTH": "string",
}
OMS = {  # OMS names no signedness: each integer also holds its UNSIGNED range
    "TINYINT": "smallint",
    "SMALLINT": "int",
    "MEDIUMINT": "int",
    "INT": "bigint",
    "INT64": "bigint",
    "BIGINT": "decimal(20,0)",
    "BOOL": "boolean",
    "DECIMAL": "string",
    "ZONED_DATETIME": "timestamp",
    "VAR_STRING": "string",
    "BYTES": "binary",
}


def test_mysql_declarations_map_to_their_documented_spark_types():
    assert {d: source_types.spark_type_of(d).spark_type for d in MYSQL} == MYSQL


def test_oracle_declarations_map_to_their_documented_spark_types():
    assert {d: source_types.spark_type_of(d, oracle=True).spark_type for d in ORACLE} == ORACLE


def test_oms_type_names_hold_unsigned_values():
    assert {d: source_types.spark_type_of(d, signedness_unknown=True).spark_type for d in OMS} == OMS


def test_bit_is_a_number_where_the_source_sends_its_number():
    assert source_types.spark_type_of("bit(8)", bit_as_number=True) == source_types.SourceType(
        "decimal", "decimal(20,0)"
    )


def test_message_path_expression_agrees_with_the_python_mapping_on_every_declaration(spark):
    cases = [(d, False, False) for d in MYSQL] + [(d, True, False) for d in ORACLE] + [(d, False, True) for d in OMS]
    cases += [(None, False, False), ("  decimal( 10 , 2 )  ", False, False), ("no such type", False, False)]
    # parameters no int holds (and more digits than Python converts): both paths read them as unsaid
    cases += [(f"decimal({'9' * 4301},2)", False, False), ("decimal(10,99999999999)", False, False)]
    cases += [("decimal(2147483648,2)", False, False), ("decimal(0002147483647,2)", False, False)]
    frame = spark.createDataFrame(cases, "d string, oracle boolean, unknown boolean")
    resolved = frame.select(
        source_types.resolve(F.col("d"), F.col("oracle")).alias("known"),
        source_types.resolve(F.col("d"), F.col("oracle"), signedness_unknown=True).alias("unknown"),
        ob_types.resolve(F.col("d"), F.col("oracle")).alias("oms"),
    ).collect()

    for (declaration, oracle, unknown), row in zip(cases, resolved, strict=True):
        expected = source_types.spark_type_of(declaration or "", oracle, signedness_unknown=unknown)
        got = row["unknown"] if unknown else row["known"]
        assert (declaration, got["conv"], got["type"]) == (declaration, expected.conv, expected.spark_type)
        if unknown:
            assert (row["oms"]["conv"], row["oms"]["type"]) == (expected.conv, expected.spark_type)


def test_declarations_resolved_once_per_batch_get_what_the_rules_give_and_later_ones_still_resolve(spark, monkeypatch):
    """The table of a batch's first messages' declarations answers exactly as the rules, per message's tenant,
    and a declaration first seen after the sample (or never in it) is resolved by the rules."""
    monkeypatch.setattr(source_types, "SAMPLE_MESSAGES", 2)
    declarations = [
        *MYSQL,
        *ORACLE,
        *OMS,
        "  decimal( 10 , 2 )  ",
        "DATETIME\t(6)",
        "no such type",
        "int(\u0661\u0661)",  # Arabic-Indic digits
    ]
    messages = [
        (["TINYINT(1)", "bigint unsigned", "DATE", None], False),  # sampled
        (["TIMESTAMP", "FLOAT", "varchar(20)"], True),  # sampled, an Oracle tenant
        (declarations, False),  # after the sample
        (declarations, True),
        (None, None),
    ]
    frame = spark.createDataFrame(messages, "declarations array<string>, oracle boolean")
    for unknown in (False, True):
        resolutions = source_types.sampled_resolutions(
            frame, F.col("declarations"), F.col("oracle"), signedness_unknown=unknown
        )
        by_table = source_types.table_resolver(resolutions, F.col("oracle"), signedness_unknown=unknown)
        rows = frame.select(
            F.transform("declarations", by_table).alias("got"), per_value(unknown).alias("expected")
        ).collect()

        assert [row["got"] for row in rows] == [row["expected"] for row in rows]
        timestamp = declarations.index("TIMESTAMP")
        assert [rows[i]["got"][timestamp]["type"] for i in (2, 3)] == ["timestamp", "timestamp_ntz"]


def per_value(unknown: bool) -> Column:
    """Each declaration of the message resolved by the rules."""
    return F.transform("declarations", lambda d: source_types.resolve(d, F.col("oracle"), signedness_unknown=unknown))


# sqlglot reads MySQL's REAL as FLOAT and cannot parse the spatial subtypes or unsigned floats: the DDL path
# types what it parses
DDL_UNREADABLE = {"REAL", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON"}
DDL_UNREADABLE |= {"GEOMETRYCOLLECTION", "FLOAT UNSIGNED", "DOUBLE(10,7) UNSIGNED ZEROFILL"}
ORACLE_DDL_UNREADABLE = {"LONG RAW", "NCLOB", "BFILE", "NUMBER(5,-2)", "BINARY_FLOAT"}  # BINARY_FLOAT: read as FLOAT


@pytest.mark.parametrize(("dialect", "declarations"), [("mysql", MYSQL), ("oracle", ORACLE)])
def test_ddl_path_types_each_declaration_as_its_data_arrives(dialect, declarations):
    typed = {}
    for declaration in declarations:
        if declaration in DDL_UNREADABLE or declaration in ORACLE_DDL_UNREADABLE:
            continue
        kind = sqlglot.parse_one(f"CREATE TABLE t (c {declaration})", read=dialect).find(exp.ColumnDef).args["kind"]
        typed[declaration] = spark_type(kind, dialect)

    assert typed == {d: declarations[d] for d in typed}
    assert len(typed) > 20
