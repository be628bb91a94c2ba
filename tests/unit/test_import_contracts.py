"""The import contracts (docs/architecture.md, "Packages and boundaries"): `lint-imports` checks the packages
against pyproject.toml's contracts in `make lint` and `make test`; the Airflow entry files that are single modules,
which import-linter cannot read, are held to the same rule here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The DAG files and the plugin module: Airflow's, and only through the core and the Airflow package.
AIRFLOW_ENTRY_FILES = [*sorted((ROOT / "dags").glob("*.py")), ROOT / "plugins" / "lakeloader_plugin.py"]
ALLOWED_FIRST_PARTY = ("lakeloader.core", "lakeloader_airflow")


def imported_modules(tree: ast.AST) -> set[str]:
    """Every module an import statement of `tree` names (absolute imports)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def entry_file_violations(path: Path) -> list[str]:
    """The imports of `path` that break the Airflow side's contract: pyspark, or first-party code outside the
    core and the Airflow package (whose own contracts lint-imports checks)."""
    problems = []
    for module in sorted(imported_modules(ast.parse(path.read_text(encoding="utf-8")))):
        top = module.split(".")[0]
        if top == "pyspark":
            problems.append(f"{path.name}: {module} (the Airflow side never imports pyspark)")
        elif top in ("lakeloader", "lakeloader_airflow", "tools") and not module.startswith(ALLOWED_FIRST_PARTY):
            problems.append(f"{path.name}: {module} (only {' and '.join(ALLOWED_FIRST_PARTY)})")
    return problems


def test_dag_files_and_the_plugin_module_import_only_the_core_and_the_airflow_package() -> None:
    assert {p.name for p in AIRFLOW_ENTRY_FILES} >= {"lakeloader_hourly.py", "lakeloader_plugin.py"}
    assert [problem for path in AIRFLOW_ENTRY_FILES for problem in entry_file_violations(path)] == []


def test_an_entry_file_importing_spark_or_a_stage_is_a_violation(tmp_path: Path) -> None:
    dag = tmp_path / "bad_dag.py"
    dag.write_text(
        "from pyspark.sql import SparkSession\nimport lakeloader.apply.step\nfrom lakeloader.core import zones\n"
    )
    assert entry_file_violations(dag) == [
        "bad_dag.py: lakeloader.apply.step (only lakeloader.core and lakeloader_airflow)",
        "bad_dag.py: pyspark.sql (the Airflow side never imports pyspark)",
    ]


def test_the_packages_keep_their_import_contracts() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert "0 broken" in result.stdout
