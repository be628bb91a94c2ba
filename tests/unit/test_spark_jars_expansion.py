"""`lakeloader.spark.expand_jars`: the jars pattern `session_conf` gives (`<jars_dir>/*.jar`) becomes the list of
files, since SparkContext.addJar takes no patterns and executors on a cluster would otherwise get no jars."""

from __future__ import annotations

from pathlib import Path

from lakeloader.spark import expand_jars


def test_a_local_pattern_becomes_the_sorted_files_and_other_entries_stay(tmp_path: Path):
    for name in ("b.jar", "a.jar", "notes.txt"):
        (tmp_path / name).write_text("")
    jars = expand_jars(f"{tmp_path}/*.jar,s3a://bucket/x.jar,/opt/y.jar")
    assert jars.split(",") == [f"{tmp_path}/a.jar", f"{tmp_path}/b.jar", "s3a://bucket/x.jar", "/opt/y.jar"]


def test_a_pattern_matching_nothing_stays_as_given_for_spark_to_report(tmp_path: Path):
    assert expand_jars(f"{tmp_path}/*.jar") == f"{tmp_path}/*.jar"
