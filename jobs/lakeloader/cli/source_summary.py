"""Summarise a source over an hour range: per table, the rows now in silver, the changes applied and the
messages quarantined (at parse, and changes apply left out: no column type could hold them), from the audit
zone's run reports; optionally check the tables against an expected state (the demo's generator writes one).

    python -m lakeloader.cli.source_summary --source shop --from 2026-11-21T00 --to 2026-11-21T02 [--expected FILE]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from lakeloader.core import zones
from lakeloader.core.config import SourceConfig, load_source
from lakeloader.core.storage import Store, open_store
from lakeloader.engine import reader_for

NO_TABLE = "(no table)"


def collect(source: SourceConfig, hours: list, lake: Store) -> dict[str, Any]:
    """Per-table, per-hour and overall counts over `hours`, read from the parse and apply run reports. A table's
    or an hour's `quarantined` counts the messages parse quarantined and the changes apply did (`rejected` in the
    apply report: their values fit no silver column type), and its reasons are both steps' reasons."""
    tables: dict[str, Counter] = {}
    ids: dict[str, tuple[str, str]] = {}  # 'db.table' -> (db, table), as the reports record them
    totals: Counter = Counter()
    hours_loaded = []
    per_hour: dict[str, dict[str, Any]] = {}
    for hour in hours:
        parse_key, apply_key = (zones.run_report_key(source.name, hour, step) for step in ("parse", "apply"))
        if lake.stat(apply_key) is None:
            continue
        hours_loaded.append(zones.format_hour(hour))
        parse, apply = json.loads(lake.read_bytes(parse_key)), json.loads(lake.read_bytes(apply_key))
        totals.update(lines=parse["lines"], **parse["outcomes"])
        ids.update(recorded_ids(parse, apply))
        for name, outcomes in parse["tables"].items():
            tables.setdefault(name, Counter()).update(quarantined=outcomes.get("quarantined", 0))
        tables.setdefault(NO_TABLE, Counter()).update(
            quarantined=parse["outcomes"]["quarantined"]
            - sum(t.get("quarantined", 0) for t in parse["tables"].values())
        )
        for name, counts in apply["tables"].items():
            tables.setdefault(name, Counter()).update(changes=counts["changes"], quarantined=counts.get("rejected", 0))
        reasons = Counter(parse.get("quarantine_reasons", {})) + Counter(apply.get("rejection_reasons", {}))
        per_hour[zones.format_hour(hour)] = {
            "changes": sum(counts["changes"] for counts in apply["tables"].values()),
            "quarantined": parse["outcomes"]["quarantined"] + apply.get("rejected_changes", 0),
            "quarantine_reasons": dict(reasons),
            "changes_by_table": {name: counts["changes"] for name, counts in apply["tables"].items()},
        }
    engine = reader_for(source)
    rows = {}
    for name in tables:
        if name != NO_TABLE:
            uri = silver_uri(source, lake, name, ids.get(name))
            rows[name] = engine.row_count(uri) if engine.exists(uri) else 0
    return {"hours": hours_loaded, "totals": dict(totals), "tables": tables, "rows": rows, "per_hour": per_hour}


