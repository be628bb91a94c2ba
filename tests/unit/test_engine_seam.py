"""The table engine seam (docs/architecture.md "The table engine"): outside `lakeloader/engine/`, product code
reaches Delta tables only through `engine_for(source)` and the `TableEngine` interface, so a second engine is a
second implementation, not a fork. Pure: reads the source files with `ast`, renders predicates as strings."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

from lakeloader.engine import base as E
from lakeloader.engine import deltaspark
from lakeloader.engine.deltars import newer, predicate_sql

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "jobs/lakeloader/engine"
# the benchmark measures delta-rs itself (and leaves the shipped package with issue 15's tooling move)
TOOLING = ROOT / "tools/bench"
ENGINE_ONLY = ("deltalake", "lakeloader.engine.deltars")


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _product_sources() -> list[Path]:
    files = [p for top in ("jobs", "plugins", "dags") for p in sorted((ROOT / top).rglob("*.py"))]
    return [p for p in files if not p.is_relative_to(ENGINE) and not p.is_relative_to(TOOLING)]


def test_nothing_outside_the_engine_package_imports_delta_rs_or_its_engine() -> None:
    sources = _product_sources()
    assert (
        ROOT / "jobs/lakeloader/audit/reconcile.py" in sources and ROOT / "jobs/lakeloader/apply/silver.py" in sources
    )
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sources
        for line, module in _imported_modules(ast.parse(path.read_text(), str(path)))
        if any(module == name or module.startswith(name + ".") for name in ENGINE_ONLY)
    ]
    assert offending == []


def test_the_seam_check_sees_an_import_of_delta_rs() -> None:
    tree = ast.parse("import deltalake\nfrom lakeloader.engine.deltars import quote\nfrom lakeloader import engine\n")
    modules = [m for _, m in _imported_modules(tree)]
    assert "deltalake" in modules and "lakeloader.engine.deltars.quote" in modules


def test_delta_rs_renders_typed_predicates_in_its_sql() -> None:
    older = E.before((E.SEQ, E.SEQ2), (Decimal(5), Decimal(3)))
    assert predicate_sql(older) == (
        "\"_cdc_seq\" < CAST('5' AS DECIMAL(38,0)) OR "
        "(\"_cdc_seq\" = CAST('5' AS DECIMAL(38,0)) AND \"_cdc_seq2\" < CAST('3' AS DECIMAL(38,0)))"
    )
    expired = E.Compare(E.DELETED_AT, "<", datetime(2026, 1, 1, tzinfo=UTC))
    assert predicate_sql(expired) == "\"_cdc_deleted_at\" < '2026-01-01T00:00:00+00:00'"
    assert predicate_sql(E.NotNull('we"ird')) == '"we""ird" IS NOT NULL'
    assert predicate_sql(E.Compare("name", "=", "o'brien")) == "\"name\" = 'o''brien'"
    assert predicate_sql(E.before(("a",), (1,))) == '"a" < 1'


def test_delta_rs_renders_a_null_position_as_the_oldest_in_its_merge_condition() -> None:
    condition = newer((E.SEQ, E.POSITION), absent=frozenset({f"t.{E.POSITION}"}))
    assert condition == (
        '((s."_cdc_seq" > t."_cdc_seq") OR (s."_cdc_seq" = t."_cdc_seq" AND coalesce(s."_cdc_position", \'\') > \'\'))'
    )


def test_delta_on_spark_renders_the_same_predicates_in_spark_sql() -> None:
    older = E.before((E.SEQ, E.SEQ2), (Decimal(5), Decimal(3)))
    assert deltaspark.predicate_sql(older) == (
        "`_cdc_seq` < CAST('5' AS DECIMAL(38,0)) OR "
        "(`_cdc_seq` = CAST('5' AS DECIMAL(38,0)) AND `_cdc_seq2` < CAST('3' AS DECIMAL(38,0)))"
    )
    expired = E.Compare(E.DELETED_AT, "<", datetime(2026, 1, 1, tzinfo=UTC))
    assert deltaspark.predicate_sql(expired) == "`_cdc_deleted_at` < TIMESTAMP '2026-01-01T00:00:00+00:00'"
    assert deltaspark.predicate_sql(E.NotNull("we`ird")) == "`we``ird` IS NOT NULL"
    assert deltaspark.predicate_sql(E.Compare("name", "=", "o'brien\\")) == "`name` = 'o\\'brien\\\\'"
    # a side without the position column counts it as the oldest value
    assert deltaspark.newer((E.SEQ, E.POSITION), {E.SEQ, E.POSITION}, {E.SEQ}) == (
        "((s.`_cdc_seq` > t.`_cdc_seq`) OR (s.`_cdc_seq` = t.`_cdc_seq` AND coalesce(s.`_cdc_position`, '') > ''))"
    )


def test_a_column_converts_exactly_only_when_no_value_loses_a_digit_or_fails_to_parse() -> None:
    whole = pa.decimal128(30, 0)
    assert E.converts_exactly(pa.array(["123", "0123", "-5", None, "1.0", "9" * 30]), whole)
    assert E.converts_exactly(pa.array(["12"], pa.string_view()), pa.int32())
    for text in ("1.5", "abc", " 12", "9" * 31):
        assert not E.converts_exactly(pa.array(["1", text]), whole), text
    assert not E.converts_exactly(pa.array(["99999999999"]), pa.int32())
