"""OceanBase Migration Service "DefaultExtendColumnType" JSON (seed 002): the Default format
(`formats.oms_default`: ops, db, key, ordering) whose images also carry the column types.

    "postStruct": {col: value, ..., "__light_type": {col: {"schemaType": "DECIMAL(10,2)"}, ...}}

`__light_type` sits in the image that the record has (postStruct for INSERT, UPDATE and DDL, prevStruct
for DELETE; UPDATE examples carry it in both). It is metadata, not a column. Types map by
`formats.ob_types` (OB_ORACLE/ORACLE dbType switches DATE, FLOAT and INTEGER to their Oracle meaning); a
column without a `__light_type` entry keeps its text as a string.

The batch's declarations are resolved once, from its first messages (`ob_types.sampled_resolutions`): the Spark
SQL parser looks them up there, and the common case (a data change whose columns are strings, integers,
floating numbers or decimals by a declaration found there) is read by the JVM function of the Default format
(lakeloader/jvm/OmsMessages.java), given those declarations.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import ob_types, oms_default, source_types
from lakeloader.parse.formats.common import COMMON_CASE, CommonCase, Converter, declare_names, parsed_with_common_case

LIGHT_TYPE = "__light_type"
_LIGHT_TYPES = T.MapType(T.StringType(), T.StructType([T.StructField("schemaType", T.StringType())]))
# what the batch's declarations are sampled from: the images and the tenant's kind
_DECLARING = T.StructType(
    [
        T.StructField("prevStruct", C.IMAGE_TYPE),
        T.StructField("postStruct", C.IMAGE_TYPE),
        T.StructField("allMetaData", T.StructType([T.StructField("dbType", T.StringType())])),
    ]
)


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine; the common
    case read by the JVM function unless not `common_case` (tests/spark/test_format_oms_common_case.py holds the
    two ways equal)."""
    resolutions = sampled_resolutions(lines)
    if common_case:
        return parsed_with_common_case(lines, _reader(source, resolutions))
    return _parsed(lines, source, resolutions)


def _parsed(lines: DataFrame, source: SourceConfig, resolutions: source_types.Resolutions) -> DataFrame:
    """The Spark SQL parse of DefaultExtendColumnType messages: columns typed by their declarations, resolved by
    the batch's `resolutions`."""

    def declaration(names: Column) -> tuple[Column, dict[str, Converter]]:
        types = declared_types(F.col("sent_after"), F.col("sent_before"))
        resolve = ob_types.table_resolver(resolutions, ob_types.is_oracle_tenant(F.col("db_type")))
        return declare_names(names, types, resolve), ob_types.CONVERTERS

    return oms_default.build(lines, declaration, (LIGHT_TYPE,), column_types=source.column_types)


def reader(lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader given the batch's declarations (`read_common_case`) and this parser's output
    columns from its fields."""
    return _reader(source, sampled_resolutions(lines))


def _reader(source: SourceConfig, resolutions: source_types.Resolutions) -> CommonCase:
    return CommonCase(
        read_common_case(source, resolutions),
        oms_default.from_common_case(F.col(COMMON_CASE)),
        rest=lambda ls: _parsed(ls, source, resolutions),
    )


def read_common_case(source: SourceConfig, resolutions: source_types.Resolutions) -> Column:
    """Each line as the Default format's JVM function reads it, given the batch's declarations whose values keep
    their text (`oms_default.read_common_case`)."""
    return oms_default.read_common_case(source, light_types=ob_types.kept_as_sent(resolutions))


def sampled_resolutions(lines: DataFrame) -> source_types.Resolutions:
    """The declarations of the batch's first messages, resolved once (`ob_types.sampled_resolutions`)."""
    message = F.from_json(F.col("text"), _DECLARING)
    sent = lines.select(message.alias("j"))
    declared = declared_types(F.col("j.postStruct"), F.col("j.prevStruct"))
    oracle = ob_types.is_oracle_tenant(F.col("j.allMetaData.dbType"))
    return ob_types.sampled_resolutions(sent, F.map_values(declared), oracle)


def declared_types(after: Column, before: Column) -> Column:
    """Column name -> declaration, from the images as sent: the after image's `__light_type`, else the before's."""
    sent = F.coalesce(after[LIGHT_TYPE], before[LIGHT_TYPE])
    light = F.from_json(sent, _LIGHT_TYPES)  # type: ignore[arg-type]  # a MapType schema works
    return F.transform_values(light, lambda _name, declared: declared["schemaType"])
