"""The format registry is the one list of formats: the docs and the example configuration list exactly its
formats, its parsers resolve, and `format: auto` tries its shapes in one determined order. Pure Python, no
Spark session."""

from __future__ import annotations

import re
from pathlib import Path

from lakeloader.core import format_registry as registry
from lakeloader.core.format_registry import FORMATS

ROOT = Path(__file__).resolve().parents[2]


def _readme_formats() -> list[str]:
    """The first column of the README's "Formats" table (below its header), in order."""
    section = (ROOT / "README.md").read_text().split("\n## Formats\n", 1)[1].split("\n## ", 1)[0]
    body = section.split("\n|---", 1)[1]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", body, flags=re.MULTILINE)


def test_the_readme_formats_table_lists_the_registry_in_its_order():
    assert _readme_formats() == list(FORMATS)


def test_the_example_configuration_lists_the_registry_formats():
    text = (ROOT / "config" / "sources.yaml").read_text()
    comment = text.split("Supported:", 1)[1].split("format:", 1)[0]
    assert re.findall(r"\b(?:[a-z0-9]+_[a-z0-9_]+|auto)\b", comment) == list(FORMATS)


def test_docs_formats_names_every_format():
    text = (ROOT / "docs" / "formats.md").read_text()
    assert [name for name in FORMATS if f"`{name}`" not in text] == []


def test_every_parser_path_names_a_function():
    assert {name: callable(registry.parser(name)) for name in FORMATS} == dict.fromkeys(FORMATS, True)


def test_auto_tries_shapes_in_one_order_and_never_recognises_itself():
    ranks = [shape.rank for _, shape in registry.shapes()]
    assert ranks == sorted(set(ranks))  # unique: no two shapes tie
    assert [name for name, _ in registry.shapes()][:3] == ["datahub_tuple", "dataworks_v2", "dataworks_json"]
    assert [f.name for f in FORMATS.values() if f.recognises and f.shapes] == []


def test_binary_formats_are_not_json_and_settings_follow_what_messages_lack():
    assert [f.name for f in FORMATS.values() if f.binary and f.json] == []
    assert FORMATS["datahub_tuple"].settings == ("db",)
    assert FORMATS["debezium_smt"].settings == ("topic_tables",)
    assert FORMATS["canal_json"].settings == ("canal_dts_legacy_images", "canal_binary_encoding")


def test_partial_after_images_come_only_from_shareplex_also_through_auto():
    """Apply folds a key's partial images only where the format may send them (`key_actions`); SharePlex sends
    an update's changed columns only, and `auto` may recognise SharePlex messages."""
    assert [name for name in FORMATS if registry.may_send_partial_images(name)] == ["shareplex_json", "auto"]
