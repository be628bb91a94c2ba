"""Landed export files -> messages, whatever the export's layout: the input of parse and of reconciliation.

Columns: source, batch_hour, origin_file (the export file's key), origin_line, origin_topic, origin_partition,
origin_offset, text, unwrap_error (why the file's framing yields no message, else NULL) and tombstone (an
envelope without payload).

Layouts (a source's `export_layout`):
- `lines` (default): one message per line (lakeloader.parse.numbered_lines); gzip files are decompressed by extension.
- `concatenated`: JSON messages one after another, each may span lines (pretty-printed, as the vendor
  documents print them). A message begins at a line whose first character is `{` and runs up to the next
  such line, so a truncated message never swallows the next one; `origin_line` is its first line.
- `kcat`: one JSON envelope per line, `{"topic", "partition", "offset", "timestamp" (or "ts"), "key",
  "payload"}` as `kcat -J` writes them. `payload` is the message text, or its Base64 with `payload_encoding:
  base64` (a binary format's payload is always Base64). topic, partition and offset are kept as the message's
  position (`origin_topic`, `origin_partition`, `origin_offset`); `origin_line` is the envelope's line. A null
  payload is a Kafka tombstone (Debezium writes one after each delete), counted as a control message.

Whatever the layout, a file named `<topic>+<partition>+<start offset>` (with any extension: the Kafka Connect
S3 sink's names) gives its messages their topic, partition and offset: the start offset plus the message's
index within the file (`with_offsets_of_file_names`), unless an envelope gives them.

Whatever the layout, a file named `*.bin` (or `*.bin.gz`, gzip-compressed) holds length-prefixed binary
messages: each is a 4-byte big-endian unsigned length followed by that many bytes; `origin_line` numbers the
messages from 1. A binary format (dts_avro) receives each message as Base64 text, a text format as UTF-8 text.

A `.gz` file that land found damaged (lakeloader.core.compression) is not given to Spark's reader, which would fail
the hour: its lines that decode before the damage are read as the layout says, and the rest of the file is
one quarantined message at the line where the damage begins, with the damage as its reason (for a damaged
`.bin.gz` file: at the first message it does not hold whole).

A file in a compression that cannot be read (lakeloader.core.compression) is not read: it is one quarantined
message at line 1 with the reason.

Every message then passes `guarded`, before any parser sees it: a message longer than the source's
`max_message_bytes` is quarantined as too large with its size, its text dropped unparsed (its length is the
JVM's count of the bytes read: no regex or JSON work touches it); a message whose bytes are not valid UTF-8,
or (JSON formats) that holds a control character JSON does not allow unescaped (a NUL, ...) or an escaped UTF-16
surrogate that is not half of a pair (`\\ud800` alone, which JSON readers turn into '?'), is quarantined with
that reason. Spark's text reader keeps a line's bytes as read, so the quarantine stores them exactly
(`message_bytes`). With `lines` the size limit holds before anything reads a message's content; `concatenated`
and `kcat` first group lines or unwrap envelopes, which reads each line whole.

Splitting `.bin` files and salvaging damaged `.gz` files is the only Python here (mapInArrow, a whole file at
a time, so such a file must fit in a task's memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeloader.core import zones
from lakeloader.core.compression import GZIP_SUFFIX, salvage, unsupported_compression
from lakeloader.core.config import SourceConfig
from lakeloader.core.format_registry import FORMATS, not_json_files
from lakeloader.land.step import RawFiles
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import MESSAGE_BYTES, REJECT_REASON, TOMBSTONE, UNWRAP_ERROR, base64_text
from lakeloader.parse.numbered_lines import export_name, file_keys, read_numbered_lines
from lakeloader.spark import JSON_TEXT_PROBLEM, VALID_UTF8

LINES, CONCATENATED, KCAT = "lines", "concatenated", "kcat"
LENGTH_PREFIXED_SUFFIXES = (".bin", ".bin" + GZIP_SUFFIX)
TOMBSTONE_OP = "TOMBSTONE"

NOT_AN_ENVELOPE = "malformed export envelope: not a JSON object"
NO_PAYLOAD_FIELD = "export envelope without a payload field"
NO_POSITION = "export envelope without an integer partition and offset"
PAYLOAD_NOT_BASE64 = "export envelope payload is not Base64"
PAYLOAD_NOT_UTF8 = "message is not UTF-8 text"
TRUNCATED_LENGTH = "truncated length prefix: {} byte(s) left at the end of the file"
TRUNCATED_MESSAGE = "truncated message: its length prefix says {} bytes, {} are left in the file"
DAMAGED_GZIP = "damaged gzip file, nothing from here on can be read: {}"
FRAMING_ERROR = "framing_error"
LINE_KEYS = ("source", "batch_hour", "origin_file", "origin_line")
# the pieces a `.bin` or damaged `.gz` file is split into: as mapInArrow declares them and as Arrow batches
SPLIT_SCHEMA = "path string, origin_line bigint, payload binary, error string"
PIECES_PER_BATCH = 65_536
_PIECES = pa.schema(
    [("path", pa.string()), ("origin_line", pa.int64()), ("payload", pa.binary()), ("error", pa.string())]
)

SplitFile = Callable[[str, bytes], Iterator[tuple[bytes, str | None]]]  # (path, content) -> (piece, error)


def read_messages(spark: SparkSession, files: RawFiles, source: SourceConfig, batch_hour: str) -> DataFrame:
    """The messages of landed files (module docstring), in the source's layout; `origin_file` is the export
    file's key."""
    binary_format = FORMATS[source.format].binary
    by_reading: dict[str, list[str]] = {how: [] for how in (_TEXT, _PREFIXED, _SALVAGED, _UNREAD)}
    for path in files.paths:
        by_reading[_reading(path, files.damaged)].append(path)
    text_paths, prefixed, salvaged, unread = by_reading.values()
    lines = read_numbered_lines(spark, text_paths, source.name, batch_hour, files.sizes)
    if salvaged:
        salvaged_lines = salvaged_gzip_lines(spark, salvaged, source.name, batch_hour)
        framing_error = F.col(FRAMING_ERROR)
        lines = lines.unionByName(salvaged_lines.where(framing_error.isNull()).drop(FRAMING_ERROR))
    if source.export_layout == CONCATENATED:
        messages = concatenated_messages(lines)
    elif source.export_layout == KCAT:
        # a binary format's payload stays the Base64 text its parser decodes
        messages = kcat_messages(lines, decode_base64=source.payload_encoding == "base64" and not binary_format)
    else:
        messages = unframed(lines)
    if salvaged:
        messages = messages.unionByName(unframed(salvaged_lines.where(framing_error.isNotNull()), framing_error))
    if prefixed:
        records = length_prefixed_messages(spark, prefixed, source.name, batch_hour, keep_base64=binary_format)
        messages = messages.unionByName(records)
    if unread:
        messages = messages.unionByName(unread_messages(spark, unread, source.name, batch_hour))
    if files.export_keys:
        keys = F.create_map(*[F.lit(text) for pair in files.export_keys.items() for text in pair])
        messages = messages.withColumn("origin_file", F.coalesce(keys[F.col("origin_file")], F.col("origin_file")))
    if _may_name_offsets(files):
        messages = with_offsets_of_file_names(messages, source.export_layout)
    return guarded(messages, source.max_message_bytes, json_text(source.format))


