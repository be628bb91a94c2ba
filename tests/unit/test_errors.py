"""Every exception lakeloader defines derives from `LakeloaderError` and keeps the built-in class it had."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lakeloader.apply.schema_changes import DdlPolicyError, UnsupportedOperation
from lakeloader.core.config import ConfigError
from lakeloader.core.errors import LakeloaderError
from lakeloader.core.lock import SourceBusy
from lakeloader.core.zones import OutsideLake
from lakeloader.engine.base import UnreadableTable
from lakeloader.land.step import LandError

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [ROOT / "jobs" / "lakeloader", ROOT / "plugins" / "lakeloader_airflow"]


def _exception_classes() -> list[tuple[str, list[str]]]:
    """(module:class, base names) of each class in the shipped packages whose bases name an exception."""
    found = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = [ast.unparse(base) for base in node.bases]
                if any(
                    base.endswith(("Error", "Exception")) or base in {"SourceBusy", "OutsideLake"} for base in bases
                ):
                    found.append((f"{path.relative_to(ROOT)}:{node.name}", bases))
    return found


def test_every_project_exception_derives_from_lakeloader_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 11
    assert [
        name
        for name, bases in classes
        if "LakeloaderError" not in bases and name != "jobs/lakeloader/core/errors.py:LakeloaderError"
    ] == []


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (ConfigError, ValueError),
        (OutsideLake, ValueError),
        (LandError, RuntimeError),
        (SourceBusy, RuntimeError),
        (UnreadableTable, RuntimeError),
        (DdlPolicyError, RuntimeError),
        (UnsupportedOperation, Exception),
    ],
)
def test_errors_keep_their_builtin_class_and_message(error: type[Exception], builtin: type[Exception]) -> None:
    raised = error("source shop: export_uri is missing")
    assert isinstance(raised, LakeloaderError)
    assert isinstance(raised, builtin)
    assert str(raised) == "source shop: export_uri is missing"
    with pytest.raises(LakeloaderError, match="export_uri is missing"):
        raise raised
