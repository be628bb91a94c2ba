"""The canonical change event (bronze) and quarantine schemas: the one contract between parsers and apply.

Every parser turns its wire format into rows of CHANGE_SCHEMA; nothing downstream knows the format.

Row images (`before`, `after`) are maps of column name to *canonical text*, and `columns` declares each
column's Spark SQL type. Canonical text is what `CAST(text AS <type>)` reads back exactly:
- bigint, int, double, decimal(p,s), boolean, string: the value as Spark casts it from a string;
- timestamp: 'yyyy-MM-dd HH:mm:ss[.fffffffff]' in UTC;   timestamp_ntz: the same text, the wall clock as sent;
- date: 'yyyy-MM-dd';
- binary: Base64 (apply decodes it with unbase64).
Parsers validate every value against its declared type; a value that does not convert sends the whole
message to quarantine instead of silently becoming NULL.

Ordering key: (seq, seq2) compared as numbers, then (origin_file, origin_line, origin_index); origin_index
numbers the rows of a message that carries several (Canal's `data` array), 0 otherwise.
"""

from __future__ import annotations

from pyspark.sql import types as T

# kinds of message
DATA, DDL, HEARTBEAT, CONTROL = "data", "ddl", "heartbeat", "control"

# canonical data operations
INSERT = "INSERT"
UPDATE = "UPDATE"  # one message carrying both images
UPDATE_BEFORE = "UPDATE_BEFORE"  # first half of a two-message update
UPDATE_AFTER = "UPDATE_AFTER"  # second half of a two-message update (after-image only)
DELETE = "DELETE"
TRUNCATE = "TRUNCATE"  # a ddl-kind op: empties the table at its point in the sequence

SEQ_TYPE = T.DecimalType(38, 0)

COLUMN_TYPE = T.StructType([T.StructField("name", T.StringType()), T.StructField("type", T.StringType())])
IMAGE_TYPE = T.MapType(T.StringType(), T.StringType())

# a message's topic coordinates, when the export keeps them (export_layout kcat; lakeloader.parse.framing)
POSITION_FIELDS = (
    T.StructField("origin_topic", T.StringType(), True),
    T.StructField("origin_partition", T.IntegerType(), True),
    T.StructField("origin_offset", T.LongType(), True),
)

CHANGE_SCHEMA = T.StructType(
    [
        T.StructField("source", T.StringType(), False),
        T.StructField("kind", T.StringType(), False),
        T.StructField("op", T.StringType(), False),
        T.StructField("raw_op", T.StringType(), True),
        T.StructField("db", T.StringType(), True),
        T.StructField("schema_name", T.StringType(), True),
        T.StructField("table", T.StringType(), True),
        T.StructField("before", IMAGE_TYPE, True),
        T.StructField("after", IMAGE_TYPE, True),
        T.StructField("after_partial", T.BooleanType(), False),
        T.StructField("primary_key", T.ArrayType(T.StringType()), True),
        T.StructField("columns", T.ArrayType(COLUMN_TYPE), True),
        T.StructField("ddl", T.StringType(), True),
        T.StructField("seq", SEQ_TYPE, True),
        T.StructField("seq2", SEQ_TYPE, False),
        T.StructField("event_time", T.TimestampType(), True),
        T.StructField("origin_file", T.StringType(), False),
        T.StructField("origin_line", T.LongType(), False),
        T.StructField("origin_index", T.IntegerType(), False),
        *POSITION_FIELDS,
        T.StructField("batch_hour", T.StringType(), False),
    ]
)

QUARANTINE_SCHEMA = T.StructType(
    [
        T.StructField("source", T.StringType(), False),
        T.StructField("reason", T.StringType(), False),
        T.StructField("db", T.StringType(), True),  # when the message got far enough to name them
        T.StructField("table", T.StringType(), True),
        T.StructField("message", T.StringType(), True),  # the message as valid UTF-8 (bad bytes as U+FFFD)
        T.StructField("origin_file", T.StringType(), False),
        T.StructField("origin_line", T.LongType(), False),
        *POSITION_FIELDS,
        T.StructField("batch_hour", T.StringType(), False),
        T.StructField("message_bytes", T.BinaryType(), True),  # the message's bytes exactly as landed
    ]
)
