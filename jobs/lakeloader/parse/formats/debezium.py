"""Debezium JSON (seed 002's Debezium serializer, and Debezium itself): the change event with or without the
Kafka Connect schema envelope (`{"schema", "payload": event}`, or the event alone as JsonConverter writes it with
schemas.enable=false); DebeziumFlatten (`debezium_flatten`) is the same event without `payload`.

    {"schema": {"fields": [{"field": "before"|"after", "fields": [{"field", "type", "name", "parameters"}]},
                           ...]},
     "payload": {"op": "c|r|u|d|t|m|HEARTBEAT", "before": {...}, "after": {...}, "ts_ms": ms,
                 "source": {"connector", "name", "ts_ms", "db", "schema", "table", "pos", ...}}}

Ops: c (insert) and r (snapshot read) are inserts, u an update (both images; only an after-image when the
source logs no before-image), d a delete; t (truncate) becomes the DDL `TRUNCATE TABLE <table>`, m (a
logical-decoding message) a control message, HEARTBEAT (OMS) a heartbeat.

Types. With the envelope, each column's Kafka Connect type types it (int8..int64, float32/float64, boolean,
string, bytes) and a Debezium logical type name refines it: Decimal -> decimal(p,s) (string beyond 38 digits;
a JSON number, or JsonConverter's Base64 of the unscaled bytes), Date -> date (days), Timestamp /
MicroTimestamp / NanoTimestamp -> timestamp_ntz (a DATETIME: ms / us / ns since 1970 of its wall clock, no
zone), ZonedTimestamp -> timestamp (ISO text, UTC), Time / MicroTime / NanoTime -> string 'HH:mm:ss.ffffff',
Year -> int, Bits -> binary, geometry structs -> binary (their WKB). Bytes are Base16 in OMS messages
(`source.name` "OMS", seed 002) and Base64 otherwise.
OMS's envelope names no logical types, so there a DATE is an int (days), TIME and DATETIME bigint, TIMESTAMP
and BIGINT/DECIMAL strings: that is what the message declares. Without the envelope nothing declares a type
and every column is a string holding the value as written. Messages carry no primary key: configure
`primary_keys` (a message lacking a configured key column is quarantined), else a table is a multiset of its
rows (lakeloader.apply.multiset). Limit: a Decimal sent as a JSON string that reads as a plain number is taken as
that number, not as Base64.

Ordering key: `source.ts_ms` (when the source changed the row; OMS full-load rows carry 0 and sort first,
falling back to the message's `ts_ms` when absent), then `source.pos` when it is a plain number (a binlog
offset, after the number of its binlog `source.file`; OMS writes `offset@time`, then 0), then the export
position.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import ob_types
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    Converter,
    OpTable,
    WireFields,
    base64_text,
    checked_base64,
    checked_boolean,
    checked_cast,
    checked_date,
    checked_decimal,
    common_case_columns,
    configured_converters,
    configured_map,
    declare,
    declare_names,
    epoch_micros,
    epoch_or_text,
    extracted_int,
    finish,
    image_names,
    integer_text,
    jvm_reading,
    let,
    parse_json,
    parsed_with_common_case,
    qualified,
    schema_qualified,
    spark_type_converters,
    timestamp_of_millis,
    timestamp_text,
    with_canonical_images,
    with_configured_types,
)
from lakeloader.spark import DEBEZIUM_EVENT

OPS = OpTable(
    data={"c": C.INSERT, "r": C.INSERT, "u": C.UPDATE, "d": C.DELETE},
    ddl=("t",),
    heartbeat=("HEARTBEAT",),
    control=("m",),
)
SOURCE_FIELDS = ("version", "connector", "name", "ts_ms", "db", "schema", "table", "pos", "file")
PAYLOAD = T.StructType(
    [
        T.StructField("op", T.StringType()),
        T.StructField("source", T.StructType([T.StructField(name, T.StringType()) for name in SOURCE_FIELDS])),
        T.StructField("before", C.IMAGE_TYPE),
        T.StructField("after", C.IMAGE_TYPE),
        T.StructField("ts_ms", T.StringType()),
    ]
)
FIELD = T.StructType(
    [
        T.StructField("field", T.StringType()),
        T.StructField("type", T.StringType()),
        T.StructField("name", T.StringType()),
        T.StructField("parameters", T.MapType(T.StringType(), T.StringType())),
    ]
)
SCHEMA = T.StructType(
    [
        T.StructField(
            "fields",
            T.ArrayType(
                T.StructType([T.StructField("field", T.StringType()), T.StructField("fields", T.ArrayType(FIELD))])
            ),
        )
    ]
)
ENVELOPE = T.StructType([T.StructField("schema", SCHEMA), T.StructField("payload", PAYLOAD)])
PLAIN_OR_ENVELOPE = T.StructType([*ENVELOPE.fields, *PAYLOAD.fields])

PLAIN_TYPES = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "float32": "float",
    "float": "float",
    "float64": "double",
    "double": "double",
    "boolean": "boolean",
}
LOGICAL_TYPES = {  # Debezium logical type name -> (converter key, Spark type)
    "io.debezium.time.Date": ("epoch_days", "date"),
    # DATETIME: epoch numbers of the wall clock, "excluding the time zone" (seed 002)
    "io.debezium.time.Timestamp": ("epoch_millis", "timestamp_ntz"),
    "io.debezium.time.MicroTimestamp": ("epoch_micros", "timestamp_ntz"),
    "io.debezium.time.NanoTimestamp": ("epoch_nanos", "timestamp_ntz"),
    "io.debezium.time.ZonedTimestamp": ("timestamp", "timestamp"),
    "io.debezium.time.Time": ("time_millis", "string"),
    "io.debezium.time.MicroTime": ("time_micros", "string"),
    "io.debezium.time.NanoTime": ("time_nanos", "string"),
    "io.debezium.time.Year": ("int", "int"),
}
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _whole(v: Column) -> Column:
    return F.when(v.rlike(r"^-?[0-9]{1,38}$"), v.try_cast("decimal(38,0)"))


# 0001-01-01 and 9999-12-31 as days since 1970: the dates a date's text can name (`checked_date`)
FIRST_DAY, LAST_DAY = -719_162, 2_932_896


def _epoch_days(v: Column, _type: Column | None = None) -> Column:
    """Days since 1970 -> 'YYYY-MM-DD'; NULL (an invalid value) outside years 1-9999, where `date_add` would
    overflow and fail the job instead."""
    days = _whole(v).try_cast("int")
    in_range = F.when(days.between(FIRST_DAY, LAST_DAY), days)
    return F.date_format(F.date_add(F.lit("1970-01-01").cast("date"), in_range), "yyyy-MM-dd")


def _epoch(fraction_digits: int) -> Converter:
    """Whole ms (3) or us (0) since 1970 -> canonical timestamp text."""

    def convert(v: Column, _type: Column | None = None) -> Column:
        whole = F.when(_whole(v).isNotNull(), v)
        return timestamp_text(F.timestamp_micros(epoch_micros(whole, fraction_digits)))

    return convert


def _epoch_nanos(v: Column, _type: Column | None = None) -> Column:
    """Whole ns since 1970 -> canonical timestamp text; NULL where the microseconds overflow a bigint."""
    return timestamp_text(F.timestamp_micros(F.floor(F.try_divide(_whole(v), F.lit(1000))).try_cast("bigint")))


def _time_of_day(per_second: int) -> Converter:
    """A time as a whole number of 1/per_second seconds -> 'HH:mm:ss.ffffff'; NULL where the microseconds overflow
    a bigint (try_ arithmetic: a hostile value never fails the job)."""

    def convert(v: Column, _type: Column | None = None) -> Column:
        scaled = F.try_divide(F.try_multiply(_whole(v), F.lit(1_000_000)), F.lit(per_second))
        micros = F.floor(scaled).try_cast("bigint")
        return let(
            micros,
            lambda m: F.when(
                m >= 0,
                F.format_string(
                    "%02d:%02d:%02d.%06d",
                    F.floor(m / 3_600_000_000),
                    F.floor(m / 60_000_000) % 60,
                    F.floor(m / 1_000_000) % 60,
                    m % 1_000_000,
                ),
            ),
        )

    return convert


def _hex_bytes(v: Column, _type: Column | None = None) -> Column:
    return F.when(v.rlike(r"^([0-9A-Fa-f]{2})*$"), base64_text(F.unhex(v)))


def _decimal(v: Column, spark_type: Column) -> Column:
    """A decimal as a JSON number, or as JsonConverter's Base64 of the unscaled two's-complement bytes."""
    scale = F.coalesce(extracted_int(spark_type, r",([0-9]+)\)$", 1), F.lit(0))
    numeric = v.rlike(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
    return let(F.when(numeric, v).otherwise(_unscaled_base64(v, scale)), lambda n: checked_decimal(n, spark_type))


def _unscaled_base64(encoded: Column, scale: Column) -> Column:
    """Base64 of big-endian two's-complement bytes and a scale -> the number's plain text (NULL if no Base64)."""

    def from_hex(hex_digits: Column) -> Column:
        negative = F.substring(hex_digits, 1, 1).isin(*"89ABCDEF")

        def digit(i: Column) -> Column:
            value = F.conv(F.substring(hex_digits, i, 1), 16, 10).cast("decimal(38,0)")
            return F.when(negative, 15 - value).otherwise(value)  # a negative number: its complement, plus 1

        zero = F.struct(F.lit(0).cast(_LIMB_TYPE).alias("high"), F.lit(0).cast(_LIMB_TYPE).alias("low"))
        magnitude = F.aggregate(
            F.sequence(F.lit(1), F.length(hex_digits)), zero, lambda acc, i: _limbs(acc, 16, digit(i))
        )
        unsigned = let(magnitude, lambda m: _limbs_text(F.when(negative, _limbs(m, 1, F.lit(1))).otherwise(m)))
        return let(unsigned, lambda u: _signed_text(u, scale, negative))

    return let(F.hex(F.try_to_binary(encoded, F.lit("base64"))), lambda h: F.when(F.length(h) > 0, from_hex(h)))


def _signed_text(unsigned: Column, scale: Column, negative: Column) -> Column:
    """Plain number text from the digits of the unscaled magnitude, its scale and its sign; NULL (an invalid value)
    for a scale beyond MAX_SCALE, which would pad the text to that many digits (2^31 of them failed the job)."""
    scale = F.when(scale <= MAX_SCALE, scale)
    digits = F.lpad(unsigned, F.greatest(F.length(unsigned), scale + 1), "0")  # lpad alone would truncate
    point = F.length(digits) - scale
    fraction = F.substring(digits, point + 1, MAX_SCALE)
    text = F.when(scale > 0, F.concat(F.substring(digits, 1, point), F.lit("."), fraction))
    signed = F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), F.coalesce(text, digits))
    return F.when(scale.isNotNull(), signed)


MAX_SCALE = 99  # the most fraction digits a decimal's text keeps (a decimal without a precision reads up to 99)


_LIMB_DIGITS, _LIMB_TYPE = 30, "decimal(38,0)"


def _limbs(number: Column, times: int, plus: Column) -> Column:
    """number * times + plus for a number held as struct(high, low) = high * 10^30 + low, so that decimals of
    up to 68 digits (MySQL allows 65) convert exactly; NULL when it overflows."""
    limb = F.lit("1" + "0" * _LIMB_DIGITS).cast(_LIMB_TYPE)

    def carried(low: Column) -> Column:
        rest = low % limb
        high = F.try_add(F.try_multiply(number["high"], F.lit(times)), ((low - rest) / limb).cast(_LIMB_TYPE))
        return F.struct(high.cast(_LIMB_TYPE).alias("high"), rest.cast(_LIMB_TYPE).alias("low"))

    return let(F.try_add(F.try_multiply(number["low"], F.lit(times)), plus), carried)


def _limbs_text(number: Column) -> Column:
    """The plain digits of struct(high, low) (NULL when it overflowed)."""

    def text(n: Column) -> Column:
        high, low = n["high"], n["low"].cast("string")
        return F.when(high > 0, F.concat(high.cast("string"), F.lpad(low, _LIMB_DIGITS, "0"))).when(high == 0, low)

    return let(number, text)


CONVERTERS: dict[str, Converter] = {
    **{name: checked_cast(name) for name in ("tinyint", "smallint", "int", "bigint", "float", "double")},
    "boolean": checked_boolean,
    "decimal": _decimal,
    "number": ob_types.CONVERTERS["number"],
    "epoch_days": _epoch_days,
    "epoch_millis": _epoch(3),
    "epoch_micros": _epoch(0),
    "epoch_nanos": _epoch_nanos,
    "timestamp": ob_types.TIMESTAMP_CONVERTER,
    "time_millis": _time_of_day(1_000),
    "time_micros": _time_of_day(1_000_000),
    "time_nanos": _time_of_day(1_000_000_000),
    "hex": _hex_bytes,
    "base64": checked_base64,
    "wkb": lambda v, _type=None: checked_base64(F.get_json_object(v, "$.wkb")),  # type: ignore[misc]
}


def _date(v: Column, _type: Column | None = None) -> Column:
    """A date as 'YYYY-MM-DD' or as days since 1970 (Debezium's Date, OMS's DATE)."""
    return F.coalesce(checked_date(v), _epoch_days(v))


def _message_bytes(v: Column, _type: Column | None = None) -> Column:
    """Bytes in the message's encoding (`bytes_encoding`: Base16 from OMS, Base64 otherwise)."""
    return F.when(F.col("bytes_encoding") == "hex", _hex_bytes(v)).otherwise(checked_base64(v))


