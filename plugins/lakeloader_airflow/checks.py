"""The check tasks' logic (Python, no Spark): read what the jobs wrote to the audit zone, publish it for the UI,
and alert when something is wrong.

- `verify_reconciliation`: the reconcile job's report for this run -> counts (XCom), the readable report
  (task log), and on any gap or mismatch an alert plus a failed task. For an hourly run it also alerts (the
  run goes on) on DDL the apply step skipped as unsupported when the source's ddl_policy is skip_and_alert,
  and on landed export files that cannot be read whole (a damaged `.gz`, an unsupported compression), and on
  tables the apply step held back (lakeloader.apply.step: per-table isolation).
- `check_freshness`: the source's watermark (newest change or heartbeat loaded, kept by the reconcile job)
  against wall-clock time -> lag (XCom), and an alert plus a failed task when it exceeds the freshness SLA
  or when no heartbeat arrived within the heartbeat timeout.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from lakeloader.audit.reconcile_report import ACCOUNTING, findings, render_markdown
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import open_store
from lakeloader.land.step import read_manifest
from lakeloader_airflow import alerts

log = logging.getLogger(__name__)


def _read_json(source: SourceConfig, key: str) -> dict[str, Any] | None:
    lake = open_store(source.lake_root, source.s3_endpoint_url)
    return json.loads(lake.read_bytes(key)) if lake.stat(key) is not None else None


def verify_reconciliation(source: SourceConfig, label: str, dag_id: str, run_id: str) -> dict[str, Any]:
    """Summary of the run's reconciliation report (returned as XCom); raises AlertSent after alerting on problems."""
    key = zones.reconcile_report_key(source.name, label, "json")
    report = _read_json(source, key)
    if report is None:
        raise FileNotFoundError(f"no reconciliation report at {source.lake_root}/{key}: did the reconcile task run?")
    log.info("reconciliation report (%s):\n%s", report["report_uri"], render_markdown(report))
    summary: dict[str, Any] = {
        "ok": report["ok"],
        "report": report["report_uri"],
        "hours": report["hours"],
        "checks": report["checks"],
        "freshness": report["freshness"],
        "findings": findings(report),
    }
    accounting = [r for r in report["results"] if r["check"] == ACCOUNTING]
    if len(accounting) == 1:
        summary.update(_hour_summary(source, accounting[0]))
        _alert_skipped_ddl(source, summary, dag_id, run_id)
        _alert_damaged_exports(source, summary, dag_id, run_id)
        _alert_column_types(source, summary, dag_id, run_id)
        _alert_held_back(source, summary, dag_id, run_id)
    for result in report["results"]:
        if result["check"] != ACCOUNTING:
            summary.setdefault("tables", {})[f"{result['check']} {result['table']}"] = {
                k: result.get(k) for k in ("ok", "expected_rows", "actual_rows", "differing_keys")
            }
    if not report["ok"]:
        problems = summary["findings"]
        _alert_run(
            source,
            alerts.RECONCILIATION_MISMATCH,
            f"Source {source.name}: reconciliation found {len(problems)} problem(s) "
            f"({', '.join(report['checks'])}, hours {report['hours'][0] if report['hours'] else '-'}"
            f"{' to ' + report['hours'][-1] if len(report['hours']) > 1 else ''})",
            dag_id,
            run_id,
            {"problems": problems[:20], "report": report["report_uri"]},
        )
        raise alerts.AlertSent(f"reconciliation failed: {'; '.join(problems[:5])} (report: {report['report_uri']})")
    return summary


def _alert_skipped_ddl(source: SourceConfig, summary: dict[str, Any], dag_id: str, run_id: str) -> None:
    """Under `skip_and_alert`, one alert listing the DDL messages the hour's apply step skipped as unsupported."""
    skipped = summary["ddl_unsupported"]
    if not skipped or source.ddl_policy != "skip_and_alert":
        return
    _alert_run(
        source,
        alerts.DDL_SKIPPED,
        f"Source {source.name}: {len(skipped)} DDL statement(s) of hour {summary['hour']} were not applied "
        "(unsupported; ddl_policy skip_and_alert): the silver schema may differ from the source's",
        dag_id,
        run_id,
        {
            "statements": [f"{s['table']} at {s['origin']}: {s['reason']} | {s['text'][:200]}" for s in skipped],
            "schema history": f"{source.lake_root.rstrip('/')}/{zones.schema_history_dir(source.name)}",
        },
    )


