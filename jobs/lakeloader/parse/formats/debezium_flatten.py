"""DebeziumFlatten (seed 002): a Debezium change event without the `payload` around it (and without a schema),
parsed by the Debezium machinery (lakeloader.parse.formats.debezium)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeloader.core.config import SourceConfig
from lakeloader.parse.formats.common import parse_json
from lakeloader.parse.formats.debezium import PAYLOAD, SCHEMA, parse_event


def parse(lines: DataFrame, source: SourceConfig) -> DataFrame:
    frame = parse_json(lines, PAYLOAD)
    return parse_event(frame, lines.columns, source, F.col("j"), F.lit(None).cast(SCHEMA), "")
