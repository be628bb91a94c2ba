"""DataWorks JSON (`dataworks_json`): Oracle row ids, schema names (part of a table's name, in data and DDL), scn,
every op of the op list, exact numbers, booleans.

The document examples and real captures are covered by test_parse_dataworks.py; the scripted apply
scenarios by test_apply.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from format_support import FIXTURES, parse_files, parse_lines, report, run, silver_rows, source_for, write_export

EVERY_OP = FIXTURES / "dataworks_json" / "oracle_and_every_op.jsonl"
ORACLE_LINES = EVERY_OP.read_text().splitlines()[:3]


def test_oracle_table_without_primary_key_is_keyed_by_rowid(spark):
    insert, update, delete = parse_files(spark, source_for("dataworks_json"), EVERY_OP)[:3]

    assert [(r["outcome"], r["op"]) for r in (insert, update, delete)] == [
        ("data", "INSERT"),
        ("data", "UPDATE"),
        ("data", "DELETE"),
    ]
    # a schema other than the database is part of the table's name (README "Configuration")
    assert (insert["db"], insert["schema_name"], insert["table"]) == ("myDatabase.mySchema", "mySchema", "tableName")
    assert insert["primary_key"] == ["rowid"]
    assert insert["after"] == {
        "id": "111",
        "name": "scooter",
        "binData": "aGVsbG8=",
        "ts": "2020-05-24 10:14:29.000",
        "rowid": "AAIUMPAAFAACxExAAE",
    }
    assert insert["columns"] == [
        {"name": "id", "type": "bigint"},
        {"name": "name", "type": "string"},
        {"name": "binData", "type": "binary"},
        {"name": "ts", "type": "timestamp"},
        {"name": "rowid", "type": "string"},
    ]
    assert update["before"]["name"] == "scooter" and update["after"]["name"] == "donald"
    # sequenceId alone orders DataWorks changes; the scn is not part of the key
    assert [(r["seq"], r["seq2"]) for r in (insert, update, delete)] == [
        (Decimal("1590315269000000001"), 0),
        (Decimal("1590315269000000002"), 0),
        (Decimal("1590315269000000003"), 0),
    ]
    assert insert["event_time"] == datetime(2020, 5, 24, 10, 14, 29)


def test_every_op_of_the_op_list_gets_its_kind(spark):
    rows = parse_files(spark, source_for("dataworks_json"), EVERY_OP)[3:]

    assert [(r["outcome"], r["op"]) for r in rows] == [
        ("data", "UPDATE"),
        ("control", "TRANSACTION_BEGIN"),
        ("control", "TRANSACTION_END"),
        ("control", "GTID"),
        ("control", "XACOMMIT"),
        ("control", "XAROLLBACK"),
        *[("ddl", op) for op in ("CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX")],
        ("heartbeat", "MHEARTBEAT"),
    ]
    update = rows[0]
    assert (update["before"], update["after"]) == ({"id": "1", "status": "new"}, {"id": "1", "status": "paid"})
    ddl = {r["op"]: r for r in rows if r["kind"] == "ddl"}
    assert ddl["ALTER"]["ddl"] == "ALTER TABLE orders ADD COLUMN note VARCHAR(100)"
    assert ddl["ERASE"]["ddl"] == "DROP TABLE orders"
    assert (ddl["TRUNCATE"]["db"], ddl["TRUNCATE"]["table"]) == ("shop", "orders")
    assert all(r["reject_reason"] is None for r in rows)


def test_rowid_is_only_a_key_for_oracle_sources(spark, tmp_path):
    message = json.loads(ORACLE_LINES[0])
    message["schema"]["source"]["dbType"] = "MySQL"
    (row,) = parse_lines(spark, source_for("dataworks_json"), tmp_path, [json.dumps(message)])
    assert row["primary_key"] is None and row["outcome"] == "data"


def test_numbers_keep_the_digits_they_were_sent_with(spark, tmp_path):
    message = json.loads(ORACLE_LINES[0])
    message["schema"]["dataColumn"].append({"name": "price", "type": "DOUBLE"})
    message["payload"]["after"]["dataColumn"] |= {"id": "ID", "name": "1.10 and 2", "price": "PRICE"}
    line = json.dumps(message).replace('"ID"', "123456789012345678").replace('"PRICE"', "1.10")
    (row,) = parse_lines(spark, source_for("dataworks_json"), tmp_path, [line])
    assert (row["after"]["id"], row["after"]["name"], row["after"]["price"]) == (
        "123456789012345678",
        "1.10 and 2",
        "1.10",
    )


def test_a_column_declared_twice_is_quarantined(spark, tmp_path):
    message = json.loads(ORACLE_LINES[0])
    message["schema"]["dataColumn"].append({"name": "id", "type": "STRING"})
    (row,) = parse_lines(spark, source_for("dataworks_json"), tmp_path, [json.dumps(message)])
    assert (row["outcome"], row["reject_reason"]) == ("quarantined", "column(s) declared more than once: id")


def test_an_image_naming_a_column_not_declared_is_quarantined(spark, tmp_path):
    """schema.dataColumn declares the table's columns (seed 000); a value of any other column has no type, and
    loading the rest of the row would drop it without a word."""
    message = json.loads(ORACLE_LINES[0])
    message["payload"]["after"]["dataColumn"]["note"] = "not declared"
    update = json.loads(ORACLE_LINES[0])  # a one-message update: the after-image as declared, the before-image not
    image = update["payload"]["after"]["dataColumn"]
    update["payload"] |= {"op": "UPDATE_AFTER", "before": {"dataColumn": image | {"memo": "x"}}}

    rows = parse_lines(spark, source_for("dataworks_json"), tmp_path, [json.dumps(message), json.dumps(update)])

    assert [(r["outcome"], r["reject_reason"]) for r in rows] == [
        ("quarantined", "column(s) not declared in schema.dataColumn: note"),
        ("quarantined", "column(s) not declared in schema.dataColumn: memo"),
    ]


def test_versions_the_documents_do_not_show_are_quarantined(spark, tmp_path):
    """The documents show versions 0.0.1 and 1.0.0 (2.0 is DataWorks 2.0, another format); a message without one
    is read as the documents' format."""
    message = json.loads(ORACLE_LINES[0])
    lines = []
    for version in ("0.0.1", "1.0.0", None, "2.0", "0.0.2"):
        message["version"] = version
        lines.append(json.dumps({k: v for k, v in message.items() if v is not None}))

    rows = parse_lines(spark, source_for("dataworks_json"), tmp_path, lines)

    assert [r["reject_reason"] for r in rows] == [
        None,
        None,
        None,
        "unsupported version '2.0' (expected 0.0.1 or 1.0.0)",
        "unsupported version '0.0.2' (expected 0.0.1 or 1.0.0)",
    ]


