"""Landed export files -> messages, whatever the export's layout: the input of parse and of reconciliation.

Columns: source, batch_hour, origin_file, origin_line, origin_topic, origin_partition, origin_offset, text,
unwrap_error (why the file's framing yields no message, else NULL) and tombstone (an envelope without payload).

Layouts (a source's `export_layout`):
- `lines` (default): one message per line (lakeloader.lines); gzip files are decompressed by extension.
- `concatenated`: JSON messages one after another, each may span lines (pretty-printed, as the vendor
  documents print them). A message begins at a line whose first character is `{` and runs up to the next
  such line, so a truncated message never swallows the next one; `origin_line` is its first line.
- `kcat`: one JSON envelope per line, `{"topic", "partition", "offset", "timestamp" (or "ts"), "key",
  "payload"}` as `kcat -J` writes them. `payload` is the message text, or its Base64 with `payload_encoding:
  base64` (a binary format's payload is always Base64). topic, partition and offset are kept as the message's
  position (`origin_topic`, `origin_partition`, `origin_offset`); `origin_line` is the envelope's line. A null
  payload is a Kafka tombstone (Debezium writes one after each delete), counted as a control message.

Whatever the layout, a file named `*.bin` holds length-prefixed binary messages: each is a 4-byte big-endian
unsigned length followed by that many bytes; `origin_line` numbers the messages from 1. Splitting such a file
is the only Python here (slicing bytes in mapInArrow, a whole file at a time, so a file must fit in a task's
memory). A binary format (dts_avro) receives each message as Base64 text, a text format as UTF-8 text.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeloader import canonical as C
from lakeloader.config import BINARY_FORMATS, SourceConfig
from lakeloader.formats.common import REJECT_REASON, TOMBSTONE, UNWRAP_ERROR, base64_text
from lakeloader.lines import export_name, read_numbered_lines

LINES, CONCATENATED, KCAT = "lines", "concatenated", "kcat"
LENGTH_PREFIXED_SUFFIX = ".bin"
TOMBSTONE_OP = "TOMBSTONE"

NOT_AN_ENVELOPE = "malformed export envelope: not a JSON object"
NO_PAYLOAD_FIELD = "export envelope without a payload field"
NO_POSITION = "export envelope without an integer partition and offset"
PAYLOAD_NOT_BASE64 = "export envelope payload is not Base64"
PAYLOAD_NOT_UTF8 = "message is not UTF-8 text"
TRUNCATED_LENGTH = "truncated length prefix: {} byte(s) left at the end of the file"
TRUNCATED_MESSAGE = "truncated message: its length prefix says {} bytes, {} are left in the file"


def read_messages(spark: SparkSession, paths: list[str], source: SourceConfig, batch_hour: str) -> DataFrame:
    """The messages of the landed files at `paths` (module docstring), in the source's layout."""
    binary_format = source.format in BINARY_FORMATS
    text_paths = [p for p in paths if not p.endswith(LENGTH_PREFIXED_SUFFIX)]
    lines = read_numbered_lines(spark, text_paths, source.name, batch_hour)
    if source.export_layout == CONCATENATED:
        messages = concatenated_messages(lines)
    elif source.export_layout == KCAT:
        # a binary format's payload stays the Base64 text its parser decodes
        messages = kcat_messages(lines, decode_base64=source.payload_encoding == "base64" and not binary_format)
    else:
        messages = unframed(lines)
    prefixed = [p for p in paths if p.endswith(LENGTH_PREFIXED_SUFFIX)]
    if prefixed:
        records = length_prefixed_messages(spark, prefixed, source.name, batch_hour, keep_base64=binary_format)
        messages = messages.unionByName(records)
    return messages


def unframed(lines: DataFrame, error: Column | None = None) -> DataFrame:
    """Numbered lines as messages without a position (and without a framing error unless `error` says one)."""
    return lines.select(
        "source",
        "batch_hour",
        "origin_file",
        "origin_line",
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in C.POSITION_FIELDS],
        "text",
        (F.lit(None) if error is None else error).cast("string").alias(UNWRAP_ERROR),
        F.lit(False).alias(TOMBSTONE),
    )


def concatenated_messages(lines: DataFrame) -> DataFrame:
    """Lines grouped into messages: a message starts at a line beginning with `{` (or at the file's first line)."""
    starts = (F.col("text").startswith("{") | (F.col("origin_line") == 1)).cast("int")
    so_far = Window.partitionBy("origin_file").orderBy("origin_line").rowsBetween(Window.unboundedPreceding, 0)
    grouped = (
        lines.withColumn("message", F.sum(starts).over(so_far))
        .groupBy("source", "batch_hour", "origin_file", "message")
        .agg(
            F.min("origin_line").alias("origin_line"),
            F.array_sort(F.collect_list(F.struct("origin_line", "text"))).alias("parts"),
        )
        .withColumn("text", F.array_join(F.transform("parts", lambda part: part["text"]), "\n"))
    )
    return unframed(grouped)


