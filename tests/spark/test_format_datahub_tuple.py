"""DataHub TUPLE rows (`datahub_tuple`): the seed 001 sample as CSV and JSON lines, quarantine, end to end."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from format_support import (
    FIXTURES,
    HOUR,
    parse_files,
    report,
    run,
    silver_rows,
    silver_schema,
    source_for,
    write_export,
)

SAMPLE_CSV = FIXTURES / "datahub_tuple" / "doc_sample.csv"
SAMPLE_JSON = FIXTURES / "datahub_tuple" / "doc_sample.jsonl"
HEADER = SAMPLE_CSV.read_text().splitlines()[0]
CONFIG = {
    "db": "shop",
    "column_types": {"shop.orders": {"id": "bigint", "amount": "decimal(10,2)", "updated": "timestamp"}},
    "primary_keys": {"shop.orders": ("id",)},
}


def tuple_source(tmp_path=None, **overrides):
    return source_for("datahub_tuple", tmp_path, **(CONFIG | overrides))


@pytest.fixture(scope="module")
def sample_rows(spark):
    rows = parse_files(spark, tuple_source(), SAMPLE_CSV, SAMPLE_JSON)
    return [r for r in rows if r["origin_file"].endswith(".csv")], [r for r in rows if r["origin_file"].endswith("l")]


def test_csv_sample_rows_become_insert_update_halves_and_delete(sample_rows):
    header, insert, before_half, after_half, delete = sample_rows[0]

    assert (header["outcome"], header["op"], header["reject_reason"]) == ("control", "CSV_HEADER", None)
    assert [(r["outcome"], r["raw_op"], r["op"]) for r in (insert, before_half, after_half, delete)] == [
        ("data", "I", "INSERT"),
        ("data", "U", "UPDATE_BEFORE"),
        ("data", "U", "UPDATE_AFTER"),
        ("data", "D", "DELETE"),
    ]
    assert (insert["db"], insert["table"], insert["primary_key"]) == ("shop", "orders", ["id"])
    assert insert["after"] == {
        "id": "1",
        "name": "Smith, Anna",
        "amount": "10.50",
        "updated": "2022-04-15 03:02:06.000000",
    }
    assert insert["before"] is None
    assert before_half["before"] == insert["after"] and before_half["after"] is None
    # quotes unescaped, empty field NULL, DataHub TIMESTAMP (epoch microseconds) as timestamp text
    assert after_half["after"] == {
        "id": "1",
        "name": 'Anna "Annie" Smith',
        "amount": None,
        "updated": "2022-04-15 03:02:36.000000",
    }
    assert delete["before"] == after_half["after"] and delete["after"] is None
    assert insert["columns"] == [
        {"name": "id", "type": "bigint"},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": "decimal(10,2)"},
        {"name": "updated", "type": "timestamp"},
    ]
    assert [r["seq"] for r in (insert, before_half, after_half, delete)] == [
        Decimal("1649991610688000000"),
        Decimal("1649991610688000001"),
        Decimal("1649991610688000001"),
        Decimal("1649991610688000002"),
    ]
    assert [r["event_time"] for r in (insert, after_half, delete)] == [
        datetime(2022, 4, 15, 3, 2, 6),
        datetime(2022, 4, 15, 3, 2, 36),
        datetime(2022, 4, 15, 3, 2, 54),
    ]


def test_json_lines_give_the_same_rows_as_csv(sample_rows):
    csv_rows, json_rows = sample_rows
    fields = ("outcome", "op", "db", "table", "before", "after", "columns", "primary_key", "seq", "event_time")
    assert [{f: r[f] for f in fields} for r in json_rows] == [{f: r[f] for f in fields} for r in csv_rows[1:]]


@pytest.mark.parametrize("fmt", ["datahub_tuple", "auto"])
def test_csv_rows_are_not_held_to_jsons_text_rules_and_json_lines_are(spark, tmp_path, fmt):
    """A CSV field may hold a raw tab and the text \\ud800 (JSON allows neither, the second read as an escaped
    lone surrogate): the CSV row loads them as written; a JSON line holding the escape is quarantined."""
    text = "a\tb \\ud800"
    csv_row = f'1,"{text}",10.50,2022-04-15 03:02:06,1649991610688000000,I,1649991726000,orders,N,Y'
    (tmp_path / "rows.CSV").write_text(f"{HEADER}\n{csv_row}\n")
    json_line = SAMPLE_JSON.read_text().splitlines()[0].replace("Smith, Anna", "\\ud800")
    (tmp_path / "rows.jsonl").write_text(json_line + "\n")

    rows = parse_files(spark, source_for(fmt, **CONFIG), tmp_path / "rows.CSV", tmp_path / "rows.jsonl")

    csv_header, csv_insert, json_insert = rows
    assert (csv_header["outcome"], csv_insert["outcome"], csv_insert["after"]["name"]) == ("control", "data", text)
    assert (json_insert["outcome"], json_insert["reject_reason"]) == (
        "quarantined",
        "message holds an escaped UTF-16 surrogate that is not half of a pair: \\ud800",
    )


def test_unconfigured_columns_are_strings(spark):
    rows = parse_files(spark, tuple_source(column_types={}), SAMPLE_JSON)
    assert {c["type"] for c in rows[0]["columns"]} == {"string"}
    assert rows[0]["after"]["updated"] == "2022-04-15 03:02:06" and rows[2]["after"]["updated"] == "1649991756000000"


def test_bad_rows_and_bad_headers_are_quarantined_with_reasons(spark, tmp_path):
    insert = SAMPLE_CSV.read_text().splitlines()[1]
    good = tmp_path / "rows.csv"
    good.write_text(
        "\n".join(
            [
                HEADER,
                insert,
                insert.replace(",I,", ",X,"),
                insert.replace(",N,Y", ",Y,N"),
                insert.replace(",1649991610688000000,", ",16499916106880000.5,"),
                insert.replace("10.50", "10.505"),
                insert.replace(",1649991726000,", ",yesterday,"),
                insert.replace(",orders,", ",,"),
                insert + ",extra",
                '1,"unterminated,10.50',
                "",
            ]
        )
        + "\n"
    )
    bad_header = tmp_path / "bad_header.csv"
    bad_header.write_text(HEADER.replace("_source_table_", "id") + "\n" + insert + "\n")
    bad_json = tmp_path / "rows.jsonl"
    bad_json.write_text('{"id": 1, "_operation_type_": "I"\n{"id": 1, "_after_image_": "Y"}\n')

    rows = parse_files(spark, tuple_source(), bad_header, bad_json, good)

    assert [
        (r["origin_file"].rsplit("/", 1)[-1], r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows
    ] == [
        ("bad_header.csv", 1, "quarantined", "CSV header repeats column(s): id"),
        ("bad_header.csv", 2, "quarantined", "the file's CSV header (line 1) is invalid"),
        ("rows.csv", 1, "control", None),
        ("rows.csv", 2, "data", None),
        ("rows.csv", 3, "quarantined", "unknown _operation_type_ 'X'"),
        ("rows.csv", 4, "quarantined", "_before_image_/_after_image_ = 'Y'/'N' do not fit _operation_type_ 'I'"),
        ("rows.csv", 5, "quarantined", "_sequence_id_ is missing or not a number"),
        ("rows.csv", 6, "quarantined", "value does not match its declared type in column(s): amount"),
        ("rows.csv", 7, "quarantined", "_excute_time_ is not a time"),
        ("rows.csv", 8, "quarantined", "missing _source_table_"),
        ("rows.csv", 9, "quarantined", "CSV line has 11 fields, the header 10"),
        ("rows.csv", 10, "quarantined", "malformed CSV line"),
        ("rows.csv", 11, "quarantined", "empty line"),
        ("rows.jsonl", 1, "quarantined", "malformed JSON: not a JSON object"),
        ("rows.jsonl", 2, "quarantined", "missing _operation_type_"),
    ]


def test_csv_and_json_exports_load_end_to_end(spark, tmp_path):
    source = tuple_source(tmp_path)
    header = HEADER
    row = "{id},{name},{amount},{updated},{seq},{op},1649991726000,orders,{before},{after}"
    write_export(
        source,
        "orders/part-0.csv",
        [
            header,
            row.format(id=1, name="a", amount="1.00", updated="", seq=10, op="I", before="N", after="Y"),
            row.format(id=2, name='"b, c"', amount="2.50", updated="", seq=11, op="I", before="N", after="Y"),
            row.format(id=3, name="c", amount="3.00", updated="", seq=12, op="I", before="N", after="Y"),
            row.format(id=1, name="a", amount="1.00", updated="", seq=13, op="U", before="Y", after="N"),
            row.format(
                id=1, name="A", amount="1.25", updated="2022-04-15 03:02:06.5", seq=13, op="U", before="N", after="Y"
            ),
        ],
    )
    write_export(
        source,
        "orders/part-1.jsonl",
        [
            '{"id": 2, "name": "b, c", "amount": 2.50, "_sequence_id_": "14", "_operation_type_": "D",'
            ' "_source_table_": "orders", "_before_image_": "Y", "_after_image_": "N"}',
        ],
    )

    reports = run(spark, source)

    assert silver_rows(source, "shop", "orders") == [
        {
            "id": 1,
            "name": "A",
            "amount": Decimal("1.25"),
            "updated": datetime(2022, 4, 15, 3, 2, 6, 500000, tzinfo=UTC),
        },
        {"id": 3, "name": "c", "amount": Decimal("3.00"), "updated": None},
    ]
    assert silver_schema(source, "shop", "orders") == {
        "id": "int64",
        "name": "string",
        "amount": "decimal128(10, 2)",
        "updated": "timestamp[us, tz=UTC]",
    }
    assert report(reports, "parse", HOUR)["outcomes"] == {
        "data": 6,
        "ddl": 0,
        "heartbeat": 0,
        "control": 1,
        "excluded": 0,
        "quarantined": 0,
    }


def test_date_column_accepts_timestamp_micros_at_midnight_and_rejects_other_times(parse_messages):
    """DataHub has no DATE type: a `date` column arrives as a TIMESTAMP (epoch microseconds)."""
    meta = {"_operation_type_": "I", "_source_table_": "orders", "_before_image_": "N", "_after_image_": "Y"}
    values = [
        "-86400000000",  # 1969-12-31 at midnight: before 1970
        str(int(datetime(2024, 2, 29, tzinfo=UTC).timestamp()) * 1_000_000),
        "2023-03-23",  # text is a date too
        str(int(datetime(2024, 2, 29, 0, 0, 1, tzinfo=UTC).timestamp()) * 1_000_000),  # not midnight
    ]
    lines = [
        json.dumps(meta | {"_sequence_id_": str(n), "id": str(n), "born": value}) for n, value in enumerate(values)
    ]
    source = tuple_source(column_types={"shop.orders": {"id": "bigint", "born": "date"}})

    rows = parse_messages(source, lines)

    assert [(r["after"]["born"], r["reject_reason"]) for r in rows] == [
        ("1969-12-31", None),
        ("2024-02-29", None),
        ("2023-03-23", None),
        (None, "date column(s) holding a TIMESTAMP (epoch microseconds) that is not midnight UTC: born"),
    ]
    assert {c["name"]: c["type"] for c in rows[0]["columns"]}["born"] == "date"
