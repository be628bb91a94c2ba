"""`format: auto` recognises each message's wire format: an export mixing every format's fixtures parses to
exactly what each format's own parser gives, and a message of no known shape is quarantined with the reason."""

from __future__ import annotations

from pathlib import Path

from format_support import FIXTURES, parse_files, source_for

from lakeloader.parse.formats.auto import AUTO_UNRECOGNISED

SETTINGS = {  # the format-specific settings the fixtures need; with auto they apply to their format's messages
    "db": "shop",
    "column_types": {"shop.orders": {"id": "bigint", "amount": "decimal(10,2)", "updated": "timestamp"}},
    "primary_keys": {"shop.orders": ("id",)},
}
JSON_LINES = {
    "dataworks_json": [FIXTURES / "dataworks_json" / "oracle_and_every_op.jsonl"],
    "dataworks_v2": [FIXTURES / "dataworks_v2" / n for n in ("doc_examples.jsonl", "consistent.jsonl")],
    "oms_default": [FIXTURES / "oms_default" / n for n in ("doc_examples.jsonl", "consistent.jsonl")],
    "oms_default_extend_column_type": [
        FIXTURES / "oms_default_extend_column_type" / n for n in ("doc_examples.jsonl", "consistent.jsonl")
    ],
    "datahub_tuple": [FIXTURES / "datahub_tuple" / "doc_sample.jsonl"],
}
ALLOWED = {"datahub_tuple": tuple(SETTINGS), "oms_default": ("column_types", "primary_keys")}
UNKNOWN = ['{"hello": "world"}', "not json at all"]
COMPARED = ("kind", "op", "db", "table", "before", "after", "primary_key", "columns", "seq", "seq2", "reject_reason")


def _canonical(rows: list[dict]) -> list[tuple]:
    """The rows' canonical values; a line that is not JSON at all is only 'unrecognised' to auto."""

    def plain(value: object) -> str:
        return str(sorted(value.items()) if isinstance(value, dict) else value)

    def malformed(row: dict) -> bool:
        return (row["reject_reason"] or "").startswith("malformed JSON") or row["reject_reason"] == AUTO_UNRECOGNISED

    return [("malformed",) if malformed(r) else tuple(plain(r[k]) for k in COMPARED) for r in rows]


def test_a_mixed_export_parses_as_each_formats_own_parser_would(spark, tmp_path):
    mixed, expected = [], []
    for fmt, files in JSON_LINES.items():
        own = source_for(fmt, **{k: v for k, v in SETTINGS.items() if k in ALLOWED.get(fmt, ("primary_keys",))})
        for file in files:
            expected += _canonical(parse_files(spark, own, file))
            mixed += file.read_text().splitlines()
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(mixed + UNKNOWN) + "\n")

    rows = parse_files(spark, source_for("auto", **SETTINGS), path)

    assert _canonical(rows[: len(mixed)]) == expected
    assert [(r["origin_line"], r["outcome"], r["reject_reason"]) for r in rows[len(mixed) :]] == [
        (len(mixed) + 1, "quarantined", AUTO_UNRECOGNISED),
        (len(mixed) + 2, "quarantined", AUTO_UNRECOGNISED),
    ]


def test_csv_files_are_datahub_tuple_rows(spark):
    csv = FIXTURES / "datahub_tuple" / "doc_sample.csv"
    expected = _canonical(parse_files(spark, source_for("datahub_tuple", **SETTINGS), csv))

    assert _canonical(parse_files(spark, source_for("auto", **SETTINGS), Path(csv))) == expected