def kcat_messages(lines: DataFrame, decode_base64: bool) -> DataFrame:
    """Envelope lines -> their payloads with topic, partition and offset (module docstring); `decode_base64`:
    the payload is the Base64 of UTF-8 text."""
    # every value as text (a payload string arrives unescaped), parsed once into a column of its own
    lines = lines.withColumn("_envelope", F.from_json("text", C.IMAGE_TYPE))
    envelope = F.col("_envelope")
    payload = envelope["payload"]
    partition, offset = envelope["partition"].try_cast("int"), envelope["offset"].try_cast("bigint")
    decoded = F.try_to_binary(payload, F.lit("base64"))
    error = (
        F.when(envelope.isNull(), F.lit(NOT_AN_ENVELOPE))
        .when(~F.map_contains_key(envelope, "payload"), F.lit(NO_PAYLOAD_FIELD))
        .when(partition.isNull() | offset.isNull(), F.lit(NO_POSITION))
    )
    text = payload
    if decode_base64:
        error = error.when(payload.isNotNull() & decoded.isNull(), F.lit(PAYLOAD_NOT_BASE64))
        error = error.when(payload.isNotNull() & ~utf8(decoded), F.lit(PAYLOAD_NOT_UTF8))
        text = F.decode(decoded, "UTF-8")
    tombstone = error.isNull() & payload.isNull()
    return lines.select(
        "source",
        "batch_hour",
        "origin_file",
        "origin_line",
        envelope["topic"].alias("origin_topic"),
        partition.alias("origin_partition"),
        offset.alias("origin_offset"),
        F.when(error.isNull() & ~tombstone, text).when(tombstone, F.lit("")).otherwise(F.col("text")).alias("text"),
        error.alias(UNWRAP_ERROR),
        tombstone.alias(TOMBSTONE),
    )


def utf8(data: Column) -> Column:
    """Whether bytes are valid UTF-8 (Spark's decode would put U+FFFD in place of a bad sequence)."""
    return F.is_valid_utf8(data.cast("string"))


def length_prefixed_messages(
    spark: SparkSession, paths: list[str], source: str, batch_hour: str, keep_base64: bool
) -> DataFrame:
    """The messages of `.bin` files: Base64 text (`keep_base64`, binary formats) or UTF-8 text."""
    files = spark.read.format("binaryFile").load(paths).select("path", "content")
    split = files.mapInArrow(split_length_prefixed, "path string, origin_line bigint, payload binary, error string")
    payload = F.col("payload")
    text = base64_text(payload) if keep_base64 else F.decode(payload, "UTF-8")
    error = F.col("error")
    if not keep_base64:
        error = F.when(error.isNull() & ~utf8(payload), F.lit(PAYLOAD_NOT_UTF8)).otherwise(error)
    records = split.select(
        F.lit(source).alias("source"),
        F.lit(batch_hour).alias("batch_hour"),
        export_name(F.col("path")).alias("origin_file"),
        "origin_line",
        F.when(error.isNull(), text).otherwise(base64_text(payload)).alias("text"),
        error.alias("framing_error"),
    )
    return unframed(records, F.col("framing_error"))


def split_length_prefixed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Rows (path, content) of whole files -> one row per message: (path, number, bytes, error). A file whose
    end is cut short yields its remaining bytes as a last message with the error."""
    for batch in batches:
        out: dict[str, list] = {"path": [], "origin_line": [], "payload": [], "error": []}
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist(), strict=True):
            for number, (payload, error) in enumerate(_records(content or b""), start=1):
                out["path"].append(path)
                out["origin_line"].append(number)
                out["payload"].append(payload)
                out["error"].append(error)
        yield pa.RecordBatch.from_pydict(
            out,
            schema=pa.schema(
                [("path", pa.string()), ("origin_line", pa.int64()), ("payload", pa.binary()), ("error", pa.string())]
            ),
        )


def _records(data: bytes) -> Iterator[tuple[bytes, str | None]]:
    position = 0
    while position < len(data):
        left = len(data) - position
        if left < 4:
            yield data[position:], TRUNCATED_LENGTH.format(left)
            return
        length = int.from_bytes(data[position : position + 4], "big")
        start = position + 4
        if start + length > len(data):
            yield data[start:], TRUNCATED_MESSAGE.format(length, len(data) - start)
            return
        yield data[start : start + length], None
        position = start + length


def framed(parsed: DataFrame) -> DataFrame:
    """A parser's rows with the framing applied: a framing error quarantines the message with its reason, a
    tombstone becomes a control message (op TOMBSTONE). Rows of lines read without framing pass unchanged."""
    if TOMBSTONE not in parsed.columns:
        return parsed
    tombstone = F.col(TOMBSTONE)
    return parsed.withColumns(
        {
            REJECT_REASON: F.when(tombstone, F.lit(None)).otherwise(F.coalesce(UNWRAP_ERROR, REJECT_REASON)),
            "kind": F.when(tombstone, F.lit(C.CONTROL)).otherwise(F.col("kind")),
            "op": F.when(tombstone, F.lit(TOMBSTONE_OP)).otherwise(F.col("op")),
        }
    ).drop(UNWRAP_ERROR, TOMBSTONE)
