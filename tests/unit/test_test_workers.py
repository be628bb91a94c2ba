"""`make test` runs on two pytest-xdist workers with `--dist loadgroup`: tests that share an expensive fixture
(tests/conftest.py, `_XDIST_GROUPS`: an Airflow home, the PostgreSQL stack, the Delta-on-Spark loads) must run on
one worker, which then sets it up once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("shared")


@pytest.mark.parametrize("n", range(6))
def test_records_its_worker(n):
    with open(os.environ["WORKERS_FILE"], "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path) -> None:
    """(pytest-xdist 3.8 groups them by rewriting `Item._nodeid`, which pytest 9 no longer reads: the groups then
    fall apart silently, so requirements.txt keeps pytest below 9.)"""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this project's configuration
    workers = tmp_path / "workers.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, env={**os.environ, "WORKERS_FILE": str(workers)}, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran_on = workers.read_text().split()
    assert len(ran_on) == 6 and len(set(ran_on)) == 1, ran_on