def test_oracle_rowid_table_loads_end_to_end(spark, tmp_path):
    source = source_for("dataworks_json", tmp_path)
    insert, update, delete = ORACLE_LINES
    second = json.loads(insert)
    second["payload"]["sequenceId"] = "1590315269000000000"
    second["payload"]["after"]["dataColumn"] |= {"id": 7, "rowid": "AAIUMPAAFAACxExAAF"}
    write_export(source, "topic/part-0.json", [json.dumps(second), insert, update])
    write_export(source, "topic/part-1.json", [delete.replace('"id": 222', '"id": 223')])  # same rowid

    reports = run(spark, source)

    assert silver_rows(source, "myDatabase.mySchema", "tableName") == [
        {
            "id": 7,
            "name": "scooter",
            "binData": b"hello",
            "ts": datetime(2020, 5, 24, 10, 14, 29, tzinfo=UTC),
            "rowid": "AAIUMPAAFAACxExAAF",
        }
    ]
    apply = next(r for r in reports if r["step"] == "apply")
    assert apply["tables"]["myDatabase.mySchema.tableName"]["rows"] == 1


def test_double_columns_keep_the_exact_digits_sent_unless_configured(spark, tmp_path):
    """DataWorks maps DECIMAL and BIGINT UNSIGNED to DOUBLE but sends the exact text: a DOUBLE column keeps it;
    `column_types` gives the column a numeric type instead (a decimal must hold the value exactly)."""
    message = json.loads(ORACLE_LINES[0])
    message["schema"]["dataColumn"] += [{"name": "big", "type": "DOUBLE"}, {"name": "amount", "type": "DOUBLE"}]
    message["payload"]["after"]["dataColumn"] |= {"big": "BIG", "amount": "643039551737872.6580126300"}
    line = json.dumps(message).replace('"BIG"', "9223372036854775808")  # a JSON number beyond int64
    wide = json.loads(line)
    wide["payload"]["after"]["dataColumn"]["amount"] = "12345678901234567890123456789.5"

    default, configured = (
        parse_lines(spark, source_for("dataworks_json", **settings), tmp_path, [line, json.dumps(wide)], name)
        for name, settings in (
            ("a.json", {}),
            (
                "b.json",
                {
                    "column_types": {
                        "myDatabase.mySchema.tableName": {"big": "decimal(20,0)", "amount": "decimal(38,10)"}
                    }
                },
            ),
        )
    )

    assert [(r["after"]["big"], r["after"]["amount"], r["reject_reason"]) for r in default] == [
        ("9223372036854775808", "643039551737872.6580126300", None),
        ("9223372036854775808", "12345678901234567890123456789.5", None),
    ]
    types = [{c["name"]: c["type"] for c in rows[0]["columns"]} for rows in (default, configured)]
    assert [(t["big"], t["amount"]) for t in types] == [("string", "string"), ("decimal(20,0)", "decimal(38,10)")]
    assert (configured[0]["after"]["amount"], configured[0]["reject_reason"]) == ("643039551737872.6580126300", None)
    assert configured[1]["reject_reason"] == "value does not match its declared type in column(s): amount"