def value_families(binary: Converter) -> dict[str, Converter]:
    """Converters by Spark type family for columns typed by configuration (`column_types`), reading values as
    Debezium and OMS's Debezium serializers write them (seed 002): a DATETIME (timestamp_ntz) as epoch
    milliseconds of its wall clock, a TIMESTAMP as ISO text in UTC (epoch milliseconds also read), a date as
    text or days since 1970, decimals as JSON numbers, text or Base64 unscaled bytes. The unit of an epoch is
    fixed by the type, never guessed from the number's size (a DATETIME before March 1973 has fewer digits)."""
    return spark_type_converters(
        timestamp=epoch_or_text(3, "timestamp"), timestamp_ntz=epoch_or_text(3, "timestamp_ntz")
    ) | {"date": _date, "decimal": _decimal, "binary": binary}


CONFIGURED_BY_FAMILY = value_families(_message_bytes)


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Debezium JSON: the event in `payload` with or without `schema` (JsonConverter schemas.enable=true), or the
    event itself (schemas.enable=false: {before, after, source, op, ts_ms} at the top). The common case is read by a
    JVM function (`common_case_events`)."""
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of Debezium JSON events, in `payload` or not."""
    frame = parse_json(lines, PLAIN_OR_ENVELOPE)
    plain = F.struct(*[F.col(f"j.{name}").alias(name) for name in PAYLOAD.names])
    payload = F.when(F.col("j.payload").isNotNull(), F.col("j.payload")).otherwise(plain)
    return parse_event(frame, lines.columns, source, payload, F.col("j.schema"), "payload.")


