"""The Python decoder of DTS Avro lines that jvm/src/lakeloader/jvm/DtsRecords.java replaced (fastavro, row by
row), kept as its reference: tests/spark/test_dts_records.py requires both to decode every line alike.

`decode_line` returns (error, None) or (None, the flat record: a dict of the `record` fields of lakeloader.spark's
DTS_DECODED).
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import fastavro

from tools.cdcgen.wire import record_schema

NOT_BASE64 = "not Base64"
NOT_A_RECORD = "not a DTS Avro record: "
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
        "pk_uk_info": record["tags"].get("pk_uk_info"),
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
