"""Canal JSON: open-source Canal's flat messages, and the Canal serializers of OMS (seed 002) and DTS (seed 004).

    {"database", "table", "type": "INSERT|UPDATE|DELETE|INIT|<DDL type>", "isDdl", "sql",
     "data": [{column: text, ...}, ...], "old": [{changed column: value before}, ...],
     "pkNames": [...], "mysqlType": {column: "decimal(10,2)"}, "sqlType": {...},
     "es": ms, "ts": ms, "id": n (DTS, open-source Canal), "gtid": "..." (DTS)}

One message carries several rows (`data` is an array): each becomes its own canonical change with
`origin_index` = its position. An UPDATE's after-image is `data[i]`, its before-image `data[i]` with `old[i]`
(the changed columns' earlier values) laid over it. DTS tasks created before 2022-03-20 swap the two
(`canal_dts_legacy_images`): `data` is the before-image, `old` the after-image's changed values, and a delete's
rows are in `old`. INIT (DTS full load) is an insert. A DDL message (`isDdl` true, or a DDL `type`) keeps its
`sql` as the statement. A message is checked whole and quarantined whole (one quarantine row) when any of its
rows is bad, so a line is never split between bronze and quarantine.

Types come from `mysqlType` (lakeloader.parse.formats.mysql_types; a bare integer type holding a value beyond its
signed range is read as UNSIGNED: DTS leaves the word out, `unsigned_as_values_show`); binary values are
ISO-8859-1 text (open-source Canal) or Base64 (OMS), per `canal_binary_encoding`. Ordering key: `es` (the
change's time in ms; DTS fills only the seconds), then `id` (DTS: a sequence from time and log offset;
open-source Canal: the batch id; 0 when absent). `ts` (when the message was written), `sqlType` (JDBC codes
repeating `mysqlType`) and `gtid` (names a transaction, not an order) are not needed.

The batch's declarations are resolved once, from its first messages (`mysql_types.sampled_resolutions`). The
common case (an insert, update or delete of one row whose columns are those `mysqlType` declares, in order,
declared as strings, integers, floating numbers or decimals, each value plainly of its type) is read by a JVM
function in one pass (lakeloader/jvm/CanalMessages.java), unless the source reads legacy DTS images; every other
message, or every message without `common_case`, by the Spark SQL expressions of `build`, the reference that
function is held to (tests/spark/test_format_canal_common_case.py).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import mysql_types, ob_types, source_types
from lakeloader.parse.formats.common import (
    BAD_VALUES,
    COMMON_CASE,
    LOOKUP,
    STRING_ARRAY,
    CommonCase,
    OpTable,
    WireFields,
    canonical_image,
    common_case_columns,
    declare_names,
    finish,
    first_reason,
    integer_text,
    invalid_columns,
    jvm_reading,
    key_as_in_image,
    listing,
    overlay,
    parse_json,
    parsed_with_common_case,
    timestamp_of_millis,
    with_configured_types,
    with_declaration_lookup,
)
from lakeloader.spark import CANAL_MESSAGE

DDL_TYPES = ("CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX", "DDL")
OPS = OpTable(data={"INSERT": C.INSERT, "INIT": C.INSERT, "UPDATE": C.UPDATE, "DELETE": C.DELETE}, ddl=DDL_TYPES)
WIRE = WireFields(op="type", db="database", table="table", seq_problem="es is missing or not a number", op_label="type")
_ROW = T.MapType(T.StringType(), T.StringType())
MESSAGE = T.StructType(
    [
        *[T.StructField(name, T.StringType()) for name in ("database", "table", "type", "isDdl", "sql", "es", "id")],
        T.StructField("pkNames", STRING_ARRAY),
        T.StructField("mysqlType", _ROW),
        T.StructField("data", T.ArrayType(_ROW)),
        T.StructField("old", T.ArrayType(_ROW)),
    ]
)


_DECLARING = T.StructType([T.StructField("mysqlType", _ROW)])  # what the batch's declarations are sampled from


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> one canonical row per data row (one per message for DDL and rejects); the common case
    read by the JVM function unless not `common_case` (module docstring)."""
    resolutions = sampled_resolutions(lines, source)
    if common_case and not source.canal_dts_legacy_images:
        return parsed_with_common_case(lines, _reader(source, resolutions))
    return build(lines, source, resolutions)


