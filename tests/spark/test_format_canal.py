"""Canal JSON: the OMS and DTS document examples, real open-source Canal messages (Apache Paimon's test data) and
quarantine cases become exactly the expected canonical rows; a scenario, and Paimon's schema-evolution messages
with their DDL, land in silver exactly."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from format_support import FIXTURES, lines_of, run, silver_rows, source_for, write_export

from lakeloader.core.config import SourceConfig

CANAL = FIXTURES / "canal_json"
PAIMON = FIXTURES / "peers" / "paimon" / "canal" / "table"
H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)


def source(**settings) -> SourceConfig:
    return source_for("canal_json", **settings)


def canal(
    kind: str, rows: list[dict] | None, old: list[dict] | None = None, es: int | str = 1700000000000, **fields
) -> str:
    """A Canal message on shop.orders (id int key, amount decimal(10,2), name varchar, photo blob)."""
    message = {
        "data": rows,
        "old": old,
        "database": "shop",
        "table": "orders",
        "type": kind,
        "isDdl": False,
        "es": es,
        "ts": 1700000000300,
        "id": 7,
        "pkNames": ["id"],
        "mysqlType": {"id": "int", "amount": "decimal(10,2)", "name": "varchar(20)", "photo": "blob"},
        "sqlType": {"id": 4, "amount": 3, "name": 12, "photo": 2004},
        "sql": "",
    }
    return json.dumps(message | fields)


def test_oms_examples_as_printed_load_their_unsigned_bigint(parse_messages):
    """OMS's type names carry no signedness: `bigint` holds the examples' 10223372036854775806 (BIGINT UNSIGNED;
    a signed BIGINT is `int64`), so the examples load as printed, but the DELETE, whose key columns its row lacks."""
    rows = parse_messages(source(canal_binary_encoding="base64"), lines_of(CANAL / "oms_examples.jsonl"))

    assert [(r["outcome"], r["op"], r["reject_reason"]) for r in rows] == [
        ("data", "INSERT", None),
        ("data", "UPDATE", None),
        ("quarantined", "DELETE", "primary key column(s) missing from the image: int8, int16"),
        ("ddl", "ALTER", None),
    ]
    assert rows[0]["after"]["col13"] == "10223372036854775806"
    assert {c["name"]: c["type"] for c in rows[0]["columns"]}["col13"] == "decimal(20,0)"
    ddl = rows[3]
    assert (ddl["db"], ddl["table"], ddl["kind"], ddl["raw_op"]) == (
        "connector_test",
        "all_mysql_type_test",
        "ddl",
        "ALTER",
    )
    assert ddl["ddl"] == (
        "alter table connector_test.all_mysql_type_test add column c90 varchar(30) default \"test\" comment 'test'"
    )
    assert (ddl["seq"], ddl["seq2"], ddl["event_time"]) == (
        Decimal(1671177209000),
        0,
        datetime(2022, 12, 16, 7, 53, 29),
    )


def test_oms_examples_with_fitting_values_give_exact_canonical_text_for_every_type(parse_messages):
    fitted = []
    for line in lines_of(CANAL / "oms_examples.jsonl")[:3]:
        message = json.loads(line)
        message["data"][0] |= {"col12": "12345.678", "col13": "1022337203685477580"}
        fitted.append(json.dumps(message))

    insert, update, delete = parse_messages(source(canal_binary_encoding="base64"), fitted)

    assert insert["reject_reason"] is None and insert["op"] == "INSERT" and insert["before"] is None
    assert insert["after"] == {
        "col1": "2020-11-25 00:01:02.000000",  # datetime
        "col2": "hello world",  # varchar
        "col3": "1.2222",  # float
        "col4": "1e-307",  # double (the test re-serialized the document's 700-digit 9.99...E-308 as Python does)
        "col5": "129",  # smallint
        "col6": "00:01:02",  # time
        "col7": "2147483646",  # int
        "col8": "9223372036854775806",  # int64
        "col9": "aGVsbG8gd29ybGQ=",  # blob, Base64 in OMS
        "col10": "3",  # tinyint
        "col11": "2020-11-25",  # date
        "col12": "12345.678",  # decimal without precision
        "col13": "1022337203685477580",  # bigint
        "col14": "2020-11-24 16:01:02.012345",  # timestamp as epoch seconds: 1606233662.012345
    }
    assert {c["name"]: c["type"] for c in insert["columns"]} == {
        "col1": "timestamp_ntz",
        "col2": "string",
        "col3": "float",
        "col4": "double",
        "col5": "int",  # smallint: OMS's integer names carry no signedness, so each holds its UNSIGNED range too
        "col6": "string",
        "col7": "bigint",  # int
        "col8": "bigint",  # int64: a signed BIGINT
        "col9": "binary",
        "col10": "smallint",  # tinyint
        "col11": "date",
        "col12": "string",  # any DECIMAL(65,30) value: exact text
        "col13": "decimal(20,0)",  # bigint
        "col14": "timestamp",
    }
    assert insert["primary_key"] == ["col1", "col2"]
    assert (insert["seq"], insert["seq2"], insert["event_time"]) == (
        Decimal(1609344671000),
        0,
        datetime(2020, 12, 30, 16, 11, 11),
    )
    # the update's old names a column `col` that the row does not have: it stays in the before-image
    assert update["after"]["col2"] == "hello world 2020" and update["before"]["col2"] == "hello world 2020"
    assert update["before"]["col"] == "hello world" and "col" not in update["after"]
    assert update["op"] == "UPDATE" and update["after_partial"] is False
    assert delete["reject_reason"] == "primary key column(s) missing from the image: int8, int16"


def test_dts_examples_in_both_conventions(parse_messages):
    lines = lines_of(CANAL / "dts_examples.jsonl")

    modern = parse_messages(source(), lines)
    legacy = parse_messages(source(canal_dts_legacy_images=True), lines)

    assert [(r["outcome"], r["op"], r["reject_reason"]) for r in modern] == [
        ("quarantined", "DELETE", "DELETE message without rows in data"),
        ("data", "DELETE", None),
        ("ddl", "DDL", None),
    ]
    delete = modern[1]
    assert delete["before"] == {"id": "500000287", "shipping_type": None} and delete["after"] is None
    assert delete["columns"] == [{"name": "id", "type": "bigint"}, {"name": "shipping_type", "type": "string"}]
    assert (delete["seq"], delete["seq2"]) == (Decimal(1600161894000), Decimal(58))
    assert (modern[2]["ddl"], modern[2]["table"]) == ("eg:createxxx", "tablename")
    # before 2022-03-20 the deleted row is in `old`; the example's row lacks its key column
    assert [(r["outcome"], r["reject_reason"]) for r in legacy] == [
        ("quarantined", "primary key column(s) missing from the image: id"),
        ("quarantined", "DELETE message without rows in old"),
        ("ddl", None),
    ]


def test_legacy_dts_update_reads_the_before_image_from_data_and_the_after_image_from_old(parse_messages):
    lines = [
        canal("UPDATE", [{"id": "1", "amount": "1.00", "name": "a", "photo": None}], old=[{"amount": "2.50"}]),
        canal("DELETE", None, old=[{"id": "1", "amount": "2.50", "name": "a", "photo": None}]),
    ]

    legacy = parse_messages(source(canal_dts_legacy_images=True), lines)
    modern = parse_messages(source(), lines[:1])

    update, delete = legacy
    assert update["before"] == {"id": "1", "amount": "1.00", "name": "a", "photo": None}
    assert update["after"] == {"id": "1", "amount": "2.50", "name": "a", "photo": None}
    assert delete["op"] == "DELETE" and delete["before"]["amount"] == "2.50" and delete["reject_reason"] is None
    assert modern[0]["before"]["amount"] == "2.50" and modern[0]["after"]["amount"] == "1.00"


def test_a_bare_integer_type_holding_a_value_beyond_its_signed_range_is_read_as_unsigned(spark, tmp_path):
    """DTS declares types without parameters (seed 004: "mysqlType" gives no precision and the like), so a BIGINT
    UNSIGNED arrives as 'bigint' and an INT UNSIGNED as 'int'. A value beyond the signed range shows the word left
    out: the column takes the type of the UNSIGNED range (the silver column widens) and every value loads exactly;
    a value beyond the signed range of a declaration with a width is still quarantined."""
    config = source_for("canal_json", tmp_path, canal_dts_legacy_images=True)
    types = {"id": "bigint", "big": "bigint", "n": "int", "w": "int(11)"}

    def insert(es: int, id_: int, big: str, n: str, w: str = "1") -> str:
        row = {"id": str(id_), "big": big, "n": n, "w": w}
        return canal("INSERT", [row], es=es, table="u", mysqlType=types, sqlType={})

    t0 = 1795237800000  # 2026-11-21 05:10 UTC, in ms
    write_export(config, "u/0005.json", [insert(t0, 1, "-5", "-7")], H5)
    hour6 = [
        insert(t0 + 3_600_000, 2, "18446744073709551615", "4294967295"),
        insert(t0 + 3_601_000, 3, "9223372036854775807", "2147483648"),
        insert(t0 + 3_603_000, 5, "1", "1", w="2147483648"),  # int(11): the source said signed
    ]
    write_export(config, "u/0006.json", hour6, H5 + timedelta(hours=1))
    reports = run(spark, config, [H5, H5 + timedelta(hours=1)])

    assert silver_rows(config, "shop", "u") == [
        {"id": 1, "big": Decimal(-5), "n": -7, "w": 1},
        {"id": 2, "big": Decimal("18446744073709551615"), "n": 4294967295, "w": 1},
        {"id": 3, "big": Decimal("9223372036854775807"), "n": 2147483648, "w": 1},
    ]
    parse6 = next(r for r in reports if r["step"] == "parse" and r["hour"] == "2026-11-21T06")
    bad = "value does not match its declared type in column(s): "
    assert parse6["quarantine_reasons"] == {f"{bad}w": 1}


SECOND, LAST = 1795237800000, 1795240799000  # 05:10:00 and 05:59:59 of H5, Canal `es` values
TWO_COLUMNS = {"id": "int", "v": "varchar(10)"}


def insert_at(table: str, row: dict, es: int = SECOND, declared: dict = TWO_COLUMNS, key: tuple = ("id",)) -> str:
    """An INSERT on shop.`table` of a message with id 7 (Canal's batch id: messages of one batch share it)."""
    return canal("INSERT", [row], es=es, table=table, mysqlType=declared, sqlType={}, pkNames=list(key))


def ddl_at(table: str, text: str, es: int = SECOND) -> str:
    """A DDL message on shop.`table` of the batch with id 7; its type is Canal's name for the statement."""
    kind = {"DROP": "ERASE"}.get(text.split()[0].upper(), text.split()[0].upper())
    return json.dumps({"database": "shop", "table": table, "type": kind, "isDdl": True, "es": es, "id": 7, "sql": text})


def test_ddl_sharing_its_second_with_changes_takes_effect_between_those_sent_before_and_after_it(spark, tmp_path):
    """Canal's `es` has the binlog's seconds, and a batch's messages share their `id`, so a statement and the
    changes around it tie on (es, id): it takes effect at its place in the export, also across an hour's end and
    on reruns. A TRUNCATE empties the table of the rows sent before it (keyed and keyless), an ADD COLUMN's
    DEFAULT fills the row inserted before it, not the one inserted after it."""
    config = source_for("canal_json", tmp_path)
    keyless = {"v": "varchar(10)"}
    hour5 = [
        insert_at("t", {"id": "1", "v": "a"}),
        ddl_at("t", "TRUNCATE TABLE t"),
        insert_at("t", {"id": "2", "v": "b"}),
        insert_at("d", {"id": "1", "v": "a"}),
        ddl_at("d", "ALTER TABLE d ADD COLUMN c INT NOT NULL DEFAULT 7"),
        insert_at("d", {"id": "2", "v": "b", "c": "1"}, declared=TWO_COLUMNS | {"c": "int"}),
        insert_at("k", {"v": "x"}, declared=keyless, key=()),
        ddl_at("k", "TRUNCATE TABLE k"),
        insert_at("k", {"v": "x"}, declared=keyless, key=()),
        insert_at("h", {"id": "1", "v": "a"}, es=LAST),
    ]
    hour6 = [ddl_at("h", "TRUNCATE TABLE h", es=LAST), insert_at("h", {"id": "2", "v": "b"}, es=LAST)]
    write_export(config, "shop/canal-0005.json", hour5, H5)
    write_export(config, "shop/canal-0006.json", hour6, H5 + timedelta(hours=1))

    run(spark, config, [H5, H5 + timedelta(hours=1), H5])  # the first hour again after the second

    assert silver_rows(config, "shop", "t") == [{"id": 2, "v": "b"}]
    assert silver_rows(config, "shop", "d") == [{"id": 1, "v": "a", "c": 7}, {"id": 2, "v": "b", "c": 1}]
    assert [row["v"] for row in silver_rows(config, "shop", "k")] == ["x"]
    assert silver_rows(config, "shop", "h") == [{"id": 2, "v": "b"}]


@pytest.mark.parametrize("hours", [[H5, H5 + timedelta(hours=1)], [H5 + timedelta(hours=1), H5, H5]])
def test_a_table_moved_and_created_again_in_one_second_keeps_the_changes_sent_after_the_move(spark, tmp_path, hours):
    """DROP TABLE or RENAME TABLE, then CREATE TABLE under the same name, in one second (Canal's `es` ties): the
    changes sent after the move are the new table's, also when they land in the next hour and whatever order
    the hours run in; those sent before it stay with the moved table."""
    config = source_for("canal_json", tmp_path)
    create = "CREATE TABLE {} (id INT PRIMARY KEY, v VARCHAR(10))"
    hour5 = [
        insert_at("r", {"id": "1", "v": "old"}),
        ddl_at("r", "RENAME TABLE r TO r2"),
        ddl_at("r", create.format("r")),
        insert_at("r", {"id": "5", "v": "new"}),
        insert_at("m", {"id": "1", "v": "old"}, es=LAST),
        ddl_at("m", "DROP TABLE m", es=LAST),
        ddl_at("m", create.format("m"), es=LAST),
        insert_at("m", {"id": "2", "v": "new"}, es=LAST),
    ]
    hour6 = [insert_at("m", {"id": "3", "v": "new"}, es=LAST)]
    write_export(config, "shop/canal-0005.json", hour5, H5)
    write_export(config, "shop/canal-0006.json", hour6, H5 + timedelta(hours=1))

    run(spark, config, hours)

    assert silver_rows(config, "shop", "m") == [{"id": 2, "v": "new"}, {"id": 3, "v": "new"}]
    assert silver_rows(config, "shop", "r2") == [{"id": 1, "v": "old"}]
    assert silver_rows(config, "shop", "r") == [{"id": 5, "v": "new"}]


@pytest.mark.parametrize("hours", [[H5], [H5, H5]])
def test_changes_sent_after_a_statement_in_its_second_are_newer_than_the_tables_last_ddl(spark, tmp_path, hours):
    """A table's schema mark (its last statement) is a point: a change of the statement's second sent after it is
    newer, so a column only the data declares (its ADD COLUMN not exported) is added with its values; a keyless
    table's contents are counted between two statements of one second."""
    config = source_for("canal_json", tmp_path)
    declared = {"id": "int", "w": "varchar(5)"}

    def keyless(row: dict, columns: dict) -> str:
        return insert_at("k", row, declared=columns, key=())

    hour5 = [
        insert_at("t", {"id": "1", "v": "a"}),
        ddl_at("t", "ALTER TABLE t DROP COLUMN v"),
        insert_at("t", {"id": "2", "w": "b"}, declared=declared),
        ddl_at("t", "ALTER TABLE t ADD COLUMN z INT DEFAULT 5"),
        insert_at("t", {"id": "3", "w": "c", "z": "1"}, declared=declared | {"z": "int"}),
        keyless({"a": "x", "c": "1"}, {"a": "varchar(5)", "c": "int"}),
        ddl_at("k", "ALTER TABLE k RENAME COLUMN a TO b"),
        keyless({"b": "y", "c": "2"}, {"b": "varchar(5)", "c": "int"}),
        ddl_at("k", "ALTER TABLE k DROP COLUMN c"),
        keyless({"b": "z"}, {"b": "varchar(5)"}),
    ]
    write_export(config, "shop/canal-0005.json", hour5, H5)

    run(spark, config, hours)

    assert silver_rows(config, "shop", "t") == [
        {"id": 1, "z": 5, "w": None},
        {"id": 2, "z": 5, "w": "b"},
        {"id": 3, "z": 1, "w": "c"},
    ]
    assert sorted(row["b"] for row in silver_rows(config, "shop", "k")) == ["x", "y", "z"]


@pytest.mark.parametrize("hours", [[H5, H5 + timedelta(hours=1)], [H5 + timedelta(hours=1), H5, H5]])
def test_columns_swapped_by_one_statement_keep_their_values_under_their_new_names(spark, tmp_path, hours):
    """MySQL performs a statement's renames at once: `RENAME COLUMN a TO b, RENAME COLUMN b TO a` swaps the two
    columns, their values with them, also for a change older than the statement applied after it."""
    config = source_for("canal_json", tmp_path)
    declared = {"id": "int", "a": "varchar(5)", "b": "varchar(5)"}
    hour5 = [insert_at("t", {"id": "1", "a": "x", "b": "y"}, declared=declared)]
    hour6 = [
        ddl_at("t", "ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a", es=LAST),
        insert_at("t", {"id": "2", "a": "p", "b": "q"}, declared=declared, es=LAST),
    ]
    write_export(config, "shop/canal-0005.json", hour5, H5)
    write_export(config, "shop/canal-0006.json", hour6, H5 + timedelta(hours=1))

    run(spark, config, hours)

    assert silver_rows(config, "shop", "t") == [{"id": 1, "a": "y", "b": "x"}, {"id": 2, "a": "p", "b": "q"}]


def test_paimon_schema_evolution_messages(parse_messages):
    lines = [line for n in range(1, 6) for line in lines_of(PAIMON / "schemaevolution" / f"canal-data-{n}.txt")]

    rows = parse_messages(source(), lines)

    assert all(r["reject_reason"] is None for r in rows)
    assert [r["outcome"] for r in rows].count("ddl") == 16
    two_rows = [r for r in rows if r["origin_line"] == 2]
    assert [(r["origin_index"], r["after"]["_id"], r["after"]["v1"]) for r in two_rows] == [
        (0, "2", "two"),
        (1, "4", "four"),
    ]
    assert two_rows[0]["seq"] == two_rows[1]["seq"] == Decimal(1683006724000)
    alter = rows[3]
    assert alter["kind"] == "ddl" and alter["ddl"].endswith("ALTER TABLE schema_evolution_1 ADD COLUMN v2 INT")
    bigint_update = next(r for r in rows if r["op"] == "UPDATE" and r["after"]["_id"] == "3")
    assert bigint_update["before"] == {"pt": "2", "_id": "3", "v1": "three", "v2": "30"}
    assert bigint_update["after"] == {"pt": "2", "_id": "3", "v1": "three", "v2": "30000000000"}
    assert {c["name"]: c["type"] for c in bigint_update["columns"]}["v2"] == "bigint"
    delete = next(r for r in rows if r["op"] == "DELETE")
    assert delete["before"]["_id"] == "5" and delete["seq2"] == Decimal(42)
    binary_update = rows[-1]
    assert binary_update["before"]["v4"] is None
    assert base64.b64decode(binary_update["after"]["v4"]) == b"four.bin.long"
    assert binary_update["after"]["v5"] == "4.00000000004"


def test_paimon_all_types_message_keeps_every_value_exact(parse_messages):
    first, second = parse_messages(source(), lines_of(PAIMON / "alltype" / "canal-data.txt"))

    assert (first["reject_reason"], first["origin_index"], second["origin_index"]) == (None, 0, 1)
    types = {c["name"]: c["type"] for c in first["columns"]}
    values = first["after"]
    expected = {
        "_id": ("int", "1"),
        "pt": ("decimal(2,1)", "1.1"),
        "_tinyint1": ("boolean", "true"),  # TINYINT(1) is MySQL's BOOL
        "_boolean": ("boolean", "true"),
        "_bool": ("boolean", "false"),
        "_tinyint": ("tinyint", "1"),
        "_tinyint_unsigned": ("smallint", "2"),
        "_tinyint_unsigned_zerofill": ("smallint", "3"),
        "_smallint": ("smallint", "1000"),
        "_smallint_unsigned": ("int", "2000"),
        "_smallint_unsigned_zerofill": ("int", "3000"),
        "_mediumint": ("int", "100000"),
        "_mediumint_unsigned": ("int", "200000"),
        "_mediumint_unsigned_zerofill": ("int", "300000"),
        "_int": ("int", "1000000"),
        "_int_unsigned": ("bigint", "2000000"),
        "_int_unsigned_zerofill": ("bigint", "3000000"),
        "_bigint": ("bigint", "10000000000"),
        "_bigint_unsigned": ("decimal(20,0)", "20000000000"),
        "_bigint_unsigned_zerofill": ("decimal(20,0)", "30000000000"),
        "_serial": ("decimal(20,0)", "40000000000"),
        "_float": ("float", "1.5"),
        "_float_unsigned": ("float", "2.5"),
        "_float_unsigned_zerofill": ("float", "3.5"),
        "_real": ("double", "1.000001"),
        "_real_unsigned": ("double", "2.000002"),
        "_real_unsigned_zerofill": ("double", "3.000003"),
        "_double": ("double", "1.000011"),
        "_double_unsigned": ("double", "2.000022"),
        "_double_unsigned_zerofill": ("double", "3.000033"),
        "_double_precision": ("double", "1.000111"),
        "_double_precision_unsigned": ("double", "2.000222"),
        "_double_precision_unsigned_zerofill": ("double", "3.000333"),
        "_numeric": ("decimal(8,3)", "12345.110"),
        "_numeric_unsigned": ("decimal(8,3)", "12345.220"),
        "_numeric_unsigned_zerofill": ("decimal(8,3)", "12345.330"),
        "_fixed": ("string", "123456789876543212345678987654321.110"),  # 40 digits: beyond Spark's decimals
        "_fixed_unsigned": ("string", "123456789876543212345678987654321.220"),
        "_fixed_unsigned_zerofill": ("string", "123456789876543212345678987654321.330"),
        "_decimal": ("decimal(8,0)", "11111"),
        "_decimal_unsigned": ("decimal(8,0)", "22222"),
        "_decimal_unsigned_zerofill": ("decimal(8,0)", "33333"),
        "_date": ("date", "2023-03-23"),
        "_datetime": ("timestamp_ntz", "2023-03-23 14:30:05.000000"),
        "_datetime3": ("timestamp_ntz", "2023-03-23 14:30:05.123000"),
        "_datetime6": ("timestamp_ntz", "2023-03-23 14:30:05.123456"),
        "_datetime_p": ("timestamp_ntz", "2023-03-24 14:30:00.000000"),
        "_datetime_p2": ("timestamp_ntz", "2023-03-24 14:30:05.120000"),
        "_timestamp": ("timestamp", "2023-03-23 15:00:10.123456"),
        "_timestamp0": ("timestamp", "2023-03-23 00:10:00.000000"),
        "_char": ("string", "Paimon"),
        "_varchar": ("string", "Apache Paimon"),
        "_tinytext": ("string", "Apache Paimon MySQL TINYTEXT Test Data"),
        "_text": ("string", "Apache Paimon MySQL Test Data"),
        "_mediumtext": ("string", "Apache Paimon MySQL MEDIUMTEXT Test Data"),
        "_longtext": ("string", "Apache Paimon MySQL Long Test Data"),
        "_json": ("string", '{"a": "b"}'),
        "_enum": ("string", "1"),  # open-source Canal sends the ENUM's index
        "_year": ("int", "2023"),
        "_time": ("string", "10:13:23"),
        "_set": ("string", "3"),  # ... and the SET's bit mask
    }
    assert {name: (types[name], values[name]) for name in expected} == expected
    binaries = {name: base64.b64decode(values[name]) for name, kind in types.items() if kind == "binary"}
    assert binaries["_bin"] == b"bytes" and binaries["_varbin"] == b"more bytes"
    assert binaries["_tinyblob"] == b"TINYBLOB type test data"
    assert binaries["_blob"] == b"BLOB type test data"
    assert binaries["_mediumblob"] == b"MEDIUMBLOB type test data"
    assert binaries["_longblob"] == b"LONGBLOB  bytes test data"
    # spatial values are MySQL's internal form, a 4-byte SRID then WKB: POINT(1 1)
    assert binaries["_point"] == bytes(4) + bytes.fromhex("0101000000000000000000f03f000000000000f03f")
    assert set(binaries) == {
        *("_bin", "_varbin", "_tinyblob", "_blob", "_mediumblob", "_longblob", "_point", "_geometry"),
        *("_linestring", "_polygon", "_multipoint", "_multiline", "_multipolygon", "_geometrycollection"),
    }
    assert second["after"]["_serial"] == "50000000000" and second["after"]["pt"] == "2.2"
    assert {value for name, value in second["after"].items() if name not in ("_id", "pt", "_serial")} == {None}


def test_table_without_primary_key_declares_none(parse_messages):
    rows = parse_messages(source(), lines_of(PAIMON / "nonpk" / "canal-data-1.txt"))

    assert [(r["op"], r["primary_key"], r["after"]) for r in rows] == [
        ("INSERT", None, {"v0": "five", "v1": "50"}),
        ("INSERT", None, {"v0": "five", "v1": "50"}),
    ]
    assert [r["seq2"] for r in rows] == [Decimal(81), Decimal(84)]


def test_impossible_declared_types_become_strings(parse_messages):
    message = json.loads(canal("INSERT", [{"id": "1", "amount": "1.5", "name": "a", "photo": None}]))
    message["mysqlType"] |= {"amount": "decimal(5,10)", "id": "decimal(0)"}

    (row,) = parse_messages(source(), [json.dumps(message)])

    assert row["reject_reason"] is None and row["after"]["amount"] == "1.5"
    assert [(c["name"], c["type"]) for c in row["columns"]][:2] == [("id", "string"), ("amount", "string")]


def test_full_load_init_rows_are_inserts(parse_messages):
    (row,) = parse_messages(source(), [canal("INIT", [{"id": "9", "amount": "0.10", "name": "x", "photo": "\u00ff"}])])

    assert (row["op"], row["raw_op"], row["kind"]) == ("INSERT", "INIT", "data")
    assert row["after"] == {"id": "9", "amount": "0.10", "name": "x", "photo": "/w=="}  # one byte, 0xFF


def test_bad_messages_are_quarantined_whole_with_their_reason(parse_messages):
    good_row = {"id": "1", "amount": "1.00", "name": "a", "photo": None}
    lines = [
        "not json",
        "",
        json.dumps({"database": "shop", "table": "orders", "data": [good_row]}),
        canal("UPSERT", [good_row]),
        canal("INSERT", [good_row], table=None),
        canal("INSERT", [good_row], es="yesterday"),
        canal("INSERT", []),
        canal("UPDATE", [good_row, good_row], old=[{"amount": "2.00"}]),
        canal("INSERT", [good_row, good_row | {"amount": "123456789.00"}, good_row | {"id": "x"}]),
        canal("INSERT", [good_row, good_row | {"id": None}]),
        canal("INSERT", [good_row | {"photo": "\u4e2d"}]),  # not a Latin-1 character: no byte
        canal("INSERT", good_row),  # `data` an object, not an array of rows
        canal("INSERT", [good_row], pkNames="id", mysqlType=["int"]),
        canal("INSERT", [good_row]) + " trailing",
        canal("INSERT", [good_row]) + canal("INSERT", [good_row | {"id": "2"}]),  # two messages on one line
    ]

    rows = parse_messages(source(), lines)

    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows] == [
        (1, "quarantined", "malformed JSON: not a JSON object"),
        (2, "quarantined", "empty line"),
        (3, "quarantined", "missing type"),
        (4, "quarantined", "unknown type 'UPSERT'"),
        (5, "quarantined", "missing table"),
        (6, "quarantined", "es is missing or not a number"),
        (7, "quarantined", "INSERT message without rows in data"),
        (8, "quarantined", "UPDATE message whose old does not have one entry per data row"),
        (9, "quarantined", "value does not match its declared type in column(s): amount, id"),
        (10, "quarantined", "primary key column(s) missing from the image: id"),
        (11, "quarantined", "value does not match its declared type in column(s): photo"),
        (12, "quarantined", "malformed message: not the format's structure at: data"),
        (13, "quarantined", "malformed message: not the format's structure at: pkNames, mysqlType"),
        (14, "quarantined", "malformed JSON: more text after the message's JSON value"),
        (15, "quarantined", "malformed JSON: more text after the message's JSON value"),
    ]


