"""The status page in the Airflow UI: per source and table, what was loaded, how fresh, what was quarantined.

A FastAPI app that the plugin (plugins/lakeloader_plugin.py) mounts under the api-server at `/lakeloader`,
and an external view that puts "Lakeloader" in the UI's navigation (shown in an iframe). The page is
server-rendered HTML with inline SVG charts: no JavaScript, nothing fetched from elsewhere.

What it shows comes from the lake, read the way `lakeloader status` reads it (summary.collect over the run
reports, the freshness watermark the reconcile job keeps, the alerts recorded by alerts.record) and from
Airflow's metadata database (the runs of each hour). Nothing here imports pyspark. One source whose lake
cannot be read shows its error; the others still show.
"""

from __future__ import annotations

import html
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from lakeloader.cli.source_summary import NO_TABLE, collect
from lakeloader.core import zones
from lakeloader.core.config import BrokenSource, SourceConfig, load_sources
from lakeloader.core.storage import open_store
from lakeloader_airflow import alerts

log = logging.getLogger(__name__)

URL_PREFIX = "/lakeloader"
PATH = "/status"
DEFAULT_DAYS = 3
ALERTS_SHOWN = 8
RUN_HOURS_SHOWN = 24


class LazyApp:
    """The ASGI app the plugin mounts. It builds the FastAPI app at its first request, because every Airflow
    process loads the plugins (a task's too) and importing FastAPI and Airflow's API security costs ~3 s there."""

    def __init__(self) -> None:
        self._app: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._app is None:
            self._app = build_app()
        await self._app(scope, receive, send)


app = LazyApp()


def build_app() -> Any:
    """The FastAPI app: the page, for authenticated users only (plugin apps get no auth of their own; the UI's
    iframe sends the user's token cookie)."""
    from airflow.api_fastapi.core_api.security import requires_authenticated
    from fastapi import Depends, FastAPI, Query
    from fastapi.responses import HTMLResponse

    api = FastAPI(title="lakeloader status", docs_url=None, redoc_url=None, openapi_url=None)

    @api.get(PATH, response_class=HTMLResponse, dependencies=[Depends(requires_authenticated())])
    def status_page(days: int = Query(DEFAULT_DAYS, ge=1, le=14, description="days shown")) -> HTMLResponse:
        return HTMLResponse(page(days))

    return api


@dataclass
class SourceStatus:
    """What the page shows of one source over the window `hours` (oldest first)."""

    source: SourceConfig
    hours: list[datetime]
    summary: dict[str, Any] = field(default_factory=dict)
    watermark: datetime | None = None
    alerts: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # hour -> (run_id, state)
    error: str | None = None


def gather(source: SourceConfig, now: datetime, days: int) -> SourceStatus:
    """The source's status over the `days` days up to the hour of `now`; an unreadable lake becomes `error`."""
    last = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    status = SourceStatus(source, zones.hour_range(last - timedelta(hours=24 * days - 1), last))
    try:
        lake = open_store(source.lake_root, source.s3_endpoint_url)
        status.summary = collect(source, status.hours, lake)
        key = zones.freshness_key(source.name)
        if lake.stat(key) is not None:
            watermark = json.loads(lake.read_bytes(key)).get("watermark")
            status.watermark = datetime.fromisoformat(watermark) if watermark else None
        status.alerts = alerts.latest(source, ALERTS_SHOWN)
    except Exception as error:  # one source's lake must not take the page down
        log.exception("status of source %s", source.name)
        status.error = alerts.redact(f"{type(error).__name__}: {error}", source)
    status.runs = _airflow_runs(source.name, status.hours[0], status.hours[-1])
    return status


def _airflow_runs(source_name: str, first: datetime, last: datetime) -> dict[str, tuple[str, str | None]]:
    """The newest run of the source's hourly DAG for each hour (its data interval's start) in [first, last]."""
    try:
        from airflow.models.dagrun import DagRun
        from airflow.utils.session import create_session
        from sqlalchemy import select

        from lakeloader_airflow.dag_factory import dag_id_for

        with create_session() as session:
            rows = session.execute(
                select(DagRun.run_id, DagRun.state, DagRun.data_interval_start)
                .where(DagRun.dag_id == dag_id_for(source_name))
                .where(DagRun.data_interval_start >= first, DagRun.data_interval_start <= last)
                .order_by(DagRun.id)
            ).all()
    except Exception:  # the page still shows the lake without the metadata database
        log.exception("runs of source %s", source_name)
        return {}
    return {zones.format_hour(start): (run_id, str(state) if state else None) for run_id, state, start in rows}


def page(days: int, now: datetime | None = None) -> str:
    """The page: every configured source (and every source whose configuration is broken)."""
    loaded = load_sources()
    now = now or datetime.now(UTC)
    statuses = [gather(source, now, days) for source in loaded.sources]
    return render(statuses, list(loaded.broken), now, days)


# ---------------------------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------------------------

CHANGES_COLOUR = "#2f6fb3"
REASON_COLOURS = ("#d9534f", "#f0ad4e", "#8e44ad", "#16a085", "#7f8c8d", "#c0392b", "#d35400", "#2c3e50")
STATE_COLOURS = {"success": "#3c9d3c", "failed": "#d9534f", "running": "#2f6fb3", "queued": "#9aa5b1"}

STYLE = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1f2933; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 0; } h3 { font-size: 13px; margin: 12px 0 4px; }
.muted { color: #6b7785; } .bad { color: #c0392b; font-weight: 600; } .ok { color: #2e7d32; }
section { border: 1px solid #d5dbe1; border-radius: 6px; padding: 12px 14px; margin: 14px 0; }
.facts { display: flex; gap: 22px; flex-wrap: wrap; margin: 8px 0; }
.facts div b { display: block; font-size: 15px; }
table { border-collapse: collapse; } td, th { padding: 3px 10px 3px 0; text-align: left; vertical-align: middle; }
th { font-weight: 600; color: #52606d; border-bottom: 1px solid #d5dbe1; } td.n { text-align: right; }
.legend span { display: inline-block; margin-right: 12px; } .sw { display: inline-block; width: 10px; height: 10px;
  margin-right: 4px; vertical-align: middle; }
.hours a, .hours span { display: inline-block; width: 16px; height: 16px; margin-right: 2px; border-radius: 2px; }
.badge { border-radius: 3px; padding: 0 5px; background: #fdecea; color: #c0392b; font-size: 11px; }
a { color: #2f6fb3; }
"""


def render(statuses: list[SourceStatus], broken: list[BrokenSource], now: datetime, days: int) -> str:
    """The whole page."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>lakeloader status</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>lakeloader status</h1>",
        f"<div class='muted'>{days} day(s) up to {now:%Y-%m-%d %H:%M} UTC &middot; "
        + " ".join(f"<a href='?days={d}'>{d} d</a>" for d in (1, 3, 7, 14))
        + "</div>",
    ]
    if not statuses and not broken:
        parts.append("<p>No source is configured (LAKELOADER_CONFIG).</p>")
    parts += [_source_section(status, now) for status in statuses]
    parts += [
        f"<section><h2>{_e(b.name or f'sources[{b.index}]')} <span class='badge'>configuration broken</span></h2>"
        f"<pre>{_e(b.message)}</pre></section>"
        for b in broken
    ]
    parts.append("</body></html>")
    return "\n".join(parts)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _base_url() -> str:
    from airflow.configuration import conf

    return (conf.get("api", "base_url", fallback=None) or "").rstrip("/")


def _source_section(status: SourceStatus, now: datetime) -> str:
    from lakeloader_airflow.dag_factory import dag_id_for

    source = status.source
    dag_id = dag_id_for(source.name)
    dag_url = f"{_base_url()}/dags/{quote(dag_id)}"
    head = (
        f"<section id='source-{_e(source.name)}'><h2>{_e(source.name)} "
        f"<span class='muted'>{_e(source.format)} &middot; <a target='_top' href='{_e(dag_url)}'>{_e(dag_id)}</a>"
        "</span></h2>"
    )
    if status.error:
        return head + f"<p class='bad'>the lake cannot be read: {_e(status.error)}</p></section>"
    summary = status.summary
    loaded = summary["hours"]
    last = zones.parse_hour(loaded[-1]) if loaded else None
    facts = [
        ("last hour loaded", loaded[-1] if loaded else "none", None),
        ("last hour ended", f"{_ago(now - (last + timedelta(hours=1)))} ago" if last else "-", None),
        ("freshness lag", *_freshness(status, now)),
        ("hours loaded", f"{len(loaded)} of {len(status.hours)}", None),
        ("quarantined", summary["totals"].get("quarantined", 0), None),
    ]
    parts = [
        head,
        "<div class='facts'>"
        + "".join(f"<div><span class='muted'>{k}</span><b class='{css or ''}'>{_e(v)}</b></div>" for k, v, css in facts)
        + "</div>",
    ]
    parts.append(_tables(status))
    parts.append(_quarantine(status))
    parts.append(_runs(status, dag_id, dag_url))
    parts.append(_alerts(status))
    parts.append("</section>")
    return "\n".join(parts)


def _ago(delta: timedelta) -> str:
    return alerts.minutes(max(delta.total_seconds(), 0)) if delta.total_seconds() >= 0 else "0 min"


def _freshness(status: SourceStatus, now: datetime) -> tuple[str, str | None]:
    """The lag of the newest change or heartbeat loaded (the reconcile job's watermark), red over the SLA."""
    if status.watermark is None:
        return "no watermark yet", "muted"
    lag = now - status.watermark.astimezone(UTC)
    sla = status.source.freshness_sla_minutes
    return _ago(lag), ("bad" if sla is not None and lag > timedelta(minutes=sla) else "ok")


def _tables(status: SourceStatus) -> str:
    summary, hours = status.summary, [zones.format_hour(h) for h in status.hours]
    names = sorted(name for name in summary["tables"] if name != NO_TABLE)
    if not names:
        return "<p class='muted'>No table loaded in this window.</p>"
    rows = [
        "<h3>Tables</h3><table class='tables'><tr><th>table</th><th>rows</th><th>changes</th>"
        "<th>last hour changed</th><th>quarantined</th><th>changes per hour</th></tr>"
    ]
    for name in names:
        per_hour = [summary["per_hour"].get(h, {}).get("changes_by_table", {}).get(name, 0) for h in hours]
        changed = [h for h, n in zip(hours, per_hour, strict=True) if n]
        counts = summary["tables"][name]
        rows.append(
            f"<tr data-table='{_e(name)}'><td>{_e(name)}</td><td class='n'>{summary['rows'].get(name, 0)}</td>"
            f"<td class='n'>{counts.get('changes', 0)}</td><td>{changed[-1] if changed else '-'}</td>"
            f"<td class='n'>{counts.get('quarantined', 0)}</td>"
            f"<td>{_bars(hours, [{'changes': n} for n in per_hour], {'changes': CHANGES_COLOUR})}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _quarantine(status: SourceStatus) -> str:
    summary, hours = status.summary, [zones.format_hour(h) for h in status.hours]
    per_hour = [summary["per_hour"].get(h, {}).get("quarantine_reasons", {}) for h in hours]
    totals: dict[str, int] = {}
    for reasons in per_hour:
        for reason, count in reasons.items():
            totals[reason] = totals.get(reason, 0) + count
    if not totals:
        return "<h3>Quarantined messages</h3><p class='muted'>None in this window.</p>"
    colours = {r: REASON_COLOURS[i % len(REASON_COLOURS)] for i, r in enumerate(sorted(totals))}
    newest = next(h for h, reasons in zip(reversed(hours), reversed(per_hour), strict=True) if reasons)
    legend = "".join(
        f"<span data-reason='{_e(r)}'><i class='sw' style='background:{colours[r]}'></i>{_e(r)}: {totals[r]}</span>"
        for r in sorted(totals)
    )
    return (
        "<h3>Quarantined messages per reason and hour</h3>"
        f"{_bars(hours, per_hour, colours, height=48)}<div class='legend'>{legend}</div>"
        f"<div class='muted'>see them: <code>lakeloader quarantine show --source {_e(status.source.name)} "
        f"--hour {newest}</code></div>"
    )


def _runs(status: SourceStatus, dag_id: str, dag_url: str) -> str:
    """The newest hours of the window, each a square linking to its run (coloured by state), or grey."""
    loaded = set(status.summary["hours"])
    cells = []
    for hour in [zones.format_hour(h) for h in status.hours][-RUN_HOURS_SHOWN:]:
        run_id, state = status.runs.get(hour, (None, None))
        colour = STATE_COLOURS.get(state or "", "#3c9d3c" if hour in loaded else "#e4e7eb")
        what = (
            f"{hour}: "
            + (f"run {run_id} ({state}) " if run_id else "")
            + ("loaded" if hour in loaded else "not loaded")
        )
        if run_id:
            url = alerts.run_url(dag_id, run_id)
            cells.append(f"<a target='_top' href='{_e(url)}' title='{_e(what)}' style='background:{colour}'></a>")
        else:
            cells.append(f"<span title='{_e(what)}' style='background:{colour}'></span>")
    return (
        f"<h3>Hours and runs <span class='muted'>(last {RUN_HOURS_SHOWN} h; "
        f"<a target='_top' href='{_e(dag_url)}/runs'>all runs</a>)</span></h3><div class='hours'>{''.join(cells)}</div>"
    )


def _alerts(status: SourceStatus) -> str:
    if not status.alerts:
        return "<h3>Latest alerts</h3><p class='muted'>None recorded.</p>"
    rows = ["<h3>Latest alerts</h3><table class='alerts'><tr><th>sent</th><th>kind</th><th>alert</th><th>to</th></tr>"]
    for alert in status.alerts:
        channels = ", ".join(alert.get("channels") or [])
        to = _e(channels) if channels else "<span class='badge'>no channel configured</span>"
        if alert.get("delivery_errors"):
            to += " <span class='badge'>delivery failed</span>"
        # the link as this api-server's UI has it (the alert's own run_url has the base URL of where it was sent)
        url = alerts.run_url(alert["dag_id"], alert["run_id"], alert.get("task_id")) if alert.get("run_id") else None
        link = f" <a target='_top' href='{_e(url)}'>run</a>" if url and alert.get("dag_id") else ""
        rows.append(
            f"<tr data-kind='{_e(alert.get('kind'))}'><td>{_e(alert.get('sent_at', ''))}</td>"
            f"<td>{_e(alert.get('kind', ''))}</td><td>{_e(alert.get('summary', ''))}{link}</td><td>{to}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _bars(hours: list[str], stacks: list[dict[str, int]], colours: dict[str, str], height: int = 28) -> str:
    """A small bar chart, one (stacked) bar per hour, with the hour and counts as each bar's tooltip."""
    step, width = 4, 4 * len(hours)
    top = max((sum(s.values()) for s in stacks), default=0) or 1
    shapes = [f"<line x1='0' y1='{height}' x2='{width}' y2='{height}' stroke='#c5ccd3'/>"]
    for i, hour in enumerate(hours):  # each day's start: a tick and its date
        if hour.endswith("T00"):
            shapes.append(
                f"<line x1='{i * step}' y1='0' x2='{i * step}' y2='{height + 3}' stroke='#e4e7eb'/>"
                f"<text x='{i * step + 1}' y='{height + 11}' font-size='9' fill='#9aa5b1'>{hour[5:10]}</text>"
            )
    for i, (hour, stack) in enumerate(zip(hours, stacks, strict=True)):
        y = float(height)
        tip = _e(f"{hour}: " + ", ".join(f"{n} {k}" for k, n in sorted(stack.items())) if stack else f"{hour}: 0")
        shapes.append(f"<g><title>{tip}</title>")
        for key in sorted(stack):
            h = stack[key] / top * (height - 2)
            y -= h
            shapes.append(
                f"<rect x='{i * step}' y='{y:.1f}' width='{step - 1}' height='{h:.1f}' fill='{colours[key]}'/>"
            )
        shapes.append("</g>")
    return (
        f"<svg class='chart' width='{width + 40}' height='{height + 13}' role='img'>"
        f"<g>{''.join(shapes)}</g><text x='{width + 4}' y='10' font-size='10' fill='#6b7785'>{top}</text></svg>"
    )
