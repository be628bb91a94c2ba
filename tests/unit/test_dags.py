"""The DAG files load, build one hourly DAG per configured source, and surface config errors as import errors."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pendulum
import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.serialization.encoders import coerce_to_core_timetable
from airflow.serialization.serialized_objects import DagSerialization
from airflow.timetables.base import DataInterval

from lakeloader.core.config import ConfigError
from lakeloader_airflow.timetable import HourIntervals

DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
JOBS_DIR = Path(__file__).resolve().parents[2] / "jobs"

CONFIG = """\
sources:
  - name: shop
    format: dataworks_json
    export_uri: exports/shop
    lake_root: lake
    start_date: "2026-11-21T00:00:00+00:00"
    retries: 3
    owner: data-platform
    deadline_minutes: 45
  - name: billing
    format: dataworks_json
    export_uri: s3://exports/billing
    lake_root: s3://lake
"""


def _dagbag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_text: str) -> tuple[DagBag, Path]:
    config = tmp_path / "sources.yaml"
    config.write_text(config_text)
    monkeypatch.setenv("LAKELOADER_CONFIG", str(config))
    return DagBag(dag_folder=str(DAGS_DIR), safe_mode=True), config


def _hourly(bag: DagBag) -> list:
    return [dag for dag_id, dag in sorted(bag.dags.items()) if dag_id.endswith("_hourly")]


@pytest.fixture
def dagbag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[DagBag, Path]:
    return _dagbag(tmp_path, monkeypatch, CONFIG)


def test_one_dag_per_source_without_import_errors(dagbag: tuple[DagBag, Path]) -> None:
    bag, _ = dagbag
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == [
        "lakeloader_billing_hourly",
        "lakeloader_billing_reconcile_daily",
        "lakeloader_replay",
        "lakeloader_shop_hourly",
        "lakeloader_shop_reconcile_daily",
    ]


def test_tasks_and_dependencies(dagbag: tuple[DagBag, Path]) -> None:
    bag, _ = dagbag
    for dag in _hourly(bag):
        assert sorted(dag.task_ids) == ["anything_landed", "apply", "freshness", "land", "parse", "reconcile", "verify"]
        land, landed, parse, apply, reconcile, verify, freshness = (
            dag.get_task(t) for t in ("land", "anything_landed", "parse", "apply", "reconcile", "verify", "freshness")
        )
        assert land.upstream_task_ids == set()
        assert land.downstream_task_ids == {"anything_landed"}
        assert landed.downstream_task_ids == {"parse"}
        assert landed.ignore_downstream_trigger_rules is False  # an empty hour still checks freshness
        assert parse.downstream_task_ids == {"apply"}
        assert apply.downstream_task_ids == {"reconcile"}
        assert reconcile.downstream_task_ids == {"verify", "freshness"}
        assert freshness.trigger_rule == "all_done"  # checks freshness even when loading failed
        assert not isinstance(land, SparkSubmitOperator)
        for task in (land, landed, parse, apply, reconcile, verify, freshness):
            assert task.doc_md and task.doc_md.strip()


def test_lake_writing_tasks_share_the_sources_one_slot_pool(dagbag: tuple[DagBag, Path]) -> None:
    bag, _ = dagbag
    for source in ("shop", "billing"):
        dag = bag.dags[f"lakeloader_{source}_hourly"]
        pools = {task.task_id: task.pool for task in dag.tasks}
        assert pools == {
            "land": f"lakeloader_{source}",
            "anything_landed": "default_pool",
            "parse": f"lakeloader_{source}",
            "apply": f"lakeloader_{source}",
            "reconcile": f"lakeloader_{source}",
            "verify": "default_pool",
            "freshness": "default_pool",
        }


def test_every_run_has_a_deadline_relative_to_its_data_interval_end(dagbag: tuple[DagBag, Path]) -> None:
    from lakeloader_airflow.deadlines import DataIntervalEnd

    bag, config = dagbag
    [alert] = bag.dags["lakeloader_shop_hourly"].deadline
    assert isinstance(alert.reference, DataIntervalEnd)
    assert alert.interval == timedelta(minutes=45)
    assert alert.callback.path == "lakeloader_airflow.callbacks.deadline_missed"
    assert alert.callback.kwargs == {"source": "shop", "config": str(config.resolve()), "deadline_minutes": 45}
    [default] = bag.dags["lakeloader_billing_hourly"].deadline
    assert default.interval == timedelta(minutes=60)


def test_failed_tasks_alert_through_the_sources_channels(dagbag: tuple[DagBag, Path]) -> None:
    from lakeloader_airflow.callbacks import FailureAlert

    bag, config = dagbag
    for task in bag.dags["lakeloader_shop_hourly"].tasks:
        [callback] = task.on_failure_callback
        assert isinstance(callback, FailureAlert)
        assert (callback.source, callback.config) == ("shop", str(config.resolve()))
    checks = [bag.dags["lakeloader_shop_hourly"].get_task(t) for t in ("verify", "freshness")]
    assert all(task.retries == 0 for task in checks)  # a check gives the same answer when retried


def test_spark_tasks_run_the_jobs_for_the_data_interval_hour(dagbag: tuple[DagBag, Path]) -> None:
    bag, config = dagbag
    dag = bag.dags["lakeloader_shop_hourly"]
    for task_id in ("parse", "apply"):
        task = dag.get_task(task_id)
        assert isinstance(task, SparkSubmitOperator)
        assert task.application == str(JOBS_DIR / f"{task_id}.py")
        assert Path(task.application).is_absolute()
        assert task.application_args == [
            "--source",
            "shop",
            "--hour",
            "{{ data_interval_start.strftime('%Y-%m-%dT%H') }}",
            "--config",
            str(config.resolve()),
        ]
        assert task.conf == {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false"}
        assert task._conn_id == "spark_default"
        assert task._verbose is False


def test_schedule_covers_one_hour_per_run(dagbag: tuple[DagBag, Path]) -> None:
    bag, _ = dagbag
    for dag in _hourly(bag):
        assert isinstance(dag.timetable, HourIntervals)
        assert dag.timetable.summary == "0 * * * *"
        core = coerce_to_core_timetable(dag.timetable)
        interval = core.infer_manual_data_interval(run_after=pendulum.datetime(2026, 11, 21, 6, 30, tz="UTC"))
        assert interval.start == pendulum.datetime(2026, 11, 21, 5, tz="UTC")
        assert interval.end - interval.start == timedelta(hours=1)
        assert dag.catchup is False
        assert dag.max_active_runs == 1


def test_a_manual_run_on_the_hour_loads_that_hour_as_a_backfill_does_also_after_serialization(
    dagbag: tuple[DagBag, Path],
) -> None:
    bag, _ = dagbag
    dag = bag.dags["lakeloader_shop_hourly"]
    timetable = DagSerialization.from_dict(DagSerialization.to_dict(dag)).timetable  # as the scheduler has it
    hour = pendulum.datetime(2026, 11, 21, 5, tz="UTC")

    assert isinstance(timetable, HourIntervals)
    assert timetable.infer_manual_data_interval(run_after=hour) == DataInterval(hour, hour + timedelta(hours=1))
    now = hour + timedelta(minutes=20, seconds=7)  # the trigger form's "now": the last complete hour
    assert timetable.infer_manual_data_interval(run_after=now) == DataInterval(hour - timedelta(hours=1), hour)


def test_dag_settings_follow_the_source(dagbag: tuple[DagBag, Path]) -> None:
    bag, _ = dagbag
    shop, billing = bag.dags["lakeloader_shop_hourly"], bag.dags["lakeloader_billing_hourly"]
    assert shop.start_date == datetime(2026, 11, 21, tzinfo=UTC)
    assert shop.tags == {"lakeloader", "shop", "dataworks_json"}
    assert billing.tags == {"lakeloader", "billing", "dataworks_json"}
    loaders = ("land", "parse", "apply", "reconcile")
    assert all(shop.get_task(task).retries == 3 for task in loaders)
    assert all(billing.get_task(task).retries == 2 for task in loaders)  # the config's default
    assert {task.owner for task in shop.tasks} == {"data-platform"}
    assert {task.owner for task in bag.dags["lakeloader_shop_reconcile_daily"].tasks} == {"data-platform"}
    assert {task.owner for task in billing.tasks} == {"lakeloader"}  # the config's default
    assert all(task.retry_delay > timedelta(0) for task in shop.tasks)
    for dag in (shop, billing):
        assert dag.doc_md and "Rerunning an hour" in dag.doc_md
    assert "s3://lake/silver/billing/" in billing.doc_md


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ("    format: dataworks_jsonn", ["(shop).format", "expected one of", "dataworks_jsonn"]),
        ("    schedul: '0 * * * *'", ["(shop).schedul", "unknown key"]),
    ],
)
def test_a_source_with_a_mistake_gets_an_error_dag_naming_the_key_and_the_other_sources_still_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad_line: str, expected: list[str]
) -> None:
    config = "sources:\n  - name: shop\n    export_uri: e\n    lake_root: l\n" + bad_line + "\n"
    if "format:" not in bad_line:
        config += "    format: dataworks_json\n"
    config += "  - name: billing\n    format: canal_json\n    export_uri: e2\n    lake_root: l\n"
    bag, _ = _dagbag(tmp_path, monkeypatch, config)
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == [
        "lakeloader_billing_hourly",
        "lakeloader_billing_reconcile_daily",
        "lakeloader_replay",
        "lakeloader_shop_hourly",
    ]
    broken = bag.dags["lakeloader_shop_hourly"]
    assert "config-error" in broken.tags
    assert type(broken.timetable).__name__ == "NullTimetable"  # never scheduled
    assert broken.description.startswith("CONFIGURATION ERROR: ")
    for text in expected:
        assert text in broken.doc_md
    with pytest.raises(ConfigError) as raised:
        broken.get_task("configuration_error").python_callable()
    for text in expected:
        assert text in str(raised.value)
    assert bag.dags["lakeloader_replay"].params["source"] == "billing"


def test_a_mistake_in_a_source_without_a_usable_name_names_its_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = "sources:\n  - name: Shop!\n    format: canal_json\n    export_uri: e\n    lake_root: l\n"
    config += "  - name: billing\n    format: canal_json\n    export_uri: e2\n    lake_root: l\n"
    bag, _ = _dagbag(tmp_path, monkeypatch, config)
    assert bag.import_errors == {}
    assert "lakeloader_config_error_0" in bag.dag_ids
    assert "sources[0] (Shop!).name" in bag.dags["lakeloader_config_error_0"].doc_md


def test_a_mistake_of_the_whole_file_is_an_import_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bag, _ = _dagbag(tmp_path, monkeypatch, "defaults:\n  retriez: 3\nsources: []\n")
    assert bag.dag_ids == []
    assert sorted(Path(path).name for path in bag.import_errors) == ["lakeloader_hourly.py", "lakeloader_operations.py"]
    for message in bag.import_errors.values():
        assert "ConfigError" in message
        assert "defaults.retriez" in message


def test_missing_config_file_is_an_import_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKELOADER_CONFIG", str(tmp_path / "absent.yaml"))
    bag = DagBag(dag_folder=str(DAGS_DIR), safe_mode=True)
    assert bag.dag_ids == []
    assert len(bag.import_errors) == 2  # the hourly and the operations DAG files
    for message in bag.import_errors.values():
        assert "absent.yaml" in message
        assert "not found" in message


def test_dag_side_never_imports_pyspark() -> None:
    probe = (
        "import sys, lakeloader_airflow.dag_factory\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark')\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=120)