def json_text(fmt: str) -> Column:
    """Which messages of a source of format `fmt` are JSON text: all, or those not in files whose lines are not
    (a DataHub TUPLE CSV file, `not_json_files`), or none."""
    if not FORMATS[fmt].json:
        return F.lit(False)
    others = not_json_files(fmt)
    return ~F.col("origin_file").rlike("|".join(others)) if others else F.lit(True)


# `<topic>+<partition>+<start offset>[.extension]`: the Kafka Connect S3 sink's object names (kcat-based
# exporters write the same); the topic may hold dots, the extension is anything after the start offset's dot
OFFSET_FILE_NAME = r"(?:^|/)([^/]+)\+([0-9]{1,9})\+([0-9]{1,18})(?:\.[^/]*)?$"


def _may_name_offsets(files: RawFiles) -> bool:
    """Whether a message's `origin_file` may match OFFSET_FILE_NAME: only a name with a '+' can, and `origin_file`
    holds one only where a landed path has a '+' (or '%2B', which `export_name` decodes to one) or an export key
    it maps back to does. Most hours have none: their messages are then spared a regular expression each."""
    names = [*files.paths, *files.export_keys.values()]
    return any("+" in name or "%2b" in name.lower() for name in names)


def with_offsets_of_file_names(messages: DataFrame, layout: str) -> DataFrame:
    """Messages of a file named after its first offset (OFFSET_FILE_NAME) get their topic, partition and
    offset: the start offset plus the message's index within the file (its line less one; in the concatenated
    layout, its number among the file's messages). Positions an envelope gives (kcat) are kept."""
    name = F.col("origin_file")
    named = F.regexp_extract(name, OFFSET_FILE_NAME, 0) != ""
    index = F.col("origin_line") - 1
    if layout == CONCATENATED:
        index = F.row_number().over(Window.partitionBy("origin_file").orderBy("origin_line")) - 1
    by_name = {
        "origin_topic": F.regexp_extract(name, OFFSET_FILE_NAME, 1),
        "origin_partition": F.regexp_extract(name, OFFSET_FILE_NAME, 2).cast("int"),
        "origin_offset": F.regexp_extract(name, OFFSET_FILE_NAME, 3).cast("bigint") + index,
    }
    known = F.col("origin_offset").isNotNull()
    return messages.withColumns(
        {column: F.when(~known & named, value).otherwise(F.col(column)) for column, value in by_name.items()}
    )


