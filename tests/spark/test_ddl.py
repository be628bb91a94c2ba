"""DDL text performed at its place in the table's sequence (its parsing into operations, without Spark:
tests/unit/test_ddl_statements.py)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.statements import parse_ddl
from lakeloader.apply.schema_changes import DdlPolicyError
from lakeloader.apply.step import run_apply
from lakeloader.audit.reconcile import run_reconcile
from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig, WebhookAlert
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.land.step import land_hour
from lakeloader.parse.step import run_parse
from lakeloader_airflow import checks
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6 = H5 + timedelta(hours=1)
AT = datetime(2026, 11, 21, 5, 30, tzinfo=UTC)
CORPUS = Path(__file__).parents[1] / "fixtures" / "ddl" / "corpus.sql"


def spec(*columns: tuple[str, str], table: str = "items") -> dw.TableSpec:
    return dw.TableSpec("shop", table, (("id", "LONG"), *columns), ("id",))


V1 = spec(("name", "STRING"), ("qty", "LONG"))


def make_source(tmp_path: Path, **overrides) -> SourceConfig:
    (tmp_path / "exports").mkdir(parents=True, exist_ok=True)
    return SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(tmp_path / "exports"),
        lake_root=str(tmp_path / "lake"),
        **overrides,
    )


def write(source: SourceConfig, name: str, lines: list[str], hour: datetime) -> None:
    path = Path(source.export_uri) / name
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (hour.timestamp() + 60, hour.timestamp() + 60))


def silver(source: SourceConfig, table: str = "items", db: str = "shop") -> pa.Table:
    uri = str(Path(source.lake_root) / zones.silver_table_dir(source.name, db, table))
    return DeltaRsEngine().read(uri)


def user_rows(table: pa.Table) -> tuple[list[str], list[tuple]]:
    names = [n for n in table.column_names if not n.startswith("_cdc_")]
    return names, sorted(tuple(r[n] for n in names) for r in table.select(names).to_pylist())


def history(source: SourceConfig) -> list[dict]:
    uri = str(Path(source.lake_root) / zones.schema_history_dir(source.name))
    rows = DeltaRsEngine().read(uri).to_pylist()
    return sorted(rows, key=lambda r: r["_cdc_seq"])


def alter(seq: int, text: str, spec_: dw.TableSpec = V1) -> str:
    return dw.message(spec_, "ALTER", seq, AT, ddl=text)


def evolving_stream() -> tuple[list[str], list[str]]:
    """Schema changes interleaved with data, split over two hours."""
    v2 = spec(("name", "STRING"), ("qty", "LONG"), ("price", "DOUBLE"))
    v3 = spec(("title", "STRING"), ("qty", "LONG"), ("price", "DOUBLE"))
    v4 = spec(("title", "STRING"), ("qty", "LONG"))
    hour5 = [
        *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
        alter(2, "ALTER TABLE items ADD COLUMN price DOUBLE"),
        *dw.insert(v2, 3, AT, {"id": 2, "name": "b", "qty": 2, "price": 2.5}),
        alter(4, "ALTER TABLE items RENAME COLUMN name TO title"),
        *dw.update(
            v3,
            5,
            AT,
            {"id": 1, "title": "a", "qty": 1, "price": None},
            {"id": 1, "title": "a2", "qty": 1, "price": 1.5},
            one_message=True,
        ),
    ]
    hour6 = [
        alter(6, "ALTER TABLE `items` MODIFY COLUMN `qty` DECIMAL(30,0)"),
        alter(7, "/* Query from DMS-WEBSQL-0-Qid_7 */ ALTER TABLE `shop`.`items` DROP COLUMN `price`"),
        *dw.insert(v4, 8, AT, {"id": 3, "title": "c", "qty": 3}),
        alter(9, "CREATE INDEX idx_title ON items (title)"),
    ]
    return hour5, hour6


def test_ddl_takes_effect_at_its_place_in_the_sequence(spark, tmp_path):
    source = make_source(tmp_path)
    hour5, hour6 = evolving_stream()
    write(source, "h5.json", hour5, H5)
    write(source, "h6.json", hour6, H6)
    run_hours(spark, source, [H5, H6], emit=lambda _: None)

    table = silver(source)
    assert user_rows(table) == (["id", "title", "qty"], [(1, "a2", 1), (2, "b", 2), (3, "c", 3)])
    assert table.schema.field("qty").type == pa.decimal128(30, 0)
    assert [(r["_cdc_seq"], r["status"]) for r in history(source)] == [
        (2, "applied"),
        (4, "applied"),
        (6, "applied"),
        (7, "applied"),
        (9, "no-op"),
    ]
    assert history(source)[3]["detail"] == "dropped price"


def test_ddl_in_one_hour_batch_and_reruns_in_any_order_give_the_same_table(spark, tmp_path):
    hour5, hour6 = evolving_stream()
    one_batch = make_source(tmp_path / "one")
    write(one_batch, "all.json", hour5 + hour6, H5)
    run_hours(spark, one_batch, [H5], emit=lambda _: None)
    shuffled = make_source(tmp_path / "shuffled")
    write(shuffled, "h5.json", hour5, H5)
    write(shuffled, "h6.json", hour6, H6)
    run_hours(spark, shuffled, [H5, H6, H5, H6], emit=lambda _: None)

    expected = (["id", "title", "qty"], [(1, "a2", 1), (2, "b", 2), (3, "c", 3)])
    assert user_rows(silver(one_batch)) == user_rows(silver(shuffled)) == expected


def test_rename_table_mid_hour_continues_the_same_silver_table(spark, tmp_path):
    source = make_source(tmp_path)
    goods = spec(("name", "STRING"), ("qty", "LONG"), table="goods")
    write(
        source,
        "h5.json",
        [
            *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
            dw.message(V1, "RENAME", 2, AT, ddl="RENAME TABLE `shop`.`items` TO `shop`.`goods`"),
            *dw.insert(goods, 3, AT, {"id": 2, "name": "b", "qty": 2}),
        ],
        H5,
    )
    write(source, "h6.json", [*dw.delete(goods, 4, AT, {"id": 1, "name": "a", "qty": 1})], H6)
    run_hours(spark, source, [H5, H6, H5], emit=lambda _: None)  # a rerun of the hour finds the table moved

    assert user_rows(silver(source, "goods")) == (["id", "name", "qty"], [(2, "b", 2)])
    assert not (Path(source.lake_root) / zones.silver_table_dir("shop", "shop", "items")).exists()


def test_rename_and_drop_of_a_table_not_loaded_yet_send_its_older_changes_where_they_belong_in_any_hour_order(
    spark, tmp_path
):
    # the rename or drop found no silver table (its older changes in an hour applied later) and recorded no move:
    # the older hour then loaded the table under its old name, and a rename's later changes went there too
    goods = spec(("name", "STRING"), ("qty", "LONG"), table="goods")
    rename = dw.message(V1, "RENAME", 5, AT, ddl="RENAME TABLE `shop`.`items` TO `shop`.`goods`")
    drop = dw.message(V1, "ERASE", 5, AT, ddl="DROP TABLE items")
    renamed, dropped = (make_source(tmp_path / name, ddl_policy="fail") for name in ("rename", "drop"))
    write(renamed, "h6.json", [rename, *dw.insert(goods, 6, AT, {"id": 2, "name": "b", "qty": 2})], H6)
    write(dropped, "h6.json", [drop, *dw.insert(V1, 6, AT, {"id": 2, "name": "b", "qty": 2})], H6)
    for source in (renamed, dropped):
        run_hours(spark, source, [H6], emit=lambda _: None)
    assert user_rows(silver(renamed, "goods")) == (["id", "name", "qty"], [(2, "b", 2)])

    for source in (renamed, dropped):  # the older hour's export arrives late; then both hours are rerun
        write(source, "h5.json", [*dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1})], H5)
        run_hours(spark, source, [H5, H6, H5], emit=lambda _: None)

    assert user_rows(silver(renamed, "goods")) == (["id", "name", "qty"], [(1, "a", 1), (2, "b", 2)])
    assert not (Path(renamed.lake_root) / zones.silver_table_dir("shop", "shop", "items")).exists()
    assert user_rows(silver(dropped)) == (["id", "name", "qty"], [(2, "b", 2)])
    assert [(r["_cdc_seq"], r["status"]) for r in history(renamed)] == [(5, "applied")]  # a rerun adds no record
    assert [(r["_cdc_seq"], r["status"]) for r in history(dropped)] == [(5, "applied")]


def test_a_change_exported_after_an_earlier_hour_renamed_or_dropped_its_column_reads_as_the_later_schema(
    spark, tmp_path
):
    # a late change older than the rename lost its value for the renamed column (a late delete keyed by a renamed
    # key column was lost), and one older than a drop gave its value to the column added again under that name
    source = make_source(tmp_path, ddl_policy="fail")
    early = [
        *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
        *dw.insert(V1, 2, AT, {"id": 2, "name": "b", "qty": 2}),
        *dw.insert(V1, 3, AT, {"id": 3, "name": "c", "qty": 3}),
        alter(10, "ALTER TABLE items RENAME COLUMN name TO title"),
        alter(11, "ALTER TABLE items RENAME COLUMN id TO pk"),
        alter(12, "ALTER TABLE items DROP COLUMN qty"),
        alter(13, "ALTER TABLE items ADD COLUMN qty BIGINT"),
    ]
    late = [  # older than the DDL, exported an hour later
        *dw.update(V1, 5, AT, {"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "a2", "qty": 10}, one_message=True),
        *dw.delete(V1, 6, AT, {"id": 2, "name": "b", "qty": 2}),
        *dw.insert(V1, 7, AT, {"id": 4, "name": "d", "qty": 4}),
    ]
    for name, lines, hour in (("h5.json", early, H5), ("h6.json", late, H6)):
        write(source, name, lines, hour)
        run_hours(spark, source, [hour], emit=lambda _: None)

    expected = (["pk", "title", "qty"], [(1, "a2", None), (3, "c", None), (4, "d", None)])
    assert user_rows(silver(source)) == expected
    run_hours(spark, source, [H5, H6], emit=lambda _: None)  # and again, rerun
    assert user_rows(silver(source)) == expected


@pytest.mark.parametrize("hours", [(0, 2, 1), (1, 0, 2), (2, 1, 0)], ids=["ddl-late", "ddl-first", "reversed"])
def test_column_ddl_reaching_apply_after_newer_ddl_takes_effect_as_at_its_place(spark, tmp_path, hours):
    # a DROP or RENAME COLUMN older than the table's last DDL was skipped for good ("not newer than the last DDL
    # applied"), and one performed before the table existed let older changes bring the column back
    source = make_source(tmp_path, ddl_policy="fail")
    v3 = spec(("amount", "LONG"), ("c1", "LONG"))
    exports = [
        [
            *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
            *dw.insert(V1, 2, AT, {"id": 2, "name": "b", "qty": 2}),
        ],
        [alter(10, "ALTER TABLE items DROP COLUMN name"), alter(11, "ALTER TABLE items RENAME COLUMN qty TO amount")],
        [alter(20, "ALTER TABLE items ADD COLUMN c1 BIGINT"), *dw.insert(v3, 21, AT, {"id": 3, "amount": 3, "c1": 7})],
    ]
    run_in_order(spark, source, exports, hours)

    expected = (["amount", "c1", "id"], [(1, None, 1), (2, None, 2), (3, 7, 3)])
    assert tuple(sorted(user_rows(silver(source))[0])) == tuple(expected[0])
    assert sorted(tuple(r[n] for n in expected[0]) for r in silver(source).to_pylist()) == expected[1]
    run_hours(spark, source, [H5 + timedelta(hours=index) for index in range(3)], emit=lambda _: None)  # a rerun
    assert sorted(tuple(r[n] for n in expected[0]) for r in silver(source).to_pylist()) == expected[1]
    assert "name" not in silver(source).column_names
    merged = [r["detail"] for r in history(source) if r["_cdc_seq"] == 11]
    assert ("merged by row age" in merged[0]) == (hours == (0, 2, 1))  # the insert at 21 had added `amount` first


def test_a_rename_to_a_column_that_newer_changes_delivered_first_added_merges_the_two_by_row_age(spark, tmp_path):
    # "renaming name to title, which exists": the update of seq 20, delivered an hour early, had added `title`
    source = make_source(tmp_path, ddl_policy="fail")
    v2 = spec(("title", "STRING"), ("qty", "LONG"))
    early = dw.update(
        v2, 20, AT, {"id": 2, "title": "b", "qty": 2}, {"id": 2, "title": "b2", "qty": 5}, one_message=True
    )
    write(
        source,
        "h5.json",
        [
            *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
            *dw.insert(V1, 2, AT, {"id": 2, "name": "b", "qty": 2}),
            *early,
        ],
        H5,
    )
    run_hours(spark, source, [H5], emit=lambda _: None)
    write(source, "h6.json", [alter(10, "ALTER TABLE items RENAME COLUMN name TO title")], H6)
    run_hours(spark, source, [H6], emit=lambda _: None)

    assert user_rows(silver(source)) == (["id", "title", "qty"], [(1, "a", 1), (2, "b2", 5)])


def test_a_late_column_drop_of_a_name_a_newer_statement_gave_again_goes_to_the_policy(spark, tmp_path):
    source = make_source(tmp_path)
    added = alter(20, "ALTER TABLE items ADD COLUMN name VARCHAR(8)")
    exports = [
        [*dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}), added],
        [alter(10, "ALTER TABLE items DROP COLUMN name")],
    ]
    run_in_order(spark, source, exports, [0, 1])

    assert user_rows(silver(source)) == (["id", "name", "qty"], [(1, "a", 1)])
    late = [r for r in history(source) if r["_cdc_seq"] == 10]
    assert [r["status"] for r in late] == ["skipped"]
    assert "which a newer statement already applied gave again" in late[0]["detail"]


def test_a_keyless_tables_change_exported_after_an_earlier_hour_renamed_its_column_gives_the_new_name_its_value(
    spark, tmp_path
):
    # the image was read through the rename, its declared columns were not: the renamed column had no value
    source = make_source(tmp_path)
    events = dw.TableSpec("shop", "events", (("id", "LONG"), ("name", "STRING")), ())
    rename = dw.message(events, "ALTER", 5, AT, ddl="ALTER TABLE events RENAME COLUMN name TO title")
    write(source, "h5.json", [*dw.insert(events, 1, AT, {"id": 1, "name": "a"}), rename], H5)
    run_hours(spark, source, [H5], emit=lambda _: None)
    write(
        source,
        "h6.json",
        [*dw.insert(events, 3, AT, {"id": 2, "name": "b"}), *dw.delete(events, 4, AT, {"id": 1, "name": "a"})],
        H6,
    )
    run_hours(spark, source, [H6], emit=lambda _: None)

    assert user_rows(silver(source, "events")) == (["id", "title"], [(2, "b")])


def run_in_order(spark, source: SourceConfig, exports: list[list[str]], order: list[int]) -> None:
    """Hour H5 + i holds exports[i]; each hour's export is written just before the hour runs, in `order`."""
    for index in order:
        write(source, f"h{index}.json", exports[index], H5 + timedelta(hours=index))
        run_hours(spark, source, [H5 + timedelta(hours=index)], emit=lambda _: None)


