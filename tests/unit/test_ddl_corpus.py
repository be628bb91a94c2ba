"""The DDL corpus: real-world statements written from the MySQL, Oracle and OceanBase reference manuals' syntax,
each with the outcome it must have at the statement-to-operations level (pure: no Spark).

`tests/fixtures/ddl/corpus.tsv` holds one statement per line: dialect, statement text and expected outcome,
tab-separated. The outcome is `render(parse_ddl(text, dialect))`:
- a schema change: `table: op; op; ...` with ops `add a int, b string`, `drop a, b`, `rename a>b`,
  `modify a bigint`, `change a>b bigint`, `rename-table db.t`, `create a int, b string key(a)`, `create-like t`,
  `truncate`, `drop-table`, and `no-op` for a clause or statement that leaves silver as it is (a statement on
  several tables renders each, separated by ` | `);
- `unsupported: <words>`: the statement goes to the source's ddl_policy, its reason containing <words>.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.statements import parse_ddl

CORPUS = Path(__file__).parents[1] / "fixtures" / "ddl" / "corpus.tsv"


def _name(table: S.TableName | None) -> str:
    if table is None:
        return "-"
    return f"{table.db}.{table.table}" if table.db else table.table


def _columns(columns: tuple[S.Column, ...]) -> str:
    return ", ".join(f"{c.name} {c.spark_type}" for c in columns)


def _operation(op: S.Operation) -> str:
    if isinstance(op, S.AddColumns):
        return f"add {_columns(op.columns)}"
    if isinstance(op, S.DropColumns):
        return f"drop {', '.join(op.names)}"
    if isinstance(op, S.RenameColumn):
        return f"rename {op.old}>{op.new}"
    if isinstance(op, S.ChangeColumnType):
        return f"change {op.old}>{op.name} {op.spark_type}" if op.old else f"modify {op.name} {op.spark_type}"
    if isinstance(op, S.RenameTable):
        return f"rename-table {_name(op.new)}"
    if isinstance(op, S.CreateTable):
        return f"create {_columns(op.columns)} key({', '.join(op.primary_key)})"
    if isinstance(op, S.CreateTableLike):
        return f"create-like {_name(op.like)}"
    if isinstance(op, S.TruncateTable):
        return "truncate"
    if isinstance(op, S.DropTable):
        return "drop-table"
    assert isinstance(op, S.NoOp), op
    return "no-op"


def render(parsed: S.Parsed) -> str:
    if isinstance(parsed, S.Unsupported):
        return f"unsupported: {parsed.reason}"
    if isinstance(parsed, S.Statements):
        return " | ".join(render(s) for s in parsed.statements)
    return f"{_name(parsed.table)}: " + "; ".join(_operation(op) for op in parsed.operations)


def corpus() -> list[tuple[str, str, str]]:
    rows = [line.split("\t") for line in CORPUS.read_text().splitlines() if line and not line.startswith("#")]
    assert all(len(row) == 3 for row in rows), [row for row in rows if len(row) != 3]
    return [(dialect, text, expected) for dialect, text, expected in rows]


def outcome(expected: str) -> str:
    """schema change, no-op or unsupported: how docs/ddl.md counts a corpus statement."""
    if expected.startswith("unsupported:"):
        return "unsupported"
    ops = [op.strip() for part in expected.split(" | ") for op in part.split(": ", 1)[1].split(";")]
    return "no-op" if all(op == "no-op" for op in ops) else "schema change"


@pytest.mark.parametrize(("dialect", "text", "expected"), corpus(), ids=lambda v: v[:60])
def test_corpus_statement_has_its_expected_operations(dialect, text, expected):
    got = render(parse_ddl(text, dialect))
    if expected.startswith("unsupported: "):
        assert got.startswith("unsupported: ") and expected.removeprefix("unsupported: ") in got, got
    else:
        assert got == expected


def test_corpus_covers_each_dialect_and_outcome_with_the_counts_docs_give():
    rows = corpus()
    assert len(rows) >= 200
    by_dialect = Counter(dialect for dialect, _, _ in rows)
    by_outcome = Counter(outcome(expected) for _, _, expected in rows)
    assert set(by_dialect) == {"mysql", "oracle", "oceanbase", "oceanbase_oracle"}
    documented = (Path(__file__).parents[2] / "docs" / "ddl.md").read_text()
    line = (
        f"{len(rows)} statements ({', '.join(f'{by_dialect[d]} {d}' for d in sorted(by_dialect))}): "
        f"{by_outcome['schema change']} schema changes, {by_outcome['no-op']} no-ops, "
        f"{by_outcome['unsupported']} unsupported"
    )
    assert line in documented, line
