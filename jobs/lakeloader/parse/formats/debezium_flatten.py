"""DebeziumFlatten (seed 002): a Debezium change event without the `payload` around it (and without a schema),
parsed by the Debezium machinery (lakeloader.parse.formats.debezium), its common case by a JVM function."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.core.config import SourceConfig
from lakeloader.parse.formats.common import parse_json
from lakeloader.parse.formats.debezium import PAYLOAD, SCHEMA, parse_event, with_common_case_events


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    def parsed(lines: DataFrame, message: Column | None = None) -> DataFrame:
        frame = parse_json(lines, PAYLOAD, message)
        return parse_event(frame, lines.columns, source, F.col("j"), F.lit(None).cast(SCHEMA), "")

    return with_common_case_events(lines, source, False, parsed) if common_case else parsed(lines)
