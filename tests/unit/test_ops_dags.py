"""The replay and daily reconciliation DAGs: their tasks, pools and docs, and the replay form's typed Params,
which reject malformed input at trigger time with a message naming the field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import ParamValidationError

DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
JOBS_DIR = Path(__file__).resolve().parents[2] / "jobs"
CONFIG = """\
sources:
  - name: shop
    format: dataworks_json
    export_uri: exports/shop
    lake_root: lake
    snapshot: {uri: snapshots/shop, format: csv}
  - name: billing
    format: dataworks_json
    export_uri: exports/billing
    lake_root: lake
"""


@pytest.fixture(scope="module")
def bag(tmp_path_factory) -> DagBag:
    config = tmp_path_factory.mktemp("ops-dags") / "sources.yaml"
    config.write_text(CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAKELOADER_CONFIG", str(config))
        found = DagBag(dag_folder=str(DAGS_DIR), safe_mode=True)
    assert found.import_errors == {}
    return found


def test_replay_dag_validates_then_runs_the_chosen_sources_replay_in_its_pool(bag):
    dag = bag.dags["lakeloader_replay"]
    assert sorted(dag.task_ids) == ["replay_billing", "replay_shop", "report", "validate"]
    assert dag.get_task("validate").downstream_task_ids == {"replay_billing", "replay_shop"}
    assert dag.max_active_runs == 1 and dag.schedule is None
    for source in ("shop", "billing"):
        task = dag.get_task(f"replay_{source}")
        assert isinstance(task, SparkSubmitOperator)
        assert task.application == str(JOBS_DIR / "replay.py")
        assert task.pool == f"lakeloader_{source}"
        assert task.downstream_task_ids == {"report"}
    assert dag.get_task("report").trigger_rule == "none_failed_min_one_success"
    assert "whole" in dag.doc_md and all(task.doc_md for task in dag.tasks)


def test_replay_form_has_a_typed_param_with_help_text_for_each_field(bag):
    params = bag.dags["lakeloader_replay"].params
    assert params.dump() == {"source": "shop", "mode": "reapply", "from_hour": None, "to_hour": None, "tables": []}
    schemas = {name: params.get_param(name).schema for name in params}
    assert schemas["source"]["enum"] == ["shop", "billing"]
    assert schemas["mode"]["enum"] == ["reapply", "rebuild"]
    assert schemas["tables"]["type"] == ["null", "array"]  # optional in the form: empty rebuilds every table
    # Airflow's form marks a field required unless its type admits null: only source and mode are required
    required = sorted(name for name, schema in schemas.items() if "null" not in schema["type"])
    assert required == ["mode", "source"]
    for name, schema in schemas.items():
        assert schema.get("title") and (params.get_param(name).description or schema.get("description_md")), name


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("source", "nope", "'nope' is not one of ['shop', 'billing']"),
        ("mode", "redo", "'redo' is not one of ['reapply', 'rebuild']"),
        ("from_hour", "2026-11-21 05:00", "does not match"),
        ("to_hour", "yesterday", "does not match"),
        ("tables", ["orders"], "does not match"),
    ],
)
def test_replay_form_rejects_malformed_input_at_trigger_time(bag, field, value, message):
    params = copy.deepcopy(bag.dags["lakeloader_replay"].params)
    with pytest.raises(ParamValidationError) as raised:
        params[field] = value
        params.validate()
    assert f"Invalid input for param {field}" in str(raised.value)
    assert message in str(raised.value)


def test_daily_reconciliation_waits_for_the_day_then_checks_state_and_snapshot(bag):
    shop, billing = bag.dags["lakeloader_shop_reconcile_daily"], bag.dags["lakeloader_billing_reconcile_daily"]
    for dag in (shop, billing):
        assert dag.get_task("wait_for_day").downstream_task_ids == {"reconcile"}
        assert dag.get_task("reconcile").downstream_task_ids == {"verify"}
        assert dag.timetable.summary == "0 0 * * *" and dag.max_active_runs == 1
    reconcile = shop.get_task("reconcile")
    assert reconcile.pool == "lakeloader_shop"
    args = reconcile.application_args
    assert args[args.index("--checks") + 1] == "accounting,state,snapshot"
    assert (
        args[args.index("--to") + 1] == "{{ (data_interval_end - macros.timedelta(hours=1)).strftime('%Y-%m-%dT%H') }}"
    )
    billing_args = billing.get_task("reconcile").application_args
    assert billing_args[billing_args.index("--checks") + 1] == "accounting,state"
