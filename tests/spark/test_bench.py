"""The benchmark harness (tools.bench) on a tiny scenario, so it keeps working; no timings asserted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from tools.bench.formats import formats_markdown, run_formats
from tools.bench.generate import changes
from tools.bench.probe import Probe, jvm_pid
from tools.bench.report import scenario_json, scenario_markdown
from tools.bench.run import APPLY, BARE, FLOOR, ORDER, PARSE, TO_ARROW, run_scenario
from tools.bench.scenario import Scenario
from tools.bench.workspace import Layout

pytestmark = [pytest.mark.bench, pytest.mark.timeout(180)]


def test_change_stream_has_the_configured_mix_and_key_locality(spark):
    scenario = Scenario(changes=20_000, tables=2, existing_rows=20_000, keys="local")  # 10k keys per table
    op, key = F.col("op"), F.col("key")
    existing = op != "INSERT"
    totals = (
        changes(spark, scenario)
        .agg(
            F.count_if(op == "INSERT").alias("inserts"),
            F.count_if(op == "DELETE").alias("deletes"),
            F.count_if(op == "UPDATE_AFTER").alias("updates"),
            F.count_if(existing & (key >= 9_000)).alias("on_newest_tenth"),
            F.max(F.when(existing, key)).alias("max_existing_key"),
            F.min(F.when(~existing, key)).alias("min_new_key"),
            F.count_distinct(F.when(~existing, key)).alias("distinct_new_keys"),
        )
        .first()
    )

    assert totals["inserts"] + totals["deletes"] + totals["updates"] == 20_000
    assert totals["inserts"] / 20_000 == pytest.approx(0.1, abs=0.01)
    assert totals["deletes"] / 20_000 == pytest.approx(0.05, abs=0.01)
    assert totals["on_newest_tenth"] / (totals["deletes"] + totals["updates"]) == pytest.approx(0.8, abs=0.015)
    assert totals["max_existing_key"] < 10_000 <= totals["min_new_key"]
    assert totals["distinct_new_keys"] == totals["inserts"]


def test_bench_run_measures_every_phase_and_leaves_the_tables_the_stream_implies(spark, tmp_path: Path):
    scenario = Scenario(changes=2_000, tables=1, existing_rows=5_000, hours=1)
    probe = Probe(jvm_pid(spark))

    result = run_scenario(spark, probe, scenario, Layout(rows_per_file=1_000), tmp_path)

    assert result.verified["apply"]["ok"] and result.verified["bare"]["ok"], result.verified
    assert result.verified["apply"]["rows"] == result.verified["bare"]["rows"] > 5_000  # inserts outnumber deletes
    measured = [r for r in result.phases if not r.name.startswith("setup")]
    assert [r.name for r in measured] == [FLOOR, PARSE, ORDER, TO_ARROW, BARE, APPLY]
    assert all(r.changes == 2_000 and r.seconds > 0 and r.jvm_peak_mb > 100 and r.driver_peak_mb > 50 for r in measured)
    assert next(r for r in measured if r.name == PARSE).details["data"] == 2_000
    silver = [m for m in result.apply_merges if "/silver/" in m.uri]
    assert [(m.files_before, m.files_removed > 0) for m in silver] == [(5, True)]
    document = scenario_json(result)
    assert document["apply_silver_merges"]["files_before"] == 5
    assert "| parse | 2,000 |" in scenario_markdown(document)


@pytest.mark.timeout(600)  # two formats' parse jobs (DTS Avro's first start Python workers)
def test_bench_formats_parses_each_formats_export_completely(spark, tmp_path: Path):
    probe = Probe(jvm_pid(spark))

    rows = run_formats(spark, probe, ["canal_json", "dts_avro"], 400, tmp_path, rounds=2)

    assert [(r["format"], r["messages"]) for r in rows] == [("canal_json", 400), ("dts_avro", 400)]
    # every message a change, none quarantined, in every round
    assert [[p.details["data"] for p in r["parse"]] for r in rows] == [[400, 400], [400, 400]]
    assert [r.name for r in probe.records] == [  # the unmeasured warm-up round of canal_json is not among them
        "floor: canal_json",
        "parse, first run: canal_json",
        *["textbook parse: canal_json", "parse: canal_json"] * 2,  # the two parses take turns
        "table shapes: canal_json",
        *["order+dedupe: canal_json", "textbook order+dedupe: canal_json"] * 2,
        "floor: dts_avro",  # no JSON envelope: no textbook parse
        "parse, first run: dts_avro",
        *["parse: dts_avro"] * 2,
        "table shapes: dts_avro",
        *["order+dedupe: dts_avro", "textbook order+dedupe: dts_avro"] * 2,
    ]
    # both dedupes keep one change per key of the stream
    windows = [w for r in rows for w in (*r["order"], *r["textbook_order"])]
    assert [w.details["actions"] for w in windows] == [100] * 8
    textbook = tmp_path / "formats" / "canal_json" / "400" / "textbook"
    assert [p.name for p in textbook.iterdir() if p.is_dir()] == ["table=items"]  # written by table
    # floor, then the textbook's and the parse's median rounds with their ranges, then the parse's first run
    assert re.search(
        r"\| canal_json \| 400 \| 0 \| [\d.]+ (\| [\d.]+ \([\d.]+-[\d.]+\) ){2}\| [\d.]+ \|", formats_markdown(rows)
    )
