"""The demo's sample export: the vendor document examples plus generated traffic, and what it implies.

    python -m tools.cdcgen.demo --out var/demo/exports/shop --expected var/demo/expected.json \
        --first-hour 2026-11-21T00 --hours 3

Several tables (one without a primary key), a few thousand changes per run: inserts, updates in both
DataWorks modes (one message with both images; UPDATE_BEFOR + UPDATE_AFTER), a few primary-key changes,
deletes, heartbeats, transaction markers, messages delivered twice and a few malformed lines, spread over
two files per hour (one gzip-compressed) whose modification times fall inside their hour.
The generator applies every change to a simple in-memory model as it writes it; `expected.json` is that
model's final state, which `lakeloader.demo_summary` compares with the silver tables.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from lakeloader.cli.source_summary import jsonable_value
from lakeloader.core import zones
from tools.cdcgen import dataworks as dw

SEED_EXAMPLES = Path(__file__).parent / "seed_examples"
# The document examples insert, update and delete the same row, so their tables end up empty.
SEED_TABLES_FINAL = {"pkset_test.pkset_test_no_pk": [], "yunshi_db.t_shiyu_pk": []}

TABLES = (
    dw.TableSpec(
        "shop",
        "customers",
        (("id", "LONG"), ("name", "STRING"), ("email", "STRING"), ("vip", "BOOLEAN"), ("created", "DATE")),
        ("id",),
    ),
    dw.TableSpec(
        "shop",
        "orders",
        (
            ("id", "LONG"),
            ("customer_id", "LONG"),
            ("amount", "DOUBLE"),
            ("status", "STRING"),
            ("created", "DATE"),
            ("receipt", "BYTES"),
        ),
        ("id",),
    ),
    dw.TableSpec(
        "shop",
        "payments",
        (("order_id", "LONG"), ("attempt", "LONG"), ("amount", "DOUBLE"), ("method", "STRING")),
        ("order_id", "attempt"),
    ),
    dw.TableSpec(
        "shop", "event_log", (("message", "STRING"), ("level", "STRING"), ("#alibaba_rds_row_id#", "LONG")), None
    ),
)
STATUSES = ("new", "paid", "packed", "shipped", "delivered", "returned")
MALFORMED = (
    '{"schema": {"dataColumn": [{"name": "id"',  # truncated
    "this is not json",
    '{"payload": {"op": "UPSERT", "sequenceId": "1"}, "version": "0.0.1"}',  # unknown op
)


class Model:
    """Current rows per table and key, changed in true order alongside the messages written."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[tuple, dict[str, Any]]] = {f"{t.db}.{t.table}": {} for t in TABLES}

    def key(self, spec: dw.TableSpec, row: dict[str, Any]) -> tuple:
        return tuple(row[c] for c in (spec.primary_key or ("#alibaba_rds_row_id#",)))

    def rows(self, spec: dw.TableSpec) -> dict[tuple, dict[str, Any]]:
        return self.tables[f"{spec.db}.{spec.table}"]


