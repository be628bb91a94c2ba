"""DebeziumSmt (seed 002): Debezium events flattened by the ExtractNewRecordState transform, i.e. only the
row's fields plus `__deleted`:

    {"field1": "after_value1", "field2": "after_value2", "__deleted": "false"}

`__deleted` "true" is a delete (the fields are the deleted row); "false", or no `__deleted` at all (the
transform without delete rewriting), is the row's new state: an insert or an update, which the message
cannot tell apart, so it becomes UPDATE_AFTER (apply upserts it). Nothing in the message names its table,
declares a type or a key, or orders it:

- the table comes from the configuration: `topic_tables` maps a topic to 'db.table'; a message's topic is
  its envelope's `topic` (export_layout kcat) or its file name's (`<topic>+<partition>+<start offset>`,
  lakeloader.parse.framing), else the first directory of its file's path in the export
  (`orders/part-0001.json` -> topic `orders`);
- columns are strings unless the source's `column_types` configures them, and values are read as OMS's
  Debezium serializer writes them (seed 002): a date as 'YYYY-MM-DD' or days since 1970, bytes in Base16,
  a DATETIME (timestamp_ntz) as epoch milliseconds whatever the number's size (1971 is 10 digits), a
  TIMESTAMP as ISO text in UTC (lakeloader.parse.formats.debezium.value_families);
- tables need `primary_keys`: without a key a table is a multiset of rows (lakeloader.apply.multiset), and an
  upsert adds a row instead of replacing one
  (a message lacking a configured key column is quarantined);
- the ordering key is the export position. Where the offset is known (kcat envelopes, offset file names),
  `seq` is the message's Kafka offset: the true
  order of a topic partition, and a key's changes stay in one partition when the topic is keyed (Debezium's
  default). Otherwise `seq` is the batch hour as yyyyMMddHH, `seq2` 0, and inside an
  hour changes order by export file name, then line. So a later hour always wins over an earlier one, even
  when a file that lands late holds older changes, and within an hour file names must sort in export order
  (as Kafka offsets in zero-padded names do). `seq2` is not the line number on purpose: line 100 of an
  hour's first file must not win over line 3 of its second.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import debezium
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    Converter,
    OpTable,
    WireFields,
    common_case_columns,
    configured_map,
    configured_types,
    declare_names,
    finish,
    image_names,
    jvm_reading,
    parse_json,
    parsed_with_common_case,
    qualified,
    spark_typed,
    split_qualified,
    with_canonical_images,
)
from lakeloader.spark import DEBEZIUM_SMT_ROW

DELETED = "__deleted"
ABSENT = "false"  # what a message without __deleted (or with null) is: the row's new state
OPS = OpTable(data={"true": C.DELETE, "false": C.UPDATE_AFTER})
WIRE = WireFields(
    op=DELETED,
    db="topic_tables entry",
    table="topic_tables entry",
    seq_problem="the batch hour is not a number",
    op_label=DELETED,
)
TOPIC = r"^([^/]+)/"
PLACE = "_place"  # the line's place (`_place`), computed once for the reader and the columns from its fields
CONVERTERS: dict[str, Converter] = debezium.value_families(binary=debezium.CONVERTERS["hex"])


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine.

    The common case (a message of a table found from its topic, every value a string or a number plainly of its
    column's type) is read by a JVM function in one pass (`read_common_case`); every other message, or every
    message without `common_case`, by the Spark SQL expressions of `_parsed`, the reference that function is held
    to (tests/spark/test_format_debezium_smt_common_case.py)."""
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def reader(lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader (`read_common_case`) and this parser's output columns from its fields and the
    line's place (its table and ordering key)."""
    found = {name: column.alias(name) for name, column in _place(lines, source).items() if name != "topic"}
    place = F.col(PLACE)
    passed = common_case_columns(F.col(COMMON_CASE), ("raw_op", "op", "before", "after", "primary_key"))
    return CommonCase(
        _reading(source, {name: place[name] for name in found}),
        passed | {name: place[name] for name in ("db", "table", "seq")},
        rest=lambda ls: _parsed(ls, source),
        shared={PLACE: F.struct(*found.values())},
    )


def read_common_case(lines: DataFrame, source: SourceConfig) -> Column:
    """Each line as lakeloader/jvm/DebeziumSmtRows.java reads it: the common case's fields
    (`lakeloader.spark.DEBEZIUM_SMT_COMMON_CASE`), NULL for any other message and for one whose table or ordering
    key the line's place does not give. It is given the source's settings and this module's op table, so that
    they are written once."""
    return _reading(source, _place(lines, source))


def _reading(source: SourceConfig, place: Mapping[str, Column]) -> Column:
    settings = {
        "column_types": source.column_types,
        "primary_keys": source.primary_keys,
        "deleted": DELETED,
        "data_ops": dict(OPS.data),
        "absent": ABSENT,
        "before_ops": [C.DELETE],
    }
    found = place["destination"].isNotNull() & place["seq"].isNotNull()
    return F.when(found, jvm_reading(DEBEZIUM_SMT_ROW, settings, place["qualified"]))


def _place(lines: DataFrame, source: SourceConfig) -> dict[str, Column]:
    """What a message's place says (its line's topic and offset, the batch hour): its topic, the 'db.table' the
    topic is configured to (`destination`), that table's db and name and their `qualified` name, the ordering
    key."""
    topic = F.coalesce(
        F.col("origin_topic") if "origin_topic" in lines.columns else F.lit(None),
        F.nullif(F.regexp_extract("origin_file", TOPIC, 1), F.lit("")),
    )
    offset = F.col("origin_offset") if "origin_offset" in lines.columns else F.lit(None)
    seq = F.coalesce(offset, F.regexp_replace("batch_hour", r"[^0-9]", "")).try_cast(C.SEQ_TYPE)
    return {"topic": topic, **_configured_table(source.topic_tables, topic), "seq": seq}


def _configured_table(topic_tables: Mapping[str, str], topic: Column) -> dict[str, Column]:
    """The table a topic is configured to (`destination`), its db and name (`split_qualified`) and their
    `qualified` name, each looked up in a map from topic: the maps' values are expressions of literals, which
    Spark's optimizer computes once, so a message costs a lookup each rather than the split's two regular
    expressions and a concatenation (a million messages' warm parse: executor CPU 5.5-5.7 s -> 5.3-5.4, A/B
    rounds in one process)."""
    destinations = {topic: F.lit(destination) for topic, destination in topic_tables.items()}
    splits = {topic: split_qualified(destination) for topic, destination in destinations.items()}

    def per_topic(values: dict[str, Column]) -> Column:
        if not values:
            return F.lit(None).cast("string")
        return F.element_at(F.create_map(*[x for t, value in values.items() for x in (F.lit(t), value)]), topic)

    return {
        "destination": per_topic(destinations),
        "db": per_topic({t: db for t, (db, _) in splits.items()}),
        "table": per_topic({t: table for t, (_, table) in splits.items()}),
        "qualified": per_topic({t: qualified(db, table) for t, (db, table) in splits.items()}),
    }


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of every message."""
    frame = parse_json(lines, C.IMAGE_TYPE)
    fields = F.col("j")
    deleted = F.coalesce(fields[DELETED], F.lit(ABSENT))
    image = F.map_filter(fields, lambda name, _: name != DELETED)
    place = _place(lines, source)
    db, table = place["db"], place["table"]
    op = OPS.canonical(deleted)
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        deleted.alias("raw_op"),
        OPS.kind(deleted).alias("kind"),
        op.alias("op"),
        place["topic"].alias("topic"),
        db.alias("db"),
        table.alias("table"),
        F.element_at(configured_map(source.primary_keys, "array<string>"), qualified(db, table)).alias("primary_key"),
        F.when(op == C.DELETE, image).alias("raw_before"),
        F.when(op == C.UPDATE_AFTER, image).alias("raw_after"),
        place["seq"].alias("seq"),
        F.size(image).alias("field_count"),
    )
    names = image_names(F.col("raw_after"), F.col("raw_before"))
    types = configured_types(source.column_types, F.col("db"), F.col("table"))
    frame = frame.withColumn("typed", F.when(F.col("kind") == C.DATA, declare_names(names, types, spark_typed)))
    frame = with_canonical_images(frame, CONVERTERS)
    return finish(
        frame,
        WIRE,
        before_op=[
            (F.col("topic").isNull(), "the export file is not inside a topic directory"),
            (
                F.col("table").isNull(),
                F.concat(F.lit("no table configured for topic '"), F.col("topic"), F.lit("' (topic_tables)")),
            ),
            (
                F.col("kind").isNull(),
                F.concat(F.lit(f'{DELETED} must be "true" or "false", got \''), F.col("raw_op"), F.lit("'")),
            ),
        ],
        after_op=[(F.col("field_count") == 0, "message without fields")],
    )