def test_a_drop_table_run_after_a_later_hour_created_the_table_again_drops_only_the_older_rows(spark, tmp_path):
    # the DROP TABLE archived the table the later hour had created again, with that hour's rows
    source = make_source(tmp_path)
    drop = dw.message(V1, "ERASE", 10, AT, ddl="DROP TABLE items")
    exports = [
        [*dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}), drop],
        dw.insert(V1, 20, AT, {"id": 2, "name": "b", "qty": 2}),
    ]
    run_in_order(spark, source, exports, [1, 0])

    assert user_rows(silver(source)) == (["id", "name", "qty"], [(2, "b", 2)])
    run_hours(spark, source, [H5, H6], emit=lambda _: None)  # a rerun
    assert user_rows(silver(source)) == (["id", "name", "qty"], [(2, "b", 2)])


@pytest.mark.parametrize("order", [[2, 0, 1], [1, 2, 0]])
def test_a_keyless_tables_hour_run_after_later_ones_counts_its_contents_with_their_changes(spark, tmp_path, order):
    # the hour's content was counted only up to its ADD COLUMN, not with the later hour's update of it (one row
    # too many); and read without the late RENAME COLUMN the table had already (a row without its value)
    source = make_source(tmp_path)
    v1 = dw.TableSpec("shop", "events", (("id", "LONG"), ("name", "STRING"), ("qty", "LONG")), ())
    v2 = dw.TableSpec("shop", "events", (("id", "LONG"), ("title", "STRING"), ("qty", "LONG")), ())
    v3 = dw.TableSpec("shop", "events", (("id", "LONG"), ("title", "STRING"), ("qty", "LONG"), ("c1", "STRING")), ())
    rename = dw.message(v1, "ALTER", 15, AT, ddl="ALTER TABLE events RENAME COLUMN name TO title")
    add = dw.message(v2, "ALTER", 24, AT, ddl="ALTER TABLE events ADD COLUMN c1 VARCHAR(8)")
    before, after = {"id": 1, "title": "b", "qty": 2, "c1": None}, {"id": 1, "title": "c", "qty": 2, "c1": None}
    exports = [
        [*dw.insert(v1, 13, AT, {"id": 1, "name": "a", "qty": 1}), rename],
        [
            *dw.update(
                v2, 21, AT, {"id": 1, "title": "a", "qty": 1}, {"id": 1, "title": "b", "qty": 2}, one_message=True
            ),
            add,
        ],
        dw.update(v3, 29, AT, before, after, one_message=True),
    ]
    run_in_order(spark, source, exports, order)

    assert user_rows(silver(source, "events")) == (["id", "title", "qty", "c1"], [(1, "c", 2, None)])


