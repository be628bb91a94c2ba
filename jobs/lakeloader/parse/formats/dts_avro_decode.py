"""DTS Avro lines -> flat records of exact text: the one step of the `dts_avro` format that runs in Python.

Spark cannot read Avro binary without the spark-avro jar, so `decode` runs batch-wise in `mapInArrow`: each
line is the Base64 of one schemaless Avro `com.alibaba.dts.formats.avro.Record`, read with fastavro against
`dts_record.avsc` (parsed once per worker process). Everything after decoding (ops, types, canonical text,
checks) is Spark SQL in lakeloader.parse.formats.dts_avro; here every value only becomes text that loses nothing:
numbers as their digits (a Float's double as its shortest round-trip text), bytes as Base64, timestamps and
date-times as their parts. Character bytes are also decoded here, with their MySQL charset: Python knows
every charset MySQL names (gbk, big5, cp1252 ...), Spark's `decode` only the UTF and ISO-8859-1 families.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from typing import Any

import fastavro
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

NOT_BASE64 = "not Base64"
NOT_A_RECORD = "not a DTS Avro record: "
BINARY_CHARSET = "binary"
MAX_ERROR_LENGTH = 120

# MySQL charset names -> Python codecs (MySQL's latin1 is Windows-1252, its utf8 the 3-byte subset of UTF-8)
CHARSETS = {
    "utf8": "utf-8",
    "utf8mb3": "utf-8",
    "utf8mb4": "utf-8",
    "utf-8": "utf-8",
    "latin1": "cp1252",
    "ascii": "ascii",
    "gbk": "gbk",
    "gb2312": "gb2312",
    "gb18030": "gb18030",
    "big5": "big5",
    "ujis": "euc_jp",
    "sjis": "shift_jis",
    "euckr": "euc_kr",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
}

_S, _I = T.StringType(), T.IntegerType()
VALUE = T.StructType(
    [
        T.StructField("branch", _S),  # the union branch: Integer, Character, ..., EmptyObject
        T.StructField("value", _S),  # Integer/Decimal/Text* value, Float as text, Timestamp seconds, EmptyObject
        T.StructField("bytes", _S),  # Character/Binary* value as Base64
        T.StructField("text", _S),  # Character value decoded with its charset (NULL: binary or undecodable)
        T.StructField("charset", _S),
        T.StructField("object_type", _S),  # *Geometry/*Object `type`
        T.StructField("timezone", _S),
        *[
            T.StructField(name, _I)
            for name in ("precision", "scale", "year", "month", "day", "hour", "minute", "second", "millis")
        ],
    ]
)
FIELD = T.StructType([T.StructField("name", _S), T.StructField("type_number", _I)])
RECORD = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("id", "source_timestamp", "source_type", "operation", "object_name")],
        T.StructField("fields", T.ArrayType(FIELD)),
        T.StructField("ddl", _S),  # the images' string branch (a DDL record's statement)
        T.StructField("before", T.ArrayType(VALUE)),
        T.StructField("after", T.ArrayType(VALUE)),
    ]
)
DECODED = [T.StructField("decode_error", _S), T.StructField("record", RECORD)]


@cache
def record_schema() -> Any:
    """The parsed writer schema: a copy of Alibaba's, shipped with the package (workers read it from there)."""
    text = resources.files(__package__).joinpath("dts_record.avsc").read_text(encoding="utf-8")
    return fastavro.parse_schema(json.loads(text))


def decode(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: each batch with `decode_error` and `record` (one of them NULL) appended."""
    record_type = to_arrow_type(RECORD)
    for batch in batches:
        decoded = [decode_line(line) for line in batch.column("text").to_pylist()]
        errors = pa.array([error for error, _ in decoded], pa.string())
        records = pa.array([record for _, record in decoded], record_type)
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, errors, records], names=[*batch.schema.names, "decode_error", "record"]
        )


def decode_line(line: str | None) -> tuple[str | None, dict | None]:
    """(error, None) or (None, the flat record) for one line."""
    if line is None or not line.strip():
        return "empty line", None
    try:
        data = base64.b64decode(line.strip(), validate=True)
    except (binascii.Error, ValueError):
        return NOT_BASE64, None
    stream = io.BytesIO(data)
    try:
        record = fastavro.schemaless_reader(stream, record_schema(), return_record_name=True)
    except EOFError:
        return NOT_A_RECORD + "truncated", None
    except Exception as exc:  # fastavro reports bad input with many exception types
        return (NOT_A_RECORD + f"{type(exc).__name__}: {exc}")[:MAX_ERROR_LENGTH], None
    if stream.tell() != len(data):
        return NOT_A_RECORD + f"{len(data) - stream.tell()} bytes after the record", None
    return None, flat_record(record)  # type: ignore[arg-type]  # a record schema reads a dict


def flat_record(record: dict) -> dict:
    fields, before, after = record["fields"], record["beforeImages"], record["afterImages"]
    ddl = next((image for image in (after, before) if isinstance(image, str)), None)
    return {
        "id": str(record["id"]),
        "source_timestamp": str(record["sourceTimestamp"]),
        "source_type": record["source"]["sourceType"],
        "operation": record["operation"],
        "object_name": record["objectName"],
        "fields": [{"name": f["name"], "type_number": f["dataTypeNumber"]} for f in fields]
        if isinstance(fields, list)
        else None,
        "ddl": ddl,
        "before": [flat_value(v) for v in before] if isinstance(before, list) else None,
        "after": [flat_value(v) for v in after] if isinstance(after, list) else None,
    }


def flat_value(value: tuple[str, Any] | str | None) -> dict | None:
    """One image value (fastavro gives named union branches as (full name, value)) as a VALUE dict."""
    if value is None:
        return None
    if isinstance(value, str):  # the EmptyObject enum, which fastavro names only where the union defines it
        value = ("EmptyObject", value)
    content: Any
    name, content = value
    branch = name.rsplit(".", 1)[-1]
    flat: dict[str, Any] = {"branch": branch}
    if branch == "EmptyObject":
        flat["value"] = content
    elif branch == "Float":
        flat |= {"value": repr(content["value"]), "precision": content["precision"], "scale": content["scale"]}
    elif branch in ("Integer", "Decimal"):
        flat |= {"value": content["value"], "precision": content["precision"], "scale": content.get("scale")}
    elif branch == "Timestamp":
        flat |= {"value": str(content["timestamp"]), "millis": content["millis"]}
    elif branch == "DateTime":
        flat |= content
    elif branch == "TimestampWithTimeZone":
        flat |= content["value"] | {"timezone": content["timezone"]}
    elif branch == "Character":
        flat |= {
            "bytes": base64.b64encode(content["value"]).decode("ascii"),
            "text": decoded_text(content["value"], content["charset"]),
            "charset": content["charset"],
        }
    elif branch in ("BinaryGeometry", "BinaryObject"):
        flat |= {"bytes": base64.b64encode(content["value"]).decode("ascii"), "object_type": content["type"]}
    else:  # TextGeometry, TextObject
        flat |= {"value": content["value"], "object_type": content["type"]}
    return flat


def decoded_text(data: bytes, charset: str) -> str | None:
    """The text of Character bytes; NULL for the binary charset, an unknown charset or bytes it cannot read."""
    codec = CHARSETS.get(charset.lower())
    if codec is None:
        return None
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None
