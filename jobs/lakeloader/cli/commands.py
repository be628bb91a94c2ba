"""The `lakeloader` command: look at a source from a terminal, check the configuration, run hours locally.

    lakeloader validate-config [--config FILE]
    lakeloader status --source S [--hours N] [--to YYYY-MM-DDTHH] [--config FILE]
    lakeloader quarantine show --source S --hour YYYY-MM-DDTHH [--limit N] [--config FILE]
    lakeloader run --source S --from YYYY-MM-DDTHH [--to YYYY-MM-DDTHH] [--config FILE] [--master URL]

(The console script `make setup` installs, `.venv/bin/lakeloader`; `bin/lakeloader` runs it with this checkout's
embedded Airflow settings, `python -m lakeloader.cli` runs it too.) Everything but `run` reads only the lake's
audit zone, the quarantines (Parquet files; apply's Delta table) and the silver tables' metadata: no Spark is
started.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.parquet as pq

from lakeloader.cli.source_summary import NO_TABLE, collect
from lakeloader.core import zones
from lakeloader.core.config import ConfigError, SourceConfig, load_source, load_sources
from lakeloader.core.storage import Store, open_store
from lakeloader.engine import reader_for

MESSAGE_CHARS = 160


def validate_config(path: str | None) -> int:
    """Each source's verdict; 1 when any source (or the file) has a mistake."""
    try:
        loaded = load_sources(path)
    except ConfigError as error:
        print(f"the configuration file cannot be used: {error}")
        return 1
    for source in loaded.sources:
        print(f"ok      {source.name}: {source.format} from {source.export_uri} into {source.lake_root}")
    for broken in loaded.broken:
        print(f"BROKEN  {broken.name or f'sources[{broken.index}]'}: {broken.message}")
    return 1 if loaded.broken else 0


def status(source: SourceConfig, hours: int, last: datetime | None = None) -> str:
    """The `hours` hours of a source up to `last` (default: the current hour): freshness, each table's rows and
    changes, quarantine per hour."""
    now = (last or datetime.now(UTC)).replace(minute=0, second=0, microsecond=0)
    lake = open_store(source.lake_root, source.s3_endpoint_url)
    window = zones.hour_range(now - timedelta(hours=hours - 1), now)
    summary = collect(source, window, lake)
    freshness = _json(lake, zones.freshness_key(source.name)) or {}
    lines = [f"source {source.name} ({source.format}), {hours} hours up to {zones.format_hour(now)}"]
    loaded = summary["hours"]
    lines.append(f"  hours loaded: {len(loaded)}, newest {loaded[-1] if loaded else 'none'}")
    if freshness.get("watermark"):
        lag = (datetime.now(UTC) - datetime.fromisoformat(freshness["watermark"])).total_seconds() / 60
        lines.append(f"  newest change or heartbeat loaded: {freshness['watermark']} ({lag:.0f} min ago)")
    lines.append("")
    lines.append(f"  {'table':<40} {'rows':>10} {'changes':>10} {'quarantined':>12}")
    for name, counts in sorted(summary["tables"].items()):
        if name == NO_TABLE and not counts.get("quarantined"):
            continue
        rows = summary["rows"].get(name, "")
        lines.append(f"  {name:<40} {rows!s:>10} {counts.get('changes', 0):>10} {counts.get('quarantined', 0):>12}")
    lines.append("")
    lines.append("  hour            changes  quarantined  reasons")
    for hour, counts in summary["per_hour"].items():
        reasons = ", ".join(f"{n} x {r}" for r, n in sorted(counts["quarantine_reasons"].items()))
        lines.append(f"  {hour}  {counts['changes']:>9}  {counts['quarantined']:>11}  {reasons}")
    return "\n".join(lines)