@pytest.mark.parametrize("key", [("id",), ()], ids=["keyed", "keyless"])
def test_a_rename_delivered_twice_gives_a_late_change_its_value_under_the_new_name_once(spark, tmp_path, key):
    # the second delivery (a no-op) read the late change's `title` as the name the rename gives, and dropped it
    source = make_source(tmp_path)
    table = dw.TableSpec("shop", "items", (("id", "LONG"), ("name", "STRING")), key)
    rename = dw.message(table, "ALTER", 5, AT, ddl="ALTER TABLE items RENAME COLUMN name TO title")
    exports = [
        [*dw.insert(table, 1, AT, {"id": 1, "name": "a"}), rename, rename],
        dw.insert(table, 3, AT, {"id": 2, "name": "b"}),
    ]
    run_in_order(spark, source, exports, [0, 1])

    assert user_rows(silver(source)) == (["id", "title"], [(1, "a"), (2, "b")])


def test_drop_table_archives_it_and_later_inserts_start_a_new_table(spark, tmp_path):
    source = make_source(tmp_path)
    write(
        source,
        "h5.json",
        [
            *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
            dw.message(V1, "ERASE", 2, AT, ddl="DROP TABLE items"),
            *dw.insert(V1, 3, AT, {"id": 9, "name": "new", "qty": 9}),
        ],
        H5,
    )
    run_hours(spark, source, [H5], emit=lambda _: None)

    assert user_rows(silver(source)) == (["id", "name", "qty"], [(9, "new", 9)])
    archived = Path(source.lake_root) / "archive" / "shop" / "shop" / "items" / "2-0"
    assert user_rows(DeltaRsEngine().read(str(archived)))[1] == [(1, "a", 1)]