TOO_LARGE = "message too large: {} bytes (max_message_bytes {})"
NOT_UTF8 = "message is not valid UTF-8 text"


def guarded(messages: DataFrame, max_bytes: int, json_text: Column) -> DataFrame:
    """Messages with the byte-level checks applied (module docstring): the first problem of a message without a
    framing error becomes its framing error; a too-large message's text becomes empty. `json_text`: which
    messages are JSON text (JSON's rules on control characters and escapes apply)."""
    text = F.col("text")
    size = F.octet_length(text)  # the UTF8String's byte count: no decoding, no copy
    too_large = size > max_bytes
    valid = utf8(text.cast("binary"))
    problem = F.when(too_large, F.format_string(TOO_LARGE.replace("{}", "%d"), size, F.lit(max_bytes))).when(
        ~valid, F.lit(NOT_UTF8)
    )
    found = F.when(json_text, F.call_function(JSON_TEXT_PROBLEM, text.cast("binary")))  # a byte scan in the JVM
    problem = problem.when(found.isNotNull(), found)
    return messages.withColumns(
        {
            UNWRAP_ERROR: F.coalesce(F.col(UNWRAP_ERROR), problem),
            # parsers (and Python steps such as Avro decoding) only ever see valid UTF-8 text; the bytes as read
            # go to quarantine
            MESSAGE_BYTES: F.when(~too_large & ~valid, text.cast("binary")),
            "text": F.when(too_large, F.lit("")).when(~valid, F.make_valid_utf8(text)).otherwise(text),
        }
    )


_TEXT, _PREFIXED, _SALVAGED, _UNREAD = "text", "length-prefixed", "salvaged", "unread"


def _reading(path: str, damaged: frozenset[str]) -> str:
    """How a landed file is read: as text lines by Spark, as length-prefixed messages, salvaged from a damaged
    gzip stream, or not at all (an unsupported compression)."""
    if unsupported_compression(path):
        return _UNREAD
    if path.endswith(LENGTH_PREFIXED_SUFFIXES):
        return _PREFIXED
    return _SALVAGED if path in damaged else _TEXT


def unread_messages(spark: SparkSession, paths: list[str], source: str, batch_hour: str) -> DataFrame:
    """One message per file that is not read (an unsupported compression), at line 1, with the reason."""
    rows = [(zones.raw_copy_name(p), unsupported_compression(p)) for p in paths]
    records = spark.createDataFrame(rows, "origin_file string, error string").select(
        F.lit(source).alias("source"),
        F.lit(batch_hour).alias("batch_hour"),
        "origin_file",
        F.lit(1).cast("bigint").alias("origin_line"),
        F.lit("").alias("text"),
        F.col("error").alias(FRAMING_ERROR),
    )
    return unframed(records, F.col(FRAMING_ERROR))


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
    lines = lines.withColumn("_envelope", F.from_json("text", C.IMAGE_TYPE))  # type: ignore[arg-type]  # MapType works
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
    """Whether bytes are valid UTF-8 (Spark's decode would put U+FFFD in place of a bad sequence): Spark's
    `is_valid_utf8`, but with a byte scan in the JVM first for the common case of ASCII text."""
    return F.call_function(VALID_UTF8, data)


def length_prefixed_messages(
    spark: SparkSession, paths: list[str], source: str, batch_hour: str, keep_base64: bool
) -> DataFrame:
    """The messages of `.bin` and `.bin.gz` files: Base64 text (`keep_base64`, binary formats) or UTF-8 text."""
    split = split_files(spark, paths, _length_prefixed_file, source, batch_hour)
    payload = F.col("payload")
    text = base64_text(payload) if keep_base64 else F.decode(payload, "UTF-8")
    error = F.col("error")
    if not keep_base64:
        error = F.when(error.isNull() & ~utf8(payload), F.lit(PAYLOAD_NOT_UTF8)).otherwise(error)
    records = split.select(
        *LINE_KEYS,
        F.when(error.isNull(), text).otherwise(base64_text(payload)).alias("text"),
        error.alias(FRAMING_ERROR),
    )
    return unframed(records, F.col(FRAMING_ERROR))


