"""One writer per source (issue 14 item 4): the lake lock refuses a second writer at once, naming the holder,
takes over a dead holder's lock, is re-entrant within a process, works by conditional create on S3; delta-rs on
S3 commits by conditional put; the Airflow pools are created when a scheduler starts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lakeloader.core import lock
from lakeloader.core.config import SourceConfig
from lakeloader.core.lock import SourceBusy, lock_key, source_lock
from lakeloader.core.storage import S3Store, delta_storage_options, open_store
from lakeloader.engine.deltars import DeltaRsEngine
from lakeloader.land.step import land_hour

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
REPO_ROOT = Path(__file__).resolve().parents[2]


def local_source(tmp_path: Path) -> SourceConfig:
    (tmp_path / "exports").mkdir(exist_ok=True)
    return SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(tmp_path / "exports"), lake_root=str(tmp_path / "lake")
    )


def test_a_second_process_fails_at_once_naming_the_writer_and_since_when(tmp_path: Path) -> None:
    source = local_source(tmp_path)
    holder = textwrap.dedent(
        f"""
        import sys, time
        from lakeloader.core.lock import source_lock
        from lakeloader.core.storage import open_store
        with source_lock(open_store({source.lake_root!r}), "shop", "apply"):
            print("held", flush=True)
            sys.stdin.read()
        """
    )
    process = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert process.stdout.readline() == b"held\n"
        started = time.monotonic()
        with pytest.raises(SourceBusy, match=r"source shop is being written by .*:\d+:apply:\w+ since 20\d\d-"):
            land_hour(source, H5)
        assert time.monotonic() - started < 2
    finally:
        process.communicate(b"", timeout=30)
    assert process.returncode == 0
    lake = open_store(source.lake_root)
    assert lake.stat(lock_key("shop")) is None  # released by its holder
    assert land_hour(source, H5).summary()["copied"] == 0  # free again


def test_a_dead_holders_lock_is_taken_over_after_its_expiry_and_the_lock_is_reentrant(tmp_path: Path) -> None:
    lake = open_store(str(tmp_path / "lake"))
    stale = datetime.now(UTC) - timedelta(seconds=lock.EXPIRY_SECONDS + 60)
    record = {"owner": "dead-host:1:parse:x", "since": stale.isoformat(), "heartbeat": stale.isoformat()}
    lake.write_bytes(lock_key("shop"), json.dumps(record).encode())
    with source_lock(lake, "shop", "apply"):
        held = json.loads(lake.read_bytes(lock_key("shop")))
        assert held["owner"].endswith(tuple("0123456789abcdef")) and ":apply:" in held["owner"]
        with source_lock(open_store(str(tmp_path / "lake")), "shop", "apply"):  # re-entered (replay -> apply)
            pass
        assert lake.stat(lock_key("shop")) is not None
    assert lake.stat(lock_key("shop")) is None
    fresh = datetime.now(UTC).isoformat()
    lake.write_bytes(lock_key("shop"), json.dumps({**record, "since": fresh, "heartbeat": fresh}).encode())
    with pytest.raises(SourceBusy, match="being written by dead-host:1:parse:x since"), source_lock(lake, "shop", "x"):
        pass


def test_on_s3_the_lock_is_a_conditional_create_and_delta_commits_by_conditional_put(
    s3_endpoint: str, s3_bucket: str
) -> None:
    root = f"s3://{s3_bucket}/lake"
    lake = S3Store(root, s3_endpoint)
    assert lake.create_exclusive("audit/shop/lock.json", b"{}")
    assert not lake.create_exclusive("audit/shop/lock.json", b"{}")
    with pytest.raises(SourceBusy), source_lock(lake, "shop", "apply"):
        pass
    lake.delete("audit/shop/lock.json")
    with source_lock(lake, "shop", "apply"):
        assert lake.stat("audit/shop/lock.json") is not None

    options = delta_storage_options(root, s3_endpoint)
    assert "AWS_S3_ALLOW_UNSAFE_RENAME" not in options and options["conditional_put"] == "etag"
    engine = DeltaRsEngine(options)
    uri = f"{root}/silver/shop/shop/t"
    engine.create(uri, pa.schema([("id", pa.int64())]), {}, {})
    engine.add_columns(uri, [pa.field("v", pa.string())], {})
    assert engine.version(uri) == 1


def test_the_pools_are_created_when_a_scheduler_starts(airflow_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        "sources:\n  - name: shop\n    format: dataworks_json\n    export_uri: exports\n    lake_root: lake\n"
    )
    script = (
        "from lakeloader_airflow.pool_listener import on_starting\n"
        "from airflow.models.pool import Pool\n"
        "on_starting(component=type('SchedulerJob', (), {'job_type': 'SchedulerJob'})())\n"
        "pool = Pool.get_pool('lakeloader_shop')\n"
        "print(pool.slots)\n"
    )
    env = {**airflow_env, "LAKELOADER_CONFIG": str(config)}
    result = subprocess.run(
        [str(REPO_ROOT / "bin" / "with-airflow"), "python", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "1"
