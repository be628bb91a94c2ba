"""A real Spark standalone cluster for the system tests: one master and two workers (one core, 1 GB each), started
from the pyspark installation's `spark-class` on 127.0.0.1 only, each in its own process group, and stopped by
those process groups (a worker's executors are its children). Used by the `spark_cluster` fixture
(tests/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

_STARTUP_TIMEOUT_SECONDS = 90.0
_STOP_TIMEOUT_SECONDS = 15.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spark_class() -> Path:
    """`bin/spark-class` of the installed pyspark (pyspark's wheel is a whole Spark distribution)."""
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass
class StandaloneCluster:
    """A running master and its workers: `url` for `--master`, `status()` the master's JSON (its web UI's
    /json: workers, active and completed applications), `work_dir` where the workers keep their executors'
    folders (app-*/<executor id>/stdout, stderr)."""

    url: str
    webui: str
    work_dir: Path
    log_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.webui}/json", timeout=5) as response:
            return json.load(response)

    def logs(self) -> str:
        """The daemons' logs, for a failure message."""
        return "\n".join(f"== {path.name}\n{path.read_text()[-3000:]}" for path in sorted(self.log_dir.glob("*.log")))


def _environment(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "PYSPARK_PYTHON": sys.executable,  # executors' Python workers import lakeloader from this venv
        "SPARK_WORKER_DIR": str(root / "work"),
        "SPARK_LOG_DIR": str(root / "logs"),
        "SPARK_NO_DAEMONIZE": "1",
    }


def _start(name: str, args: list[str], env: dict[str, str], log_dir: Path) -> subprocess.Popen[bytes]:
    with open(log_dir / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            [str(spark_class()), *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's group (the daemon and, for a worker, its executors), then SIGKILL if needed."""
    if process.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=_STOP_TIMEOUT_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_workers(cluster: StandaloneCluster, workers: int) -> None:
    deadline = time.monotonic() + _STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        for process in cluster.processes:
            if process.poll() is not None:
                raise RuntimeError(f"a Spark daemon exited with {process.returncode}:\n{cluster.logs()}")
        try:
            alive = [w for w in cluster.status().get("workers", []) if w.get("state") == "ALIVE"]
            if len(alive) >= workers:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{workers} workers did not register within {_STARTUP_TIMEOUT_SECONDS}s:\n{cluster.logs()}")


@contextmanager
def standalone_cluster(root: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[StandaloneCluster]:
    """Start a master and `workers` workers under `root` (work and log folders), wait until every worker is
    registered with the master, yield the cluster, and stop every process group on exit."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    env = _environment(root)
    port, webui_port = _free_port(), _free_port()
    cluster = StandaloneCluster(
        url=f"spark://127.0.0.1:{port}",
        webui=f"http://127.0.0.1:{webui_port}",
        work_dir=root / "work",
        log_dir=root / "logs",
    )
    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
        cluster.processes.append(_start("master", [*master, "--webui-port", str(webui_port)], env, cluster.log_dir))
        for index in range(workers):
            worker = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores)]
            worker += ["--memory", memory, "--webui-port", str(_free_port()), "--work-dir", str(cluster.work_dir)]
            cluster.processes.append(_start(f"worker-{index}", [*worker, cluster.url], env, cluster.log_dir))
        _wait_for_workers(cluster, workers)
        yield cluster
    finally:
        for process in reversed(cluster.processes):
            _stop(process)
