"""Alerts: what is late or wrong, by how much, with a link to the run, sent through Airflow notifiers.

Each source chooses its channels in the configuration (`alerts:`): a generic webhook (a JSON body, sent by
`WebhookNotifier` below), Slack (`SlackWebhookNotifier` of apache-airflow-providers-slack) and e-mail
(`SmtpNotifier` of apache-airflow-providers-smtp). `deliver` sends from a task or callback; `adeliver` from
the triggerer (Deadline Alert callbacks). Every channel is tried; failures are raised after all were tried.

A channel's URL and headers are secrets (a token in the URL or in a header): no raised error and no log line
carries them. A failed webhook says which host answered what; every error text passes `redact`.

Every alert is also recorded in the lake's audit zone (`record`; zones.alert_key), with the channels it went
to and what failed, so that the status page (lakeloader_airflow.status_page) shows the latest alerts, also
those of a source with no channel configured, which would otherwise exist only in a task or triggerer log.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import re
import urllib.error
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlsplit

from airflow.sdk import BaseNotifier

from lakeloader.core.config import EmailAlert, SlackAlert, SourceConfig, WebhookAlert
from lakeloader.core.errors import LakeloaderError

if TYPE_CHECKING:
    from airflow.sdk import Context

log = logging.getLogger(__name__)

# what an alert is about
COLUMN_TYPES = "column_types"
DAMAGED_EXPORT = "damaged_export"
DDL_SKIPPED = "ddl_skipped"
DEADLINE_MISSED = "deadline_missed"
FRESHNESS_LAG = "freshness_lag"
HEARTBEAT_SILENCE = "heartbeat_silence"
RECONCILIATION_MISMATCH = "reconciliation_mismatch"
TABLE_HELD_BACK = "table_held_back"
TASK_FAILED = "task_failed"


class AlertSent(LakeloaderError, RuntimeError):
    """Fails a check task whose problem was already alerted, so the failure callback does not alert twice."""


@dataclass(frozen=True)
class Alert:
    """One alert. `amount_seconds` is how late or how far behind (None when not a matter of time)."""

    source: str
    kind: str
    summary: str
    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    amount_seconds: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    sent_at: str = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0).isoformat())

    @property
    def run_url(self) -> str | None:
        return run_url(self.dag_id, self.run_id, self.task_id) if self.dag_id and self.run_id else None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "run_url": self.run_url, "product": "lakeloader"}

    def subject(self) -> str:
        return f"[lakeloader] {self.source}: {self.kind.replace('_', ' ')}"

    def text(self) -> str:
        lines = [self.summary]
        lines += [f"{key}: {_plain(value)}" for key, value in self.details.items()]
        if self.run_url:
            lines.append(f"run: {self.run_url}")
        return "\n".join(lines)


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)


def run_url(dag_id: str, run_id: str, task_id: str | None = None) -> str:
    """The run (or task) page in the Airflow UI, from `[api] base_url` (as Airflow builds its log links)."""
    from airflow.sdk import conf

    base = conf.get("api", "base_url", fallback=None) or "http://localhost:8080/"
    url = f"{base.rstrip('/')}/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"
    return url + (f"/tasks/{quote(task_id)}" if task_id else "")


def minutes(seconds: float) -> str:
    """'1 h 05 min' style, for messages."""
    total = round(seconds / 60)
    return f"{total // 60} h {total % 60:02d} min" if total >= 60 else f"{total} min"


REDACTED = "<redacted>"
_URL = re.compile(r"""\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>]+""")


def redacted_url(url: str) -> str:
    """A URL reduced to its scheme and host: paths, queries and user info may hold tokens."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}/{REDACTED}"


def redact(text: str, source: SourceConfig | None = None) -> str:
    """`text` without the source's webhook URLs and header values, and with every URL reduced to its host."""
    for channel in source.alerts if source else ():
        if isinstance(channel, WebhookAlert):
            text = text.replace(channel.url, redacted_url(channel.url))
            for value in channel.headers.values():
                if value:
                    text = text.replace(value, REDACTED)
    return _URL.sub(lambda m: m.group() if text.startswith(REDACTED, m.end()) else redacted_url(m.group()), text)


class WebhookFailed(LakeloaderError, RuntimeError):
    """A webhook did not take an alert; the message names the host only."""


