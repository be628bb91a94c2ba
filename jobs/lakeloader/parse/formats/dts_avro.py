"""DTS Avro (seed 004): Alibaba DTS's own change records, `com.alibaba.dts.formats.avro.Record` (dts_record.avsc).

    {id, sourceTimestamp (s), source {sourceType}, operation, objectName "db.table",
     fields [{name, dataTypeNumber}], beforeImages, afterImages: [value per field] | "DDL text" | null}

Messages arrive as the Base64 text of the record's schemaless Avro binary: lakeloader.parse.framing reads `.bin`
files of length-prefixed records, `kcat -J` envelopes and Base64 lines into that text. A message that is not
Base64 or not a record is quarantined ("empty line", "not Base64", "not a DTS Avro record: ..."). Decoding is a
JVM function of the project's jar (jvm/src/lakeloader/jvm/DtsRecords.java, `decoded`), which reads the record's
fields in the order of dts_record.avsc (a copy of Alibaba's shipped with the package) and makes every value text
that loses nothing: numbers as their digits (a Float's double as its shortest round-trip text, as Python's repr
writes it), bytes as Base64, timestamps and date-times as their parts, Character bytes also decoded with their
MySQL charset (Spark's `decode` knows only the UTF and ISO-8859-1 families; MySQL names gbk, big5, cp1252 ...).
The rest is Spark SQL on the flat records it returns.

Ops: INSERT and INIT (full load) are inserts, UPDATE an update (both images), DELETE a delete; DDL keeps
its statement (the images' string branch); HEARTBEAT is a heartbeat; BEGIN, COMMIT, ROLLBACK, ABORT,
CHECKPOINT, COMMAND, FILL, FINISH, CONTROL, RDB and NOOP are control records (counted, not loaded).
`objectName` is db.table, the table after the last dot (an OceanBase db may hold dots); a name without a
dot names a database (DDL), and a data record needs a table. The key is the configured one (`primary_keys`), else
the PRIMARY entry of the record's tag `pk_uk_info` (`{"PRIMARY":["id"]}`, as DTS sends it), else a table is keyed
by all its columns.

Types. For MySQL sources (sourceType MySQL or DRDS) `dataTypeNumber` is the MySQL protocol's column type, read
as the MySQL declaration it stands for and typed by lakeloader.parse.formats.mysql_types. Signedness is not sent, so
integers are widened as if UNSIGNED: TINY -> smallint, SHORT and INT24 -> int, LONG -> bigint, LONGLONG ->
decimal(20,0); FLOAT and DOUBLE -> double (a Float value is a double); (NEW)DECIMAL -> decimal(p,s) of the
Decimal value (string beyond 38 digits, and when no value says: any DECIMAL(65,30)); DATE -> date, DATETIME ->
timestamp_ntz, TIMESTAMP -> timestamp, TIME -> string, YEAR -> int, BIT -> decimal(20,0) for an Integer value
(binary otherwise). Text, BLOB, string and GEOMETRY numbers (and any other number, and all columns of other
sources) are typed by the value's union branch: Character -> string (binary for the `binary` charset),
BinaryObject/BinaryGeometry -> binary, TextObject/TextGeometry -> string, Integer -> decimal(38,0), Decimal ->
decimal(p,s), Float -> double, Timestamp/TimestampWithTimeZone -> timestamp, DateTime -> timestamp_ntz, date
(date parts only) or string (time parts only). A column's branch is that of its first non-NULL value,
after-image first; a string or BLOB column without one is string, a GEOMETRY one binary.
DECIMAL's precision and scale, and whether a string or BLOB number holds text or bytes, are only sent with
a value. Apply takes each column's latest declaration in a batch, so where a record's value is NULL the
column takes the batch's latest type from a value; only a batch without any value there declares the
fallback (the exact number text, string; a column it creates takes the type of the first values a later
batch has, `lakeloader.apply.silver`).

Values: Timestamp is seconds + `millis` since 1970 (UTC); DateTime's parts are the source's wall clock (kept
as such in a timestamp_ntz column); TimestampWithTimeZone's parts are local to its `timezone` and
converted to UTC. Despite its name, `millis` counts microseconds (0-999999), as Alibaba's DTS subscription SDK
reads it (`UnixTimestamp.setMicro(millis)`, a DateTime's nanoseconds `millis * 1000`): MySQL's fractional seconds
go to six digits. Character bytes are decoded with their charset; bytes that
do not decode quarantine the record, as does a value that does not fit its column's type (e.g. a zero
date). EmptyObject (NULL/NONE) and a null value are NULL.

Ordering key: `id` (the record's unique, increasing id in the stream), then 0. Event time: sourceTimestamp.
The batch's declarations are resolved once, from its first records (`mysql_types.sampled_resolutions`). The
common case (an insert, update or delete of a db.table whose every field the record itself types, by its type
number or a value, as a string, integer, floating number, decimal of at most 38 digits, bytes, date or wall
clock, or as a timestamp in a UTC session, each value plainly of its type) is read by a JVM function in one pass
(lakeloader/jvm/DtsMessages.java); every other line, or every line without `common_case`, by the Spark SQL
expressions of `build`, the reference that function is held to (tests/spark/test_format_dts_avro_common_case.py).
The decoded records (and the function's fields) are kept by a lazy local checkpoint (decoded once): the batch's
column types read them before the rows do. An executor lost mid-parse fails the task's job instead of
recomputing, and the step's retry runs it again.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.core.config import SourceConfig
from lakeloader.parse import canonical as C
from lakeloader.parse.formats import mysql_types, ob_types, source_types
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    STRING_ARRAY,
    CommonCase,
    OpTable,
    WireFields,
    common_case_columns,
    configured_map,
    finish,
    integer_text,
    jvm_reading,
    key_as_in_image,
    let,
    listing,
    parsed_with_common_case,
    qualified,
    split_qualified,
    timestamp_of_seconds,
    timestamp_text,
    typed_column,
    with_canonical_images,
    with_configured_types,
)
from lakeloader.spark import DTS_MESSAGE, DTS_RECORD

OPS = OpTable(
    data={"INSERT": C.INSERT, "INIT": C.INSERT, "UPDATE": C.UPDATE, "DELETE": C.DELETE},
    ddl=("DDL",),
    heartbeat=("HEARTBEAT",),
    control=(
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "ABORT",
        "CHECKPOINT",
        "COMMAND",
        "FILL",
        "FINISH",
        "CONTROL",
        "RDB",
        "NOOP",
    ),
)
WIRE = WireFields(
    op="operation",
    db="database in objectName (db.table)",
    table="objectName",
    seq_problem="id is missing or not a number",
    op_label="operation",
)
MYSQL_SOURCES = ("MySQL", "DRDS")
STRING_TYPE_NUMBERS = (15, 245, 247, 248, 249, 250, 251, 252, 253, 254)  # VARCHAR ... STRING, JSON, ENUM, SET, BLOBs
GEOMETRY = 255
VALUE_TYPED_NUMBERS = (0, 246, 16, *STRING_TYPE_NUMBERS, GEOMETRY)  # (NEW)DECIMAL, BIT, text or bytes: a value types
BINARY_CHARSET = "binary"
BINARY_ENCODING = "base64"  # how the flat records carry bytes (mysql_types' binary converter)


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Messages (Base64 DTS Avro records) -> canonical change rows with `reject_reason`; the common case read by
    the JVM function unless not `common_case` (module docstring)."""
    resolutions = sampled_resolutions(lines)
    if common_case:
        return parsed_with_common_case(lines, _reader(lines, source, resolutions))
    return build(lines, source, resolutions)


