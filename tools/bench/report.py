"""Benchmark results as JSON (everything measured) and Markdown (the tables docs/performance.md quotes)."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from tools.bench.merges import MergeRecord
from tools.bench.probe import PhaseRecord
from tools.bench.run import FLOOR, ScenarioResult

MIB = 2**20


def environment(spark, peak_method: str) -> dict:
    """Machine, versions and the Spark driver's memory settings, recorded with every result."""
    import deltalake
    import pyspark

    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    return {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load_at_start": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "deltalake": deltalake.__version__,
        "spark_master": spark.sparkContext.master,
        "spark_driver_memory": spark.conf.get("spark.driver.memory", "1g (default)"),
        "jvm_max_heap_mib": round(runtime.maxMemory() / MIB),
        "peak_memory_method": peak_method,
    }


def aggregate_phases(records: list[PhaseRecord]) -> list[dict]:
    """One row per phase name (summed over hours): seconds, changes and CPU add up, peaks take the max."""
    rows: dict[str, dict] = {}
    for r in records:
        row = rows.setdefault(r.name, {"phase": r.name, "runs": 0, "load_min": r.load_before, "load_max": 0.0})
        row["runs"] += 1
        row["reused"] = row.get("reused", True) and bool(r.details.get("reused"))
        for total in ("changes", "seconds", "driver_cpu_seconds", "jvm_cpu_seconds"):
            row[total] = row.get(total, 0) + getattr(r, total)
        row["driver_peak_mib"] = max(row.get("driver_peak_mib", 0.0), r.driver_peak_mb)
        row["jvm_peak_mib"] = max(row.get("jvm_peak_mib", 0.0), r.jvm_peak_mb)
        row["load_min"] = min(row["load_min"], r.load_before, r.load_after)
        row["load_max"] = max(row["load_max"], r.load_before, r.load_after)
    for row in rows.values():
        row["changes_per_second"] = row["changes"] / row["seconds"] if row["seconds"] else 0.0
    return list(rows.values())


def merge_summary(merges: list[MergeRecord]) -> dict:
    """Totals over merges: rows merged, seconds, files rewritten (removed) of the files the tables had."""
    return {
        "merges": len(merges),
        "rows": sum(m.rows for m in merges),
        "seconds": sum(m.seconds for m in merges),
        "files_before": sum(m.files_before for m in merges),
        "files_removed": sum(m.files_removed for m in merges),
        "files_added": sum(m.files_added for m in merges),
        "mib_removed": sum(m.bytes_removed for m in merges) / MIB,
        "mib_added": sum(m.bytes_added for m in merges) / MIB,
    }


def split_merges(merges: list[MergeRecord]) -> tuple[list[MergeRecord], list[MergeRecord]]:
    """(silver table merges, tombstone table merges)."""
    return [m for m in merges if "/state/" not in m.uri], [m for m in merges if "/state/" in m.uri]


def scenario_json(result: ScenarioResult) -> dict:
    silver, tombstones = split_merges(result.apply_merges)
    return {
        "scenario": result.scenario.as_dict(),
        "label": result.scenario.label(),
        "layout": asdict(result.layout),
        "streamed_merge": result.streamed_merge,
        "phases": aggregate_phases(result.phases),
        "phases_per_hour": [r.as_dict() for r in result.phases],
        "apply_silver_merges": merge_summary(silver),
        "apply_tombstone_merges": merge_summary(tombstones),
        "bare_merges": merge_summary(result.bare_merges),
        "verified": result.verified,
    }


def fmt(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; every column but the first is right-aligned."""
    return [
        "| " + " | ".join(headers) + " |",
        "|---|" + "---:|" * (len(headers) - 1),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def merge_cells(m: dict) -> list[str]:
    """rows, seconds, rows/s, files rewritten / files, files written, MiB rewritten."""
    rate = m["rows"] / m["seconds"] if m["seconds"] else 0.0
    return [
        fmt(m["rows"]),
        fmt(m["seconds"], 1),
        fmt(rate),
        f"{m['files_removed']} / {m['files_before']}",
        str(m["files_added"]),
        fmt(m["mib_removed"], 1),
    ]


MERGE_HEADERS = ["rows", "seconds", "rows/s", "files rewritten / files", "files written", "MiB rewritten"]


def scenario_markdown(data: dict) -> str:
    phases = data["phases"]
    floor = next((p["changes_per_second"] for p in phases if p["phase"] == FLOOR), 0.0)
    layout, mode = data["layout"], "streamed" if data["streamed_merge"] else "non-streamed"
    lines = [f"### {data['label']} ({layout['rows_per_file']:,} rows per file, {mode} merge)", ""]
    lines += markdown_table(
        ["phase", "changes", "seconds", "changes/s", "of floor", "CPU s driver / JVM", "peak MiB driver / JVM", "load"],
        [
            [
                p["phase"],
                fmt(p["changes"]),
                "reused" if p["reused"] else fmt(p["seconds"], 1),
                "" if p["reused"] else fmt(p["changes_per_second"]),
                f"{p['changes_per_second'] / floor:.2f}" if floor and not p["phase"].startswith("setup") else "",
                f"{fmt(p['driver_cpu_seconds'], 1)} / {fmt(p['jvm_cpu_seconds'], 1)}",
                f"{fmt(p['driver_peak_mib'])} / {fmt(p['jvm_peak_mib'])}",
                f"{p['load_min']:.1f}-{p['load_max']:.1f}",
            ]
            for p in phases
        ],
    )
    merges = [
        (name, data[key])
        for name, key in (
            ("apply: silver merges", "apply_silver_merges"),
            ("apply: tombstone merges", "apply_tombstone_merges"),
            ("bare delta-rs merges", "bare_merges"),
        )
        if data[key]["merges"]
    ]
    lines += [
        "",
        *markdown_table(
            ["merges", "count", *MERGE_HEADERS], [[n, str(m["merges"]), *merge_cells(m)] for n, m in merges]
        ),
    ]
    if data["verified"]:
        checks = ", ".join(f"{k} {'ok' if v['ok'] else 'MISMATCH'}" for k, v in data["verified"].items())
        lines += ["", f"Tables checked against the stream ({data['verified']['apply']['rows']:,} rows): {checks}."]
    return "\n".join(lines) + "\n"


def write_results(results_dir: Path, name: str, document: dict, markdown: str) -> tuple[Path, Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    json_path, md_path = results_dir / f"{stamp}-{name}.json", results_dir / f"{stamp}-{name}.md"
    json_path.write_text(json.dumps(document, indent=1, default=str))
    md_path.write_text(markdown)
    return json_path, md_path
