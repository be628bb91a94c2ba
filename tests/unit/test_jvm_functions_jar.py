"""The project's JVM functions' jar (`lakeloader.core.spark_conf.jvm_jar`): where it is looked for, how it joins
`spark.jars`, and that a session cannot start without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakeloader.core.config import SourceConfig
from lakeloader.core.spark_conf import JVM_JAR_ENV, jvm_jar, session_conf, with_jvm_jar
from lakeloader.spark import spark_session


def test_the_jar_is_the_environment_variables_path_when_set(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(JVM_JAR_ENV, str(tmp_path / "functions.jar"))
    assert jvm_jar() == tmp_path / "functions.jar"
    assert with_jvm_jar(None) == f"{tmp_path}/functions.jar"
    assert with_jvm_jar("/opt/a.jar,/opt/b.jar") == f"/opt/a.jar,/opt/b.jar,{tmp_path}/functions.jar"
    assert with_jvm_jar(f"{tmp_path}/functions.jar,/opt/a.jar") == f"{tmp_path}/functions.jar,/opt/a.jar"  # once


def test_every_engines_session_settings_carry_the_jar(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(JVM_JAR_ENV, str(tmp_path / "functions.jar"))
    embedded = SourceConfig(name="s", format="canal_json", export_uri=str(tmp_path), lake_root=str(tmp_path))
    on_spark = embedded.model_copy(update={"engine": "delta_spark"})
    assert session_conf(embedded) == {"spark.jars": f"{tmp_path}/functions.jar"}
    assert session_conf(on_spark)["spark.jars"].split(",")[-1] == f"{tmp_path}/functions.jar"


def test_a_session_without_the_jar_fails_before_starting_saying_how_to_build_it(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(JVM_JAR_ENV, str(tmp_path / "missing.jar"))
    with pytest.raises(FileNotFoundError, match=r"missing\.jar: run `make setup`"):
        spark_session("no-jar", master="local[1]")