def salvaged_gzip_lines(spark: SparkSession, paths: list[str], source: str, batch_hour: str) -> DataFrame:
    """Numbered lines of damaged `.gz` files, up to the damage, and per file a last row for the damage: the
    bytes after the last line break that decode (UTF-8 text, else Base64) with the reason in `framing_error`."""
    split = split_files(spark, paths, _salvaged_lines, source, batch_hour)
    payload, error = F.col("payload"), F.col("error")
    text = F.when(error.isNull() | utf8(payload), F.decode(payload, "UTF-8")).otherwise(base64_text(payload))
    return split.select(*LINE_KEYS, text.alias("text"), error.alias(FRAMING_ERROR))


def split_files(spark: SparkSession, paths: list[str], split: SplitFile, source: str, batch_hour: str) -> DataFrame:
    """Whole files, each split by `split` into numbered pieces: LINE_KEYS, payload (bytes), error."""
    files = spark.read.format("binaryFile").load(paths).select("path", "content")
    pieces = files.mapInArrow(lambda batches: _split_batches(batches, split), SPLIT_SCHEMA)
    return pieces.select(*file_keys(source, batch_hour, export_name(F.col("path"))), "origin_line", "payload", "error")


def _split_batches(batches: Iterable[pa.RecordBatch], split: SplitFile) -> Iterator[pa.RecordBatch]:
    """Rows (path, content) of whole files -> one row per piece: (path, number from 1, bytes, error), in Arrow
    batches of at most PIECES_PER_BATCH rows, holding one file's content in Python at a time."""
    out = _no_pieces()
    for batch in batches:
        paths, contents = batch.column("path"), batch.column("content")
        for row in range(batch.num_rows):
            path = paths[row].as_py()
            for number, (payload, error) in enumerate(split(path, contents[row].as_py() or b""), start=1):
                out["path"].append(path)
                out["origin_line"].append(number)
                out["payload"].append(payload)
                out["error"].append(error)
                if len(out["path"]) == PIECES_PER_BATCH:
                    yield pa.RecordBatch.from_pydict(out, schema=_PIECES)
                    out = _no_pieces()
    if out["path"]:
        yield pa.RecordBatch.from_pydict(out, schema=_PIECES)


def _no_pieces() -> dict[str, list]:
    return {"path": [], "origin_line": [], "payload": [], "error": []}


def _salvaged_lines(_path: str, data: bytes) -> Iterator[tuple[bytes, str | None]]:
    """A gzip file's lines (split as Spark's text reader splits them) up to its damage, then the damage."""
    decoded, damage = salvage(data)
    lines = decoded.splitlines(keepends=True)
    tail = lines.pop() if lines and not lines[-1].endswith((b"\n", b"\r")) else b""
    for line in lines:
        yield line.rstrip(b"\r\n"), None
    if damage is not None:
        yield tail, DAMAGED_GZIP.format(damage)
    elif tail:
        yield tail, None


def _length_prefixed_file(path: str, data: bytes) -> Iterator[tuple[bytes, str | None]]:
    """A `.bin` or `.bin.gz` file's messages. A damaged `.bin.gz` file ends with one message for the damage:
    the bytes of the first message it does not hold whole (none when the damage falls between messages)."""
    damage = None
    if path.endswith(GZIP_SUFFIX):
        data, damage = salvage(data)
    for payload, error in _length_prefixed(data):
        if error is not None and damage is not None:
            yield payload, DAMAGED_GZIP.format(damage)
            return
        yield payload, error
    if damage is not None:
        yield b"", DAMAGED_GZIP.format(damage)


def _length_prefixed(data: bytes) -> Iterator[tuple[bytes, str | None]]:
    """The messages of length-prefixed bytes; bytes whose end is cut short yield their remaining bytes as a
    last message with the error."""
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


RESERVED_PREFIX = "_cdc_"
EMPTY_NAME = "empty {} name: a table cannot be stored under it"
EMPTY_COLUMN = "empty column name: no database has such a column, nor can a table store one"
RESERVED_COLUMNS = f"column name(s) reserved for the loader's metadata (prefix {RESERVED_PREFIX}, any case): "
CASE_TWINS = "column names that differ only by case (Delta column names are case-insensitive): "


NAMES = "_names"