def reader(lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader given the batch's declarations (`read_common_case`), this parser's output columns
    from its fields, and the Spark SQL parse of the other records that sees the taken ones' declarations."""
    return _reader(lines, source, sampled_resolutions(lines))


def _reader(lines: DataFrame, source: SourceConfig, resolutions: source_types.Resolutions) -> CommonCase:
    """The common case of the batch `lines`. The Spark SQL parse of the records the reader did not take (`rest`)
    types a column whose record leaves it to the batch from the batch's other records, the taken ones included
    (`_with_batch_types`): it reads those from the batch again, only for a batch with such a record."""
    reading = read_common_case(lines, source, resolutions)
    taken = lines.withColumn(COMMON_CASE, reading).where(F.col(COMMON_CASE).isNotNull())
    return CommonCase(
        reading,
        _from_common_case(F.col(COMMON_CASE)),
        rest=lambda untaken: build(untaken, source, resolutions, taken),
    )


def sampled_resolutions(lines: DataFrame) -> source_types.Resolutions:
    """The declarations of the batch's first records, resolved once (`mysql_types.sampled_resolutions`)."""
    record = decoded(F.col("text"))["record"]
    sent = lines.select(
        record["fields"].alias("fields"),
        record["before"].alias("before_values"),
        record["after"].alias("after_values"),
        record["source_type"].isin(*MYSQL_SOURCES).alias("mysql_source"),
    )
    declarations = F.transform("fields", lambda field, i: _declared(field, i)["declaration"])
    return mysql_types.sampled_resolutions(sent, declarations, BINARY_ENCODING)


def read_common_case(lines: DataFrame, source: SourceConfig, resolutions: source_types.Resolutions) -> Column:
    """Each of the `lines` as lakeloader/jvm/DtsMessages.java reads it: the common case's fields
    (`lakeloader.spark.DTS_COMMON_CASE`), NULL for any other line. It is given the source's configured column
    types and keys, this module's data ops, the batch's declarations it reads (`_common_case_types`) and the
    session's time zone (Timestamp values are written in it)."""
    settings = {
        "column_types": source.column_types,
        "primary_keys": source.primary_keys,
        "data_ops": dict(OPS.data),
        "declared_types": _common_case_types(resolutions),
        "time_zone": lines.sparkSession.conf.get("spark.sql.session.timeZone"),
    }
    return jvm_reading(DTS_MESSAGE, settings)


# the converters DtsMessages knows besides those whose values keep their text, with the Spark type they give
_READ_BY_THE_FUNCTION = {"binary": "binary", "date": "date", "datetime": "timestamp_ntz", "timestamp": "timestamp"}


def _common_case_types(resolutions: source_types.Resolutions) -> dict[str, str]:
    """Declaration -> Spark type of the resolved declarations DtsMessages reads: those `ob_types.kept_as_sent`
    names (strings, integers, floating numbers, decimals of at most 38 digits), bytes (Base64 as the decoder
    writes them), dates and timestamps."""
    kept = dict(ob_types.kept_as_sent(resolutions)["plain"])
    for text, (conv, spark_type) in resolutions[False].items():
        if _READ_BY_THE_FUNCTION.get(conv or "") == spark_type:
            kept[text] = spark_type
    return kept


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields (`id` and `sourceTimestamp` as longs)."""
    passed = ("raw_op", "op", "db", "table", "before", "after", "primary_key")
    return common_case_columns(common, passed) | {
        "seq": common["id"].cast(C.SEQ_TYPE),
        "event_time": timestamp_of_seconds(common["source_timestamp"]),
    }


def build(
    lines: DataFrame, source: SourceConfig, resolutions: source_types.Resolutions, taken: DataFrame | None = None
) -> DataFrame:
    """The Spark SQL parse; `taken`: the batch's records the JVM function took, when `lines` are the others (their
    declarations count in `_with_batch_types`; COMMON_CASE holds their fields)."""
    record = F.col("decoded")["record"]
    op = record["operation"]
    kind = OPS.kind(op)
    db, table = _db_and_table(record["object_name"])
    frame = lines.withColumn("decoded", decoded(F.col("text"))).select(
        *lines.columns,
        F.col("decoded")["decode_error"].alias("envelope_error"),
        op.alias("raw_op"),
        kind.alias("kind"),
        OPS.canonical(op).alias("op"),
        db.alias("db"),
        table.alias("table"),
        record["object_name"].alias("object_name"),
        F.when(kind == C.DDL, record["ddl"]).alias("ddl"),
        F.element_at(configured_map(source.primary_keys, "array<string>"), qualified(db, table)).alias("configured"),
        record["pk_uk_info"].alias("pk_uk_info"),
        integer_text(record["id"]).alias("seq"),
        timestamp_of_seconds(record["source_timestamp"].try_cast("bigint")).alias("event_time"),
        F.when(kind == C.DATA, record["fields"]).alias("fields"),
        F.when(kind == C.DATA, record["before"]).alias("before_values"),
        F.when(kind == C.DATA, record["after"]).alias("after_values"),
        record["source_type"].isin(*MYSQL_SOURCES).alias("mysql_source"),
    )
    names = F.col("fields")["name"]
    # The records (and the JVM function's fields) and their fields' declarations feed the rows and the batch's
    # column types (_with_batch_types): a lazy local checkpoint keeps them once computed, so each line is decoded
    # and declared once.
    frame = frame.withColumn("declared", F.transform("fields", _declared)).localCheckpoint(eager=False)
    resolve = mysql_types.table_resolver(resolutions, BINARY_ENCODING)
    frame = frame.withColumns(
        {
            "typed": F.transform("declared", lambda d: _typed(d, resolve)),
            "raw_before": _raw_image(names, F.col("before_values")),
            "raw_after": _raw_image(names, F.col("after_values")),
        }
    ).drop("declared")
    frame = frame.withColumn("primary_key", _key(F.col("configured"), F.col("pk_uk_info")))
    frame = frame.drop("configured", "pk_uk_info")
    frame = with_configured_types(_with_batch_types(frame, resolve, taken), source.column_types)
    frame = with_canonical_images(
        frame, mysql_types.converters(BINARY_ENCODING) | mysql_types.configured(BINARY_ENCODING, source.column_types)
    )
    undecodable = _undecodable(names, F.col("before_values"), F.col("after_values"))
    return finish(
        frame,
        WIRE,
        after_op=[
            (F.col("fields").isNull() & (F.col("kind") == C.DATA), "data record without fields"),
            _count_check("beforeImages", F.col("before_values")),
            _count_check("afterImages", F.col("after_values")),
            (
                F.col("object_name").isNotNull() & F.col("table").isNull() & (F.col("kind") == C.DATA),
                F.concat(F.lit("objectName '"), F.col("object_name"), F.lit("' is not db.table")),
            ),
            (
                F.size(undecodable) > 0,
                listing("Character bytes do not decode in their charset in column(s): ", undecodable),
            ),
        ],
    )


def decoded(line: Column) -> Column:
    """struct(decode_error, record) of a DTS Avro line (lakeloader.spark's DTS_DECODED; one of the two is NULL)."""
    return F.call_function(DTS_RECORD, line)


def _db_and_table(object_name: Column) -> tuple[Column, Column]:
    """'db.table' -> (db, table); a name without a dot is a database (a DDL record's objectName may be)."""
    db, table = (F.nullif(part, F.lit("")) for part in split_qualified(object_name))
    return F.coalesce(db, F.when(~object_name.contains("."), object_name)), table


# --------------------------------------------------------------------------------------------------------------
# Column types
# --------------------------------------------------------------------------------------------------------------


def _declared(field: Column, i: Column) -> Column:
    """struct(name, declaration, informed) of field i: the MySQL declaration of its type number (or of its value's
    branch); `informed` is false when the declaration is a fallback for want of a value."""
    after, before = F.try_element_at(F.col("after_values"), i + 1), F.try_element_at(F.col("before_values"), i + 1)
    sample = F.coalesce(F.when(_has_value(after), after), F.when(_has_value(before), before))
    # bound once: the declaration uses the sample a dozen times, and composing Columns copies it each time
    return let(sample, lambda value: _declared_by_sample(field, value))


def _declared_by_sample(field: Column, sample: Column) -> Column:
    number = field["type_number"]
    declaration = F.when(F.col("mysql_source"), _mysql_declaration(number, sample)).otherwise(
        _branch_declaration(sample)
    )
    fixed_by_number = F.col("mysql_source") & ~number.isin(*VALUE_TYPED_NUMBERS)
    return F.struct(
        field["name"].alias("name"),
        declaration.alias("declaration"),
        (sample.isNotNull() | fixed_by_number).alias("informed"),
    )


def _typed(declared: Column, resolve: source_types.Resolver) -> Column:
    """struct(name, conv, type, informed) of a declared field, its declaration typed by mysql_types: a batch
    repeats a handful of declarations, resolved once (`resolve`, source_types.table_resolver)."""
    return let(
        resolve(declared["declaration"]),
        lambda resolved: F.struct(
            declared["name"].alias("name"),
            resolved["conv"].alias("conv"),
            resolved["type"].alias("type"),
            declared["informed"].alias("informed"),
        ),
    )


def _with_batch_types(frame: DataFrame, resolve: source_types.Resolver, taken: DataFrame | None) -> DataFrame:
    """`typed` as struct(name, conv, type), a fallback type (no value told it) replaced by the batch's latest
    informed type of that column: apply takes each column's latest declaration in a batch, so a NULL must not
    re-type a column that other records of the batch type from their values (bytes would load as Base64 text).

    Only a batch with a fallback type needs the batch's types: one look over the (checkpointed) records says
    whether it has one. The records the JVM function took are informed; their declarations count too."""
    is_fallback = (F.col("kind") == C.DATA) & F.exists("typed", lambda c: ~c["informed"])
    (has_fallback,) = frame.agg(F.coalesce(F.bool_or(is_fallback), F.lit(False))).collect()[0]
    if not has_fallback:
        return frame.withColumn("typed", F.transform("typed", lambda c: typed_column(c["name"], c)))
    informed = frame.where(F.col("kind") == C.DATA).select(
        "db", "table", "seq", F.explode(F.filter("typed", lambda c: c["informed"])).alias("c")
    )
    if taken is not None:
        informed = informed.unionByName(_informed_by_common_case(taken, resolve))
    latest = informed.groupBy("db", "table", F.col("c.name").alias("name")).agg(
        F.max_by(F.struct(F.col("c.conv").alias("conv"), F.col("c.type").alias("type")), "seq").alias("declared")
    )
    per_table = latest.groupBy("db", "table").agg(
        F.map_from_entries(F.collect_list(F.struct("name", "declared"))).alias("batch_types")
    )
    with_batch = frame.join(F.broadcast(per_table), ["db", "table"], "left")

    def declared(c: Column) -> Column:
        batch = F.element_at(F.col("batch_types"), c["name"])
        chosen = F.when(c["informed"] | batch.isNull(), F.struct(c["conv"].alias("conv"), c["type"].alias("type")))
        return typed_column(c["name"], F.coalesce(chosen, batch))

    return with_batch.withColumn("typed", F.transform("typed", declared)).drop("batch_types")


def _informed_by_common_case(frame: DataFrame, resolve: source_types.Resolver) -> DataFrame:
    """(db, table, seq, c) of the columns of the records the JVM function took, as `_with_batch_types` reads
    the parser's: each distinct declaration list of a table once, at its latest record."""
    common = F.col(COMMON_CASE)
    lists = (
        frame.where(common.isNotNull())
        .groupBy(
            common["db"].alias("db"),
            common["table"].alias("table"),
            common["names"].alias("names"),
            common["declarations"].alias("declarations"),
        )
        .agg(F.max(common["id"]).cast(C.SEQ_TYPE).alias("seq"))
    )
    declared = F.explode(F.arrays_zip(F.col("names").alias("name"), F.col("declarations").alias("declaration")))
    return lists.select("db", "table", "seq", declared.alias("d")).select(
        "db",
        "table",
        "seq",
        _typed(F.struct("d.name", "d.declaration", F.lit(True).alias("informed")), resolve).alias("c"),
    )


def _has_value(value: Column) -> Column:
    return value.isNotNull() & (value["branch"] != "EmptyObject")


def _decimal_declaration(value: Column) -> Column:
    """decimal(p,s) of a Decimal value; bare 'decimal' (exact text: any DECIMAL(65,30)) when no value says."""
    has_precision = (value["branch"] == "Decimal") & (value["precision"] > 0)
    return F.when(
        has_precision, F.format_string("decimal(%d,%d)", value["precision"], F.coalesce(value["scale"], F.lit(0)))
    ).otherwise(F.lit("decimal"))


def _mysql_declaration(number: Column, value: Column) -> Column:
    """The MySQL declaration a MYSQL_TYPE_* number stands for (integers widened: signedness is not sent)."""
    declarations = {
        1: "tinyint unsigned",
        2: "smallint unsigned",
        9: "mediumint",
        3: "int unsigned",
        8: "bigint unsigned",
        13: "year",
        4: "double",
        5: "double",
        7: "timestamp",
        12: "datetime",
        10: "date",
        14: "date",
        11: "time",
    }
    result = F.when(number.isin(0, 246), _decimal_declaration(value))
    for type_number, declared in declarations.items():
        result = result.when(number == type_number, F.lit(declared))
    return (
        result.when(
            number == 16, F.when(value["branch"] == "Integer", F.lit("bigint unsigned")).otherwise(F.lit("bit"))
        )
        .when(number.isin(*STRING_TYPE_NUMBERS), F.coalesce(_branch_declaration(value), F.lit("text")))
        .when(number == GEOMETRY, F.coalesce(_branch_declaration(value), F.lit("geometry")))
        .otherwise(_branch_declaration(value))
    )


def _branch_declaration(value: Column) -> Column:
    """The MySQL declaration a value's union branch implies (NULL for no value: string)."""
    branch = value["branch"]
    date_time = (
        F.when(value["year"].isNotNull() & value["hour"].isNotNull(), F.lit("datetime"))
        .when(value["month"].isNotNull(), F.lit("date"))
        .when(value["hour"].isNotNull(), F.lit("time"))
        .when(value["year"].isNotNull(), F.lit("year"))
    )
    return (
        F.when(branch == "Integer", F.lit("decimal(38,0)"))
        .when(branch == "Decimal", _decimal_declaration(value))
        .when(branch == "Float", F.lit("double"))
        .when(branch.isin("Timestamp", "TimestampWithTimeZone"), F.lit("timestamp"))
        .when(branch == "DateTime", date_time)
        .when(branch == "Character", F.when(_is_binary(value), F.lit("blob")).otherwise(F.lit("text")))
        .when(branch.isin("BinaryObject", "BinaryGeometry"), F.lit("blob"))
        .when(branch.isin("TextObject", "TextGeometry"), F.lit("text"))
    )


def _is_binary(value: Column) -> Column:
    return F.lower(value["charset"]) == BINARY_CHARSET


# --------------------------------------------------------------------------------------------------------------
# Images: each value as wire text (canonical conversion and checks are with_canonical_images' and finish's)
# --------------------------------------------------------------------------------------------------------------


def _raw_image(names: Column, values: Column) -> Column:
    """map name -> value text; NULL unless there is one value per uniquely named field (finish rejects those)."""
    well_formed = (
        (F.size(values) == F.size(names))
        & (F.size(F.array_distinct(names)) == F.size(names))
        & ~F.exists(names, lambda n: n.isNull())
    )
    return F.when(well_formed, F.map_from_arrays(names, F.transform(values, _value_text)))


def _value_text(value: Column) -> Column:
    """A value's exact text: what its column's converter reads (NULL for NULL and EmptyObject)."""
    branch = value["branch"]
    micros = F.try_add(
        F.try_multiply(value["value"].try_cast("bigint"), F.lit(1_000_000)),
        F.coalesce(value["millis"], F.lit(0)).cast("bigint"),
    )
    return (
        F.when(branch.isin("Integer", "Decimal", "Float", "TextObject", "TextGeometry"), value["value"])
        .when(branch == "Character", F.when(_is_binary(value), value["bytes"]).otherwise(value["text"]))
        .when(branch.isin("BinaryObject", "BinaryGeometry"), value["bytes"])
        .when(branch == "Timestamp", timestamp_text(F.timestamp_micros(micros)))
        .when(branch == "DateTime", _date_time_text(value))
        .when(branch == "TimestampWithTimeZone", _zoned_text(value))
    )


def _date_time_text(value: Column) -> Column:
    """'yyyy-MM-dd HH:mm:ss[.SSSSSS]', or the date, the time or the year alone: the parts that are set. A
    fraction (`millis`, microseconds) outside 0-999999 makes text no type reads (the value does not match). A
    negative part makes the value negative, as Alibaba's SDK reads it (`DateTime.setHour` and the others: '-'
    and the parts' magnitudes): a MySQL TIME such as '-01:02:03'; a date and time cannot be negative."""
    date = F.format_string("%04d-%02d-%02d", value["year"], value["month"], value["day"])
    hour, minute, second, micros = (value[part] for part in ("hour", "minute", "second", "millis"))
    negative = (hour < 0) | (minute < 0) | (second < 0) | (F.coalesce(micros, F.lit(0)) < 0)
    fraction = (
        F.when(micros.isNull(), F.lit(""))
        .when(F.abs(micros) <= 999_999, F.format_string(".%06d", F.abs(micros)))
        .otherwise(F.lit(".out of range"))
    )
    clock = F.format_string("%02d:%02d:%02d", F.abs(hour), F.abs(minute), F.abs(second))
    time = F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), clock, fraction)
    has_date, has_time = value["month"].isNotNull(), value["hour"].isNotNull()
    return (
        F.when(has_date & has_time, F.concat_ws(" ", date, time))
        .when(has_date, date)
        .when(has_time, time)
        .when(value["year"].isNotNull(), F.format_string("%04d", value["year"]))
    )