def test_hostile_names_do_nothing_beyond_their_parsed_meaning(spark, tmp_path):
    source = make_source(tmp_path)
    write(
        source,
        "h5.json",
        [
            *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
            alter(2, "ALTER TABLE items ADD COLUMN `x``; DROP TABLE y; --` INT"),
            alter(3, 'ALTER TABLE items ADD COLUMN "quoted" INT; DROP TABLE items'),
            dw.message(V1, "ALTER", 4, AT, ddl="ALTER TABLE `../other` ADD COLUMN z INT"),
        ],
        H5,
    )
    run_hours(spark, source, [H5], emit=lambda _: None)

    assert silver(source).column_names[:4] == ["id", "name", "qty", "_cdc_seq"]
    assert "x`; DROP TABLE y; --" in silver(source).column_names
    statuses = [(r["_cdc_seq"], r["status"]) for r in history(source)]
    assert statuses == [(2, "applied"), (3, "skipped"), (4, "no-op")]
    assert sorted(p.name for p in (Path(source.lake_root) / "silver" / "shop").iterdir()) == ["shop"]


def test_unsupported_ddl_follows_the_policy(spark, tmp_path):
    lines = [
        *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
        alter(2, "ALTER TABLE items MODIFY COLUMN qty INT"),  # a narrowing
        *dw.insert(V1, 3, AT, {"id": 2, "name": "b", "qty": 2}),
    ]
    skipping = make_source(tmp_path / "skip", ddl_policy="skip")
    write(skipping, "h5.json", lines, H5)
    run_hours(spark, skipping, [H5], emit=lambda _: None)
    (record,) = history(skipping)
    assert (record["status"], record["detail"]) == (
        "skipped",
        "type change of qty from bigint to int is not a widening",
    )
    assert user_rows(silver(skipping))[1] == [(1, "a", 1), (2, "b", 2)]

    failing = make_source(tmp_path / "fail", ddl_policy="fail")
    write(failing, "h5.json", lines, H5)
    land_hour(failing, H5)
    run_parse(spark, failing, H5)
    with pytest.raises(DdlPolicyError, match="ddl_policy is 'fail'"):
        run_apply(spark, failing, H5)
    assert history(failing)[0]["status"] == "failed"


def test_ddl_naming_a_column_the_table_cannot_store_is_skipped_under_the_policy_and_the_hour_goes_on(spark, tmp_path):
    # a data message naming such a column is quarantined (reserved prefix, case twins); DDL adding one was a
    # silent no-op (`_cdc_op` "exists": it is a metadata column) or held the table back with no status recorded
    lines = [
        *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
        alter(2, "ALTER TABLE items ADD COLUMN _cdc_op INT"),
        alter(3, "ALTER TABLE items ADD COLUMN QTY INT"),
        *dw.insert(V1, 4, AT, {"id": 2, "name": "b", "qty": 2}),
    ]
    source = make_source(tmp_path, ddl_policy="skip")
    write(source, "h5.json", lines, H5)
    run_hours(spark, source, [H5], emit=lambda _: None)

    assert [(r["_cdc_seq"], r["status"], r["detail"]) for r in history(source)] == [
        (2, "skipped", "column name(s) reserved for the loader's metadata (prefix _cdc_, any case): _cdc_op"),
        (3, "no-op", "columns exist"),  # MySQL column names ignore case: QTY is qty (Oracle's case twins: unit tests)
    ]
    assert user_rows(silver(source))[1] == [(1, "a", 1), (2, "b", 2)]


def test_skip_and_alert_skips_unsupported_ddl_and_the_hourly_check_alerts_with_the_statement(
    spark, tmp_path, http_receiver
):
    lines = [
        *dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}),
        alter(2, "ALTER TABLE items MODIFY COLUMN qty INT"),  # a narrowing
        alter(3, "ALTER TABLE items ADD COLUMN note TEXT"),  # supported: not alerted
    ]
    hook = (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),)
    source = make_source(tmp_path, ddl_policy="skip_and_alert", alerts=hook)
    write(source, "h5.json", lines, H5)
    run_hours(spark, source, [H5], emit=lambda _: None)
    run_reconcile(spark, source, [H5], ("accounting",), label="run-5")

    summary = checks.verify_reconciliation(source, "run-5", "lakeloader_shop_hourly", "scheduled__5")

    skipped = {"table": "shop.items", "seq": "2", "origin": "h5.json:2"}
    assert [{k: s[k] for k in skipped} for s in summary["ddl_unsupported"]] == [skipped]
    [alert] = [json.loads(r["body"]) for r in http_receiver.received()]
    assert alert["kind"] == "ddl_skipped" and alert["run_url"].endswith(
        "/dags/lakeloader_shop_hourly/runs/scheduled__5"
    )
    assert alert["summary"].startswith("Source shop: 1 DDL statement(s) of hour 2026-11-21T05 were not applied")
    assert alert["details"]["statements"] == [
        "shop.items at h5.json:2: type change of qty from bigint to int is not a widening | "
        "ALTER TABLE items MODIFY COLUMN qty INT"
    ]
    assert "note" in silver(source).column_names  # the run went on past the skipped statement


def test_the_whole_corpus_goes_through_the_apply_job_and_is_recorded(spark, tmp_path):
    statements = [line.split("\t", 1) for line in CORPUS.read_text().splitlines() if line and not line.startswith("--")]
    recorded = 0
    for family in ("mysql", "oracle"):
        source = make_source(tmp_path / family, source_dialect=family)
        texts = [
            text
            for dialect, text in statements
            if dialect.replace("oceanbase_oracle", "oracle") == family or (family == "mysql" and dialect == "oceanbase")
        ]
        lines = [*dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1})]
        lines += [alter(10 + i, text) for i, text in enumerate(texts)]
        write(source, "h5.json", lines, H5)
        run_hours(spark, source, [H5], emit=lambda _: None)
        rows = history(source)
        parsed = [parse_ddl(text, family) for text in texts]  # a statement on n tables is n events
        assert len(rows) == sum(len(p.statements) if isinstance(p, S.Statements) else 1 for p in parsed)
        assert {r["status"] for r in rows} <= {"applied", "no-op", "skipped"}
        recorded += len(texts)
    assert recorded == len(statements)