def quarantined(source: SourceConfig, hour: datetime) -> list[dict[str, Any]]:
    """The hour's quarantined messages and the changes its apply left out (`step` "apply": a value no silver
    column type could hold; `message` is the change's row as JSON), in export order (file, line)."""
    lake = open_store(source.lake_root, source.s3_endpoint_url)
    prefix = zones.bronze_quarantine_dir(source.name, hour) + "/"
    rows: list[dict[str, Any]] = []
    for item in lake.list(prefix):
        if item.key.endswith(".parquet"):
            table = pq.read_table(io.BytesIO(lake.read_bytes(item.key)), columns=_QUARANTINE_COLUMNS)
            rows += [{**row, "step": "parse"} for row in table.to_pylist()]
    rows += _left_out_by_apply(source, lake, zones.format_hour(hour))
    return sorted(rows, key=lambda r: (r["origin_file"], r["origin_line"], r["step"]))


_QUARANTINE_COLUMNS = ["reason", "db", "table", "message", "origin_file", "origin_line"]


def _left_out_by_apply(source: SourceConfig, lake: Store, hour: str) -> list[dict[str, Any]]:
    """The apply quarantine's changes of the batch `hour` (a Delta table of the whole source, small: it holds
    only changes whose values fit no column type)."""
    uri = lake.child(zones.apply_quarantine_dir(source.name))
    engine = reader_for(source)
    if not engine.exists(uri):
        return []
    columns = ["reason", "db", "table", "row", "origin_file", "origin_line", "batch_hour"]
    changes = engine.read(uri, columns).to_pylist()
    return [
        {**{k: c[k] for k in _QUARANTINE_COLUMNS if k != "message"}, "message": c["row"], "step": "apply"}
        for c in changes
        if c["batch_hour"] == hour
    ]


def render_quarantined(rows: list[dict[str, Any]], limit: int) -> str:
    lines = [f"{len(rows)} quarantined message(s)" + (f", the first {limit}:" if len(rows) > limit else ":")]
    for row in rows[:limit]:
        table = f"{row['db']}.{row['table']}" if row.get("table") else "(no table)"
        message = (row.get("message") or "").replace("\n", "\\n")
        if len(message) > MESSAGE_CHARS:
            message = message[:MESSAGE_CHARS] + "…"
        reason = f"left out at apply: {row['reason']}" if row.get("step") == "apply" else row["reason"]
        lines.append(f"{row['origin_file']}:{row['origin_line']}  {table}  {reason}\n    {message}")
    return "\n".join(lines)


def _json(lake: Store, key: str) -> dict[str, Any] | None:
    return json.loads(lake.read_bytes(key)) if lake.stat(key) is not None else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakeloader", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    named = argparse.ArgumentParser(add_help=False, parents=[config])
    named.add_argument("--source", required=True, help="source name from the config file")
    commands.add_parser("validate-config", parents=[config], help="check every source's declaration")
    show = commands.add_parser("status", parents=[named], help="freshness, tables and quarantine of recent hours")
    show.add_argument("--hours", type=int, default=24, help="how many hours (default 24)")
    show.add_argument("--to", dest="last", help="last hour, YYYY-MM-DDTHH (default: the current hour)")
    quarantine = commands.add_parser("quarantine", help="quarantined messages")
    listing = quarantine.add_subparsers(dest="action", required=True).add_parser(
        "show", parents=[named], help="an hour's quarantined messages with reason, file and line"
    )
    listing.add_argument("--hour", required=True, help="YYYY-MM-DDTHH (UTC)")
    listing.add_argument("--limit", type=int, default=50, help="messages shown (default 50)")
    run = commands.add_parser("run", parents=[named], help="run hours with the local runner (land, parse, apply)")
    run.add_argument("--from", dest="first", required=True, help="first hour, YYYY-MM-DDTHH (UTC)")
    run.add_argument("--to", dest="last", help="last hour, included (default: the first hour)")
    run.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "validate-config":
        return validate_config(args.config)
    if args.command == "run":
        from lakeloader.cli import local_runner as runner

        forwarded = ["--source", args.source, "--from", args.first, "--master", args.master]
        forwarded += ["--to", args.last] if args.last else []
        return runner.main(forwarded + (["--config", args.config] if args.config else []))
    try:
        source = load_source(args.config, args.source)
        if args.command == "status":
            print(status(source, args.hours, zones.parse_hour(args.last) if args.last else None))
        else:
            print(render_quarantined(quarantined(source, zones.parse_hour(args.hour)), args.limit))
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