def test_scenario_lands_in_silver_exactly(spark, tmp_path):
    config = source_for("canal_json", tmp_path)
    t0 = 1795237800000  # 2026-11-21 05:10 UTC, in ms

    def row(id_: int, amount: str, name: str, photo: str | None = None) -> dict:
        return {"id": str(id_), "amount": amount, "name": name, "photo": photo}

    hour5 = [
        canal("INSERT", [row(1, "10.50", "ann", "\u0000\u00ff"), row(2, "7.00", "bob")], es=t0),
        canal("INSERT", [row(3, "1.25", "cy")], es=t0 + 1000),
        canal("UPDATE", [row(1, "12.00", "ann", "\u0000\u00ff")], old=[{"amount": "10.50"}], es=t0 + 2000),
        canal("DELETE", [row(2, "7.00", "bob")], es=t0 + 3000),
        json.dumps(
            {
                "database": "shop",
                "table": "orders",
                "type": "ALTER",
                "isDdl": True,
                "es": t0 + 4000,
                "sql": "ALTER TABLE orders ADD COLUMN note TEXT",
            }
        ),
    ]
    hour6 = [
        canal("UPDATE", [row(4, "1.25", "cy")], old=[{"id": "3"}], es=t0 + 3_600_000),  # the key changes
        canal("INIT", [row(5, "0.01", "dee")], es=t0 + 3_601_000),
        canal("UPDATE", [row(1, "99.99", "stale")], old=[{"amount": "10.50"}], es=t0 + 1500),  # older than the row
    ]

    write_export(config, "shop/canal-0005.json", hour5, H5)
    write_export(config, "shop/canal-0006.json", hour6, H5 + timedelta(hours=1))
    reports = run(spark, config, [H5, H5 + timedelta(hours=1)])

    assert silver_rows(config, "shop", "orders") == [
        {"id": 1, "amount": Decimal("12.00"), "name": "ann", "photo": b"\x00\xff", "note": None},
        {"id": 4, "amount": Decimal("1.25"), "name": "cy", "photo": None, "note": None},
        {"id": 5, "amount": Decimal("0.01"), "name": "dee", "photo": None, "note": None},
    ]
    parse5 = next(r for r in reports if r["step"] == "parse" and r["hour"] == "2026-11-21T05")
    # messages counted by outcome add up to the lines read; the first data message holds two rows, two changes
    assert parse5["outcomes"] == {"data": 4, "ddl": 1, "heartbeat": 0, "control": 0, "excluded": 0, "quarantined": 0}
    assert (parse5["lines"], parse5["changes"], parse5["tables"]["shop.orders"]) == (5, 5, {"data": 4, "ddl": 1})


