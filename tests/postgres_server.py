"""A throwaway PostgreSQL server for the system tests: Debian's `postgresql` binaries (`initdb`, `postgres`), a new
cluster in a folder of the test's own, listening on 127.0.0.1 on a free port only (no unix socket outside that
folder), trust authentication for its one role, durability off (a test database), started in its own process
group and stopped by that PID. Used by tests/system/test_scheduler.py as Airflow's metadata database.

PostgreSQL refuses to run as root. Run by root (as in CI containers), the server runs as an unprivileged user
through `setpriv` (which execs, so the PID is the postmaster's): Debian's `postgres` account when the package
made it, else a system user `lakeloader-pg` created here. Its folder is then a fresh directory under the system
temp folder owned by that user, because pytest's base temp folder is private to root; it is removed afterwards.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg2

_STARTUP_TIMEOUT_SECONDS = 60.0
_STOP_TIMEOUT_SECONDS = 30.0
ROLE = "airflow"
DATABASE = "airflow"
_UNPRIVILEGED_USERS = ("postgres", "lakeloader-pg")
# a test database: nothing needs to survive a crash, and 2 cores are shared with Airflow's services
_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",  # four services, their pools and the executor's workers
}


def binaries() -> Path | None:
    """The folder holding `initdb` and `postgres`: on PATH, else Debian's /usr/lib/postgresql/<newest>/bin."""
    on_path = shutil.which("initdb")
    if on_path and Path(on_path).with_name("postgres").exists():
        return Path(on_path).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    return versions[-1].parent if versions else None


@dataclass
class PostgresServer:
    url: str  # SQLAlchemy URL of the `airflow` database (psycopg2)
    dsn: str  # the same for psycopg2.connect
    log: Path

    def connect(self) -> psycopg2.extensions.connection:
        return psycopg2.connect(self.dsn)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _unprivileged_user() -> pwd.struct_passwd:
    for name in _UNPRIVILEGED_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    name = _UNPRIVILEGED_USERS[-1]
    useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
    created = subprocess.run(useradd, capture_output=True, text=True)
    try:
        return pwd.getpwnam(name)  # also when a parallel test worker created it first
    except KeyError:
        raise RuntimeError(f"cannot create the user {name} to run PostgreSQL as: {created.stderr}") from None


def _as_user(user: pwd.struct_passwd | None) -> list[str]:
    if user is None:
        return []
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]


@contextmanager
def postgres_server(tmp_path: Path) -> Iterator[PostgresServer]:
    """Start a new cluster; yields once the `airflow` database accepts connections."""
    bin_dir = binaries()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")
    user = _unprivileged_user() if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="lakeloader-pg-")) if user else tmp_path
    if user:
        os.chown(root, user.pw_uid, user.pw_gid)
    data, log = root / "data", tmp_path / "postgres.log"
    env = {**os.environ, "LC_ALL": "C.UTF-8", "TZ": "UTC"}
    try:
        subprocess.run(
            [*_as_user(user), str(bin_dir / "initdb"), "--no-sync", "--auth=trust", f"--username={ROLE}",
             "--encoding=UTF8", "--locale=C.UTF-8", "-D", str(data)],
            env=env, cwd=root, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        process, port = _start(user, bin_dir, data, env, log)
        try:
            dsn = f"host=127.0.0.1 port={port} user={ROLE} dbname="
            admin = psycopg2.connect(dsn + "postgres")
            try:
                admin.autocommit = True  # CREATE DATABASE runs outside a transaction
                admin.cursor().execute(f"create database {DATABASE}")
            finally:
                admin.close()
            yield PostgresServer(f"postgresql+psycopg2://{ROLE}@127.0.0.1:{port}/{DATABASE}", dsn + DATABASE, log)
        finally:
            _stop(process)
    finally:
        if user:
            shutil.rmtree(root, ignore_errors=True)


def _start(
    user: pwd.struct_passwd | None, bin_dir: Path, data: Path, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the server on a free port and wait until it accepts connections; a port taken between choosing
    and binding it (by a parallel test worker) is retried with another."""
    for _attempt in range(3):
        port = _free_port()
        settings = [arg for key, value in {**_SETTINGS, "port": str(port)}.items() for arg in ("-c", f"{key}={value}")]
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [*_as_user(user), str(bin_dir / "postgres"), "-D", str(data), *settings],
                env=env, cwd=data.parent, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        if _accepting(f"host=127.0.0.1 port={port} user={ROLE} dbname=postgres", data, process, log):
            return process, port
        _stop(process)
    raise RuntimeError(f"postgres found no free port in 3 attempts:\n{log.read_text()[-3000:]}")


def _accepting(dsn: str, data: Path, process: subprocess.Popen[bytes], log: Path) -> bool:
    """Whether our server came up (its data directory answers on the port), False if its port was taken."""
    deadline = time.monotonic() + _STARTUP_TIMEOUT_SECONDS
    while True:
        if process.poll() is not None:
            if "could not bind" in log.read_text():
                return False
            raise RuntimeError(f"postgres exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with closing(psycopg2.connect(dsn)) as connection, connection.cursor() as cursor:
                cursor.execute("show data_directory")
                return cursor.fetchone() == (str(data),)
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not start in time:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT: roll back open transactions, disconnect clients), then SIGKILL to the group."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=_STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
