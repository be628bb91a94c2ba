"""Wire-format parsers, selected by a source's configured `format` (see lakeloader.config.SUPPORTED_FORMATS)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from lakeloader.config import SourceConfig
from lakeloader.formats import datahub_tuple, dataworks, dataworks_v2, oms_default, oms_extend

Parser = Callable[[DataFrame, SourceConfig], DataFrame]

PARSERS: dict[str, Parser] = {
    "dataworks_json": dataworks.parse,
    "dataworks_v2": dataworks_v2.parse,
    "datahub_tuple": datahub_tuple.parse,
    "oms_default": oms_default.parse,
    "oms_default_extend_column_type": oms_extend.parse,
}