# Issue 13 items 3-7: temporary tables, keyless sequencing, re-deliveries (parsing: tests/unit/test_ddl_statements.py).


def test_temporary_tables_multi_table_drop_and_rename_take_effect_on_the_named_tables(spark, tmp_path):
    source = make_source(tmp_path)
    a, b, c = (spec(("name", "STRING"), table=name) for name in ("a", "b", "c"))
    write(
        source,
        "h5.json",
        [
            *(line for i, s in enumerate((a, b, c)) for line in dw.insert(s, 1 + i, AT, {"id": i, "name": s.table})),
            dw.message(a, "ERASE", 5, AT, ddl="DROP TEMPORARY TABLE a"),  # the real `a` stays
            dw.message(a, "CREATE", 6, AT, ddl="CREATE TEMPORARY TABLE b (id INT)"),
            dw.message(a, "RENAME", 7, AT, ddl="RENAME TABLE a TO a2, b TO b2"),
            dw.message(a, "ERASE", 8, AT, ddl="DROP TABLE b2, c"),
        ],
        H5,
    )
    run_hours(spark, source, [H5], emit=lambda _: None)

    silver_root = Path(source.lake_root) / "silver" / "shop" / "shop"
    assert sorted(p.name for p in silver_root.iterdir()) == ["a2"]
    assert user_rows(silver(source, "a2")) == (["id", "name"], [(0, "a")])
    archived = Path(source.lake_root) / "archive" / "shop" / "shop"
    assert sorted(p.name for p in archived.iterdir()) == ["b2", "c"]
    assert sorted((r["_cdc_seq"], r["table"], r["status"]) for r in history(source)) == [
        (5, "a", "no-op"),  # DROP TEMPORARY TABLE a
        (6, "a", "no-op"),  # CREATE TEMPORARY TABLE b (a message of table a)
        (7, "a", "applied"),
        (7, "b", "applied"),
        (8, "b2", "applied"),
        (8, "c", "applied"),
    ]


def test_keyless_table_changes_and_ddl_take_effect_in_sequence(spark, tmp_path):
    source = make_source(tmp_path)
    v1 = dw.TableSpec("shop", "bag", (("id", "LONG"), ("name", "STRING")), None)
    v2 = dw.TableSpec("shop", "bag", (("id", "LONG"), ("title", "STRING")), None)
    lines = [
        *dw.insert(v1, 1, AT, {"id": 1, "name": "a"}),
        *dw.insert(v1, 2, AT, {"id": 2, "name": "b"}),
        alter(3, "ALTER TABLE bag RENAME COLUMN name TO title", v1),
        *dw.update(v2, 4, AT, {"id": 1, "title": "a"}, {"id": 1, "title": "a2"}, one_message=True),
        *dw.delete(v2, 5, AT, {"id": 2, "title": "b"}),
        *dw.insert(v2, 6, AT, {"id": 3, "title": "c"}),
        alter(7, "ALTER TABLE bag DROP COLUMN title", v2),
        *dw.insert(dw.TableSpec("shop", "bag", (("id", "LONG"),), None), 8, AT, {"id": 1}),
    ]
    write(source, "h5.json", lines, H5)
    run_hours(spark, source, [H5, H5], emit=lambda _: None)  # and a rerun

    assert user_rows(silver(source, "bag")) == (["id"], [(1,), (1,), (3,)])


def test_messages_from_before_a_ddl_delivered_after_it_do_not_bring_dropped_or_renamed_columns_back(spark, tmp_path):
    source = make_source(tmp_path)
    bag = dw.TableSpec("shop", "bag", (("id", "LONG"), ("n", "LONG")), None)
    early = [*dw.insert(V1, 1, AT, {"id": 1, "name": "a", "qty": 1}), *dw.insert(bag, 2, AT, {"id": 1, "n": 5})]
    hour5 = [
        *early,
        alter(3, "ALTER TABLE items DROP COLUMN qty"),
        alter(4, "ALTER TABLE items RENAME COLUMN name TO title"),
        dw.message(bag, "ALTER", 5, AT, ddl="ALTER TABLE bag DROP COLUMN n"),
    ]
    v2 = spec(("title", "STRING"))
    hour6 = [*early, *dw.insert(v2, 6, AT, {"id": 2, "title": "b"})]  # delivered again after the DDL
    write(source, "h5.json", hour5, H5)
    write(source, "h6.json", hour6, H6)
    run_hours(spark, source, [H5, H6], emit=lambda _: None)

    assert user_rows(silver(source)) == (["id", "title"], [(1, "a"), (2, "b")])
    assert user_rows(silver(source, "bag")) == (["id"], [(1,)])


def test_reapplying_an_hour_adds_nothing_to_the_schema_history(spark, tmp_path):
    source = make_source(tmp_path)
    hour5, _ = evolving_stream()
    write(source, "h5.json", [*hour5, alter(6, "CREATE DATABASE other"), alter(7, "ALTER TABLE gone ADD x INT")], H5)
    run_hours(spark, source, [H5], emit=lambda _: None)
    first = history(source)
    run_apply(spark, source, H5)
    run_apply(spark, source, H5)
    assert len(history(source)) == len(first) == 4


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [2, 0, 1]])
def test_a_modify_to_decimal_gives_the_decimal_in_every_hour_order_when_the_format_declares_the_values_text(
    spark, tmp_path, order
):
    # DataWorks declares a DECIMAL column DOUBLE and sends its exact text: the later hour's changes created the
    # column as text, and the MODIFY run after them was refused as not a widening (or never ran: a text column)
    source = make_source(tmp_path)
    after = spec(("name", "STRING"), ("qty", "DOUBLE"))
    exports = [
        dw.insert(V1, 10, AT, {"id": 1, "name": "a", "qty": 5}),
        [alter(20, "ALTER TABLE items MODIFY COLUMN qty DECIMAL(30,0)")],
        dw.insert(after, 30, AT, {"id": 2, "name": "b", "qty": "123456789012345678901234567890"}),
    ]
    run_in_order(spark, source, exports, order)

    table = silver(source)
    assert str(table.schema.field("qty").type) == "decimal128(30, 0)"
    assert user_rows(table) == (["id", "name", "qty"], [(1, "a", 5), (2, "b", 123456789012345678901234567890)])


