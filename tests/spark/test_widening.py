"""Silver column types: widened when values or DDL need a wider type, changes no type can hold quarantined, and
merges correct on keys whose file statistics delta-rs writes wrongly (decimal(20,0) keys at or above 2^63)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder, write_deltalake
from format_support import report, run, silver_rows, silver_schema, source_for, write_export

from lakeloader.apply import schema_changes as D
from lakeloader.apply.change_set import exact_cast as _exact_cast
from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.widening import is_widening, widest
from lakeloader.core import zones
from lakeloader.core.config import WebhookAlert
from lakeloader.core.storage import open_store
from lakeloader.engine import base as E
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader_airflow import checks

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
T0 = 1795237800000  # 2026-11-21 05:10 UTC, in ms


def canal(kind: str, rows: list[dict], types: dict[str, str], es: int, old: list[dict] | None = None) -> str:
    """A Canal message on shop.t keyed by `id`, with the given mysqlType declarations."""
    return json.dumps(
        {
            "data": rows,
            "old": old,
            "database": "shop",
            "table": "t",
            "type": kind,
            "isDdl": False,
            "es": es,
            "ts": es,
            "pkNames": ["id"],
            "mysqlType": types,
            "sql": "",
        }
    )


def test_the_widening_lattice_holds_every_old_value():
    widenings = [
        ("tinyint", "smallint"), ("smallint", "int"), ("int", "bigint"), ("tinyint", "bigint"),
        ("float", "double"), ("int", "double"), ("smallint", "float"), ("date", "timestamp_ntz"),
        ("decimal(10,2)", "decimal(30,2)"), ("decimal(10,2)", "decimal(12,4)"), ("int", "decimal(10,0)"),
        ("bigint", "decimal(20,0)"), ("boolean", "string"),
    ]  # fmt: skip
    refused = [
        ("bigint", "int"), ("int", "smallint"), ("double", "float"), ("bigint", "double"), ("int", "float"),
        ("decimal(10,2)", "decimal(10,4)"), ("decimal(10,2)", "decimal(10,1)"), ("int", "decimal(9,0)"),
        ("bigint", "decimal(19,1)"), ("timestamp_ntz", "date"), ("decimal(5,2)", "double"),
    ]  # fmt: skip
    assert [pair for pair in widenings if not is_widening(*pair)] == []
    assert [pair for pair in refused if is_widening(*pair)] == []
    assert not is_widening("int", "string", to_string=False)
    assert [widest(a, b) for a, b in [
        ("int", "bigint"), ("bigint", "int"), ("int", "float"), ("decimal(10,2)", "decimal(10,4)"),
        ("bigint", "decimal(5,2)"), ("decimal(38,30)", "bigint"), ("bigint", "double"), ("int", "date"),
        ("int", "string"),
    ]] == ["bigint", "bigint", "double", "decimal(12,4)", "decimal(21,2)", None, None, None, None]  # fmt: skip


def test_a_value_takes_the_silver_type_only_when_it_survives_the_cast_exactly():
    cases = [
        ([0, 1, 2, None], pa.int8(), pa.bool_(), [False, True, None, None], [True, True, False, True]),
        ([0.1, 0.5], pa.float64(), pa.float32(), [None, 0.5], [False, True]),
        (["1.5", "abc", None, "1.555"], pa.string(), pa.decimal128(10, 2), [Decimal("1.50"), None, None, None],
         [True, False, True, False]),
        ([2**40, 5], pa.int64(), pa.int32(), [None, 5], [False, True]),
        ([b"\xff", b"ok"], pa.binary(), pa.string(), [None, "ok"], [False, True]),
    ]  # fmt: skip
    for values, source, target, cast, fits in cases:
        result = _exact_cast(pa.array(values, source), target)
        assert (result[0].to_pylist(), result[1].to_pylist()) == (cast, fits), (source, target)


def test_merges_update_keys_above_2_63_whatever_the_file_statistics_say(tmp_path):
    """A table written before the fix (plain delta-rs: statistics clamped to 2^63-1) and one the engine writes
    (the key left out of the statistics once it reaches 2^63): the engine's merge updates the key in both
    instead of inserting it again, and a filtered read finds it."""
    engine, schema = DeltaRsEngine(), pa.schema([("id", pa.decimal128(20, 0)), ("v", pa.string())])
    keys = [Decimal(2**63), Decimal(2**64 - 1), Decimal(5)]
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    for key in keys:
        write_deltalake(old, pa.table({"id": [key], "v": ["a"]}, schema), mode="append")
    clamped = sorted(pa.table(DeltaTable(old).get_add_actions(flatten=True))["max.id"].to_pylist())
    assert clamped == [5, 2**63 - 1, 2**63 - 1]  # the bug: 2^63 and 2^64-1 recorded as 2^63-1
    engine.create(new, schema, {}, {})
    for key in keys:
        engine.merge(new, pa.table({"id": [key], "v": ["a"], E.ACTION: [E.UPSERT]}), ["id"], (), {})

    for uri in (old, new):
        changes = pa.table({"id": keys[:2], "v": ["b", "c"], E.ACTION: [E.UPSERT, E.DELETE]})
        result = engine.merge(uri, changes, ["id"], (), {})
        assert (result.inserted, result.updated, result.deleted) == (0, 1, 1)
        assert sorted(engine.read(uri).to_pylist(), key=lambda r: r["id"]) == [
            {"id": Decimal(5), "v": "a"},
            {"id": Decimal(2**63), "v": "b"},
        ]
        assert DeltaTable(uri).metadata().configuration[E.STATS_COLUMNS_PROPERTY] == "v"
        query = QueryBuilder().register("t", DeltaTable(uri))  # other readers no longer skip the file either
        assert pa.table(query.execute(f"SELECT count(*) AS n FROM t WHERE id = {2**63}"))["n"].to_pylist() == [1]


def test_deletes_counts_and_merges_find_decimals_a_double_does_not_hold_whatever_the_statistics_say(tmp_path):
    """delta-rs records a decimal's file statistics as doubles: the seed's 19-digit sequenceIds and a 17-digit
    decimal(20,2) key are rounded, and pruning on them hid the rows. A table an earlier version wrote (every column
    with statistics, already rounded) and one the engine writes both find them."""
    engine = DeltaRsEngine()
    schema = pa.schema([("id", pa.decimal128(20, 2)), (E.SEQ, pa.decimal128(38, 0)), ("v", pa.string())])
    seqs, keys = [Decimal(1620457642589000101), Decimal(1620457642589000102)], [Decimal("123456789012345.67")] * 2
    keys[1] += 1
    rows = pa.table({"id": keys, E.SEQ: seqs, "v": ["a", "b"]}, schema)
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    write_deltalake(old, rows, configuration={E.STATS_COLUMNS_PROPERTY: f"id,{E.SEQ},v"})
    assert pa.table(DeltaTable(old).get_add_actions(flatten=True))[f"max.{E.SEQ}"].to_pylist() == [
        Decimal(1620457642589000192)  # the bug: both rows recorded as one rounded value
    ]
    engine.create(new, schema, {}, {})
    engine.merge(new, rows.append_column(E.ACTION, pa.array([E.UPSERT] * 2)), ["id"], (), {})

    for uri in (old, new):
        assert engine.row_count(uri, E.after((E.SEQ,), (Decimal(1620457642589000102),))) == 0
        changes = pa.table(
            {"id": keys[:1], E.SEQ: seqs[:1], "v": ["c"], E.ACTION: [E.UPSERT]},
            schema.append(pa.field(E.ACTION, pa.string())),
        )
        result = engine.merge(uri, changes, ["id"], (), {})
        assert (result.inserted, result.updated) == (0, 1)
        assert engine.delete_where(uri, E.before((E.SEQ,), (Decimal(1620457642589000103),)), {}) == 2
        assert DeltaTable(uri).metadata().configuration[E.STATS_COLUMNS_PROPERTY] == "v"


def test_a_key_above_2_63_is_updated_and_deleted_not_duplicated(spark, tmp_path):
    config = source_for("canal_json", tmp_path)
    types = {"id": "bigint(20) unsigned", "v": "varchar(10)"}
    big, bigger = str(2**63), str(2**64 - 1)
    write_export(
        config, "t/0005.json", [canal("INSERT", [{"id": big, "v": "a"}, {"id": bigger, "v": "b"}], types, T0)], H5
    )
    hour6 = [
        canal("UPDATE", [{"id": big, "v": "A"}], types, T0 + 3_600_000, old=[{"v": "a"}]),
        canal("DELETE", [{"id": bigger, "v": "b"}], types, T0 + 3_601_000),
    ]
    write_export(config, "t/0006.json", hour6, H6)

    reports = run(spark, config, [H5, H6])

    assert silver_rows(config, "shop", "t") == [{"id": Decimal(big), "v": "A"}]
    counts = report(reports, "apply", H6)["tables"]["shop.t"]
    assert (counts["inserted"], counts["updated"], counts["deleted"], counts["rows"]) == (0, 1, 1, 1)


def test_an_int_column_widens_to_bigint_when_values_outgrow_it(spark, tmp_path):
    """Canal's mysqlType goes from int to bigint, decimal(10,2) to decimal(30,2) (a 24-digit value) and float to
    double without any DDL: the columns widen, the change is recorded in the schema history and the apply report,
    and a column whose new declaration no type can share with the old one (int, then varchar) keeps its type:
    the value that fits loads, the one that does not is quarantined with the reason. A rerun changes nothing."""
    config = source_for("canal_json", tmp_path)
    old = {"id": "int", "n": "int", "amount": "decimal(10,2)", "f": "float", "code": "int"}
    new = {"id": "int", "n": "bigint", "amount": "decimal(30,2)", "f": "double", "code": "varchar(10)"}
    row1 = {"id": "1", "n": "7", "amount": "1.50", "f": "0.5", "code": "3"}
    write_export(config, "t/0005.json", [canal("INSERT", [row1], old, T0)], H5)
    huge = "123456789012345678901234.25"
    hour6 = [
        canal(
            "UPDATE",
            [{**row1, "n": "3000000000", "amount": huge, "f": "0.1", "code": "42"}],
            new,
            T0 + 3_600_000,
            [row1],
        ),
        canal("INSERT", [{**row1, "id": "2", "code": "abc"}, {**row1, "id": "4", "code": "xyz"}], new, T0 + 3_601_000),
    ]
    write_export(config, "t/0006.json", hour6, H6)

    reports = run(spark, config, [H5, H6])
    run(spark, config, [H6])  # a rerun of the hour

    assert silver_schema(config, "shop", "t") == {
        "id": "int32", "n": "int64", "amount": "decimal128(30, 2)", "f": "double", "code": "int32",
    }  # fmt: skip
    assert silver_rows(config, "shop", "t") == [
        {"id": 1, "n": 3000000000, "amount": Decimal(huge), "f": 0.1, "code": 42},
    ]
    applied = report(reports, "apply", H6)
    assert [(c["origin"], c["change"]) for c in applied["schema_changes"]] == [
        (
            "t/0006.json:1",
            "widened n from int to bigint; widened amount from decimal(10,2) to decimal(30,2); widened f from float "
            "to double: the data needs it (no DDL)",
        )
    ]
    reason = "column code: a string value that the silver column's int cannot hold, and no type holds both exactly"
    assert (applied["rejected_changes"], applied["rejection_reasons"]) == (2, {reason: 2})
    lake = Path(config.lake_root)
    history = DeltaRsEngine().read(str(lake / zones.schema_history_dir("src"))).to_pylist()
    assert [(h["raw_op"], h["status"], h["origin_line"], h["detail"]) for h in history] == [
        ("WIDEN", "applied", 1, applied["schema_changes"][0]["change"])
    ]
    quarantined = DeltaRsEngine().read(str(lake / zones.apply_quarantine_dir("src"))).to_pylist()
    assert sorted((q["table"], q["reason"], json.loads(q["row"])["code"], q["action"]) for q in quarantined) == [
        ("t", reason, "abc", "upsert"),
        ("t", reason, "xyz", "upsert"),
    ]  # two rows of one message, kept once each although the hour ran twice


def test_a_text_column_takes_a_typed_value_as_the_source_wrote_it(spark, tmp_path):
    """A column the silver table holds as text, declared as a number by a later message, takes the value's own
    text (not '7.5' and '1000.0', an engine's rendering of the number)."""
    config = source_for("canal_json", tmp_path)
    write_export(config, "t/0005.json", [canal("INSERT", [{"id": "1", "v": "abc"}], {"id": "int", "v": "text"}, T0)])
    later = canal("INSERT", [{"id": "2", "v": "7.50"}, {"id": "3", "v": "1e3"}], {"id": "int", "v": "double"}, T0 + 1)
    write_export(config, "t/0006.json", [later], H6)

    run(spark, config, [H5, H6])

    assert silver_schema(config, "shop", "t") == {"id": "int32", "v": "string"}
    assert silver_rows(config, "shop", "t") == [{"id": 1, "v": "abc"}, {"id": 2, "v": "7.50"}, {"id": 3, "v": "1e3"}]


def test_modify_widens_a_tinyint_column_through_smallint_and_int(tmp_path):
    """MODIFY on a tinyint column (13.2): each widening is performed by rewriting the table, values and the
    table's properties kept; a narrowing still goes to the DDL policy."""
    engine, lake = DeltaRsEngine(), open_store(str(tmp_path))
    location = D.TableLocation("src", "shop", "t")
    uri = lake.child(location.silver_key())
    engine.create(uri, pa.schema([("id", pa.int32()), ("c", pa.int8()), *E.METADATA_FIELDS]), {"k": "v"}, {}, 4096)
    row = {"id": 1, "c": -128, E.SEQ: Decimal(1), E.SEQ2: Decimal(0), E.ACTION: E.UPSERT}
    engine.merge(uri, pa.Table.from_pylist([row]), ["id"], (), {})

    outcomes = []
    for n, spark_type in enumerate(["smallint", "int", "bigint"], start=2):
        statement = S.Statement(S.TableName("shop", "t"), (S.ChangeColumnType("c", spark_type),))
        outcomes.append(D.perform(engine, lake, location, statement, (Decimal(n), Decimal(0), ""), {}).detail)

    assert outcomes == [
        "widened c from tinyint to smallint",
        "widened c from smallint to int",
        "widened c from int to bigint",
    ]
    assert engine.schema(uri).field("c").type == pa.int64()
    assert [r["c"] for r in engine.read(uri).to_pylist()] == [-128]
    assert engine.properties(uri)["k"] == "v"
    assert DeltaTable(uri).metadata().configuration[E.FILE_SIZE_PROPERTY] == "4096"
    narrowing = S.Statement(S.TableName("shop", "t"), (S.ChangeColumnType("c", "int"),))
    try:
        D.perform(engine, lake, location, narrowing, (Decimal(9), Decimal(0), ""), {})
        raise AssertionError("a narrowing was performed")
    except D.UnsupportedOperation as refused:
        assert str(refused) == "type change of c from bigint to int is not a widening"


def test_widened_columns_and_quarantined_changes_are_alerted(tmp_path, http_receiver):
    config = source_for("canal_json", tmp_path, alerts=(WebhookAlert(type="webhook", url=f"{http_receiver.url}/h"),))
    widened = {"table": "shop.t", "origin": "t/0006.json:2", "change": "widened n from int to bigint: the data ..."}
    summary = {
        "hour": "2026-11-21T06",
        "schema_changes": [widened],
        "rejected_changes": 2,
        "rejection_reasons": {"r": 2},
    }

    checks._alert_column_types(config, summary, "lakeloader_src_hourly", "scheduled__6")
    checks._alert_column_types(config, {"hour": "2026-11-21T07"}, "lakeloader_src_hourly", "scheduled__7")  # nothing

    [alert] = [json.loads(r["body"]) for r in http_receiver.received()]
    assert (alert["kind"], alert["summary"]) == (
        "column_types",
        "Source src: in hour 2026-11-21T06 the data widened 1 silver column(s) without DDL and 2 change(s) held "
        "values no column type can take (quarantined)",
    )
    assert alert["details"]["widened"] == ["shop.t at t/0006.json:2: widened n from int to bigint: the data ..."]
    assert alert["details"]["quarantined"] == ["2 x r"]
    assert alert["details"]["quarantine"].endswith("/lake/bronze/src/apply_quarantine")


def test_a_debezium_field_going_from_int32_to_int64_widens_the_column(spark, tmp_path):
    """Within an hour the column takes the widest type its messages declare (the int32 message's value is not
    lost to the int64 one's), and across hours the silver column widens."""
    config = source_for("debezium_json", tmp_path, primary_keys={"shop.t": ("id",)})

    def event(n: int, type_n: str, ts_ms: int) -> str:
        fields = [{"field": "id", "type": "int32"}, {"field": "n", "type": type_n}]
        schema = {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": fields}]}
        origin = {"connector": "mysql", "name": "db", "ts_ms": ts_ms, "db": "shop", "table": "t"}
        payload = {"op": "c", "before": None, "after": {"id": n % 1000, "n": n}, "source": origin, "ts_ms": ts_ms}
        return json.dumps({"schema": schema, "payload": payload})

    write_export(config, "db/0005.json", [event(1, "int32", T0)], H5)
    hour6 = [event(2, "int32", T0 + 3_600_000), event(3_000_000_003, "int64", T0 + 3_601_000)]
    write_export(config, "db/0006.json", hour6, H6)

    reports = run(spark, config, [H5, H6])

    assert silver_schema(config, "shop", "t") == {"id": "int32", "n": "int64"}
    assert silver_rows(config, "shop", "t") == [{"id": 1, "n": 1}, {"id": 2, "n": 2}, {"id": 3, "n": 3_000_000_003}]
    [change] = report(reports, "apply", H6)["schema_changes"]
    assert (change["origin"], change["change"]) == (
        "db/0006.json:1",
        "widened n from int to bigint: the data needs it (no DDL)",
    )