class WebhookNotifier(BaseNotifier):
    """POST `body` as JSON to `url` (any HTTP endpoint: an incident tool, a chat bridge, a test receiver)."""

    template_fields = ()

    def __init__(self, *, url: str, body: dict[str, Any], headers: dict[str, str] | None = None, timeout=10.0):
        super().__init__()
        self.url, self.body, self.headers, self.timeout = url, body, dict(headers or {}), timeout

    def _request_headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "User-Agent": "lakeloader-alerts", **self.headers}

    def notify(self, context) -> None:
        data = json.dumps(self.body, default=str).encode()
        request = urllib.request.Request(self.url, data=data, headers=self._request_headers(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except urllib.error.HTTPError as error:
            raise WebhookFailed(f"webhook {redacted_url(self.url)} answered HTTP {error.code}") from None
        except Exception as error:
            raise WebhookFailed(f"webhook {redacted_url(self.url)} failed: {self._safe(error)}") from None

    async def async_notify(self, context) -> None:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self.timeout)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                payload = json.dumps(self.body, default=str)
                async with session.post(self.url, data=payload, headers=self._request_headers()) as response:
                    if response.status >= 400:
                        raise WebhookFailed(f"webhook {redacted_url(self.url)} answered HTTP {response.status}")
        except WebhookFailed:
            raise
        except Exception as error:
            raise WebhookFailed(f"webhook {redacted_url(self.url)} failed: {self._safe(error)}") from None

    def _safe(self, error: BaseException) -> str:
        text = f"{type(error).__name__}: {error}".replace(self.url, redacted_url(self.url))
        for value in self.headers.values():
            if value:
                text = text.replace(value, REDACTED)
        return redact(text)


def _verbatim(text: str) -> str:
    """Slack and SMTP notifiers render their text as Jinja templates; alert text must arrive as written."""
    return "{% raw %}" + text + "{% endraw %}"


def notifiers(source: SourceConfig, alert: Alert) -> list[BaseNotifier]:
    """One notifier per configured channel of the source, carrying this alert."""
    from airflow.providers.slack.notifications.slack_webhook import SlackWebhookNotifier
    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    result: list[BaseNotifier] = []
    for channel in source.alerts:
        if isinstance(channel, WebhookAlert):
            result.append(
                WebhookNotifier(
                    url=channel.url, body=alert.as_json(), headers=channel.headers, timeout=channel.timeout_seconds
                )
            )
        elif isinstance(channel, SlackAlert):
            text = f"*{alert.subject()}*\n{alert.text()}"
            result.append(SlackWebhookNotifier(slack_webhook_conn_id=channel.conn_id, text=_verbatim(text)))
        elif isinstance(channel, EmailAlert):
            body = f"<pre>{html.escape(alert.text())}</pre>"
            result.append(
                SmtpNotifier(
                    to=list(channel.to),
                    from_email=channel.from_email,
                    subject=_verbatim(alert.subject()),
                    html_content=_verbatim(body),
                    smtp_conn_id=channel.conn_id,
                )
            )
    return result


def record(source: SourceConfig, alert: Alert, errors: list[str]) -> None:
    """Keep the alert in the lake (audit/<source>/alerts/); a lake that cannot be written only loses the record."""
    try:
        from lakeloader.core import zones
        from lakeloader.core.storage import open_store

        body = {
            **alert.as_json(),
            "channels": [channel.type for channel in source.alerts],
            "delivery_errors": errors,
        }
        key = zones.alert_key(source.name, datetime.fromisoformat(alert.sent_at), alert.kind, uuid.uuid4().hex[:8])
        open_store(source.lake_root, source.s3_endpoint_url).write_bytes(key, json.dumps(body, default=str).encode())
    except Exception as error:  # the alert itself went out (or was logged): recording it must not fail the caller
        log.error("alert of source %s not recorded in the lake: %s", source.name, redact(str(error), source))


def latest(source: SourceConfig, limit: int = 10) -> list[dict[str, Any]]:
    """The source's newest recorded alerts, newest first."""
    from lakeloader.core import zones
    from lakeloader.core.storage import open_store

    lake = open_store(source.lake_root, source.s3_endpoint_url)
    keys = sorted(item.key for item in lake.list(zones.alerts_prefix(source.name)) if item.key.endswith(".json"))
    return [json.loads(lake.read_bytes(key)) for key in reversed(keys[-limit:])]


def deliver(source: SourceConfig, alert: Alert) -> None:
    """Send through every channel (synchronously), record the alert; raise after trying all if any failed."""
    log.warning("ALERT %s", json.dumps(alert.as_json(), default=str))
    if not source.alerts:
        log.warning("source %s has no alert channels configured (key 'alerts'); the alert is only logged", source.name)
    errors = []
    for notifier in notifiers(source, alert):
        try:
            notifier({"alert": alert.as_json()})
        except Exception as exc:  # one channel failing must not keep the others from alerting
            error = redact(f"{type(notifier).__name__}: {exc}", source)
            log.error("alert channel failed: %s", error)  # no traceback: it would quote the URL
            errors.append(error)
    record(source, alert, errors)
    if errors:
        raise RuntimeError(f"alert {alert.kind} of source {alert.source} not delivered to: {'; '.join(errors)}")


async def adeliver(source: SourceConfig, alert: Alert) -> None:
    """Send through every channel concurrently (in the triggerer), record the alert; raise after trying all if
    any failed."""
    log.warning("ALERT %s", json.dumps(alert.as_json(), default=str))
    if not source.alerts:
        log.warning("source %s has no alert channels configured (key 'alerts'); the alert is only logged", source.name)
    context = cast("Context", {"alert": alert.as_json()})  # what the notifiers' templates read

    async def send(notifier: BaseNotifier) -> None:
        notifier.render_template_fields(context)
        await notifier.async_notify(context)

    found = notifiers(source, alert)
    outcomes = await asyncio.gather(*(send(n) for n in found), return_exceptions=True)
    errors = [
        redact(f"{type(n).__name__}: {o}", source)
        for n, o in zip(found, outcomes, strict=True)
        if isinstance(o, Exception)
    ]
    for error in errors:
        log.error("alert channel failed: %s", error)
    await asyncio.to_thread(record, source, alert, errors)
    if errors:
        raise RuntimeError(f"alert {alert.kind} of source {alert.source} not delivered to: {'; '.join(errors)}")
