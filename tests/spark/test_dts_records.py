"""The JVM decoder of DTS Avro lines (jvm/src/lakeloader/jvm/DtsRecords.java) against the Python decoder it replaced
(tests/dts_avro_reference.py, fastavro): the same flat record for random records holding every value branch,
charset and edge double, and an error for every damaged line the reference rejects."""

from __future__ import annotations

import base64
import io
import math
import random
import struct

import fastavro
from dts_avro_reference import NOT_A_RECORD, decode_line
from pyspark.sql import functions as F

from lakeloader.parse.formats.dts_avro import decoded
from lakeloader.spark import DTS_DECODED, DTS_VALUE
from tools.cdcgen.wire import record_schema

NS = "com.alibaba.dts.formats.avro."


def enum_symbols(name: str) -> list[str]:
    """Every symbol of the schema's enum `name`: the decoder holds its own table of them, in the schema's order."""

    def found(node: object) -> list[str] | None:
        if isinstance(node, dict):
            if node.get("type") == "enum" and node["name"].rsplit(".", 1)[-1] == name:
                return node["symbols"]
            nodes = list(node.values())
        else:
            nodes = node if isinstance(node, list) else []
        return next((symbols for child in nodes if (symbols := found(child)) is not None), None)

    symbols = found(record_schema())
    assert symbols, name
    return symbols


SOURCE_TYPES = enum_symbols("SourceType")
OPERATIONS = enum_symbols("Operation")
CHARSETS = ["utf8mb4", "UTF8", "latin1", "ascii", "gbk", "gb18030", "big5", "ujis", "sjis", "euckr", "ucs2"]
CHARSETS += ["utf16le", "utf32", "binary", "klingon"]
TEXTS = ["", "ann", "é", "日本語", "😀", "a\nb", "\u2028", "\x00"]
EDGE_DOUBLES = [
    0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 100.0, 1e15, 1e16, 1.5e16, 1e17, 1e22, 1e23, 9.999999999999999e22, 2.0**53,
    2.0**53 + 2, 1e-4, 1e-5, 0.00012345, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 2**-1074 * 3,
    2.0**60, 2.0**-60, 123456789.125, math.inf, -math.inf, math.nan,
]  # fmt: skip


def random_double(rng: random.Random) -> float:
    kind = rng.randrange(4)
    if kind == 0:
        return struct.unpack("<d", rng.randbytes(8))[0]  # any bit pattern: subnormals, huge, NaN payloads
    if kind == 1:
        return round(rng.uniform(-1e6, 1e6), rng.randrange(8))  # the decimals a column holds
    if kind == 2:
        return rng.choice([-1, 1]) * 2.0 ** rng.randrange(-1074, 1024)  # powers of two, where the spacing changes
    return rng.choice(EDGE_DOUBLES)


def random_value(rng: random.Random) -> object:
    parts = ("year", "month", "day", "hour", "minute", "second", "millis")
    date_time = {p: rng.choice([None, rng.randrange(0, 3000)]) for p in parts}
    text, data = rng.choice(TEXTS), rng.randbytes(rng.randrange(6))
    branch, content = rng.choice(
        [
            ("Integer", {"precision": rng.randrange(30), "value": str(rng.randrange(-(10**20), 10**20))}),
            ("Character", {"charset": rng.choice(CHARSETS), "value": rng.choice([data, text.encode()])}),
            ("Decimal", {"value": "-12.50", "precision": rng.randrange(66), "scale": rng.randrange(31)}),
            ("Float", {"value": random_double(rng), "precision": 22, "scale": rng.randrange(-1, 31)}),
            ("Timestamp", {"timestamp": rng.randrange(-(2**40), 2**40), "millis": rng.randrange(1_000_000)}),
            ("DateTime", date_time),
            ("TimestampWithTimeZone", {"value": date_time, "timezone": rng.choice(["+08:00", "Asia/Shanghai"])}),
            ("BinaryGeometry", {"type": "POINT", "value": data}),
            ("TextGeometry", {"type": "POINT", "value": "POINT(1 2)"}),
            ("BinaryObject", {"type": "BLOB", "value": data}),
            ("TextObject", {"type": "JSON", "value": text}),
        ]
    )
    return rng.choice([None, "NULL", "NONE", (NS + branch, content), (NS + branch, content)])