def test_a_modify_to_decimal_of_text_that_is_not_such_a_decimal_follows_the_policy(spark, tmp_path):
    source = make_source(tmp_path, ddl_policy="skip")
    after = spec(("name", "STRING"), ("qty", "DOUBLE"))
    exports = [
        [alter(20, "ALTER TABLE items MODIFY COLUMN qty DECIMAL(30,0)")],
        dw.insert(after, 30, AT, {"id": 2, "name": "b", "qty": "1.5"}),
    ]
    run_in_order(spark, source, exports, [1, 0])

    assert user_rows(silver(source)) == (["id", "name", "qty"], [(2, "b", "1.5")])
    assert [(r["status"], r["detail"]) for r in history(source)] == [
        ("skipped", "type change of qty from string to decimal(30,0) is not a widening, and not every value the "
         "column holds is a decimal(30,0)")
    ]  # fmt: skip


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_a_create_table_run_after_the_changes_that_created_the_table_gives_its_columns_their_declared_types(
    spark, tmp_path, order
):
    # the later hour's changes (qty declared DOUBLE: its exact text) created the table; the CREATE TABLE was a
    # no-op ("table exists"), so qty stayed text in that order and was a decimal in the other
    source = make_source(tmp_path)
    after = spec(("name", "STRING"), ("qty", "DOUBLE"))
    create = "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(64), qty DECIMAL(30,0))"
    exports = [[alter(10, create)], dw.insert(after, 20, AT, {"id": 1, "name": "a", "qty": "0123"})]
    run_in_order(spark, source, exports, order)

    table = silver(source)
    assert str(table.schema.field("qty").type) == "decimal128(30, 0)"
    assert user_rows(table) == (["id", "name", "qty"], [(1, "a", 123)])


@pytest.mark.parametrize("order", [[0, 1, 2], [0, 2, 1], [2, 1, 0]])
def test_an_add_column_run_after_the_changes_that_created_the_column_gives_it_its_declared_type(spark, tmp_path, order):
    # the later hour's changes (qty declared DOUBLE: its exact text) added the column as text; the ADD COLUMN run
    # after them was a no-op ("columns exist"), so qty stayed text in that order and was a decimal in the others
    source = make_source(tmp_path)
    after = spec(("name", "STRING"), ("qty", "DOUBLE"))
    exports = [
        dw.insert(spec(("name", "STRING")), 10, AT, {"id": 1, "name": "a"}),
        [alter(20, "ALTER TABLE items ADD COLUMN qty DECIMAL(10,2)")],
        dw.insert(after, 30, AT, {"id": 2, "name": "b", "qty": "1.50"}),
    ]
    run_in_order(spark, source, exports, order)

    table = silver(source)
    assert str(table.schema.field("qty").type) == "decimal128(10, 2)"
    assert user_rows(table) == (["id", "name", "qty"], [(1, "a", None), (2, "b", Decimal("1.50"))])


DEFAULTED = spec(("name", "STRING"), ("status", "LONG"), ("note", "STRING"))
ADD_DEFAULTED = "ALTER TABLE items ADD COLUMN status BIGINT NOT NULL DEFAULT 7, ADD COLUMN note VARCHAR(8) NOT NULL"


def defaulted_exports() -> list[list[str]]:
    """Rows 1 and 2 exist when the statement adds `status` (DEFAULT 7) and `note` (MySQL's implicit '');
    row 4's insert, older than it, is exported an hour late."""
    old = spec(("name", "STRING"))
    return [
        [
            *dw.insert(old, 10, AT, {"id": 1, "name": "a"}),
            *dw.insert(old, 12, AT, {"id": 2, "name": "b"}),
            alter(20, ADD_DEFAULTED),
            *dw.update(
                DEFAULTED,
                30,
                AT,
                {"id": 1, "name": "a", "status": 7, "note": ""},
                {"id": 1, "name": "a", "status": 8, "note": "x"},
                one_message=True,
            ),
        ],
        dw.insert(DEFAULTED, 40, AT, {"id": 3, "name": "c", "status": 9, "note": "y"}),
        dw.insert(old, 15, AT, {"id": 4, "name": "d"}),
    ]


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]])
def test_a_column_added_with_a_default_has_it_in_the_rows_the_table_had_in_every_hour_order(spark, tmp_path, order):
    # the source stores the default in every row it has and no change says so: rows 2 and 4 read NULL before
    source = make_source(tmp_path)
    run_in_order(spark, source, defaulted_exports(), order)

    assert user_rows(silver(source)) == (
        ["id", "name", "status", "note"],
        [(1, "a", 8, "x"), (2, "b", 7, ""), (3, "c", 9, "y"), (4, "d", 7, "")],
    )


def test_a_column_added_with_a_default_reads_the_same_in_one_batch_and_on_reruns(spark, tmp_path):
    one_batch = make_source(tmp_path / "one")
    write(one_batch, "all.json", [line for export in defaulted_exports() for line in export], H5)
    run_hours(spark, one_batch, [H5, H5], emit=lambda _: None)
    hours = make_source(tmp_path / "hours")
    run_in_order(spark, hours, defaulted_exports(), [0, 1, 2, 0, 2])

    expected = [(1, "a", 8, "x"), (2, "b", 7, ""), (3, "c", 9, "y"), (4, "d", 7, "")]
    assert user_rows(silver(one_batch))[1] == user_rows(silver(hours))[1] == expected
    filled = [r["detail"] for r in history(hours) if r["_cdc_seq"] == 20]
    assert filled == [
        "added status, note; filled status with '7' in the rows older than this statement; "
        "filled note with '' in the rows older than this statement"
    ]


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_a_keyless_tables_rows_get_a_columns_default_so_a_later_delete_finds_its_copy(spark, tmp_path, order):
    # the delete's image names flag = 1, as the source's rows had it after the ADD COLUMN
    source = make_source(tmp_path)
    old = dw.TableSpec("shop", "events", (("id", "LONG"), ("name", "STRING")), ())
    new = dw.TableSpec("shop", "events", (("id", "LONG"), ("name", "STRING"), ("flag", "LONG")), ())
    add = dw.message(old, "ALTER", 20, AT, ddl="ALTER TABLE events ADD COLUMN flag BIGINT DEFAULT 1")
    exports = [
        [*dw.insert(old, 10, AT, {"id": 1, "name": "a"}), *dw.insert(old, 11, AT, {"id": 1, "name": "a"}), add],
        dw.delete(new, 30, AT, {"id": 1, "name": "a", "flag": 1}),
    ]
    run_in_order(spark, source, exports, order)

    assert user_rows(silver(source, "events")) == (["id", "name", "flag"], [(1, "a", 1)])


