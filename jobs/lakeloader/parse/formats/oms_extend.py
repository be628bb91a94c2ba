"""OceanBase Migration Service "DefaultExtendColumnType" JSON (seed 002): the Default format
(`formats.oms_default`: ops, db, key, ordering) whose images also carry the column types.

    "postStruct": {col: value, ..., "__light_type": {col: {"schemaType": "DECIMAL(10,2)"}, ...}}

`__light_type` sits in the image that the record has (postStruct for INSERT, UPDATE and DDL, prevStruct
for DELETE; UPDATE examples carry it in both). It is metadata, not a column. Types map by
`formats.ob_types` (OB_ORACLE/ORACLE dbType switches DATE, FLOAT and INTEGER to their Oracle meaning); a
column without a `__light_type` entry keeps its text as a string.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse.formats import ob_types, oms_default
from lakeloader.parse.formats.common import Converter, declare_names

LIGHT_TYPE = "__light_type"
_LIGHT_TYPES = T.MapType(T.StringType(), T.StructType([T.StructField("schemaType", T.StringType())]))


def parse(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine."""
    oracle = ob_types.is_oracle_tenant(F.col("db_type"))

    def declaration(messages: DataFrame, names: Column) -> tuple[Column, dict[str, Converter]]:
        sent = F.coalesce(F.col("sent_after")[LIGHT_TYPE], F.col("sent_before")[LIGHT_TYPE])
        light = F.from_json(sent, _LIGHT_TYPES)  # type: ignore[arg-type]  # a MapType schema works
        types = F.transform_values(light, lambda _name, declared: declared["schemaType"])
        resolve = ob_types.resolver(messages, F.map_values(types), oracle)
        return declare_names(names, types, resolve), ob_types.CONVERTERS

    return oms_default.build(lines, declaration, metadata_keys=(LIGHT_TYPE,), column_types=source.column_types)
