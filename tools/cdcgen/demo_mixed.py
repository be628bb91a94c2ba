"""The demo's second source, `hub`: five wire formats (Canal JSON, SharePlex JSON, Debezium JSON, OMS Default,
DataWorks 2.0), one topic and table per format, exported as `kcat -J` envelopes (export_layout kcat) and loaded
with `format: auto`; and the state its tables must end in.

    python -m tools.cdcgen.demo_mixed --out var/demo/exports/hub --expected var/demo/expected-hub.json
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from lakeloader.core import zones
from tools.cdcgen import layouts, wire

FORMATS = ("canal_json", "shareplex_json", "debezium_json", "oms_default", "dataworks_v2")


def table_of(fmt: str) -> wire.Table:
    return wire.Table(f"{fmt}_items", ("id",))


def write_mixed_export(out: Path, first_hour: datetime, hours: int, changes_per_table: int) -> dict[str, list]:
    """Each format's changes in order, split over the hours (one file per format and hour); returns the
    expected rows per 'db.table'."""
    expected = {}
    for fmt in FORMATS:
        table = table_of(fmt)
        stream, rows = wire.keyed_stream(table, changes_per_table)
        lines = [line for change in stream for line in wire.WRITERS[fmt](change)]
        messages = [layouts.Positioned(fmt, 0, offset, line) for offset, line in enumerate(lines)]
        per_hour = -(-len(messages) // hours)
        for index, hour in enumerate(zones.hour_range(first_hour, first_hour + timedelta(hours=hours - 1))):
            path = out / fmt / f"part-{hour:%Y%m%d%H}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(
                layouts.kcat_file(messages[index * per_hour : (index + 1) * per_hour], base64_payload=False)
            )
            modified = (hour + timedelta(minutes=59)).timestamp()
            os.utime(path, (modified, modified))
        expected[table.qualified] = sorted(rows.values(), key=lambda r: r["id"])
    return expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="export directory of the hub source")
    parser.add_argument("--expected", type=Path, required=True, help="where to write the expected tables (JSON)")
    parser.add_argument("--first-hour", default="2026-11-21T00", help="first hour, YYYY-MM-DDTHH (UTC)")
    parser.add_argument("--hours", type=int, default=3)
    parser.add_argument("--changes-per-table", type=int, default=400)
    args = parser.parse_args(argv)
    first_hour = zones.parse_hour(args.first_hour)
    expected = write_mixed_export(args.out, first_hour, args.hours, args.changes_per_table)
    args.expected.write_text(json.dumps(expected, indent=1))
    print(f"wrote {len(FORMATS)} formats x {args.hours} hours to {args.out}: {', '.join(FORMATS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