def test_mysql_type_list_loads_exactly_as_declared(parse_messages):
    """TINYINT(1) is a boolean (as the data arrives: 1/0), DECIMAL(65,30) and a bare DECIMAL (as DTS declares every
    decimal) keep every digit MySQL allows, FLOAT is float, DECIMAL(p,0) is decimal(p,0); a TINYINT(1) holding
    another number than 0/1 is quarantined (configure `column_types` tinyint for such a column)."""
    widest = "-" + "9" * 35 + "." + "9" * 30  # DECIMAL(65,30)'s minimum
    declared = {"id": "int", "flag": "tinyint(1)", "exact": "decimal(65,30)", "bare": "decimal"}
    declared |= {"f": "float", "whole": "decimal(18,0)", "ubig": "bigint(20) unsigned"}
    row = {"id": "1", "flag": "1", "exact": widest, "bare": widest, "f": "1.5", "whole": "-999999999999999999"}
    row |= {"ubig": "18446744073709551615"}
    lines = [
        canal("INSERT", [row], mysqlType=declared),
        canal("INSERT", [row | {"id": "2", "flag": "0", "bare": "1e-30"}], mysqlType=declared),
        canal("INSERT", [row | {"id": "3", "flag": "2"}], mysqlType=declared),
    ]
    overridden = source(column_types={"shop.orders": {"flag": "tinyint", "bare": "decimal(38,2)"}})

    first, second, bad = parse_messages(source(), lines)
    (configured,) = parse_messages(overridden, lines[2:], "c.json")

    assert {c["name"]: c["type"] for c in first["columns"]} == {
        "id": "int",
        "flag": "boolean",
        "exact": "string",
        "bare": "string",
        "f": "float",
        "whole": "decimal(18,0)",
        "ubig": "decimal(20,0)",
    }
    assert first["after"] == row | {"flag": "true"}
    assert (second["after"]["flag"], second["after"]["bare"]) == ("false", "1e-30")
    assert bad["reject_reason"] == "value does not match its declared type in column(s): flag"
    assert configured["reject_reason"] == "value does not match its declared type in column(s): bare"  # > 38 digits
    assert {c["name"]: c["type"] for c in configured["columns"]}["flag"] == "tinyint"


