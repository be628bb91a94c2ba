"""The project's JVM functions' jar (`lakeloader.core.spark_conf.jvm_jar`): where it is looked for, and that a
session cannot start without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lakeloader.core.spark_conf import JVM_JAR_ENV, jvm_jar
from lakeloader.spark import spark_session


def test_the_jar_is_the_environment_variables_path_when_set_else_beside_the_python_environment(
    monkeypatch, tmp_path: Path
):
    monkeypatch.delenv(JVM_JAR_ENV, raising=False)
    assert jvm_jar().name == "lakeloader-jvm.jar" and jvm_jar().parent == Path(sys.prefix)
    monkeypatch.setenv(JVM_JAR_ENV, str(tmp_path / "functions.jar"))
    assert jvm_jar() == tmp_path / "functions.jar"


def test_a_session_without_the_jar_fails_before_starting_saying_how_to_build_it(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(JVM_JAR_ENV, str(tmp_path / "missing.jar"))
    with pytest.raises(FileNotFoundError, match=r"missing\.jar: run `make setup`"):
        spark_session("no-jar", master="local[1]")