def random_record(rng: random.Random) -> dict:
    n = rng.randrange(5)
    images = [None, "ALTER TABLE t ADD c int", [random_value(rng) for _ in range(n)]]
    return {
        "version": rng.randrange(-5, 5),
        "id": rng.randrange(-(2**63), 2**63),
        "sourceTimestamp": rng.randrange(0, 2**33),
        "sourcePosition": "1@mysql-bin.000001",
        "safeSourcePosition": "",
        "sourceTxid": rng.choice(TEXTS),
        "source": {"sourceType": rng.choice(SOURCE_TYPES), "version": "8.0"},
        "operation": rng.choice(OPERATIONS),
        "objectName": rng.choice([None, "shop.orders", "t.shop.orders", "日本.表"]),
        "processTimestamps": rng.choice([None, [1, 2**40]]),
        "tags": rng.choice([{}, {"k": "v", "é": ""}]),
        "fields": rng.choice(
            [None, "fields as text", [{"name": rng.choice(TEXTS), "dataTypeNumber": rng.randrange(256)}] * n]
        ),
        "beforeImages": rng.choice(images),
        "afterImages": rng.choice(images),
    }


def avro(record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, record_schema(), record)
    return out.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def damaged(rng: random.Random, good: bytes) -> str:
    """A line that is no record, or not one alone: cut short, with bytes after it, random bytes, not Base64."""
    return rng.choice(
        [
            lambda: b64(good[: rng.randrange(len(good))]),
            lambda: b64(good + rng.randbytes(rng.randrange(1, 4))),
            lambda: b64(rng.randbytes(rng.randrange(1, 40))),
            lambda: b64(bytes([rng.randrange(256)]) + good[1:]),
            lambda: b64(good)[:-1],
            lambda: rng.choice(["", "  ", "not Base64!", "QQ", "QQ==", "====", "é"]),
        ]
    )()


def flat(record: dict | None) -> dict | None:
    """The reference's record with every VALUE field present (it leaves out those its branch does not set)."""
    if record is None:
        return None
    for image in ("before", "after"):
        if record[image] is not None:
            record[image] = [None if v is None else {f: v.get(f) for f in DTS_VALUE.names} for v in record[image]]
    return record


def decode_on_jvm(spark, lines: list[str]) -> list[tuple[str | None, dict | None]]:
    frame = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "i int, text string")
    rows = frame.select("i", decoded(F.col("text")).alias("d")).orderBy("i").collect()
    return [(r.d.decode_error, r.d.record.asDict(recursive=True) if r.d.record else None) for r in rows]


def test_the_jvm_decoder_returns_the_declared_struct(spark):
    frame = spark.createDataFrame([("",)], "text string").select(decoded(F.col("text")).alias("d"))
    assert frame.schema["d"].dataType == DTS_DECODED


def test_the_jvm_decoder_reads_random_records_as_the_reference_does(spark):
    rng = random.Random(23)
    records = [random_record(rng) for _ in range(3000)]
    for record in records[::3]:  # the tag naming the keys is kept
        record["tags"] = record["tags"] | {"pk_uk_info": '{"PRIMARY":["id"]}'}
    lines = [b64(avro(record)) for record in records]
    lines += [" " + lines[0] + "\t\n"]  # white space around a line is not part of it

    jvm = decode_on_jvm(spark, lines)

    expected = [(error, flat(record)) for error, record in map(decode_line, lines)]
    assert [e for e, _ in expected] == [None] * len(lines)
    differ = [(line, j, e) for line, j, e in zip(lines, jvm, expected, strict=True) if j != e]
    assert differ[:3] == []


def test_the_jvm_decoder_writes_every_double_as_python_repr_does(spark):
    rng = random.Random(5)
    doubles = EDGE_DOUBLES + [random_double(rng) for _ in range(20_000)]
    record = random_record(rng) | {"fields": None, "beforeImages": None}
    values = [(NS + "Float", {"value": d, "precision": 22, "scale": 0}) for d in doubles]

    ((error, decoded_record),) = decode_on_jvm(spark, [b64(avro(record | {"afterImages": values}))])

    assert error is None
    texts = [v["value"] for v in decoded_record["after"]]
    wrong = [(d, t) for d, t in zip(doubles, texts, strict=True) if t != repr(d)]
    assert wrong[:5] == []


def test_the_jvm_decoder_rejects_every_damaged_line_the_reference_rejects(spark):
    rng = random.Random(11)
    goods = [avro(random_record(rng)) for _ in range(200)]
    lines = [damaged(rng, rng.choice(goods)) for _ in range(3000)]

    jvm = decode_on_jvm(spark, lines)

    for line, (error, record) in zip(lines, jvm, strict=True):
        expected_error, expected_record = decode_line(line)
        if expected_error is None:  # a damage that still reads as a record (a changed first byte: the version)
            assert (error, record) == (None, flat(expected_record)), line
        elif expected_error.startswith(NOT_A_RECORD) and "bytes after the record" not in expected_error:
            assert error is not None and error.startswith(NOT_A_RECORD), (line, expected_error, error)
        else:  # empty line, not Base64, bytes after the record: the same words
            assert error == expected_error, line