def reader(lines: DataFrame, source: SourceConfig) -> CommonCase | None:
    """The JVM common-case reader given the batch's declarations (`read_common_case`) and this parser's output
    columns from its fields; none for the legacy images of DTS's Canal (the Spark SQL parser reads those)."""
    return None if source.canal_dts_legacy_images else _reader(source, sampled_resolutions(lines, source))


def _reader(source: SourceConfig, resolutions: source_types.Resolutions) -> CommonCase:
    return CommonCase(
        read_common_case(source, resolutions),
        _from_common_case(F.col(COMMON_CASE)),
        rest=lambda ls: build(ls, source, resolutions),
    )


def sampled_resolutions(lines: DataFrame, source: SourceConfig) -> source_types.Resolutions:
    """The declarations of the batch's first messages, resolved once (`mysql_types.sampled_resolutions`)."""
    sent = lines.select(F.from_json(F.col("text"), _DECLARING)["mysqlType"].alias("declared"))
    return mysql_types.sampled_resolutions(sent, F.map_values("declared"), source.canal_binary_encoding)


def read_common_case(source: SourceConfig, resolutions: source_types.Resolutions) -> Column:
    """Each line as lakeloader/jvm/CanalMessages.java reads it: the common case's fields
    (`lakeloader.spark.CANAL_COMMON_CASE`), NULL for any other message. It is given the source's configured
    column types, this module's data ops, and the batch's declarations whose values keep their text (the
    converters of those are OMS's: `mysql_types.converters`)."""
    settings = {
        "column_types": source.column_types,
        "data_ops": dict(OPS.data),
        "declared_types": ob_types.kept_as_sent(resolutions),
    }
    return jvm_reading(CANAL_MESSAGE, settings)


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields, which read `es` and `id` as `integer_text`
    would (0 without an id)."""
    passed = ("raw_op", "op", "db", "table", "before", "after", "primary_key")
    return common_case_columns(common, passed) | {
        "seq": common["es"].cast(C.SEQ_TYPE),
        "seq2": common["id"].cast(C.SEQ_TYPE),
        "event_time": timestamp_of_millis(common["es"]),
    }


def build(lines: DataFrame, source: SourceConfig, resolutions: source_types.Resolutions) -> DataFrame:
    """The Spark SQL parse."""
    encoding = source.canal_binary_encoding
    legacy = F.lit(source.canal_dts_legacy_images)
    sent = F.col("j")
    raw_type = sent["type"]
    is_ddl = F.coalesce(F.lower(sent["isDdl"]) == "true", F.lit(False)) | raw_type.isin(*DDL_TYPES)
    rows = F.when(legacy & (raw_type == "DELETE"), sent["old"]).otherwise(sent["data"])
    frame = parse_json(lines, MESSAGE).select(
        *lines.columns,
        "envelope_error",
        raw_type.alias("raw_op"),
        F.when(is_ddl, F.lit(C.DDL)).otherwise(OPS.kind(raw_type)).alias("kind"),
        F.when(is_ddl, raw_type).otherwise(OPS.canonical(raw_type)).alias("op"),
        sent["database"].alias("db"),
        sent["table"].alias("table"),
        F.when(is_ddl, sent["sql"]).alias("ddl"),
        F.when(
            F.size(sent["pkNames"]) > 0,
            key_as_in_image(sent["pkNames"], F.try_element_at(sent["data"], F.lit(1)), sent["mysqlType"]),
        ).alias("primary_key"),
        integer_text(sent["es"]).alias("seq"),
        F.coalesce(integer_text(sent["id"]), F.lit(0).cast(C.SEQ_TYPE)).alias("seq2"),
        timestamp_of_millis(sent["es"].try_cast("bigint")).alias("event_time"),
        rows.alias("rows"),
        sent["old"].alias("old"),
        mysql_types.unsigned_as_values_show(sent["mysqlType"], sent["data"], sent["old"]).alias("mysql_types"),
    )
    names = F.array_distinct(
        F.concat(*[F.coalesce(names, F.array().cast(STRING_ARRAY)) for names in _names(F.col("rows"), F.col("old"))])
    )
    resolve = mysql_types.table_resolver(resolutions, encoding)
    typed = declare_names(names, F.col("mysql_types"), resolve)
    frame = with_declaration_lookup(with_configured_types(frame.withColumn("typed", typed), source.column_types))
    converters = mysql_types.converters(encoding) | mysql_types.configured(encoding, source.column_types)
    images = F.transform(
        "rows", lambda row, i: _images(F.col("raw_op"), row, F.try_element_at(F.col("old"), i + 1), legacy)
    )
    frame = frame.withColumn(
        "images",
        F.transform(
            images,
            lambda im: F.struct(
                im["before"].alias("raw_before"),
                im["after"].alias("raw_after"),
                canonical_image(im["before"], converters).alias("before"),
                canonical_image(im["after"], converters).alias("after"),
            ),
        ),
    ).drop(LOOKUP)
    frame = frame.withColumn("message_reason", _message_reason(legacy))
    loadable = (
        F.col("envelope_error").isNull()
        & (F.col("kind") == C.DATA)
        & F.col("table").isNotNull()
        & F.col("db").isNotNull()
        & F.col("seq").isNotNull()
        & F.col("message_reason").isNull()
    )
    exploded = frame.select("*", F.posexplode_outer(F.when(loadable, F.col("images"))).alias("origin_index", "image"))
    exploded = exploded.withColumns(
        {name: F.col("image")[name] for name in ("raw_before", "raw_after", "before", "after")}
        | {"origin_index": F.coalesce("origin_index", F.lit(0))}
    )
    return finish(exploded, WIRE, after_op=[(F.col("message_reason").isNotNull(), F.col("message_reason"))])


def _names(rows: Column, old: Column) -> list[Column]:
    """Column names: the declared ones first, then those the rows and old values carry."""
    return [
        F.map_keys(F.col("mysql_types")),
        F.flatten(F.transform(rows, F.map_keys)),
        F.flatten(F.transform(old, F.map_keys)),
    ]


def _images(raw_type: Column, row: Column, old_row: Column, legacy: Column) -> Column:
    """struct(before, after) of one data row, as wire text."""
    merged = overlay(row, old_row)  # modern: the before-image; legacy: the after-image
    before = F.when(raw_type == "DELETE", row).when(raw_type == "UPDATE", F.when(legacy, row).otherwise(merged))
    after = F.when(raw_type.isin("INSERT", "INIT"), row).when(
        raw_type == "UPDATE", F.when(legacy, merged).otherwise(row)
    )
    return F.struct(before.alias("before"), after.alias("after"))


def _message_reason(legacy: Column) -> Column:
    """Why a data message cannot load, judged over all its rows (NULL when it can)."""
    is_data, raw_op, images = F.col("kind") == C.DATA, F.col("raw_op"), F.col("images")
    row_count, old_count = F.coalesce(F.size("rows"), F.lit(0)), F.coalesce(F.size("old"), F.lit(0))
    bad_values = F.array_sort(
        F.array_distinct(
            F.flatten(
                F.transform(
                    images,
                    lambda im: F.array_union(
                        invalid_columns(im["raw_before"], im["before"]), invalid_columns(im["raw_after"], im["after"])
                    ),
                )
            )
        )
    )
    missing_key = F.array_distinct(
        F.flatten(
            F.transform(
                images,
                lambda im: F.filter(
                    F.coalesce(F.col("primary_key"), F.array().cast(STRING_ARRAY)),
                    lambda k: F.coalesce(im["after"], im["before"])[k].isNull(),
                ),
            )
        )
    )
    rows_field = F.when(legacy & (raw_op == "DELETE"), F.lit("old")).otherwise(F.lit("data"))
    return first_reason(
        (is_data & (row_count == 0), F.concat(raw_op, F.lit(" message without rows in "), rows_field)),
        (
            is_data & (raw_op == "UPDATE") & (old_count != row_count),
            "UPDATE message whose old does not have one entry per data row",
        ),
        (is_data & (F.size(bad_values) > 0), listing(BAD_VALUES, bad_values)),
        (is_data & (F.size(missing_key) > 0), listing("primary key column(s) missing from the image: ", missing_key)),
    )
