"""Alerts reach real receivers on 127.0.0.1 through Airflow notifiers (webhook JSON, Slack webhook, SMTP e-mail),
say what is late or wrong and by how much, and link to the run; freshness and deadline checks raise them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakeloader.core import zones
from lakeloader.core.config import EmailAlert, SlackAlert, SourceConfig, WebhookAlert
from lakeloader_airflow import alerts, checks
from lakeloader_airflow.callbacks import FailureAlert, deadline_missed

NOW = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)


@pytest.fixture
def channels(http_receiver, smtp_receiver, monkeypatch) -> tuple:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SMTP_TEST",
        json.dumps(
            {
                "conn_type": "smtp",
                "host": "127.0.0.1",
                "port": smtp_receiver.port,
                "extra": {"disable_ssl": True, "disable_tls": True, "retry_limit": 0, "timeout": 5},
            }
        ),
    )
    monkeypatch.setenv(
        "AIRFLOW_CONN_SLACK_TEST", json.dumps({"conn_type": "slackwebhook", "password": f"{http_receiver.url}/slack"})
    )
    return (
        WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook", headers={"X-Token": "t0k"}),
        SlackAlert(type="slack", conn_id="slack_test"),
        EmailAlert(type="email", to=("ops@example.com",), from_email="lakeloader@example.com", conn_id="smtp_test"),
    )


def _source(tmp_path: Path, alert_channels: tuple = (), **extra) -> SourceConfig:
    return SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(tmp_path / "exports"),
        lake_root=str(tmp_path / "lake"),
        alerts=alert_channels,
        **extra,
    )


def _write_config(tmp_path: Path, http_url: str, smtp_port: int) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(
        "sources:\n"
        "  - name: shop\n"
        "    format: dataworks_json\n"
        "    export_uri: exports\n"
        "    lake_root: lake\n"
        "    deadline_minutes: 30\n"
        "    alerts:\n"
        f"      - {{type: webhook, url: '{http_url}/hook'}}\n"
        "      - {type: email, to: [ops@example.com], from_email: lakeloader@example.com, conn_id: smtp_test}\n"
    )
    return path


def _webhook_bodies(receiver, path: str = "/hook") -> list[dict]:
    return [json.loads(r["body"]) for r in receiver.received() if r["path"] == path]


def test_one_alert_goes_to_every_configured_channel(tmp_path, channels, http_receiver, smtp_receiver):
    alert = alerts.Alert(
        source="shop",
        kind=alerts.FRESHNESS_LAG,
        summary="Source shop: data is 3 h 00 min behind",
        dag_id="lakeloader_shop_hourly",
        run_id="scheduled__2026-11-22T08:00:00+00:00",
        amount_seconds=10800,
        details={"watermark": "2026-11-22T06:30:00+00:00"},
    )

    alerts.deliver(_source(tmp_path, channels), alert)

    posts = http_receiver.wait_for(2)
    hook = next(p for p in posts if p["path"] == "/hook")
    assert hook["headers"]["Content-Type"] == "application/json" and hook["headers"]["X-Token"] == "t0k"
    body = json.loads(hook["body"])
    assert {k: body[k] for k in ("source", "kind", "summary", "amount_seconds", "dag_id")} == {
        "source": "shop",
        "kind": "freshness_lag",
        "summary": "Source shop: data is 3 h 00 min behind",
        "amount_seconds": 10800,
        "dag_id": "lakeloader_shop_hourly",
    }
    assert body["run_url"] == (
        "http://localhost:8080/dags/lakeloader_shop_hourly/runs/scheduled__2026-11-22T08%3A00%3A00%2B00%3A00"
    )
    slack = json.loads(next(p for p in posts if p["path"] == "/slack")["body"])
    assert slack["text"].startswith("*[lakeloader] shop: freshness lag*\nSource shop: data is 3 h 00 min behind")
    assert "watermark: 2026-11-22T06:30:00+00:00" in slack["text"]
    [mail] = smtp_receiver.wait_for(1)
    assert (mail["from"], mail["to"], mail["subject"]) == (
        "lakeloader@example.com",
        ["ops@example.com"],
        "[lakeloader] shop: freshness lag",
    )
    assert "Source shop: data is 3 h 00 min behind" in mail["body"] and body["run_url"] in mail["body"]


def test_asynchronous_delivery_from_the_triggerer_reaches_the_same_channels(tmp_path, channels, http_receiver,
                                                                            smtp_receiver):  # fmt: skip
    alert = alerts.Alert(source="shop", kind=alerts.DEADLINE_MISSED, summary="late {{ not a template }}")

    asyncio.run(alerts.adeliver(_source(tmp_path, channels), alert))

    assert _webhook_bodies(http_receiver)[0]["summary"] == "late {{ not a template }}"
    [mail] = smtp_receiver.wait_for(1)
    assert "late {{ not a template }}" in mail["body"]  # Jinja in notifiers leaves alert text alone


def test_a_failing_channel_does_not_stop_the_others(tmp_path, http_receiver):
    dead = WebhookAlert(type="webhook", url="http://127.0.0.1:9/nothing-listens", timeout_seconds=2)
    live = WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook")
    alert = alerts.Alert(source="shop", kind=alerts.TASK_FAILED, summary="boom")

    with pytest.raises(RuntimeError, match="not delivered to: WebhookNotifier"):
        alerts.deliver(_source(tmp_path, (dead, live)), alert)

    assert [b["summary"] for b in _webhook_bodies(http_receiver)] == ["boom"]


def _freshness(tmp_path: Path, change: datetime, heartbeat: datetime | None) -> None:
    path = tmp_path / "lake" / zones.freshness_key("shop")
    path.parent.mkdir(parents=True, exist_ok=True)
    newest = max(change, heartbeat) if heartbeat else change
    path.write_text(
        json.dumps(
            {
                "newest_change": change.isoformat(),
                "newest_heartbeat": heartbeat.isoformat() if heartbeat else None,
                "watermark": newest.isoformat(),
            }
        )
    )


def test_fresh_data_passes_and_reports_the_lag(tmp_path, http_receiver):
    hook = (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),)
    source = _source(tmp_path, hook, freshness_sla_minutes=60, heartbeat_timeout_minutes=15)
    _freshness(tmp_path, NOW - timedelta(minutes=40), NOW - timedelta(minutes=5))

    status = checks.check_freshness(source, now=NOW)

    assert (status["lag_minutes"], status["heartbeat_age_minutes"]) == (5.0, 5.0)
    assert status["watermark"] == "2026-11-22T09:25:00+00:00"
    assert http_receiver.received() == []


def test_freshness_breach_and_heartbeat_silence_each_alert_with_how_far_behind(tmp_path, http_receiver):
    hook = (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),)
    source = _source(tmp_path, hook, freshness_sla_minutes=60, heartbeat_timeout_minutes=15)
    _freshness(tmp_path, NOW - timedelta(minutes=150), NOW - timedelta(minutes=95))

    with pytest.raises(alerts.AlertSent, match="data is 1 h 35 min behind"):
        checks.check_freshness(source, "lakeloader_shop_hourly", "manual__x", now=NOW)

    lag, silence = _webhook_bodies(http_receiver)
    assert lag["kind"] == "freshness_lag" and lag["amount_seconds"] == 95 * 60
    assert lag["summary"] == (
        "Source shop: data is 1 h 35 min behind (newest change or heartbeat loaded: 2026-11-22T07:55:00+00:00), "
        "over its freshness SLA of 60 min by 35 min"
    )
    assert lag["details"]["lag_minutes"] == 95.0 and lag["run_url"].endswith(
        "/dags/lakeloader_shop_hourly/runs/manual__x"
    )
    assert silence["kind"] == "heartbeat_silence"
    assert silence["summary"] == (
        "Source shop: no heartbeat for 1 h 35 min (newest: 2026-11-22T07:55:00+00:00), "
        "1 h 20 min over its heartbeat timeout of 15 min"
    )


def test_freshness_is_checked_by_default_with_a_three_hour_limit(tmp_path, http_receiver):
    source = _source(tmp_path, (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),))
    _freshness(tmp_path, NOW - timedelta(minutes=181), None)

    with pytest.raises(alerts.AlertSent, match="over its freshness SLA of 180 min by 1 min"):
        checks.check_freshness(source, now=NOW)


def test_a_run_of_a_past_hour_reports_its_lag_without_alerting(tmp_path, http_receiver):
    hook = (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),)
    source = _source(tmp_path, hook, freshness_sla_minutes=60, heartbeat_timeout_minutes=15)
    _freshness(tmp_path, NOW - timedelta(days=5), NOW - timedelta(days=5))

    backfill = checks.check_freshness(source, now=NOW, hour_end=NOW - timedelta(minutes=121))

    assert (backfill["catching_up"], backfill["lag_minutes"]) == (True, 5 * 24 * 60.0)
    assert http_receiver.received() == []
    with pytest.raises(alerts.AlertSent, match="data is 120 h 00 min behind"):
        checks.check_freshness(source, now=NOW, hour_end=NOW - timedelta(minutes=119))  # the newest run


def test_no_heartbeat_ever_loaded_is_a_silence(tmp_path, http_receiver):
    source = _source(
        tmp_path, (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),), heartbeat_timeout_minutes=15
    )
    _freshness(tmp_path, NOW, None)

    with pytest.raises(alerts.AlertSent):
        checks.check_freshness(source, now=NOW)

    [silence] = _webhook_bodies(http_receiver)
    assert silence["summary"] == "Source shop: no heartbeat loaded yet (heartbeat timeout 15 min)"


def test_deadline_callback_says_which_hour_is_late_and_by_how_much(tmp_path, http_receiver, smtp_receiver, monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_SMTP_TEST",
        json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": smtp_receiver.port,
                    "extra": {"disable_ssl": True, "disable_tls": True, "retry_limit": 0}}),
    )  # fmt: skip
    config = _write_config(tmp_path, http_receiver.url, smtp_receiver.port)
    deadline = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=12)
    context = {  # what the scheduler hands a Deadline Alert callback
        "dag_run": {
            "dag_id": "lakeloader_shop_hourly",
            "dag_run_id": "scheduled__2026-11-22T05:00:00+00:00",
            "state": "running",
            "data_interval_start": "2026-11-22T05:00:00Z",
            "data_interval_end": "2026-11-22T06:00:00Z",
        },
        "deadline": {"id": "0199", "deadline_time": deadline.isoformat()},
    }

    asyncio.run(deadline_missed(source="shop", config=str(config), deadline_minutes=30, context=context))

    [body] = _webhook_bodies(http_receiver)
    assert body["kind"] == "deadline_missed" and 12 * 60 <= body["amount_seconds"] < 13 * 60
    assert body["summary"] == (
        "Source shop: the hourly run for hour 2026-11-22T05 is 12 min past its deadline (30 min after its data "
        "interval ended at 2026-11-22 06:00 UTC) and has not finished (state: running)"
    )
    assert body["run_url"].endswith("/runs/scheduled__2026-11-22T05%3A00%3A00%2B00%3A00")
    assert body["details"]["deadline"] == deadline.isoformat()
    [mail] = smtp_receiver.wait_for(1)
    assert mail["subject"] == "[lakeloader] shop: deadline missed" and "12 min past its deadline" in mail["body"]


def test_failure_callback_alerts_once_and_skips_checks_that_already_alerted(tmp_path, http_receiver, smtp_receiver):
    config = _write_config(tmp_path, http_receiver.url, smtp_receiver.port)
    callback = FailureAlert("shop", str(config))

    class TaskInstance:
        dag_id, task_id, run_id, try_number = "lakeloader_shop_hourly", "land", "manual__y", 3

    callback({"ti": TaskInstance(), "exception": alerts.AlertSent("already said"), "data_interval_start": NOW})
    assert http_receiver.received() == []

    with pytest.raises(RuntimeError):  # the SMTP channel has no connection configured here; the webhook still went
        callback({"ti": TaskInstance(), "exception": OSError("disk full"), "data_interval_start": NOW})
    [body] = _webhook_bodies(http_receiver)
    assert body["summary"] == (
        "Source shop: OSError: disk full (task land of lakeloader_shop_hourly failed after 3 tries, hour 2026-11-22T09)"
    )
    assert body["details"] == {"error": "OSError: disk full"}
    assert body["run_url"].endswith("/dags/lakeloader_shop_hourly/runs/manual__y/tasks/land")


class _Failing:
    """A webhook endpoint that answers 500 to everything (a thread of this process)."""

    def __enter__(self) -> str:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(500)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_port}"

    def __exit__(self, *_) -> None:
        self.server.shutdown()


def test_a_failing_webhook_never_puts_its_url_or_headers_in_an_error_or_a_log_line(tmp_path, caplog):
    with _Failing() as base:
        url = f"{base}/hooks/SECRET-PATH-TOKEN?token=SECRET-QUERY"
        source = _source(tmp_path, (WebhookAlert(type="webhook", url=url, headers={"X-Token": "SECRET-HEADER"}),))
        alert = alerts.Alert(source="shop", kind="deadline_missed", summary="late")
        with pytest.raises(RuntimeError) as sync_error:
            alerts.deliver(source, alert)
        with pytest.raises(RuntimeError) as async_error:
            asyncio.run(alerts.adeliver(source, alert))
    for text in (str(sync_error.value), str(async_error.value), caplog.text):
        assert "SECRET" not in text
    port = base.rsplit(":", 1)[1]
    assert f"webhook http://127.0.0.1:{port}/<redacted> answered HTTP 500" in str(sync_error.value)
    assert f"webhook http://127.0.0.1:{port}/<redacted> answered HTTP 500" in str(async_error.value)


def test_a_failed_spark_step_alert_leads_with_its_cause_not_the_spark_submit_command(tmp_path, http_receiver):
    config = tmp_path / "sources.yaml"
    config.write_text(
        "sources:\n  - name: shop\n    format: dataworks_json\n    export_uri: exports\n"
        f"    lake_root: {tmp_path / 'lake'}\n    alerts:\n      - {{type: webhook, url: '{http_receiver.url}/hook'}}\n"
    )
    hour = datetime(2026, 11, 22, 9, tzinfo=UTC)
    cause = "SourceBusy: source shop is being written by host:42:apply:ab12 since 2026-11-22T09:05:00+00:00"
    record = tmp_path / "lake" / zones.run_error_key("shop", hour, "apply")
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"step": "apply", "error": cause}))

    class TaskInstance:
        dag_id, task_id, run_id, try_number = "lakeloader_shop_hourly", "apply", "manual__y", 3

    failure = RuntimeError("Cannot execute: spark-submit --master local[*] --conf ... jobs/apply.py --source shop")
    FailureAlert("shop", str(config))({"ti": TaskInstance(), "exception": failure, "data_interval_start": hour})

    [body] = _webhook_bodies(http_receiver)
    assert body["summary"].startswith(f"Source shop: {cause} (task apply of lakeloader_shop_hourly failed")
    assert body["details"]["cause"] == cause


def test_a_held_back_table_is_alerted_with_its_cause(tmp_path, http_receiver):
    source = _source(tmp_path, (WebhookAlert(type="webhook", url=f"{http_receiver.url}/hook"),))
    held = {"shop.poisoned": {"db": "shop", "table": "poisoned", "error": "DeltaError: bad log", "changes": 1}}
    checks._alert_held_back(source, {"hour": "2026-11-22T09", "held_back": held}, "lakeloader_shop_hourly", "r")
    [body] = _webhook_bodies(http_receiver)
    assert body["kind"] == "table_held_back"
    assert body["summary"].startswith("Source shop: 1 table(s) could not be applied in hour 2026-11-22T09")
    assert body["details"] == {"tables": ["shop.poisoned: DeltaError: bad log"]}


def test_a_failing_step_records_its_cause_and_a_new_try_clears_it(tmp_path):
    from lakeloader.cli.spark_submit import recording_cause

    source = _source(tmp_path)
    hour = datetime(2026, 11, 22, 9, tzinfo=UTC)
    record = tmp_path / "lake" / zones.run_error_key("shop", hour, "apply")
    with pytest.raises(ValueError), recording_cause(source, hour, "apply"):
        raise ValueError("bad table")
    assert json.loads(record.read_text()) == {"step": "apply", "error": "ValueError: bad table"}
    with recording_cause(source, hour, "apply"):
        assert not record.exists()
