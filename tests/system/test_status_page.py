"""The status page in the Airflow UI, through a real api-server on loopback and a real browser:

- the plugin mounts the page and puts it in the UI's navigation; the page needs a logged-in user;
- over a lake with two loaded hours it shows the source, the table, the last hour loaded, the rows, the
  quarantine reason and an alert of a source with no alert channel;
- headless Chromium (Debian's `chromium`) logs in and opens the view in the Airflow UI: the screenshot shows
  the UI's navigation bar and, in its frame, the page with its charts.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import WITH_AIRFLOW, _free_port
from format_support import run, write_export
from test_scheduler import _answers, _stop_group

from lakeloader.core import zones
from lakeloader.core.config import BrokenSource, SourceConfig, load_source
from lakeloader_airflow import alerts, status_page
from tools.cdcgen import dataworks as dw

pytestmark = pytest.mark.slow

STARTUP_SECONDS = 120
ORDERS = dw.TableSpec("shop", "orders", (("id", "LONG"), ("status", "STRING")), ("id",))
# two complete hours shortly before now, so that they fall in the page's default window
NOW_HOUR = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
HOURS = [NOW_HOUR - timedelta(hours=3), NOW_HOUR - timedelta(hours=2)]
WINDOW = (1280, 1000)
RUN_STATES = ("success", "failed")


def _run_id(hour: datetime) -> str:
    return f"backfill__{hour.isoformat()}"


@dataclass
class StatusServer:
    url: str
    root: Path
    log: Path

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


@pytest.fixture(scope="module")
def server(airflow_env, tmp_path_factory, request) -> Iterator[StatusServer]:
    """An api-server with the project's plugins over a lake of two hours loaded by the local runner. The server
    starts first, so that its start overlaps the Spark session's and the two hours' runs."""
    root = tmp_path_factory.mktemp("status")
    config = root / "sources.yaml"
    config.write_text(
        f"sources:\n  - {{name: shop, format: dataworks_json, export_uri: {root / 'exports'}, "
        f"lake_root: {root / 'lake'}}}\n"
    )
    home = root / "airflow-home"  # a copy of the migrated metadata DB, with two runs of the hours
    home.mkdir()
    shutil.copy(Path(airflow_env["AIRFLOW_HOME"]) / "airflow.db", home / "airflow.db")
    with sqlite3.connect(home / "airflow.db") as db:
        for hour, state in zip(HOURS, RUN_STATES, strict=True):
            start, end = (f"{h:%Y-%m-%d %H:%M:%S}.000000" for h in (hour, hour + timedelta(hours=1)))
            db.execute(
                "insert into dag_run (dag_id, run_id, run_type, state, logical_date, data_interval_start, "
                "data_interval_end, run_after) values ('lakeloader_shop_hourly', ?, 'backfill', ?, ?, ?, ?, ?)",
                (_run_id(hour), state, start, start, end, end),
            )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **airflow_env,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "lakeloader-test-secret",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "LAKELOADER_CONFIG": str(config),
    }
    log = root / "api-server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(WITH_AIRFLOW), "airflow", "api-server"], env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        source = load_source(config, "shop")
        (root / "exports").mkdir()
        lines = [*dw.insert(ORDERS, 1, HOURS[0], {"id": 1, "status": "new"}),
                 *dw.insert(ORDERS, 2, HOURS[0], {"id": 2, "status": "new"}), "{broken"]  # fmt: skip
        write_export(source, "orders-0.json", lines, HOURS[0])
        lines = [*dw.insert(ORDERS, 3, HOURS[1], {"id": 3, "status": "new"}),
                 *dw.delete(ORDERS, 4, HOURS[1], {"id": 2, "status": "new"}), dw.heartbeat(HOURS[1])]  # fmt: skip
        write_export(source, "orders-1.json", lines, HOURS[1])
        run(request.getfixturevalue("spark"), source, HOURS)
        # an alert of a source with no channel configured: recorded in the lake, so the page shows it
        alerts.deliver(
            source,
            alerts.Alert(source="shop", kind=alerts.FRESHNESS_LAG, summary="Source shop: 95 min behind (test)",
                         dag_id="lakeloader_shop_hourly", run_id="scheduled__test"),
        )  # fmt: skip
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _answers(f"{url}/api/v2/monitor/health"):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield StatusServer(url, root, log)
    finally:
        _stop_group(process)


def _token(server: StatusServer) -> str:
    status, body = server.get("/auth/token")
    assert status == 201, body
    return json.loads(body)["access_token"]


def test_the_plugin_puts_the_page_in_the_ui_navigation_for_logged_in_users_only(server):
    # (this server lets everyone in as admin, by adding a token to requests that have none: a bad one is refused)
    status, _ = server.get("/lakeloader/status", token="not-a-token")
    assert status == 403

    status, body = server.get("/api/v2/plugins", _token(server))

    assert status == 200, body
    [plugin] = [p for p in json.loads(body)["plugins"] if p["name"] == "lakeloader"]
    [view] = plugin["external_views"]
    assert (view["name"], view["href"], view["destination"]) == ("Lakeloader", "lakeloader/status", "nav")
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == ["/lakeloader"]


def test_the_page_shows_each_tables_hours_rows_quarantine_and_alerts(server):
    status, page = server.get("/lakeloader/status", _token(server))
    (server.root / "status.html").write_text(page)

    assert status == 200, server.log.read_text()[-3000:]
    section = page[page.index("<section id='source-shop'>") :]
    assert "dataworks_json" in section and "lakeloader_shop_hourly" in section
    facts = _facts(section)
    assert facts["last hour loaded"] == zones.format_hour(HOURS[1])
    assert facts["hours loaded"] == "2 of 72"
    assert facts["quarantined"] == "1"
    [row] = [r for r in section.split("<tr data-table='shop.orders'>")[1:]]
    cells = [c.split("</td>")[0].split(">")[-1] for c in row.split("<td")[2:6]]
    assert cells == ["2", "4", zones.format_hour(HOURS[1]), "0"]  # rows, changes, last hour changed, quarantined
    reason = "malformed JSON: not a JSON object"
    assert f"<span data-reason='{reason}'>" in section and f"{reason}: 1</span>" in section
    assert f"--hour {zones.format_hour(HOURS[0])}</code>" in section
    assert "Source shop: 95 min behind (test)" in section
    assert "no channel configured" in section
    assert f"{server.url}/dags/lakeloader_shop_hourly/runs/scheduled__test" in section
    assert section.count("<svg class='chart'") == 2  # changes per hour of the table, quarantine per reason
    for hour, state in zip(HOURS, RUN_STATES, strict=True):  # each hour's square links to its run
        run_url = f"{server.url}/dags/lakeloader_shop_hourly/runs/{quote(_run_id(hour), safe='')}"
        title = f"{zones.format_hour(hour)}: run {_run_id(hour)} ({state}) loaded"
        assert f"<a target='_top' href='{run_url}' title='{title}'" in section
    assert f"<a target='_top' href='{server.url}/dags/lakeloader_shop_hourly/runs'>all runs</a>" in section


def test_headless_chromium_shows_the_page_in_the_airflow_ui(server, tmp_path):
    chromium = _chromium()
    screenshot = tmp_path / "status-page.png"
    started = time.monotonic()
    result = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path}",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={screenshot}",
         # the UI's React app needs a few seconds (of the browser's virtual time) to show the page in its frame
         "--virtual-time-budget=10000",
         # the all-admins login sets the token cookie and redirects to the plugin's view in the Airflow UI
         f"{server.url}/auth/token/login?next=/plugin/lakeloader-status"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    print(f"chromium screenshot: {time.monotonic() - started:.1f}s")

    assert result.returncode == 0 and screenshot.exists(), result.stderr[-3000:]
    if os.environ.get("LAKELOADER_SCREENSHOT"):
        shutil.copy(screenshot, os.environ["LAKELOADER_SCREENSHOT"])
    width, height, pixels = _png_pixels(screenshot.read_bytes())
    assert (width, height) == WINDOW
    assert screenshot.stat().st_size > 20_000
    colours = {pixels[i : i + 3] for i in range(0, len(pixels), 3 * 7)}
    assert len(colours) > 20, f"{len(colours)} colours: the page looks blank"
    # in the UI's frame, the page's charts are drawn: the changes' blue and the quarantine reason's red
    assert bytes.fromhex("2f6fb3") in colours and bytes.fromhex("d9534f") in colours
    left = {pixels[(y * width + 5) * 3 : (y * width + 5) * 3 + 3] for y in range(0, height, 10)}
    assert bytes.fromhex("ffffff") not in left, "no Airflow navigation bar on the left"


def test_an_alert_from_the_triggerer_with_no_channel_is_recorded_for_the_page(tmp_path, monkeypatch):
    monkeypatch.setattr(status_page, "_airflow_runs", lambda *_: {})  # no metadata DB here
    source = SourceConfig(name="late", format="dataworks_json", export_uri=str(tmp_path), lake_root=str(tmp_path))
    alert = alerts.Alert(source="late", kind=alerts.DEADLINE_MISSED, summary="Source late: 3 min past its deadline")

    asyncio.run(alerts.adeliver(source, alert))

    [recorded] = alerts.latest(source)
    assert (recorded["kind"], recorded["summary"], recorded["channels"]) == (alert.kind, alert.summary, [])
    page = status_page.render([status_page.gather(source, datetime.now(UTC), 1)], [], datetime.now(UTC), 1)
    assert "Source late: 3 min past its deadline" in page and "no channel configured" in page


def test_a_source_whose_configuration_is_broken_shows_why():
    broken = BrokenSource(1, "billing", "invalid config file: format 'dataworks_jsn' is not one of …")

    page = status_page.render([], [broken], datetime.now(UTC), 3)

    assert "<h2>billing <span class='badge'>configuration broken</span></h2>" in page
    assert "format &#x27;dataworks_jsn&#x27; is not one of" in page


def _facts(section: str) -> dict[str, str]:
    facts = section.split("<div class='facts'>")[1].split("</div></div>")[0] + "</div>"
    return {
        part.split("</span>")[0]: part.split("'>")[-1].split("</b>")[0]
        for part in facts.split("<div><span class='muted'>")[1:]
    }


def _chromium() -> str:
    """Debian's chromium, installed with apt-get when missing and possible (CI installs it in .ci/run)."""
    found = shutil.which("chromium")
    if found:
        return found
    apt = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    command = apt if os.geteuid() == 0 else (["sudo", "-n", *apt] if shutil.which("sudo") else None)
    if command and shutil.which("apt-get"):
        subprocess.run(
            command, capture_output=True, timeout=600, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        )
    found = shutil.which("chromium")
    if not found:
        pytest.skip("Debian's chromium is not installed and cannot be installed here (apt-get install chromium)")
    return found


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and RGB bytes of an 8-bit RGB or RGBA PNG (what Chromium writes); no imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, [], None
    while position < len(data):
        (length,), kind = struct.unpack(">I", data[position : position + 4]), data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, colour_type = header
    assert depth == 8 and colour_type in (2, 6), header
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * bpp
    previous, out = bytearray(stride), bytearray()
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        _unfilter(kind, row, previous, bpp)
        out += row if bpp == 3 else bytes(b for i, b in enumerate(row) if i % 4 != 3)
        previous = row
    return width, height, bytes(out)


def _unfilter(kind: int, row: bytearray, previous: bytearray, bpp: int) -> None:
    if kind == 1:
        for i in range(bpp, len(row)):
            row[i] = (row[i] + row[i - bpp]) & 0xFF
    elif kind == 2:
        for i in range(len(row)):
            row[i] = (row[i] + previous[i]) & 0xFF
    elif kind == 3:
        for i in range(len(row)):
            row[i] = (row[i] + ((row[i - bpp] if i >= bpp else 0) + previous[i]) // 2) & 0xFF
    elif kind == 4:
        for i in range(len(row)):
            a, b = (row[i - bpp] if i >= bpp else 0), previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