def _alert_damaged_exports(source: SourceConfig, summary: dict[str, Any], dag_id: str, run_id: str) -> None:
    """One alert naming the hour's landed files that cannot be read whole (a damaged `.gz`, an unsupported
    compression): what could not be read is missing from silver until the file is exported again, readable,
    under a new name."""
    damaged = summary["damaged_exports"]
    if not damaged:
        return
    _alert_run(
        source,
        alerts.DAMAGED_EXPORT,
        f"Source {source.name}: {len(damaged)} export file(s) landed in hour {summary['hour']} cannot be read "
        "whole: what could not be read was not loaded (one quarantined message per file); export the file again, "
        "complete and uncompressed or as .gz, under a new name to load the rest",
        dag_id,
        run_id,
        {"files": [f"{d['file']}: {d['damage']}" for d in damaged]},
    )


def _alert_column_types(source: SourceConfig, summary: dict[str, Any], dag_id: str, run_id: str) -> None:
    """One alert when the hour's data changed silver column types without DDL (columns widened) or held values
    that no column type could take (changes left out into the apply quarantine, with their reasons)."""
    widened, rejected = summary.get("schema_changes", []), summary.get("rejected_changes", 0)
    if not widened and not rejected:
        return
    lake = source.lake_root.rstrip("/")
    _alert_run(
        source,
        alerts.COLUMN_TYPES,
        f"Source {source.name}: in hour {summary['hour']} the data widened {len(widened)} silver column(s) "
        f"without DDL and {rejected} change(s) held values no column type can take (quarantined)",
        dag_id,
        run_id,
        {
            "widened": [f"{w['table']} at {w['origin']}: {w['change']}" for w in widened],
            "quarantined": [f"{n} x {reason}" for reason, n in summary.get("rejection_reasons", {}).items()],
            "quarantine": f"{lake}/{zones.apply_quarantine_dir(source.name)}",
            "schema history": f"{lake}/{zones.schema_history_dir(source.name)}",
        },
    )


def _alert_held_back(source: SourceConfig, summary: dict[str, Any], dag_id: str, run_id: str) -> None:
    """One alert naming the tables the hour's apply step could not apply: their changes stay in bronze and every
    later run retries them (lakeloader.apply.step, per-table isolation); the hour's other tables were committed."""
    held = summary["held_back"]
    if not held:
        return
    _alert_run(
        source,
        alerts.TABLE_HELD_BACK,
        f"Source {source.name}: {len(held)} table(s) could not be applied in hour {summary['hour']} and are held "
        "back (their changes stay in bronze and every later run retries them); the other tables were loaded",
        dag_id,
        run_id,
        {"tables": [f"{name}: {entry.get('error')}" for name, entry in sorted(held.items())]},
    )


def _alert_run(
    source: SourceConfig, kind: str, summary: str, dag_id: str, run_id: str, details: dict[str, Any]
) -> None:
    """Deliver an alert about this run through the source's channels."""
    alerts.deliver(
        source,
        alerts.Alert(source=source.name, kind=kind, summary=summary, dag_id=dag_id, run_id=run_id, details=details),
    )


def _hour_summary(source: SourceConfig, accounting: dict[str, Any]) -> dict[str, Any]:
    """The hour's counts, and what was quarantined (reasons from the parse report) and where to find it."""
    hour = zones.parse_hour(accounting["hour"])
    parse = _read_json(source, zones.run_report_key(source.name, hour, "parse")) or {}
    apply = _read_json(source, zones.run_report_key(source.name, hour, "apply")) or {}
    manifest = read_manifest(open_store(source.lake_root, source.s3_endpoint_url), source.name, hour)
    lake = source.lake_root.rstrip("/")
    return {
        "hour": accounting["hour"],
        "landed_messages": accounting["landed"],
        "outcomes": accounting["outcomes"],
        "quarantined": accounting["outcomes"]["quarantined"],
        "quarantine_reasons": parse.get("quarantine_reasons", {}),
        "quarantine_location": f"{lake}/{zones.bronze_quarantine_dir(source.name, hour)}/",
        "ddl_unsupported": apply.get("ddl_unsupported", []),
        "schema_changes": apply.get("schema_changes", []),
        "rejected_changes": apply.get("rejected_changes", 0),
        "rejection_reasons": apply.get("rejection_reasons", {}),
        "held_back": apply.get("held_back", {}),
        "silver_tables": apply.get("tables", {}),
        "damaged_exports": [{"file": f.export_key, "damage": f.damage} for f in manifest if f.damage],
    }