def recorded_ids(parse: dict[str, Any], apply: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """'db.table' -> (db, table) of every table an hour's parse and apply reports name with its pair."""
    ids = {name: (db, table) for name, (db, table) in parse.get("table_ids", {}).items()}
    for name, entry in [*apply["tables"].items(), *apply.get("held_back", {}).items()]:
        if "db" in entry:
            ids[name] = (entry["db"], entry["table"])
    return ids


def silver_uri(source: SourceConfig, lake: Store, name: str, pair: tuple[str, str] | None = None) -> str:
    """The silver table named 'db.table': at its recorded (db, table) pair; without one (a report written before
    reports recorded them, an expected-state file), at the split of the name at one of its dots whose table exists
    (a db name may hold dots: OceanBase's `tenant.db1`), else at its first dot."""
    if pair is None:
        splits = [(name[:i], name[i + 1 :]) for i, char in enumerate(name) if char == "."]
        locations = [lake.child(zones.silver_table_dir(source.name, db, table)) for db, table in splits]
        engine = reader_for(source)
        return next((uri for uri in locations if engine.exists(uri)), locations[0])
    return lake.child(zones.silver_table_dir(source.name, *pair))


def mismatches(source: SourceConfig, lake: Store, expected: dict[str, list[dict]]) -> dict[str, str]:
    """Tables whose user columns differ from the expected rows (order-independent), with what differs."""
    engine = reader_for(source)
    problems = {}
    for name, rows in sorted(expected.items()):
        uri = silver_uri(source, lake, name)
        actual = engine.read(uri).to_pylist() if engine.exists(uri) else []
        actual_rows = Counter(_row_key(r) for r in actual)
        expected_rows = Counter(_row_key(r) for r in rows)
        if actual_rows != expected_rows:
            missing, extra = expected_rows - actual_rows, actual_rows - expected_rows
            problems[name] = f"{sum(missing.values())} expected rows missing, {sum(extra.values())} unexpected rows"
    return problems


def jsonable_value(value: Any) -> Any:
    """A silver value as the expected state writes it (the demo's generator uses this too): timestamps as
    ISO-8601 to the millisecond, bytes as Base64."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="milliseconds")
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return value


def _row_key(row: dict[str, Any]) -> str:
    return json.dumps({k: jsonable_value(v) for k, v in row.items() if not k.startswith("_cdc_")}, sort_keys=True)


def render(source: SourceConfig, lake: Store, summary: dict[str, Any]) -> str:
    totals = summary["totals"]
    lines = [
        f"source {source.name}: hours {', '.join(summary['hours']) or '(none loaded)'}",
        f"  messages read {totals.get('lines', 0)}: data {totals.get('data', 0)}, ddl {totals.get('ddl', 0)}, "
        f"heartbeat {totals.get('heartbeat', 0)}, control {totals.get('control', 0)}, "
        f"excluded {totals.get('excluded', 0)}, quarantined {totals.get('quarantined', 0)}",
        "",
        f"  {'table':<32} {'rows':>8} {'changes applied':>16} {'quarantined':>12}",
    ]
    for name, counts in sorted(summary["tables"].items()):
        if name == NO_TABLE and not counts["quarantined"]:
            continue
        rows = summary["rows"].get(name, "")
        lines.append(f"  {name:<32} {rows!s:>8} {counts['changes']:>16} {counts['quarantined']:>12}")
    lines += [
        "",
        f"  silver tables: {lake.child(f'silver/{source.name}')}/<db>/<table>",
        f"  quarantine:    {lake.child(f'bronze/{source.name}/quarantine')}/dt=…/hour=…",
        f"  apply's:       {lake.child(zones.apply_quarantine_dir(source.name))}",
        f"  run reports:   {lake.child(f'audit/{source.name}/runs')}/dt=…/hour=…/<step>.json",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lakeloader.cli.source_summary", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--source", required=True)
    parser.add_argument("--from", dest="first", required=True, help="first hour, YYYY-MM-DDTHH (UTC)")
    parser.add_argument("--to", dest="last", help="last hour, included (default: the first hour)")
    parser.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    parser.add_argument("--expected", type=Path, help="JSON of expected rows per 'db.table' to check against")
    args = parser.parse_args(argv)
    source = load_source(args.config, args.source)
    lake = open_store(source.lake_root, source.s3_endpoint_url)
    hours = zones.hour_range(zones.parse_hour(args.first), zones.parse_hour(args.last or args.first))
    print(render(source, lake, collect(source, hours, lake)))
    if args.expected:
        problems = mismatches(source, lake, json.loads(args.expected.read_text()))
        for name, problem in problems.items():
            print(f"  MISMATCH {name}: {problem}")
        if problems:
            return 1
        print(f"\n  every table equals the state the sample export implies ({args.expected})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