def canal_values(rows: list[dict]) -> list[str]:
    """INSERT messages on shop.values (id int key, a date, a double and a float column), one row each."""
    types = {"id": "int", "da": "date", "dbl": "double", "flt": "float"}
    return [
        canal("INSERT", [{"id": str(i)} | row], table="values", pkNames=["id"], mysqlType=types, sqlType={})
        for i, row in enumerate(rows, 1)
    ]


def test_a_date_of_year_0_is_quarantined_as_a_value_not_matching_its_type(parse_messages):
    # a year-0 date cast and loaded, and the table could then not be read (year 0 is out of Python's range)
    lines = canal_values([{"da": "0000-01-01"}, {"da": "0001-01-01"}, {"da": "9999-12-31"}])

    rows = parse_messages(source(), lines)

    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("quarantined", "value does not match its declared type in column(s): da"),
        ("data", None),
        ("data", None),
    ]
    assert [r["after"]["da"] for r in rows[1:]] == ["0001-01-01", "9999-12-31"]


def test_a_double_or_float_value_mysql_cannot_hold_is_quarantined_as_not_matching_its_type(parse_messages):
    # 1e400 and a FLOAT's 3.5e38 loaded as inf, and NaN or Infinity as themselves: MySQL stores none of them
    bad = [{"dbl": "1e400"}, {"flt": "3.5e38"}, {"dbl": "NaN"}, {"dbl": "Infinity"}, {"flt": "-Infinity"}]
    good = [{"dbl": "1.7976931348623157e308", "flt": "3.4e38"}, {"dbl": "-2.5e-300", "flt": "-1.5"}]

    rows = parse_messages(source(), canal_values(bad + good))

    reason = "value does not match its declared type in column(s): "
    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("quarantined", reason + "dbl"),
        ("quarantined", reason + "flt"),
        ("quarantined", reason + "dbl"),
        ("quarantined", reason + "dbl"),
        ("quarantined", reason + "flt"),
        ("data", None),
        ("data", None),
    ]
    assert [(r["after"]["dbl"], r["after"]["flt"]) for r in rows[5:]] == [
        ("1.7976931348623157e308", "3.4e38"),
        ("-2.5e-300", "-1.5"),
    ]
