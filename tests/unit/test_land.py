"""The land step: each export file lands exactly once, in the hour whose run first sees it due.

Local tests run a local export directory into a local lake root with file mtimes set by os.utime. S3 tests run
s3://<bucket>/exports into s3://<bucket>/lake on a moto server; S3 LastModified cannot be set, so they choose
run hours relative to the objects' own LastModified.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.core.storage import LocalStore, S3Store, open_store
from lakeloader.land.step import LandedFile, LandError, LandSummary, land_hour, read_manifest

HOUR_5 = datetime(2026, 3, 1, 5, tzinfo=UTC)
HOUR_6 = HOUR_5 + timedelta(hours=1)
RAW_5 = "raw/shop/dt=2026-03-01/hour=05"
RAW_6 = "raw/shop/dt=2026-03-01/hour=06"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# Local export directory -> local lake root
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def exports_dir(tmp_path: Path) -> Path:
    path = tmp_path / "exports"
    path.mkdir()
    return path


@pytest.fixture
def lake_dir(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def source(exports_dir: Path, lake_dir: Path) -> SourceConfig:
    return SourceConfig(name="shop", format="dataworks_json", export_uri=str(exports_dir), lake_root=str(lake_dir))


def export(exports_dir: Path, key: str, data: bytes, modified: datetime) -> Path:
    """Drop an export file as the exporter would, with the given modification time."""
    path = exports_dir / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    nanoseconds = (modified - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000  # exact
    os.utime(path, ns=(nanoseconds, nanoseconds))
    return path


def manifest_document(lake_dir: Path, raw_dir: str) -> dict:
    return json.loads((lake_dir / raw_dir / "_manifest.json").read_bytes())


def ledger_entries(lake_dir: Path) -> dict[str, dict]:
    ledger_dir = lake_dir / "audit/shop/landed"
    entries = [json.loads(p.read_bytes()) for p in ledger_dir.iterdir()] if ledger_dir.exists() else []
    return {entry["export_key"]: entry for entry in entries}


def test_first_run_copies_due_files_and_writes_manifest_with_sizes_and_checksums(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    a = b'{"op":"I","id":1}\n{"op":"I","id":2}\n'
    b = b'{"op":"U","id":1}\n'
    export(exports_dir, "topic-b.json", b, HOUR_5 + timedelta(minutes=50))
    export(exports_dir, "topic-a.json", a, HOUR_5 - timedelta(days=2))  # older files are due too

    result = land_hour(source, HOUR_5)

    assert (result.source, result.hour) == ("shop", "2026-03-01T05")
    assert (result.copied, result.already_landed, result.not_yet_due) == (2, 0, 0)
    assert result.changed_after_landing == []
    assert result.manifest == [
        LandedFile("topic-a.json", f"{RAW_5}/topic-a.json", len(a), sha256(a), "2026-03-01T05"),
        LandedFile("topic-b.json", f"{RAW_5}/topic-b.json", len(b), sha256(b), "2026-03-01T05"),
    ]
    assert (lake_dir / RAW_5 / "topic-a.json").read_bytes() == a
    assert (lake_dir / RAW_5 / "topic-b.json").read_bytes() == b
    assert manifest_document(lake_dir, RAW_5) == {
        "source": "shop",
        "hour": "2026-03-01T05",
        "files": [
            {
                "export_key": "topic-a.json",
                "raw_key": f"{RAW_5}/topic-a.json",
                "size": len(a),
                "sha256": sha256(a),
                "hour": "2026-03-01T05",
                "damage": None,
            },
            {
                "export_key": "topic-b.json",
                "raw_key": f"{RAW_5}/topic-b.json",
                "size": len(b),
                "sha256": sha256(b),
                "hour": "2026-03-01T05",
                "damage": None,
            },
        ],
    }
    assert read_manifest(LocalStore(str(lake_dir)), "shop", HOUR_5) == result.manifest
    assert result.summary() == {
        "source": "shop",
        "hour": "2026-03-01T05",
        "files_in_manifest": 2,
        "bytes_in_manifest": len(a) + len(b),
        "copied": 2,
        "already_landed": 0,
        "not_yet_due": 0,
        "changed_after_landing": [],
        "damaged": [],
    }
    assert list(result.summary()) == list(LandSummary.__annotations__)  # the report's keys in its type's order


def test_ledger_holds_one_entry_per_landed_file_naming_its_hour(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"a", HOUR_5 + timedelta(minutes=1))
    land_hour(source, HOUR_5)
    export(exports_dir, "b.json", b"bb", HOUR_6 + timedelta(minutes=1))
    land_hour(source, HOUR_6)

    assert ledger_entries(lake_dir) == {
        "a.json": {
            "export_key": "a.json",
            "raw_key": f"{RAW_5}/a.json",
            "size": 1,
            "sha256": sha256(b"a"),
            "hour": "2026-03-01T05",
            "damage": None,
        },
        "b.json": {
            "export_key": "b.json",
            "raw_key": f"{RAW_6}/b.json",
            "size": 2,
            "sha256": sha256(b"bb"),
            "hour": "2026-03-01T06",
            "damage": None,
        },
    }


def test_next_hour_lands_only_new_files_and_never_lands_a_file_twice(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"first\n", HOUR_5 + timedelta(minutes=10))
    export(exports_dir, "b.json", b"second\n", HOUR_5 + timedelta(minutes=20))
    first = land_hour(source, HOUR_5)
    export(exports_dir, "c.json", b"third\n", HOUR_6 + timedelta(minutes=5))

    second = land_hour(source, HOUR_6)

    assert [f.export_key for f in first.manifest] == ["a.json", "b.json"]
    assert (second.copied, second.already_landed, second.not_yet_due) == (1, 2, 0)
    assert second.manifest == [LandedFile("c.json", f"{RAW_6}/c.json", 6, sha256(b"third\n"), "2026-03-01T06")]
    assert sorted(p.name for p in (lake_dir / RAW_6).iterdir()) == ["_manifest.json", "c.json"]
    assert [f["export_key"] for f in manifest_document(lake_dir, RAW_6)["files"]] == ["c.json"]
    assert sorted(ledger_entries(lake_dir)) == ["a.json", "b.json", "c.json"]


def test_rerun_of_an_hour_after_the_next_copies_nothing_and_rewrites_a_byte_identical_manifest(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"a\n", HOUR_5 + timedelta(minutes=10))
    export(exports_dir, "b.json", b"b\n", HOUR_5 + timedelta(minutes=20))
    land_hour(source, HOUR_5)
    manifest_5 = (lake_dir / RAW_5 / "_manifest.json").read_bytes()
    raw_a = lake_dir / RAW_5 / "a.json"
    raw_a_mtime = raw_a.stat().st_mtime_ns
    export(exports_dir, "c.json", b"c\n", HOUR_6 + timedelta(minutes=5))
    land_hour(source, HOUR_6)

    rerun = land_hour(source, HOUR_5)

    assert (rerun.copied, rerun.already_landed, rerun.not_yet_due) == (0, 3, 0)
    assert (lake_dir / RAW_5 / "_manifest.json").read_bytes() == manifest_5
    assert [f.export_key for f in rerun.manifest] == ["a.json", "b.json"]
    assert raw_a.stat().st_mtime_ns == raw_a_mtime  # not rewritten
    assert sorted(p.name for p in (lake_dir / RAW_5).iterdir()) == ["_manifest.json", "a.json", "b.json"]


def test_late_file_modified_within_an_hour_but_appearing_after_its_run_lands_in_the_next_run(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "on-time.json", b"on time\n", HOUR_5 + timedelta(minutes=30))
    land_hour(source, HOUR_5)
    export(exports_dir, "late.json", b"late\n", HOUR_5 + timedelta(minutes=45))  # appears after hour 5 ran

    result = land_hour(source, HOUR_6)

    assert result.copied == 1
    assert result.manifest == [LandedFile("late.json", f"{RAW_6}/late.json", 5, sha256(b"late\n"), "2026-03-01T06")]
    assert (lake_dir / RAW_6 / "late.json").read_bytes() == b"late\n"
    assert [f.export_key for f in read_manifest(LocalStore(str(lake_dir)), "shop", HOUR_5)] == ["on-time.json"]


def test_files_modified_at_or_after_the_end_of_the_hour_are_not_yet_due(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "last-moment.json", b"x", HOUR_6 - timedelta(microseconds=1))
    export(exports_dir, "at-end.json", b"y", HOUR_6)
    export(exports_dir, "later.json", b"z", HOUR_6 + timedelta(minutes=30))

    hour_5 = land_hour(source, HOUR_5)

    assert (hour_5.copied, hour_5.not_yet_due) == (1, 2)
    assert [f.export_key for f in hour_5.manifest] == ["last-moment.json"]
    assert not (lake_dir / RAW_5 / "at-end.json").exists()
    assert not (lake_dir / RAW_5 / "later.json").exists()
    assert sorted(ledger_entries(lake_dir)) == ["last-moment.json"]

    hour_6 = land_hour(source, HOUR_6)

    assert (hour_6.copied, hour_6.already_landed, hour_6.not_yet_due) == (2, 1, 0)
    assert [f.export_key for f in hour_6.manifest] == ["at-end.json", "later.json"]


def test_gzip_file_lands_byte_identical(source: SourceConfig, exports_dir: Path, lake_dir: Path) -> None:
    lines = b"".join(b'{"op":"I","id":%d,"payload":"%s"}\n' % (i, b"x" * (i % 50)) for i in range(5000))
    compressed = gzip.compress(lines, mtime=0)
    export(exports_dir, "topic/part-0001.json.gz", compressed, HOUR_5 + timedelta(minutes=5))

    result = land_hour(source, HOUR_5)

    raw = (lake_dir / RAW_5 / "topic/part-0001.json.gz").read_bytes()
    assert raw == compressed
    assert gzip.decompress(raw) == lines
    assert result.manifest[0].size == len(compressed)
    assert result.manifest[0].sha256 == sha256(compressed)
    assert result.manifest[0].damage is None


def test_damaged_file_lands_byte_identical_with_its_damage_in_ledger_and_manifest(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    compressed = gzip.compress(b"".join(b'{"id":%d}\n' % i for i in range(5000)), mtime=0)
    cut = compressed[: len(compressed) // 2]
    export(exports_dir, "cut.json.gz", cut, HOUR_5 + timedelta(minutes=5))
    export(exports_dir, "padded.json.gz", compressed + bytes(4), HOUR_5 + timedelta(minutes=5))
    export(exports_dir, "whole.json.gz", compressed, HOUR_5 + timedelta(minutes=5))

    result = land_hour(source, HOUR_5)
    rerun = land_hour(source, HOUR_5)

    assert (lake_dir / RAW_5 / "cut.json.gz").read_bytes() == cut
    assert [(f.export_key, f.size, f.damage) for f in result.manifest] == [
        ("cut.json.gz", len(cut), "gzip member at byte 0 is cut short"),
        ("padded.json.gz", len(compressed) + 4,
         f"corrupt gzip member at byte {len(compressed)} (Error -3 while decompressing data: incorrect header check)"),
        ("whole.json.gz", len(compressed), None),
    ]  # fmt: skip
    assert result.summary()["damaged"] == ["cut.json.gz", "padded.json.gz"]
    assert rerun.copied == 0 and rerun.manifest == result.manifest  # the ledger kept the damage


def test_export_names_spark_cannot_read_as_they_are_land_percent_encoded_and_the_manifest_keeps_them(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    names = ["orders-2026-11-21T05:00:00.json", "[a]{b}*?.json", "100%.json", "plain name.json"]
    for name in names:
        export(exports_dir, name, name.encode(), HOUR_5 + timedelta(minutes=5))

    result = land_hour(source, HOUR_5)

    assert sorted((f.export_key, f.raw_key.removeprefix(f"{RAW_5}/")) for f in result.manifest) == [
        ("100%.json", "100%25.json"),
        ("[a]{b}*?.json", "%5Ba%5D%7Bb%7D%2A%3F.json"),
        ("orders-2026-11-21T05:00:00.json", "orders-2026-11-21T05%3A00%3A00.json"),
        ("plain name.json", "plain name.json"),
    ]
    assert all((lake_dir / f.raw_key).read_bytes() == f.export_key.encode() for f in result.manifest)


def test_files_in_nested_subdirectories_land_under_the_same_relative_paths(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    files = {
        "top.json": b"0",
        "orders/2026/03/01/part-1.json": b"11",
        "orders/2026/03/01/part-2.json": b"222",
        "users/part-1.json": b"3333",
    }
    for key, data in files.items():
        export(exports_dir, key, data, HOUR_5 + timedelta(minutes=1))

    result = land_hour(source, HOUR_5)

    assert [(f.export_key, f.raw_key, f.size) for f in result.manifest] == [
        (key, f"{RAW_5}/{key}", len(files[key])) for key in sorted(files)
    ]
    for key, data in files.items():
        assert (lake_dir / RAW_5 / key).read_bytes() == data


def test_missing_raw_copy_is_restored_by_a_rerun_of_its_hour(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"alpha\n", HOUR_5 + timedelta(minutes=1))
    export(exports_dir, "b.json", b"beta\n", HOUR_5 + timedelta(minutes=2))
    land_hour(source, HOUR_5)
    manifest_5 = (lake_dir / RAW_5 / "_manifest.json").read_bytes()
    (lake_dir / RAW_5 / "a.json").unlink()
    (lake_dir / RAW_5 / "b.json").write_bytes(b"be")  # a copy cut short

    rerun = land_hour(source, HOUR_5)

    assert rerun.copied == 0  # a restore is not a new landing
    assert (lake_dir / RAW_5 / "a.json").read_bytes() == b"alpha\n"
    assert (lake_dir / RAW_5 / "b.json").read_bytes() == b"beta\n"
    assert (lake_dir / RAW_5 / "_manifest.json").read_bytes() == manifest_5


def test_missing_raw_copy_is_only_restored_by_its_own_hour(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"alpha\n", HOUR_5 + timedelta(minutes=1))
    land_hour(source, HOUR_5)
    (lake_dir / RAW_5 / "a.json").unlink()

    hour_6 = land_hour(source, HOUR_6)

    assert (hour_6.copied, hour_6.already_landed, hour_6.manifest) == (0, 1, [])
    assert not (lake_dir / RAW_5 / "a.json").exists()
    assert not (lake_dir / RAW_6 / "a.json").exists()


def test_missing_raw_copy_whose_export_changed_is_not_restored_with_other_bytes(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"alpha\n", HOUR_5 + timedelta(minutes=1))
    land_hour(source, HOUR_5)
    (lake_dir / RAW_5 / "a.json").unlink()
    export(exports_dir, "a.json", b"ALPHA\n", HOUR_5 + timedelta(minutes=1))  # same size, other bytes

    with pytest.raises(LandError, match=r"export file a\.json changed since it landed"):
        land_hour(source, HOUR_5)
    assert not (lake_dir / RAW_5 / "a.json").exists()


def test_missing_raw_copy_whose_export_is_gone_fails_loudly(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "a.json", b"alpha\n", HOUR_5 + timedelta(minutes=1))
    land_hour(source, HOUR_5)
    (lake_dir / RAW_5 / "a.json").unlink()
    (exports_dir / "a.json").unlink()

    with pytest.raises(LandError, match=r"raw copy .*/a\.json is missing and export file a\.json is gone"):
        land_hour(source, HOUR_5)


def test_export_file_changed_after_landing_is_reported_and_not_landed_again(
    source: SourceConfig, exports_dir: Path, lake_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    export(exports_dir, "a.json", b"alpha\n", HOUR_5 + timedelta(minutes=1))
    land_hour(source, HOUR_5)
    export(exports_dir, "a.json", b"alpha\nbeta\n", HOUR_6 + timedelta(minutes=1))

    with caplog.at_level(logging.WARNING, logger="lakeloader.land.step"):
        result = land_hour(source, HOUR_6)

    assert (result.copied, result.already_landed, result.changed_after_landing) == (0, 1, ["a.json"])
    assert result.manifest == []
    assert (lake_dir / RAW_5 / "a.json").read_bytes() == b"alpha\n"
    assert "changed after they were landed" in caplog.text


def test_hour_is_taken_as_utc_and_truncated_to_the_hour(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "in-5.json", b"5", HOUR_5 + timedelta(minutes=59))
    export(exports_dir, "in-6.json", b"6", HOUR_6 + timedelta(minutes=10))

    result = land_hour(source, datetime(2026, 3, 1, 5, 30))  # naive, mid-hour: still hour 5 UTC

    assert result.hour == "2026-03-01T05"
    assert [f.export_key for f in result.manifest] == ["in-5.json"]
    assert result.not_yet_due == 1
    assert read_manifest(LocalStore(str(lake_dir)), "shop", datetime(2026, 3, 1, 5, 45)) == result.manifest


def test_read_manifest_of_an_hour_never_landed_is_empty(lake_dir: Path) -> None:
    assert read_manifest(LocalStore(str(lake_dir)), "shop", HOUR_5) == []


def test_export_file_that_would_overwrite_the_manifest_is_refused(
    source: SourceConfig, exports_dir: Path, lake_dir: Path
) -> None:
    export(exports_dir, "_manifest.json", b"not ours", HOUR_5)

    with pytest.raises(LandError, match="would overwrite the hour's manifest"):
        land_hour(source, HOUR_5)
    assert ledger_entries(lake_dir) == {}


def test_file_uri_roots_work_like_plain_paths(exports_dir: Path, lake_dir: Path) -> None:
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=f"file://{exports_dir}", lake_root=f"file://{lake_dir}"
    )
    export(exports_dir, "a.json", b"a", HOUR_5)

    assert land_hour(source, HOUR_5).copied == 1
    assert (lake_dir / RAW_5 / "a.json").read_bytes() == b"a"


def test_no_temporary_files_are_left_in_the_lake(source: SourceConfig, exports_dir: Path, lake_dir: Path) -> None:
    export(exports_dir, "a.json", b"a", HOUR_5)
    land_hour(source, HOUR_5)

    assert [p for p in lake_dir.rglob("*") if p.name.startswith(".tmp-")] == []


# ---------------------------------------------------------------------------------------------------------------
# S3 exports -> S3 lake root (moto server)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def s3_source(s3_endpoint: str, s3_bucket: str) -> SourceConfig:
    return SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=f"s3://{s3_bucket}/exports",
        lake_root=f"s3://{s3_bucket}/lake",
        s3_endpoint_url=s3_endpoint,
    )


@pytest.fixture
def s3(s3_endpoint: str):
    return boto3.client("s3", endpoint_url=s3_endpoint)


def s3_export(s3, bucket: str, key: str, data: bytes) -> datetime:
    """Upload an export object and return its LastModified (the time land compares with the hour's end)."""
    s3.put_object(Bucket=bucket, Key=f"exports/{key}", Body=data)
    return s3.head_object(Bucket=bucket, Key=f"exports/{key}")["LastModified"]


def s3_bytes(s3, bucket: str, key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def s3_keys(s3, bucket: str, prefix: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []))


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def test_s3_lands_each_file_once_across_hours_and_reruns_reproduce_the_manifest(
    s3_source: SourceConfig, s3, s3_bucket: str
) -> None:
    modified = s3_export(s3, s3_bucket, "a.json", b"alpha\n")
    s3_export(s3, s3_bucket, "b.json", b"beta\n")
    hour = hour_of(modified)
    next_hour = hour + timedelta(hours=1)
    raw, next_raw = zones.raw_dir("shop", hour), zones.raw_dir("shop", next_hour)

    first = land_hour(s3_source, hour)
    s3_export(s3, s3_bucket, "c.json", b"gamma\n")
    second = land_hour(s3_source, next_hour)
    manifest_before = s3_bytes(s3, s3_bucket, f"lake/{raw}/_manifest.json")
    rerun = land_hour(s3_source, hour)

    assert (first.copied, first.not_yet_due) == (2, 0)
    assert first.manifest == [
        LandedFile("a.json", f"{raw}/a.json", 6, sha256(b"alpha\n"), zones.format_hour(hour)),
        LandedFile("b.json", f"{raw}/b.json", 5, sha256(b"beta\n"), zones.format_hour(hour)),
    ]
    assert (second.copied, second.already_landed) == (1, 2)
    assert second.manifest == [
        LandedFile("c.json", f"{next_raw}/c.json", 6, sha256(b"gamma\n"), zones.format_hour(next_hour))
    ]
    assert (rerun.copied, rerun.already_landed, rerun.manifest) == (0, 3, first.manifest)
    assert s3_bytes(s3, s3_bucket, f"lake/{raw}/_manifest.json") == manifest_before
    assert s3_keys(s3, s3_bucket, "lake/raw/") == sorted(
        [
            *(f"lake/{raw}/{name}" for name in ("_manifest.json", "a.json", "b.json")),
            *(f"lake/{next_raw}/{name}" for name in ("_manifest.json", "c.json")),
        ]
    )
    assert s3_bytes(s3, s3_bucket, f"lake/{raw}/a.json") == b"alpha\n"
    assert s3_bytes(s3, s3_bucket, f"lake/{next_raw}/c.json") == b"gamma\n"
    assert len(s3_keys(s3, s3_bucket, "lake/audit/shop/landed/")) == 3
    lake = open_store(s3_source.lake_root, s3_source.s3_endpoint_url)
    assert isinstance(lake, S3Store)
    assert read_manifest(lake, "shop", hour) == first.manifest


def test_s3_files_modified_after_the_hour_wait_for_a_later_hour(s3_source: SourceConfig, s3, s3_bucket: str) -> None:
    modified = s3_export(s3, s3_bucket, "a.json", b"alpha\n")
    earlier = hour_of(modified) - timedelta(hours=1)

    too_early = land_hour(s3_source, earlier)
    due = land_hour(s3_source, hour_of(modified))

    assert (too_early.copied, too_early.not_yet_due, too_early.manifest) == (0, 1, [])
    assert s3_keys(s3, s3_bucket, f"lake/{zones.raw_dir('shop', earlier)}/") == [
        f"lake/{zones.raw_dir('shop', earlier)}/_manifest.json"
    ]
    assert (due.copied, due.not_yet_due) == (1, 0)
    assert [f.export_key for f in due.manifest] == ["a.json"]


def test_s3_gzip_and_nested_keys_land_byte_identical(s3_source: SourceConfig, s3, s3_bucket: str) -> None:
    compressed = gzip.compress(b"".join(b'{"id":%d}\n' % i for i in range(20000)), mtime=0)
    modified = s3_export(s3, s3_bucket, "orders/2026/03/01/part-1.json.gz", compressed)
    s3_export(s3, s3_bucket, "orders/2026/03/01/part-2.json.gz", compressed[:-1])
    s3_export(s3, s3_bucket, "users/part-1.json", b"{}\n")
    hour = hour_of(modified)
    raw = zones.raw_dir("shop", hour)

    result = land_hour(s3_source, hour)

    assert [(f.export_key, f.raw_key, f.size, f.sha256, f.damage) for f in result.manifest] == [
        ("orders/2026/03/01/part-1.json.gz", f"{raw}/orders/2026/03/01/part-1.json.gz", len(compressed),
         sha256(compressed), None),
        ("orders/2026/03/01/part-2.json.gz", f"{raw}/orders/2026/03/01/part-2.json.gz", len(compressed) - 1,
         sha256(compressed[:-1]), "gzip member at byte 0 is cut short"),
        ("users/part-1.json", f"{raw}/users/part-1.json", 3, sha256(b"{}\n"), None),
    ]  # fmt: skip
    assert s3_bytes(s3, s3_bucket, f"lake/{raw}/orders/2026/03/01/part-1.json.gz") == compressed


def test_s3_large_file_lands_intact_through_a_multipart_upload(s3_source: SourceConfig, s3, s3_bucket: str) -> None:
    data = os.urandom(9 * 1024 * 1024)  # above boto3's 8 MiB multipart threshold
    modified = s3_export(s3, s3_bucket, "big.bin", data)
    hour = hour_of(modified)

    result = land_hour(s3_source, hour)

    assert (result.manifest[0].size, result.manifest[0].sha256) == (len(data), sha256(data))
    assert s3_bytes(s3, s3_bucket, f"lake/{zones.raw_dir('shop', hour)}/big.bin") == data


def test_s3_missing_raw_copy_is_restored_by_a_rerun_of_its_hour(s3_source: SourceConfig, s3, s3_bucket: str) -> None:
    modified = s3_export(s3, s3_bucket, "a.json", b"alpha\n")
    hour = hour_of(modified)
    raw_key = f"lake/{zones.raw_dir('shop', hour)}/a.json"
    land_hour(s3_source, hour)
    s3.delete_object(Bucket=s3_bucket, Key=raw_key)

    rerun = land_hour(s3_source, hour)

    assert (rerun.copied, rerun.already_landed) == (0, 1)
    assert s3_bytes(s3, s3_bucket, raw_key) == b"alpha\n"


def test_s3_folder_markers_are_not_landed(s3_source: SourceConfig, s3, s3_bucket: str) -> None:
    s3.put_object(Bucket=s3_bucket, Key="exports/", Body=b"")
    s3.put_object(Bucket=s3_bucket, Key="exports/orders/", Body=b"")
    modified = s3_export(s3, s3_bucket, "orders/a.json", b"alpha\n")

    result = land_hour(s3_source, hour_of(modified))

    assert [f.export_key for f in result.manifest] == ["orders/a.json"]


def test_s3_exports_land_into_a_local_lake(s3_endpoint: str, s3, s3_bucket: str, tmp_path: Path) -> None:
    source = SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=f"s3://{s3_bucket}/exports",
        lake_root=str(tmp_path / "lake"),
        s3_endpoint_url=s3_endpoint,
    )
    modified = s3_export(s3, s3_bucket, "a.json", b"alpha\n")
    hour = hour_of(modified)

    result = land_hour(source, hour)

    assert result.copied == 1
    assert (tmp_path / "lake" / zones.raw_dir("shop", hour) / "a.json").read_bytes() == b"alpha\n"


def test_an_export_location_that_does_not_exist_fails_land_naming_it(tmp_path: Path, lake_dir: Path) -> None:
    missing = tmp_path / "exprots"
    source = SourceConfig(name="shop", format="dataworks_json", export_uri=str(missing), lake_root=str(lake_dir))
    with pytest.raises(LandError, match=rf"source shop: .*directory {missing} does not exist.*check `export_uri`"):
        land_hour(source, HOUR_5)
    assert not lake_dir.exists()  # nothing written: no empty manifest pretending the hour was landed


def test_an_existing_empty_export_location_lands_an_empty_hour(source: SourceConfig, lake_dir: Path) -> None:
    assert land_hour(source, HOUR_5).summary()["files_in_manifest"] == 0


def test_an_s3_export_bucket_that_does_not_exist_fails_land_naming_it(
    s3_endpoint: str, s3_bucket: str, tmp_path: Path
) -> None:
    source = SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri="s3://no-such-bucket-here/exports",
        lake_root=str(tmp_path / "lake"),
        s3_endpoint_url=s3_endpoint,
    )
    with pytest.raises(LandError, match=r"s3://no-such-bucket-here/exports cannot be listed: NoSuchBucket"):
        land_hour(source, HOUR_5)