def test_an_add_column_if_not_exists_of_a_column_the_table_had_leaves_its_values(spark, tmp_path):
    source = make_source(tmp_path)
    with_flag = spec(("name", "STRING"), ("flag", "LONG"))
    exports = [
        [
            alter(5, "ALTER TABLE items ADD COLUMN flag BIGINT"),
            *dw.insert(with_flag, 10, AT, {"id": 1, "name": "a", "flag": None}),
            alter(20, "ALTER TABLE items ADD COLUMN IF NOT EXISTS flag BIGINT DEFAULT 5"),
        ]
    ]
    run_in_order(spark, source, exports, [0])

    assert user_rows(silver(source)) == (["id", "name", "flag"], [(1, "a", None)])


def test_a_create_table_if_not_exists_run_after_newer_changes_leaves_the_columns_their_types(spark, tmp_path):
    # in the source the statement may have found a table of other columns
    source = make_source(tmp_path)
    after = spec(("name", "STRING"), ("qty", "DOUBLE"))
    create = "CREATE TABLE IF NOT EXISTS items (id BIGINT PRIMARY KEY, name VARCHAR(64), qty DECIMAL(30,0))"
    run_in_order(
        spark, source, [[alter(10, create)], dw.insert(after, 20, AT, {"id": 1, "name": "a", "qty": "5"})], [1, 0]
    )

    assert user_rows(silver(source)) == (["id", "name", "qty"], [(1, "a", "5")])
    assert [(r["status"], r["detail"]) for r in history(source)] == [("no-op", "table exists")]


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_columns_a_change_older_than_a_drop_table_gave_the_table_go_with_it_in_every_hour_order(spark, tmp_path, order):
    # the later hour, run first, holds the dropped table's insert delivered again: its columns stayed empty
    source = make_source(tmp_path)
    old_insert = dw.insert(V1, 10, AT, {"id": 1, "name": "a", "qty": 1})
    created = spec(("title", "STRING"))
    exports = [
        [
            *old_insert,
            alter(20, "DROP TABLE items"),
            alter(30, "CREATE TABLE items (id BIGINT PRIMARY KEY, title TEXT)"),
        ],
        [*old_insert, *dw.insert(created, 40, AT, {"id": 2, "title": "b"})],
    ]
    run_in_order(spark, source, exports, order)

    assert user_rows(silver(source)) == (["id", "title"], [(2, "b")])


SEQ = 1620457642589000100  # the seed's sequenceIds have 19 digits, beyond what a double holds exactly


def test_ddl_at_19_digit_sequence_ids_finds_the_rows_older_than_it(spark, tmp_path):
    """delta-rs records a decimal column's file statistics as doubles: 1620457642589000101 and ...102 as
    ...192, which hid the rows older than a TRUNCATE (...103) from its delete, and from the checks of a DROP TABLE
    and an ADD COLUMN's default, whenever the statement came within a few hundred sequence numbers of them."""
    source = make_source(tmp_path)
    drop_spec, default_spec = spec(("name", "STRING"), table="gone"), spec(("name", "STRING"), table="defaulted")
    exports = [
        [
            *dw.insert(V1, SEQ + 1, AT, {"id": 1, "name": "a", "qty": 1}),
            *dw.insert(V1, SEQ + 2, AT, {"id": 2, "name": "b", "qty": 2}),
            *dw.insert(drop_spec, SEQ + 3, AT, {"id": 1, "name": "a"}),
            *dw.insert(default_spec, SEQ + 4, AT, {"id": 1, "name": "a"}),
        ],
        [
            dw.message(V1, "TRUNCATE", SEQ + 5, AT, ddl="TRUNCATE TABLE items"),
            dw.message(drop_spec, "ERASE", SEQ + 6, AT, ddl="DROP TABLE gone"),
            alter(SEQ + 7, "ALTER TABLE defaulted ADD COLUMN c INT NOT NULL DEFAULT 5", default_spec),
        ],
    ]
    run_in_order(spark, source, exports, [0, 1])

    assert user_rows(silver(source)) == (["id", "name", "qty"], [])
    assert not (Path(source.lake_root) / zones.silver_table_dir(source.name, "shop", "gone")).exists()
    assert user_rows(silver(source, "defaulted")) == (["id", "name", "c"], [(1, "a", 5)])


def test_an_oracle_statements_unquoted_names_are_their_upper_case_and_quoted_ones_are_exact(spark, tmp_path):
    # Oracle folds an unquoted identifier to upper case: `s.t`, `title`, `t_new` name the source's S.T, TITLE, T_NEW
    source = make_source(tmp_path, source_dialect="oracle")
    before = dw.TableSpec("S", "T", (("ID", "LONG"), ("TITLE", "STRING"), ("A", "LONG")), ("ID",))
    after = dw.TableSpec("S", "T", (("ID", "LONG"), ("TITLE2", "STRING"), ("D", "STRING"), ("E", "STRING"),
                                    ("Mixed", "STRING")), ("ID",))  # fmt: skip
    new = dw.TableSpec("S", "T_NEW", (("ID", "LONG"), ("NM", "STRING")), ("ID",))
    lines = [
        *dw.insert(before, 1, AT, {"ID": 1, "TITLE": "a", "A": 5}),
        dw.message(
            before, "ALTER", 2, AT, ddl="alter table s.t add (d varchar2(10) default 'dd', e number(3,1) default -1.25)"
        ),
        dw.message(before, "ALTER", 3, AT, ddl="ALTER TABLE s.t rename column title to title2"),
        dw.message(before, "ALTER", 4, AT, ddl="ALTER TABLE t DROP (a)"),
        dw.message(before, "ALTER", 5, AT, ddl="""ALTER TABLE "S"."T" ADD ("Mixed" VARCHAR2(3) DEFAULT 'm')"""),
        *dw.insert(after, 6, AT, {"ID": 2, "TITLE2": "b", "D": "x", "E": "1.5", "Mixed": "n"}),
        dw.message(new, "CREATE", 7, AT, ddl="create table s.t_new (id number(10) primary key, nm varchar2(10))"),
        *dw.insert(new, 8, AT, {"ID": 1, "NM": "n"}),
    ]
    write(source, "h5.json", lines, H5)
    run_hours(spark, source, [H5], emit=lambda _: None)

    assert user_rows(silver(source, "T", db="S")) == (
        ["ID", "TITLE2", "D", "E", "Mixed"],
        [(1, "a", "dd", Decimal("-1.3"), "m"), (2, "b", "x", Decimal("1.5"), "n")],
    )
    assert user_rows(silver(source, "T_NEW", db="S")) == (["ID", "NM"], [(Decimal(1), "n")])
    assert sorted(p.name for p in (Path(source.lake_root) / "silver" / "shop").iterdir()) == ["S"]
    assert [r["status"] for r in history(source)] == ["applied"] * 6


