"""The demo's generated export, loaded hour by hour, leaves exactly the state its in-memory model implies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from lakeloader.cli.local_runner import run_hours
from lakeloader.cli.source_summary import NO_TABLE, collect, mismatches
from lakeloader.core import zones
from lakeloader.core.config import load_source
from lakeloader.core.storage import open_store
from tools.cdcgen.demo import write_demo_export

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "config" / "sources.yaml"
FIRST = datetime(2026, 11, 21, 0, tzinfo=UTC)
HOURS = zones.hour_range(FIRST, FIRST + timedelta(hours=2))


def test_demo_export_loads_into_exactly_the_model_state(spark, tmp_path: Path):
    expected = write_demo_export(tmp_path / "exports", FIRST, hours=3, changes_per_hour=300, seed=7)
    demo = load_source(DEMO_CONFIG, "shop")  # the demo's own declaration (its column_types), on these paths
    source = demo.model_copy(update={"export_uri": str(tmp_path / "exports"), "lake_root": str(tmp_path / "lake")})
    run_hours(spark, source, HOURS, emit=lambda _: None)
    lake = open_store(source.lake_root)

    assert mismatches(source, lake, expected) == {}
    summary = collect(source, HOURS, lake)
    totals = summary["totals"]
    assert summary["hours"] == ["2026-11-21T00", "2026-11-21T01", "2026-11-21T02"]
    assert totals["lines"] == sum(totals[k] for k in ("data", "ddl", "heartbeat", "control", "excluded", "quarantined"))
    assert totals["quarantined"] >= 3 and summary["tables"][NO_TABLE]["quarantined"] == totals["quarantined"]
    assert totals["heartbeat"] >= 3 * 3 + 2  # every 100 changes, the two document examples, re-deliveries
    assert {name: summary["rows"][name] for name in expected} == {name: len(rows) for name, rows in expected.items()}