def reader(_lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The events lakeloader/jvm/DebeziumEvents.java reads in one pass where they are the common case (plain
    types, no logical ones), in `payload` beside `schema` or not; the Spark SQL parser reads every other message and
    stays the reference (tests/spark/test_format_debezium_common_case.py)."""
    return common_case_events(source, envelope=True, rest=lambda ls: _parsed(ls, source))


def common_case_events(source: SourceConfig, envelope: bool, rest: Callable[[DataFrame], DataFrame]) -> CommonCase:
    """The JVM common-case reader of Debezium events (`read_common_case`; `envelope`: whether the event may sit in
    `payload` beside `schema`), the output columns from its fields, and the variant's Spark SQL parse (`rest`)."""
    return CommonCase(read_common_case(source, envelope), _from_common_case(F.col(COMMON_CASE)), rest)


def read_common_case(source: SourceConfig, envelope: bool) -> Column:
    """Each line as lakeloader/jvm/DebeziumEvents.java reads it: the common case's fields
    (`lakeloader.spark.DEBEZIUM_COMMON_CASE`), NULL for any other message. It is given the source's settings and
    this module's data ops, so that they are written once."""
    settings = {
        "column_types": source.column_types,
        "primary_keys": source.primary_keys,
        "data_ops": dict(OPS.data),
        "envelope": envelope,
        "plain_types": PLAIN_TYPES | {"string": "string"},
    }
    return jvm_reading(DEBEZIUM_EVENT, settings)


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields (which read the sequence and the log position
    as `integer_text` and `_log_position` would), with the parser's own expression where it passes a field on as
    sent (the source's time)."""
    return common_case_columns(common, ("raw_op", "op", "db", "table", "before", "after", "primary_key")) | {
        "seq": common["seq"].cast(C.SEQ_TYPE),
        "seq2": common["seq2"].cast(C.SEQ_TYPE),
        "event_time": _event_time(common["source_time"]),
    }


def parse_event(
    frame: DataFrame, line_columns: list[str], source: SourceConfig, payload: Column, schema: Column, prefix: str
) -> DataFrame:
    """Canonical rows from parsed Debezium events (`frame` from parse_json); `prefix` names the payload's
    place in reject reasons."""
    op, origin = payload["op"], payload["source"]
    kind = OPS.kind(op)
    changed_at = F.coalesce(origin["ts_ms"], payload["ts_ms"])
    db, table = schema_qualified(origin["db"], origin["schema"], source.unqualified_schemas), origin["table"]
    frame = frame.select(
        *line_columns,
        "envelope_error",
        op.alias("raw_op"),
        kind.alias("kind"),
        F.when((op == "u") & payload["before"].isNull(), F.lit(C.UPDATE_AFTER))
        .when(op == "t", F.lit("TRUNCATE"))
        .otherwise(OPS.canonical(op))
        .alias("op"),
        db.alias("db"),
        origin["schema"].alias("schema_name"),
        table.alias("table"),
        F.when(op == "t", F.concat(F.lit("TRUNCATE TABLE `"), table, F.lit("`"))).alias("ddl"),
        F.element_at(configured_map(source.primary_keys, "array<string>"), qualified(db, table)).alias("primary_key"),
        F.when(kind == C.DATA, payload["before"]).alias("raw_before"),
        F.when(kind == C.DATA, payload["after"]).alias("raw_after"),
        integer_text(changed_at).alias("seq"),
        F.coalesce(_log_position(origin["pos"], origin["file"]), F.lit(0)).alias("seq2"),
        _event_time(F.when(kind == C.HEARTBEAT, changed_at).otherwise(origin["ts_ms"])).alias("event_time"),
        _row_fields(schema).alias("row_fields"),
        F.when(origin["name"] == "OMS", F.lit("hex")).otherwise(F.lit("base64")).alias("bytes_encoding"),
    )
    declared = declare(
        F.transform("row_fields", lambda f: F.struct(f["field"].alias("name"), f.alias("type"))), _resolve
    )
    undeclared = declare_names(
        image_names(F.col("raw_after"), F.col("raw_before")), F.lit(None).cast("map<string,string>"), _resolve_nothing
    )
    typed = F.when(F.col("kind") == C.DATA, F.coalesce(F.when(F.size("row_fields") > 0, declared), undeclared))
    frame = with_configured_types(frame.withColumn("typed", typed), source.column_types)
    frame = with_canonical_images(frame, CONVERTERS | configured_converters(CONFIGURED_BY_FAMILY, source.column_types))
    frame = frame.withColumn("typed", F.transform("typed", _beyond_spark_as_string))
    wire = WireFields(
        op=f"{prefix}op",
        db=f"{prefix}source.db",
        table=f"{prefix}source.table",
        seq_problem=f"{prefix}source.ts_ms and {prefix}ts_ms are missing or not numbers",
        op_label=f"{prefix}op",
    )
    return finish(frame, wire)


def _event_time(millis: Column) -> Column:
    """Epoch milliseconds -> timestamp; 0 (a snapshot row, whose change time is unknown) -> NULL."""
    return timestamp_of_millis(F.nullif(millis.try_cast("bigint"), F.lit(0)))


# the number a MySQL binlog file's name ends with (`mysql-bin.000004`); positions restart in each file
BINLOG_NUMBER = r"\.(\d{1,8})$"
_FILE_SPAN = 10**10  # above any binlog position (a 4-byte offset)


def _log_position(pos: Column, file: Column) -> Column:
    """The position that orders changes of one `ts_ms`: Debezium's `pos` when a plain number, OMS's
    `<offset>@<seconds>` by its offset (NULL otherwise), after the number of the binlog `file` it is in when the
    name ends in one (4 * 10^10 + offset in `mysql-bin.000004`): a MySQL binlog's positions restart in each file,
    so changes of one second on both sides of a rotation would otherwise sort the new file's first."""
    offset = F.regexp_extract(pos, r"^(\d{1,30})(@\d{1,20})?$", 1)
    at = F.when(offset != "", integer_text(offset))
    number = F.regexp_extract(file, BINLOG_NUMBER, 1)
    in_file = number.cast("bigint") * F.lit(_FILE_SPAN) + at.cast("bigint")  # at most 10^18 + 10^10
    return F.when((number != "") & (at < _FILE_SPAN), in_file.cast(C.SEQ_TYPE)).otherwise(at)


def _row_fields(schema: Column) -> Column:
    """The envelope's field list for the row images (the `after` struct's, else the `before` struct's)."""

    def struct_fields(name: str) -> Column:
        return F.try_element_at(F.filter(schema["fields"], lambda f: f["field"] == name), F.lit(1))["fields"]

    return F.coalesce(struct_fields("after"), struct_fields("before"))


def _beyond_spark_as_string(column: Column) -> Column:
    """A Decimal of more than 38 digits (checked against its declared decimal(p,s)) loads as its exact text."""
    precision = extracted_int(column["type"], r"^decimal\((\d+),", 1)
    relabelled = F.struct(column["name"].alias("name"), column["conv"].alias("conv"), F.lit("string").alias("type"))
    return F.when(precision > 38, relabelled).otherwise(column)


def _resolve_nothing(_wire_type: Column) -> Column:
    return F.struct(F.lit(None).cast("string").alias("conv"), F.lit("string").alias("type"))


def _resolve(field: Column) -> Column:
    """struct(conv, type) of one envelope field (struct field, type, name, parameters)."""
    logical, plain, parameters = field["name"], field["type"], field["parameters"]
    scale = F.coalesce(parameters["scale"].try_cast("int"), F.lit(0))
    # without a precision (BIGINT UNSIGNED in precise mode, or a connector that does not say): a whole number is
    # decimal(38,0), a fraction the exact text (read as a decimal of up to 99 digits, then relabelled string:
    # a decimal(38,s) could not hold its integer digits)
    unsaid = F.when(scale == 0, F.lit(38)).otherwise(F.lit(99))
    precision = F.coalesce(parameters["connect.decimal.precision"].try_cast("int"), unsaid)
    # beyond 38 digits too: the converter checks the value against it, then `_beyond_spark_as_string` relabels it
    decimal_type = F.when(
        (precision >= 1) & scale.between(0, precision), F.format_string("decimal(%d,%d)", precision, scale)
    )

    def to(conv: str | Column, spark_type: str | Column) -> Column:
        conv_col = conv if isinstance(conv, Column) else F.lit(conv)
        type_col = spark_type if isinstance(spark_type, Column) else F.lit(spark_type)
        return F.struct(conv_col.cast("string").alias("conv"), type_col.alias("type"))

    result = F.when((logical == DECIMAL) & decimal_type.isNotNull(), to("decimal", decimal_type)).when(
        logical == DECIMAL, to("number", "string")
    )
    for name, (conv, spark_type) in LOGICAL_TYPES.items():
        result = result.when(logical == name, to(conv, spark_type))
    result = result.when(logical == "io.debezium.data.Bits", to(F.col("bytes_encoding"), "binary"))
    result = result.when(logical.startswith("io.debezium.data.geometry."), to("wkb", "binary"))
    for name, spark_type in PLAIN_TYPES.items():
        result = result.when(plain == name, to(spark_type, spark_type))
    result = result.when(plain == "bytes", to(F.col("bytes_encoding"), "binary"))
    return result.otherwise(_resolve_nothing(plain))
