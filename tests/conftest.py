"""Shared fixtures. Keep each one small and documented; add new ones in their own section.

Tiers (one directory each; `make check` runs the first, `make test` all three)
    tests/unit    pure functions, Airflow DAG objects parsed in-process, loopback servers (moto S3, receivers):
                  never the Spark session nor an Airflow subprocess (enforced below), seconds in all.
    tests/spark   the Spark session: parsers, apply, DDL, reconcile, replay on small inputs.
    tests/system  Airflow subprocesses and the scheduler, spark-submit, kill -9 campaigns, the oracle matrix.
    Each test gets the marker of its tier (`-m "not system"`).
Hypothesis profiles
    `test` (the default): each test's own example counts; `check` (`make check`, or `--hypothesis-profile=check`,
    or LAKELOADER_HYPOTHESIS_PROFILE=check): a quarter of the default number of examples.

Object storage
    s3_endpoint  (session)  URL of a real moto S3 server on loopback, started once, stopped by PID.
    s3_bucket    (function) name of a fresh, empty bucket on that server.
Alert receivers
    http_receiver, smtp_receiver (function) a real HTTP / SMTP server process on loopback, stopped by PID.
Spark cluster
    spark_cluster (function) a Spark standalone master and two one-core workers on 127.0.0.1
                  (tests/spark_cluster.py), stopped by process group.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# ---------------------------------------------------------------------------------------------------------------
# The JIT of the tests' Spark drivers
# ---------------------------------------------------------------------------------------------------------------

# Every step that an Airflow task or a test submits (they inherit the environment, and spark-submit puts
# SPARK_SUBMIT_OPTS on the driver's command line) compiles with C1 only: a step of a tiny hour lives seconds, so
# the full JIT's C2 compiler threads buy it nothing and take CPU from the other pytest worker. Three Airflow
# system test files ran in 154 s with C1 against 195 s with the full JIT that config/spark gives the product's
# steps (which parse large hours faster with it: docs/performance.md). The tests' own session (`spark`) lives
# for the whole run, where the full JIT pays for itself, and keeps it. These short-lived JVMs also skip the
# bytecode verification of the jars' classes (Spark's, Delta's: the pinned, checksummed jars), which a cold step
# spends about a second of its ~12 on (a tiny hour's parse and apply spark-submits: 12.6 -> 11.7 s, 11.3 -> 10.5 s).
# pytest-xdist's workers inherit the controller's environment, which already holds these options when a worker
# imports this file: taken out here, so that the session's options are the user's own in every process.
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
_SUBMIT_OPTS = " ".join(os.environ.get("SPARK_SUBMIT_OPTS", "").replace(SHORT_JVM_OPTIONS, "").split())
os.environ["SPARK_SUBMIT_OPTS"] = f"{_SUBMIT_OPTS} {SHORT_JVM_OPTIONS}".strip()

# ---------------------------------------------------------------------------------------------------------------
# Tiers and Hypothesis profiles
# ---------------------------------------------------------------------------------------------------------------

TIERS = ("unit", "spark", "system")
# what a unit test must not use: each starts a JVM or an Airflow subprocess (seconds to minutes)
_NOT_IN_UNIT = frozenset({"spark", "parse_messages", "airflow_env"})
_RUN_ORDER = {"system": 0, "spark": 1, "unit": 2}
# a worker's expensive fixture -> the xdist group of the tests using it: a migrated SQLite Airflow (session-scoped,
# half a minute), the PostgreSQL stack of tests/system/test_scheduler.py (its four Airflow services, a minute), the
# Delta-on-Spark loads of tests/system/test_delta_spark_oracle.py (a Spark with the jars, two oracle streams)
_XDIST_GROUPS = {
    "metadata_db": "airflow-postgres",
    "airflow_env": "airflow-sqlite",
    "delta_spark_loads": "delta-spark-loads",
}

settings.register_profile("test", settings.default)
settings.register_profile("check", max_examples=max(1, settings.default.max_examples // 4))
settings.load_profile(os.environ.get("LAKELOADER_HYPOTHESIS_PROFILE", "test"))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier (its directory under tests/); a unit test that asks for the Spark session or
    an Airflow subprocess belongs in tests/spark or tests/system, and fails the collection saying so.

    For `make test`'s workers (`--dist loadgroup`, which hands each free worker the next test in this order):
    the costliest tests come first (marked `slow`, then the system, spark and unit tiers), so the run ends on
    short unit tests rather than one worker finishing a five-minute test alone; and the tests sharing an
    Airflow (`_XDIST_GROUPS`) run on one worker, which then starts that Airflow once."""
    misplaced, tiers = [], {}
    for item in items:
        parts = Path(str(item.path)).parts
        tier = next((part for part in TIERS if part in parts[-2:-1]), None)
        if tier is None:
            continue
        tiers[item.nodeid] = tier
        item.add_marker(getattr(pytest.mark, tier))
        fixtures = set(getattr(item, "fixturenames", ()))
        if tier == "unit" and _NOT_IN_UNIT & fixtures:
            misplaced.append(f"{item.nodeid} uses {sorted(_NOT_IN_UNIT & fixtures)}")
        group = next((group for fixture, group in _XDIST_GROUPS.items() if fixture in fixtures), None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    if misplaced:
        raise pytest.UsageError("tests/unit must not use the Spark session or Airflow:\n" + "\n".join(misplaced))

    def cost(item: pytest.Item) -> tuple[bool, int]:
        return item.get_closest_marker("slow") is None, _RUN_ORDER.get(tiers.get(item.nodeid, ""), len(_RUN_ORDER))

    items.sort(key=cost)


# ---------------------------------------------------------------------------------------------------------------
# Object storage: a moto S3 server
# ---------------------------------------------------------------------------------------------------------------

_AWS_TEST_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
_STARTUP_TIMEOUT_SECONDS = 30.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_answering(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + _STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except urllib.error.HTTPError:
            return  # any HTTP answer means the server is up
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(
        f"moto_server did not answer at {url} within {_STARTUP_TIMEOUT_SECONDS}s:\n{log_path.read_text()}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 for the whole session; AWS_* test credentials are set while it runs."""
    moto_server = Path(sys.executable).parent / "moto_server"
    if not moto_server.exists():
        pytest.fail(f"{moto_server} not found: run `make setup` (moto[server] is in requirements.txt)")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = tmp_path_factory.mktemp("moto") / "moto_server.log"

    saved = {name: os.environ.get(name) for name in _AWS_TEST_ENVIRONMENT}
    os.environ.update(_AWS_TEST_ENVIRONMENT)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(moto_server), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_answering(url, process, log_path)
        yield url
    finally:
        _stop(process)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    """A new empty bucket on the moto server (unique per test, so tests never see each other's objects)."""
    import boto3

    name = f"test-{uuid.uuid4().hex[:20]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return name


# ---------------------------------------------------------------------------------------------------------------
# Airflow: a throwaway metadata database
#     airflow_env  (session)  environment for `bin/with-airflow airflow ...` subprocesses: a temporary
#                             AIRFLOW_HOME whose SQLite database has been migrated once (`airflow db migrate`),
#                             with this project's dags/ and plugins/. Add LAKELOADER_CONFIG per test.
# ---------------------------------------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[1]
WITH_AIRFLOW = REPO_ROOT / "bin" / "with-airflow"
_AIRFLOW_MIGRATE_TIMEOUT_SECONDS = 300


@pytest.fixture(scope="session")
def airflow_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Env vars for Airflow CLI subprocesses on a fresh, migrated SQLite database (set explicitly, because
    bin/with-airflow keeps any value already in the environment, e.g. from `bin/with-airflow pytest`)."""
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    started = time.monotonic()
    result = subprocess.run(
        [str(WITH_AIRFLOW), "airflow", "db", "migrate"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=_AIRFLOW_MIGRATE_TIMEOUT_SECONDS,
    )
    if result.returncode != 0:
        pytest.fail(
            f"`airflow db migrate` failed ({result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    print(f"airflow db migrate: {time.monotonic() - started:.1f}s in {home}")
    return env


# ---------------------------------------------------------------------------------------------------------------
# Spark: one local session for the whole test run (a JVM start costs ~10 s)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession configured as the jobs configure theirs."""
    from lakeloader.spark import spark_session

    # config/spark/local.conf's settings come in SPARK_SUBMIT_OPTS, set by bin/with-airflow (`make test` runs under it)
    with_c1 = os.environ["SPARK_SUBMIT_OPTS"]
    os.environ["SPARK_SUBMIT_OPTS"] = _SUBMIT_OPTS  # the full JIT for this long-lived session (SHORT_JVM_OPTIONS above)
    try:
        session = spark_session("lakeloader-tests", master="local[2]")
    finally:
        os.environ["SPARK_SUBMIT_OPTS"] = with_c1
    yield session
    session.stop()
    # py4j logs "Closing down clientserver connection" from __del__ at exit, after pytest closed its streams
    logging.getLogger("py4j").setLevel(logging.WARNING)


# ---------------------------------------------------------------------------------------------------------------
# Alert receivers: a real HTTP server and a real SMTP server (aiosmtpd) on 127.0.0.1, each its own process
#     http_receiver, smtp_receiver  (function)  Receiver: .port, .url, .received(), .wait_for(count, timeout)
# ---------------------------------------------------------------------------------------------------------------

RECEIVERS = Path(__file__).resolve().parent / "receivers.py"


class Receiver:
    """A receiver process; everything it received, as dicts, in arrival order."""

    def __init__(self, kind: str, port: int, out: Path, process: subprocess.Popen[bytes]) -> None:
        self.kind, self.port, self.out, self.process = kind, port, out, process
        self.url = f"http://127.0.0.1:{port}"

    def received(self) -> list[dict]:
        import json

        text = self.out.read_text(encoding="utf-8") if self.out.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def wait_for(self, count: int = 1, timeout: float = 30.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.received()
            if len(found) >= count:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{self.kind} receiver got {len(self.received())} of {count} within {timeout}s")


def _start_receiver(kind: str, directory: Path) -> Iterator[Receiver]:
    port = _free_port()
    out = directory / f"{kind}-received.jsonl"
    log_path = directory / f"{kind}-receiver.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(RECEIVERS), kind, str(port), str(out)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + _STARTUP_TIMEOUT_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{kind} receiver exited with {process.returncode}:\n{log_path.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                    if kind == "smtp":
                        probe.recv(100)  # the greeting: aiosmtpd is serving
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{kind} receiver did not listen:\n{log_path.read_text()}") from None
                time.sleep(0.1)
        yield Receiver(kind, port, out, process)
    finally:
        _stop(process)


@pytest.fixture
def http_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    yield from _start_receiver("http", tmp_path_factory.mktemp("http-receiver"))


@pytest.fixture
def smtp_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    yield from _start_receiver("smtp", tmp_path_factory.mktemp("smtp-receiver"))


@pytest.fixture
def parse_messages(spark, tmp_path):
    """parse_messages(source, lines[, name]): the classified rows of those messages, written to a file called
    `name` under a landed hour's directory (format tests)."""
    from format_support import parse_lines

    return lambda source, lines, name="m.json": parse_lines(spark, source, tmp_path, lines, f"hour=05/{name}")


# ---------------------------------------------------------------------------------------------------------------
# A Spark standalone cluster
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def spark_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A master and two workers (1 core, 1 GB each) from the pyspark installation, both registered; its `url`
    is the `--master` of a client-mode application."""
    from spark_cluster import standalone_cluster

    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster
