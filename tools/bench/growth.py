"""How apply time grows with the change volume (fixed table size) and with the table size (fixed change
volume), for key-local and uniform keys: one one-hour scenario per point, land + parse + apply each."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pyspark.sql import SparkSession

from tools.bench.probe import Probe
from tools.bench.report import MERGE_HEADERS, fmt, markdown_table, merge_cells, merge_summary, split_merges
from tools.bench.run import APPLY, PARSE, run_scenario
from tools.bench.scenario import Scenario
from tools.bench.workspace import Layout

VOLUME, SIZE = "change volume", "table size"


def growth_points(
    change_points: list[int], existing_points: list[int], fixed_changes: int, fixed_existing: int
) -> list[tuple[str, int, int]]:
    """(curve, changes, existing rows): the change volumes at the fixed table size, then the table sizes at
    the fixed change volume."""
    return [(VOLUME, c, fixed_existing) for c in change_points] + [(SIZE, fixed_changes, n) for n in existing_points]


def run_growth(
    spark: SparkSession,
    probe: Probe,
    base: Scenario,
    layout: Layout,
    points: list[tuple[str, int, int]],
    keys: list[str],
    workdir: Path,
    *,
    streamed_merge: bool,
    verify: bool,
) -> list[dict]:
    rows, measured = [], {}
    for distribution in keys:
        for curve, changes, existing in points:
            if (distribution, changes, existing) not in measured:  # the curves share their crossing point
                scenario = replace(base, changes=changes, existing_rows=existing, hours=1, keys=distribution)
                measured[distribution, changes, existing] = _measure(
                    spark, probe, scenario, layout, workdir, streamed_merge, verify
                )
            rows.append(
                {"curve": curve, "keys": distribution, "changes": changes, "existing_rows": existing,
                 **measured[distribution, changes, existing]}
            )  # fmt: skip
    return rows


def _measure(
    spark: SparkSession, probe: Probe, scenario: Scenario, layout: Layout, workdir: Path, streamed: bool, verify: bool
) -> dict:
    result = run_scenario(
        spark, probe, scenario, layout, workdir, streamed_merge=streamed, compare=False, verify=verify
    )
    silver, _ = split_merges(result.apply_merges)
    return {
        "apply": next(r for r in result.phases if r.name == APPLY).as_dict(),
        "parse": next(r for r in result.phases if r.name == PARSE).as_dict(),
        "silver_merges": merge_summary(silver),
        "verified": result.verified,
    }


def growth_markdown(rows: list[dict]) -> str:
    lines = []
    for curve in (VOLUME, SIZE):
        lines += ["", f"#### Apply time by {curve}", ""]
        lines += markdown_table(
            ["keys", "changes", "existing rows", "apply s", "apply changes/s", "silver merges: count", *MERGE_HEADERS,
             "peak MiB driver / JVM", "load"],
            [
                [
                    r["keys"],
                    fmt(r["changes"]),
                    fmt(r["existing_rows"]),
                    fmt(r["apply"]["seconds"], 1),
                    fmt(r["apply"]["changes_per_second"]),
                    str(r["silver_merges"]["merges"]),
                    *merge_cells(r["silver_merges"]),
                    f"{fmt(r['apply']['driver_peak_mb'])} / {fmt(r['apply']['jvm_peak_mb'])}",
                    f"{r['apply']['load_before']:.1f}-{r['apply']['load_after']:.1f}",
                ]
                for r in rows
                if r["curve"] == curve
            ],
        )  # fmt: skip
    return "\n".join(lines) + "\n"