def _insert(schema: str | None, key: int, value: str, sequence: int, columns: dict | None = None) -> str:
    """An INSERT into table `orders` of database `shop`, schema `schema` (a PostgreSQL source)."""
    values = {"id": key, "v": value} | (columns or {})
    declared = [{"name": "id", "type": "LONG"}] + [{"name": n, "type": "STRING"} for n in values if n != "id"]
    origin = {"dbType": "PostgreSQL", "dbName": "shop", "schemaName": schema, "tableName": "orders"}
    return json.dumps(
        {
            "schema": {"dataColumn": declared, "primaryKey": ["id"], "source": origin},
            "payload": {
                "before": None,
                "after": {"dataColumn": values},
                "sequenceId": str(sequence),
                "timestamp": {"eventTime": 1763686800000},
                "op": "INSERT",
                "ddl": None,
            },
            "version": "0.0.1",
        }
    )


def _ddl(schema: str, text: str, sequence: int) -> str:
    origin = {"dbType": "PostgreSQL", "dbName": "shop", "schemaName": schema, "tableName": "orders"}
    return json.dumps(
        {
            "schema": {"source": origin},
            "payload": {"sequenceId": str(sequence), "op": "ALTER", "ddl": {"text": text}},
            "version": "0.0.1",
        }
    )


def test_tables_of_two_schemas_stay_two_tables_and_ddl_names_them_by_schema(spark, tmp_path):
    """`schemaName` (PostgreSQL, SQL Server, Oracle sources) is part of a table's name, as Debezium's schema is: the
    same table name in two schemas is two tables (a schema in `unqualified_schemas`, default public, leaves the
    name `db.table`), and a statement's `sales.orders` names schema sales of the message's database."""
    source = source_for("dataworks_json", tmp_path)
    lines = [
        _insert("sales", 1, "sales one", 7000),
        _insert("public", 1, "public one", 7001),
        _ddl("sales", "ALTER TABLE sales.orders ADD COLUMN note VARCHAR(10)", 7002),
        _insert("sales", 2, "sales two", 7003, {"note": "noted"}),
        _insert(None, 3, "no schema", 7004),
    ]
    write_export(source, "topic/part-0.json", lines)

    reports = run(spark, source)

    assert silver_rows(source, "shop.sales", "orders") == [
        {"id": 1, "v": "sales one", "note": None},
        {"id": 2, "v": "sales two", "note": "noted"},
    ]
    assert silver_rows(source, "shop", "orders") == [{"id": 1, "v": "public one"}, {"id": 3, "v": "no schema"}]
    apply = report(reports, "apply")
    assert sorted(apply["tables"]) == ["shop.orders", "shop.sales.orders"]
    assert apply["ddl"] == {"applied": 1}


def test_boolean_values_other_than_json_true_and_false_are_quarantined(spark, tmp_path):
    """BOOLEAN is JSON's boolean, valid values true and false (seed 000); Spark's cast would also take "yes", "t",
    "TRUE", 1 or 0, which are no DataWorks BOOLEAN values."""
    message = json.loads(ORACLE_LINES[0])
    message["schema"]["dataColumn"].append({"name": "ok", "type": "BOOLEAN"})
    values = [True, False, "yes", "t", "TRUE", 1, 0, None]
    lines = []
    for value in values:
        message["payload"]["after"]["dataColumn"]["ok"] = value
        lines.append(json.dumps(message))

    rows = parse_lines(spark, source_for("dataworks_json"), tmp_path, lines)

    bad = "value does not match its declared type in column(s): ok"
    assert [r["reject_reason"] for r in rows] == [None, None, *[bad] * 5, None]
    assert [rows[i]["after"]["ok"] for i in (0, 1, 7)] == ["true", "false", None]
