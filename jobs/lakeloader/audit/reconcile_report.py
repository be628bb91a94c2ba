"""Reconciliation results for people and for the audit table (no Spark: the Airflow side reads these too).

A report is the JSON document `lakeloader.audit.reconcile.run_reconcile` writes: source, label, checked_at,
hours, checks, ok, results (one per hour for accounting, one per table for state and snapshot) and
freshness. `findings` turns it into one line per problem, `render_markdown` into the readable report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

ACCOUNTING, STATE, SNAPSHOT = "accounting", "state", "snapshot"
CHECKS = (ACCOUNTING, STATE, SNAPSHOT)


def subject(result: dict[str, Any]) -> str:
    return result.get("hour") or result.get("table") or "?"


def findings(report: Mapping[str, Any]) -> list[str]:
    """One readable line per failed check: what differs and by how much."""
    lines = []
    for result in report["results"]:
        if result["ok"]:
            continue
        if result["check"] == ACCOUNTING:
            lines += [f"accounting {result['hour']}: {problem}" for problem in result["problems"]]
        else:
            lines.append(f"{result['check']} {result['table']}: {_table_difference(result)}")
    return lines


def _table_difference(result: dict[str, Any]) -> str:
    if "problem" in result:
        return result["problem"] + (f" ({result['actual_rows']} rows)" if result.get("actual_rows") else "")
    parts = [f"expected {result['expected_rows']} rows, silver has {result['actual_rows']}"]
    if result.get("expected_checksum") != result.get("actual_checksum"):
        parts.append(f"checksum {result['expected_checksum']} vs {result['actual_checksum']}")
    if result.get("differing_keys"):
        keys = ", ".join(_key_text(s["key"]) + f" ({s['problem']})" for s in result["sample"][:5])
        more = result["differing_keys"] - min(5, len(result["sample"]))
        parts.append(f"{result['differing_keys']} key(s) differ: {keys}" + (f" and {more} more" if more > 0 else ""))
    if result.get("missing_columns"):
        parts.append(f"columns missing from silver: {', '.join(result['missing_columns'])}")
    if result.get("extra_columns"):
        parts.append(f"unexpected columns in silver: {', '.join(result['extra_columns'])}")
    if result.get("silver_table") == "missing":
        parts.append("the silver table does not exist")
    return "; ".join(parts)


def _key_text(key: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in key.items())


def render_markdown(report: Mapping[str, Any]) -> str:
    """The readable report: verdict, then one section per check with the tables/hours and what differed."""
    verdict = "OK: everything reconciles" if report["ok"] else "MISMATCH"
    out = [
        f"# Reconciliation of source `{report['source']}`: {verdict}",
        "",
        f"- run: `{report['label']}`, checked at {report['checked_at']}",
        f"- checks: {', '.join(report['checks'])}",
    ]
    if report["hours"]:
        out.append(f"- hours: {report['hours'][0]} to {report['hours'][-1]} ({len(report['hours'])})")
    freshness = report.get("freshness") or {}
    out.append(
        f"- newest change loaded: {freshness.get('newest_change') or 'none'}, "
        f"newest heartbeat: {freshness.get('newest_heartbeat') or 'none'}"
    )
    problems = findings(report)
    if problems:
        out += ["", "## What differs", "", *[f"- {line}" for line in problems]]
    by_check: dict[str, list[dict[str, Any]]] = {}
    for result in report["results"]:
        by_check.setdefault(result["check"], []).append(result)
    if ACCOUNTING in by_check:
        out += [
            "",
            "## Accounting (every landed message counted once)",
            "",
            "| hour | files | landed | data | ddl | heartbeat | control | quarantined | excluded | gaps | ok |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in by_check[ACCOUNTING]:
            o, gaps = r["outcomes"], sum(r["gaps"].values()) + len(r["file_problems"])
            out.append(
                f"| {r['hour']} | {r['files']} | {r['landed']} | {o['data']} | {o['ddl']} | {o['heartbeat']} "
                f"| {o['control']} | {o['quarantined']} | {o['excluded']} | {gaps} | {_yes(r['ok'])} |"
            )
        for r in by_check[ACCOUNTING]:
            for status, sample in r.get("samples", {}).items():
                lines = ", ".join(f"{s['origin_file']}:{s['origin_line']}" for s in sample)
                out.append(f"\n{r['hour']} {status} (file:line): {lines}")
    for check, title in ((STATE, "State (silver against the bronze change log)"), (SNAPSHOT, "Snapshot export")):
        if check not in by_check:
            continue
        out += [
            "",
            f"## {title}",
            "",
            "| table | expected rows | silver rows | checksums equal | differing keys | ok |",
            "|---|---|---|---|---|---|",
        ]
        for r in by_check[check]:
            equal = r.get("expected_checksum") == r.get("actual_checksum") if "expected_checksum" in r else "-"
            out.append(
                f"| {r['table']} | {r.get('expected_rows', '-')} | {r.get('actual_rows', '-')} | "
                f"{_yes(equal) if isinstance(equal, bool) else equal} | {r.get('differing_keys', '-')} | "
                f"{_yes(r['ok'])} |"
            )
        for r in by_check[check]:
            if r.get("sample"):
                out.append(f"\n{r['table']}: differing keys (first {len(r['sample'])}):")
                out += [f"- {_key_text(s['key'])}: {s['problem']}" for s in r["sample"]]
    return "\n".join(out) + "\n"


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def audit_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per check result for the reconciliation audit table."""
    checked_at = datetime.fromisoformat(report["checked_at"])
    rows = []
    for result in report["results"]:
        accounting = result["check"] == ACCOUNTING
        rows.append(
            {
                "checked_at": checked_at,
                "source": report["source"],
                "label": report["label"],
                "check": result["check"],
                "subject": subject(result),
                "ok": result["ok"],
                "expected": result["landed"] if accounting else result.get("expected_rows"),
                "actual": sum(result["outcomes"].values()) if accounting else result.get("actual_rows"),
                "expected_checksum": None if accounting else result.get("expected_checksum"),
                "actual_checksum": None if accounting else result.get("actual_checksum"),
                "differences": (
                    sum(result["gaps"].values()) + len(result["file_problems"])
                    if accounting
                    else result.get("differing_keys")
                ),
                "detail": json.dumps(result, default=str),
            }
        )
    return rows
