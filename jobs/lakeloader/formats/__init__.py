"""Wire-format parsers, selected by a source's configured `format` (see lakeloader.config.SUPPORTED_FORMATS)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from lakeloader.config import SourceConfig
from lakeloader.formats import dataworks

Parser = Callable[[DataFrame, SourceConfig], DataFrame]

PARSERS: dict[str, Parser] = {"dataworks_json": dataworks.parse}
