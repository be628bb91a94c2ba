"""Wire-format parsers, selected by a source's configured `format` (see lakeloader.config.SUPPORTED_FORMATS)."""

from __future__ import annotations

from lakeloader.formats import (
    canal,
    datahub_tuple,
    dataworks,
    dataworks_v2,
    debezium,
    debezium_flatten,
    debezium_smt,
    dts_avro,
    oms_default,
    oms_extend,
    shareplex,
)
from lakeloader.formats.auto import Parser, auto_parser

PARSERS: dict[str, Parser] = {
    "dataworks_json": dataworks.parse,
    "dataworks_v2": dataworks_v2.parse,
    "datahub_tuple": datahub_tuple.parse,
    "oms_default": oms_default.parse,
    "oms_default_extend_column_type": oms_extend.parse,
    "canal_json": canal.parse,
    "shareplex_json": shareplex.parse,
    "debezium_json": debezium.parse,
    "debezium_flatten": debezium_flatten.parse,
    "debezium_smt": debezium_smt.parse,
    "dts_avro": dts_avro.parse,
}
PARSERS["auto"] = auto_parser(dict(PARSERS))