def _zoned_text(value: Column) -> Column:
    """The wall clock in its zone, as UTC timestamp text (NULL when the zone or the parts are invalid)."""
    zone = value["timezone"]
    offset = zone.rlike(r"^[+-][0-9]{2}:[0-9]{2}$")
    local = F.concat(_date_time_text(value), F.when(offset, zone).otherwise(F.concat(F.lit(" "), zone)))
    return timestamp_text(local.try_cast("timestamp"))


def _key(configured: Column, pk_uk_info: Column) -> Column:
    """The configured key, else the PRIMARY entry of the record's tag `pk_uk_info` (`{"PRIMARY":["id"]}`; DTS
    names unique keys there too, which do not key a table: their columns may be NULL), its columns as the
    images spell them (MySQL's names ignore case). A tag that is no such object names no key."""
    primary = F.from_json(pk_uk_info, "map<string,array<string>>")["PRIMARY"]
    named = F.when(F.size(primary) > 0, key_as_in_image(primary, F.col("raw_after"), F.col("raw_before")))
    return F.coalesce(configured, named)


def _count_check(image: str, values: Column) -> tuple[Column, Column]:
    """A data record whose image has not one value per field."""
    mismatch = (F.col("kind") == C.DATA) & values.isNotNull() & (F.size(values) != F.size(F.col("fields")))
    message = F.format_string(f"{image} has %d value(s) for %d field(s)", F.size(values), F.size(F.col("fields")))
    return mismatch, message


def _undecodable(names: Column, before: Column, after: Column) -> Column:
    """Names of text columns whose Character bytes did not decode with their charset."""

    def failed(values: Column) -> Column:
        def name_if_failed(value: Column, i: Column) -> Column:
            bad = (value["branch"] == "Character") & ~_is_binary(value) & value["text"].isNull()
            return F.when(bad, F.try_element_at(names, i + 1))

        failed_names = F.filter(F.transform(values, name_if_failed), lambda n: n.isNotNull())
        return F.coalesce(failed_names, F.array().cast(STRING_ARRAY))

    return F.array_distinct(F.concat(failed(before), failed(after)))