def stored_names() -> Column:
    """The column names a parsed row would store: its images' and its declared columns', each once. Where an
    image holds exactly the declared names in order and the other is NULL or does too (most rows), those names
    are the answer (an image's names are a map's keys, so distinct) and the set operation, which hashes every
    name, is left for the rest."""
    empty = F.array().cast("array<string>")
    declared = F.col("columns")["name"]
    keys = {image: F.map_keys(image) for image in ("before", "after")}
    equal = {image: F.coalesce(names == declared, F.lit(False)) for image, names in keys.items()}
    absent = {image: F.col(image).isNull() for image in keys}
    declared_only = (equal["before"] | equal["after"]) & (equal["before"] | absent["before"])
    declared_only = declared_only & (equal["after"] | absent["after"])
    every = F.array_distinct(
        F.concat(*[F.coalesce(names, empty) for names in keys.values()], F.coalesce(declared, empty))
    )
    return F.when(declared_only, declared).otherwise(every)


def name_problem(names: Column) -> Column:
    """Why a data or DDL message's names cannot be stored (NULL when they can): a data message's empty db or
    table name; an empty column name; a column named with the loader's `_cdc_` prefix (any case), which would
    collide with its metadata; two columns whose names differ only by case, which Delta takes as one. Such a
    message is quarantined, never renamed (docs/reliability.md). Every other name is stored (zones.name_segment).

    `names` (`stored_names`) is a column of its own: used inside these checks' per-name lambdas, an expression
    is evaluated there without code generation, and it was once per use."""
    reserved = F.filter(names, lambda n: F.lower(n).startswith(RESERVED_PREFIX))
    # reserved names and names that lowering changes are rare: the names joined and searched once (generated
    # code) before the per-name tests (interpreted). A name lowering changes leaves its trace in the joined text.
    joined = F.array_join(names, "/")
    may_reserve = F.lower(joined).contains(RESERVED_PREFIX)
    may_twin = F.lower(joined) != joined
    lowered = F.transform(names, lambda n: F.lower(n))
    twins = F.filter(names, lambda n: F.size(F.filter(lowered, lambda m: m == F.lower(n))) > 1)
    named = F.col("kind").isin(C.DATA, C.DDL)
    return (
        place_problem()
        .when(named & F.array_contains(names, ""), F.lit(EMPTY_COLUMN))
        .when(
            named & may_reserve & (F.size(reserved) > 0),
            F.concat(F.lit(RESERVED_COLUMNS), F.array_join(reserved, ", ")),
        )
        .when(
            named & may_twin & (F.size(F.array_distinct(lowered)) < F.size(names)),
            F.concat(F.lit(CASE_TWINS), F.array_join(F.array_sort(twins), ", ")),
        )
    )


def place_problem() -> Column:
    """Why a data message's place cannot be stored (`name_problem`'s first part): an empty db or table name."""
    data = F.col("kind") == C.DATA  # a DDL message may name no table
    return F.when(data & (F.col("table") == ""), F.lit(EMPTY_NAME.format("table"))).when(
        data & (F.col("db") == ""), F.lit(EMPTY_NAME.format("database"))
    )


def framed(parsed: DataFrame, columns_checked: bool = False) -> DataFrame:
    """A parser's rows with the framing applied: a framing error quarantines the message with its reason, a
    tombstone becomes a control message (op TOMBSTONE). Rows of lines read without framing pass unchanged.
    `columns_checked`: rows whose column names a JVM reader has checked (lakeloader/jvm/CommonCase.java's
    requireStorableNames: it takes no message `name_problem` would quarantine for them), whose place alone is then
    checked. (The column checks' higher-order functions have no generated code: they left a wide projection
    interpreted, 12% of SharePlex's first job.)"""
    if columns_checked:
        problem = place_problem()
    else:
        parsed = parsed.withColumn(NAMES, stored_names())
        problem = name_problem(F.col(NAMES))
    if TOMBSTONE not in parsed.columns:
        return parsed.withColumn(REJECT_REASON, F.coalesce(REJECT_REASON, problem)).drop(NAMES)
    tombstone = F.col(TOMBSTONE)
    return parsed.withColumns(
        {
            REJECT_REASON: F.when(tombstone, F.lit(None)).otherwise(F.coalesce(UNWRAP_ERROR, REJECT_REASON, problem)),
            "kind": F.when(tombstone, F.lit(C.CONTROL)).otherwise(F.col("kind")),
            "op": F.when(tombstone, F.lit(TOMBSTONE_OP)).otherwise(F.col("op")),
        }
    ).drop(UNWRAP_ERROR, TOMBSTONE, NAMES)  # MESSAGE_BYTES stays for the quarantine (lakeloader.parse.step)
