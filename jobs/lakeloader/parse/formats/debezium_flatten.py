"""DebeziumFlatten (seed 002): a Debezium change event without the `payload` around it (and without a schema),
parsed by the Debezium machinery (lakeloader.parse.formats.debezium), its common case by a JVM function."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeloader.core.config import SourceConfig
from lakeloader.parse.formats.common import CommonCase, parse_json, parsed_with_common_case
from lakeloader.parse.formats.debezium import PAYLOAD, SCHEMA, common_case_events, parse_event


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of a flattened event (the Debezium machinery, no schema)."""
    frame = parse_json(lines, PAYLOAD)
    return parse_event(frame, lines.columns, source, F.col("j"), F.lit(None).cast(SCHEMA), "")


def reader(_lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The events the JVM function reads where they are the common case (`debezium.common_case_events`)."""
    return common_case_events(source, envelope=False, rest=lambda ls: _parsed(ls, source))
