"""A table's identity: the schema where the format names one, and identifier case as the source compares it."""

from __future__ import annotations

import json

from format_support import parse_lines, run, silver_rows, silver_schema, source_for, write_export

from tools.cdcgen import wire

H5 = wire.BASE


def postgres_event(schema: str, table: str, key: int) -> str:
    """A Debezium PostgreSQL insert (payload only) of (id) into database `inventory`, schema `schema`."""
    origin = {"connector": "postgresql", "name": "pg", "ts_ms": 1795237800000, "db": "inventory"}
    origin |= {"schema": schema, "table": table}
    payload = {"op": "c", "before": None, "after": {"id": key}, "source": origin, "ts_ms": 1795237800005}
    return json.dumps({"payload": payload})


def test_tables_of_two_postgres_schemas_are_two_tables_and_the_default_schema_keeps_its_name(spark, tmp_path):
    source = source_for("debezium_json")
    events = [("public", "products", 1), ("inventory", "products", 2), ("Inventory", "orders", 3)]
    rows = parse_lines(spark, source, tmp_path, [postgres_event(*event) for event in events])
    names = [(r["db"], r["schema_name"], r["table"], r["reject_reason"]) for r in rows]
    assert names == [
        ("inventory", "public", "products", None),  # as before: the default schema does not qualify
        ("inventory", "inventory", "products", None),  # a schema named as its database neither
        ("inventory", "Inventory", "orders", None),
    ]
    other = parse_lines(spark, source, tmp_path, [postgres_event("sales", "products", 4)], "other.json")
    assert [(r["db"], r["table"]) for r in other] == [("inventory.sales", "products")]


def canal(kind: str, table: str, rows: list[dict] | None, pk: list[str], sql: str = "", es: int = 1) -> str:
    message = {"data": rows, "old": None, "database": "shop", "table": table, "type": kind, "isDdl": not rows}
    message |= {"es": es, "ts": es, "id": es, "pkNames": pk, "sql": sql}
    if rows:
        message["mysqlType"] = {name: "bigint" for name in rows[0]}
    return json.dumps(message)


def test_a_primary_key_named_in_another_case_than_its_column_finds_it(spark, tmp_path):
    rows = parse_lines(spark, source_for("canal_json"), tmp_path, [canal("INSERT", "t3", [{"k1": "1"}], ["K1"])])
    assert [(r["primary_key"], r["reject_reason"]) for r in rows] == [(["k1"], None)]


def test_with_case_insensitive_table_names_a_ddl_naming_T3_alters_the_data_table_t3(spark, tmp_path):
    source = source_for("canal_json", tmp_path, lower_case_table_names=True, tables=("SHOP.T3",))
    lines = [
        canal("INSERT", "t3", [{"k1": "1", "v": "1"}], ["K1"], es=1),
        canal("ALTER", "T3", None, [], sql="ALTER TABLE T3 ADD COLUMN w BIGINT", es=2),
        canal("INSERT", "T3", [{"k1": "2", "v": "2", "w": "3"}], ["k1"], es=3),
    ]
    write_export(source, "t3/part-0.json", lines, H5)
    (apply,) = [r for r in run(spark, source, [H5]) if r["step"] == "apply"]
    assert list(apply["tables"]) == ["shop.t3"]
    assert silver_schema(source, "shop", "t3") == {"k1": "int64", "v": "int64", "w": "int64"}
    assert silver_rows(source, "shop", "t3") == [{"k1": 1, "v": 1, "w": None}, {"k1": 2, "v": 2, "w": 3}]