def test_a_mysql_statement_naming_a_column_in_another_case_acts_on_the_tables_column(spark, tmp_path):
    # MySQL's column names are case-insensitive: VAL names Val; a rename gives its new name as written
    source = make_source(tmp_path)
    vals, amounts = spec(("Val", "LONG"), table="t_case"), spec(("amount", "LONG"), table="t_case")
    nm = spec(("nm", "STRING"), table="t_case2")
    abc, abc2 = spec(("abc", "STRING"), table="t_case3"), spec(("Abc", "STRING"), table="t_case3")
    qty, renamed = spec(("Qty", "LONG"), table="t_case6"), spec(("amount", "LONG"), table="t_case6")
    hour5 = [
        *dw.insert(vals, 1, AT, {"id": 1, "Val": 5}),
        alter(2, "ALTER TABLE t_case MODIFY VAL DECIMAL(30,0)", vals),
        alter(3, "ALTER TABLE t_case CHANGE COLUMN VAL amount DECIMAL(30,0)", vals),
        *dw.insert(amounts, 4, AT, {"id": 2, "amount": 6}),
        *dw.insert(nm, 5, AT, {"id": 1, "nm": "n"}),
        alter(6, "ALTER TABLE t_case2 DROP COLUMN NM", nm),
        alter(7, "ALTER TABLE t_case2 ADD COLUMN Nm INT DEFAULT 3", nm),
        *dw.insert(abc, 8, AT, {"id": 1, "abc": "v"}),
        alter(9, "ALTER TABLE t_case3 RENAME COLUMN ABC TO Abc", abc),
        *dw.insert(abc2, 10, AT, {"id": 2, "Abc": "w"}),
        *dw.insert(qty, 11, AT, {"id": 1, "Qty": 1}),
        alter(20, "ALTER TABLE t_case6 RENAME COLUMN qty TO amount", qty),
        *dw.insert(renamed, 21, AT, {"id": 2, "amount": 2}),
    ]
    # exported late: a change older than the rename, read as the schema after it has the row
    hour6 = dw.update(qty, 15, AT, {"id": 1, "Qty": 1}, {"id": 1, "Qty": 9}, one_message=True)
    write(source, "h5.json", hour5, H5)
    write(source, "h6.json", hour6, H6)
    run_hours(spark, source, [H5, H6], emit=lambda _: None)

    assert user_rows(silver(source, "t_case")) == (["id", "amount"], [(1, Decimal(5)), (2, Decimal(6))])
    assert user_rows(silver(source, "t_case2")) == (["id", "Nm"], [(1, 3)])
    assert user_rows(silver(source, "t_case3")) == (["id", "Abc"], [(1, "v"), (2, "w")])
    assert user_rows(silver(source, "t_case6")) == (["id", "amount"], [(1, 9), (2, 2)])
    assert [r["status"] for r in history(source)] == ["applied"] * 6
    assert not (Path(source.lake_root) / zones.apply_quarantine_dir(source.name)).exists()


def test_a_late_mysql_statement_follows_a_newer_one_naming_its_column_in_another_case(spark, tmp_path):
    # the source: note added with DEFAULT 4 (seq 15), then renamed as NOTE to memo (seq 20); the hour holding the
    # ADD is exported after the rename's hour ran, so the ADD is performed in its place: it adds memo
    source = make_source(tmp_path)
    before, after = spec(("v", "STRING"), table="t_late"), spec(("v", "STRING"), ("memo", "LONG"), table="t_late")
    hour5 = [
        *dw.insert(before, 11, AT, {"id": 1, "v": "a"}),
        alter(20, "ALTER TABLE t_late RENAME COLUMN NOTE TO memo", before),
        *dw.insert(after, 21, AT, {"id": 2, "v": "b", "memo": 5}),
    ]
    write(source, "h5.json", hour5, H5)
    write(source, "h6.json", [alter(15, "ALTER TABLE t_late ADD COLUMN note BIGINT DEFAULT 4", before)], H6)
    run_hours(spark, source, [H5, H6], emit=lambda _: None)

    assert user_rows(silver(source, "t_late")) == (["id", "v", "memo"], [(1, "a", 4), (2, "b", 5)])


def test_a_late_change_follows_a_statement_naming_its_table_in_another_case_under_lower_case_table_names(
    spark, tmp_path
):
    # lower_case_table_names: the statement's T_CASE is the messages' t_case, so the change exported late, older
    # than the rename, gives its qty to amount; the hour run again performs nothing twice
    source = make_source(tmp_path, lower_case_table_names=True)
    qty, renamed = spec(("qty", "LONG"), table="t_case"), spec(("amount", "LONG"), table="t_case")
    hour5 = [
        *dw.insert(qty, 11, AT, {"id": 1, "qty": 1}),
        alter(20, "ALTER TABLE T_CASE RENAME COLUMN qty TO amount", qty),
        *dw.insert(renamed, 21, AT, {"id": 2, "amount": 2}),
    ]
    hour6 = dw.update(qty, 15, AT, {"id": 1, "qty": 1}, {"id": 1, "qty": 9}, one_message=True)
    write(source, "h5.json", hour5, H5)
    write(source, "h6.json", hour6, H6)
    run_hours(spark, source, [H5, H6, H5], emit=lambda _: None)

    assert user_rows(silver(source, "t_case")) == (["id", "amount"], [(1, 9), (2, 2)])
    assert [r["status"] for r in history(source)] == ["applied"]