CATCH_UP_SLACK = timedelta(hours=1)  # the newest run of an hourly schedule covers an hour that ended < 1 h ago


def check_freshness(
    source: SourceConfig,
    dag_id: str | None = None,
    run_id: str | None = None,
    now: datetime | None = None,
    hour_end: datetime | None = None,
) -> dict[str, Any]:
    """Watermark and lag (returned as XCom); alerts and raises AlertSent when an SLA is exceeded.

    Freshness judges the present, so only a current run alerts: a run whose hour (`hour_end`, its data
    interval's end) ended longer than the SLA plus an hour ago (a backfill, a catch-up after an outage, the
    demo's historical hours) reports the lag without alerting; the newest run judges the present."""
    now = now or datetime.now(UTC)
    state = _read_json(source, zones.freshness_key(source.name)) or {}
    watermark, heartbeat = (_moment(state.get(k)) for k in ("watermark", "newest_heartbeat"))
    lag = (now - watermark).total_seconds() if watermark else None
    silence = (now - heartbeat).total_seconds() if heartbeat else None
    status = {
        "checked_at": now.replace(microsecond=0).isoformat(),
        "watermark": state.get("watermark"),
        "newest_change": state.get("newest_change"),
        "newest_heartbeat": state.get("newest_heartbeat"),
        "lag_minutes": round(lag / 60, 1) if lag is not None else None,
        "heartbeat_age_minutes": round(silence / 60, 1) if silence is not None else None,
        "freshness_sla_minutes": source.freshness_sla_minutes,
        "heartbeat_timeout_minutes": source.heartbeat_timeout_minutes,
    }
    sla = source.freshness_sla_minutes
    horizon = timedelta(minutes=max(sla or 0, source.heartbeat_timeout_minutes or 0)) + CATCH_UP_SLACK
    catching_up = hour_end is not None and now - hour_end > horizon
    status["catching_up"] = catching_up
    log.info("freshness of source %s: %s", source.name, status)
    if catching_up:
        log.info("run of the hour ending %s: a past hour, so its freshness is reported, not alerted", hour_end)
        return status
    breaches = []
    if sla is not None and (lag is None or lag > sla * 60):
        behind = (
            f"{alerts.minutes(lag)} behind (newest change or heartbeat loaded: {state.get('watermark')}), "
            f"over its freshness SLA of {sla} min by {alerts.minutes(lag - sla * 60)}"
            if lag is not None
            else f"not fresh: no change or heartbeat loaded yet (freshness SLA {sla} min)"
        )
        breaches.append((alerts.FRESHNESS_LAG, f"Source {source.name}: data is {behind}", lag))
    timeout = source.heartbeat_timeout_minutes
    if timeout is not None and (silence is None or silence > timeout * 60):
        quiet = (
            f"no heartbeat for {alerts.minutes(silence)} (newest: {state.get('newest_heartbeat')}), "
            f"{alerts.minutes(silence - timeout * 60)} over its heartbeat timeout of {timeout} min"
            if silence is not None
            else f"no heartbeat loaded yet (heartbeat timeout {timeout} min)"
        )
        breaches.append((alerts.HEARTBEAT_SILENCE, f"Source {source.name}: {quiet}", silence))
    for kind, summary, amount in breaches:
        alerts.deliver(
            source,
            alerts.Alert(
                source=source.name,
                kind=kind,
                summary=summary,
                dag_id=dag_id,
                run_id=run_id,
                amount_seconds=amount,
                details={k: v for k, v in status.items() if v is not None},
            ),
        )
    if breaches:
        raise alerts.AlertSent("; ".join(summary for _, summary, _ in breaches))
    return status


def _moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None