class TrafficGenerator:
    def __init__(self, seed: int, changes_per_hour: int) -> None:
        self.random = random.Random(seed)
        self.changes_per_hour = changes_per_hour
        self.model = Model()
        self.seq = 1763683200000000000
        self.next_id = {f"{t.db}.{t.table}": 1 for t in TABLES}

    def new_row(self, spec: dw.TableSpec, at: datetime) -> dict[str, Any]:
        r, name = self.random, f"{spec.db}.{spec.table}"
        number = self.next_id[name]
        self.next_id[name] += 1
        if spec.table == "customers":
            return {
                "id": number,
                "name": f"customer {number}",
                "email": f"c{number}@example.com",
                "vip": r.random() < 0.2,
                "created": at.replace(microsecond=r.randrange(1000) * 1000),
            }
        if spec.table == "orders":
            return {
                "id": number,
                "customer_id": r.randrange(1, 200),
                "amount": round(r.uniform(1, 500), 2),
                "status": "new",
                "created": at,
                "receipt": r.randbytes(8),
            }
        if spec.table == "payments":
            return {
                "order_id": number,
                "attempt": 1,
                "amount": round(r.uniform(1, 500), 2),
                "method": r.choice(("card", "wallet", "transfer")),
            }
        return {"message": f"event {number}", "level": r.choice(("info", "warn")), "#alibaba_rds_row_id#": number}

    def changed(self, spec: dw.TableSpec, row: dict[str, Any]) -> dict[str, Any]:
        r, row = self.random, dict(row)
        if spec.table == "customers":
            row.update(vip=not row["vip"], email=f"new{r.randrange(10**6)}@example.com")
        elif spec.table == "orders":
            row.update(status=r.choice(STATUSES), amount=round(row["amount"] * r.uniform(0.5, 1.5), 2))
        elif spec.table == "payments":
            row.update(method=r.choice(("card", "wallet", "transfer")))
        else:
            row.update(level="error")
        return row

    def hour_messages(self, hour: datetime) -> list[str]:
        """One hour of traffic in true order, applied to the model as it is written."""
        r, lines = self.random, []
        for i in range(self.changes_per_hour):
            at = hour + timedelta(seconds=int(3600 * i / self.changes_per_hour))
            if i % 100 == 0:
                lines.append(dw.heartbeat(at))
            spec = r.choice(TABLES)
            rows = self.model.rows(spec)
            self.seq += 1
            choice = r.random()
            if not rows or choice < 0.45:
                row = self.new_row(spec, at)
                rows[self.model.key(spec, row)] = row
                lines += dw.insert(spec, self.seq, at, row)
                continue
            key = r.choice(sorted(rows))
            old = rows[key]
            if choice < 0.85:
                new = self.changed(spec, old)
                if spec.table == "orders" and r.random() < 0.03:  # the source moved the row to a new key
                    new["id"] = self.next_id["shop.orders"]
                    self.next_id["shop.orders"] += 1
                del rows[key]
                rows[self.model.key(spec, new)] = new
                one_message = r.random() < 0.5
                messages = dw.update(spec, self.seq, at, old, new, one_message=one_message)
                if r.random() < 0.1:  # inside an explicit transaction
                    messages = [
                        dw.transaction_marker("TRANSACTION_BEGIN", self.seq, at),
                        *messages,
                        dw.transaction_marker("TRANSACTION_END", self.seq, at),
                    ]
                lines += messages
            else:
                del rows[key]
                lines += dw.delete(spec, self.seq, at, old)
        return lines

    def split_into_files(self, hour: datetime, lines: list[str], redelivered: list[str]) -> dict[str, list[str]]:
        """Two partition files per hour, plus messages delivered again (from this hour and the one
        before) and a few malformed lines."""
        files: dict[str, list[str]] = {"topic-0": [], "topic-1": []}
        for line in lines:
            files[self.random.choice(sorted(files))].append(line)
        files["topic-1"] += self.random.sample(lines, k=min(10, len(lines))) + redelivered
        for bad in MALFORMED[: 1 + self.random.randrange(len(MALFORMED))]:
            target = files[self.random.choice(sorted(files))]
            target.insert(self.random.randrange(len(target) + 1), bad)
        return {
            f"{partition}/{hour:%Y%m%d%H}.json" + (".gz" if partition == "topic-1" else ""): content
            for partition, content in files.items()
        }


def write_demo_export(out: Path, first_hour: datetime, hours: int, changes_per_hour: int, seed: int) -> dict:
    """Write the export files and return the expected final state of every table."""
    generator = TrafficGenerator(seed, changes_per_hour)
    redelivered: list[str] = []
    for index, hour in enumerate(zones.hour_range(first_hour, first_hour + timedelta(hours=hours - 1))):
        lines = generator.hour_messages(hour)
        if index == 0:
            lines = [*_seed_examples(), *lines]
        files = generator.split_into_files(hour, lines, redelivered)
        redelivered = generator.random.sample(lines, k=min(10, len(lines)))  # arrives again next hour
        for name, content in files.items():
            _write(out / name, content, hour + timedelta(minutes=59))
    expected = {
        name: sorted((_jsonable(row) for row in rows.values()), key=json.dumps)
        for name, rows in generator.model.tables.items()
    }
    return {**expected, **SEED_TABLES_FINAL}


def _seed_examples() -> list[str]:
    return [line for f in sorted(SEED_EXAMPLES.glob("*.jsonl")) for line in f.read_text().splitlines() if line]


def _write(path: Path, lines: list[str], modified: datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    os.utime(path, (modified.timestamp(), modified.timestamp()))


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """Rows as JSON values: timestamps as ISO-8601 UTC to the millisecond, bytes as Base64."""
    return {k: jsonable_value(v) for k, v in row.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cdcgen.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="export directory to write")
    parser.add_argument("--expected", required=True, type=Path, help="where to write the expected table contents")
    parser.add_argument("--first-hour", required=True, help="first hour, YYYY-MM-DDTHH (UTC)")
    parser.add_argument("--hours", type=int, default=3)
    parser.add_argument("--changes-per-hour", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args(argv)
    expected = write_demo_export(
        args.out, zones.parse_hour(args.first_hour), args.hours, args.changes_per_hour, args.seed
    )
    args.expected.parent.mkdir(parents=True, exist_ok=True)
    args.expected.write_text(json.dumps(expected, indent=1, sort_keys=True))
    files = sorted(p.relative_to(args.out).as_posix() for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {len(files)} export files to {args.out}: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
