"""The parse's generated code stays under the JIT's method limit: HotSpot does not compile a method over 8,000
bytes of bytecode (-XX:+DontCompileHugeMethods, the default), and a whole-stage method over it runs interpreted,
2-3x slower (OMS Default's parse in session 26; the two-job parse's first job in session 28)."""

from __future__ import annotations

import re

import pytest
from format_support import source_for, write_export_file

from lakeloader.core.config import SUPPORTED_FORMATS
from lakeloader.core.format_registry import reader as common_case_reader
from lakeloader.land.step import RawFiles
from lakeloader.parse.framing import read_messages
from lakeloader.parse.step import first_job_rows
from tools.cdcgen import wire

HUGE_METHOD_LIMIT = 8000  # bytes of bytecode
ADAPTIVE = "spark.sql.adaptive.enabled"


@pytest.mark.parametrize("fmt", [f for f in SUPPORTED_FORMATS if f != "auto"])  # auto: no first job of its own
def test_the_parse_jobs_generated_methods_stay_under_the_jit_limit(spark, tmp_path, fmt):
    change = wire.Change(wire.ITEMS, wire.INSERT, 1, None, {"id": 1, "name": "a", "qty": 1})
    source = source_for(fmt, tmp_path, **wire.settings(fmt, (wire.ITEMS,)))
    write_export_file(source, "part-0.json", "\n".join(wire.WRITERS[fmt](change)).encode())
    messages = read_messages(spark, RawFiles([f"file://{tmp_path}/exports/part-0.json"]), source, "2026-11-21T05")
    rows = first_job_rows(messages, source, common_case_reader(source.format)(messages, source))

    spark.conf.set(ADAPTIVE, "false")  # an adaptive plan shows its stages' code only once it has run
    try:
        generated = spark._jvm.PythonSQLUtils.explainString(rows._jdf.queryExecution(), "codegen")
    finally:
        spark.conf.unset(ADAPTIVE)

    sizes = [int(size) for size in re.findall(r"maxMethodCodeSize:(\d+)", generated)]

    assert sizes and max(sizes) < HUGE_METHOD_LIMIT
