"""DataHub TUPLE topic rows written by DataWorks Data Integration (seed 001, "Data formats - TUPLE").

A row holds the source table's columns plus the metadata columns DataWorks adds to the topic:

    _sequence_id_     digits; the ordering key, shared by the two rows of an update
    _operation_type_  I (insert), U (update), D (delete)
    _excute_time_     when the change happened: epoch milliseconds (or timestamp text)
    _source_table_    the source table's name
    _before_image_    Y for a delete or the before-half of an update, else N
    _after_image_     Y for an insert or the after-half of an update, else N

So an update is two rows with the same sequence id: U/Y/N (before) then U/N/Y (after). Flags that do not
fit the op are rejected. TUPLE topics carry no DDL and no heartbeats.

Export files: one row per line, as a JSON object ({"column": value, ...}) or, for files whose name ends in
`.csv` (optionally followed by a compression suffix such as `.csv.gz`), as CSV with a header line naming
the columns (RFC 4180 quoting; a quoted field cannot span lines). In CSV an empty field is NULL and `""`
an empty string. The header line is counted as a control line (op CSV_HEADER); a file with an invalid
header (not CSV, repeated or empty names, metadata columns missing) has its header and every row
quarantined.

The topic schema has types but rows carry none: the source's `column_types` configures Spark SQL types per
'db.table', other columns are strings. A timestamp column may hold text or DataHub's TIMESTAMP value
(epoch microseconds); DataHub has no DATE type, so a `date` column accepts 'YYYY-MM-DD' text or a TIMESTAMP at
midnight UTC (any other time of day rejects the row with that reason). The database name is the source's
`db`; the key is the source's `primary_keys` entry for the table (none: apply keys by all columns).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core.config import SourceConfig
from lakeloader.core.format_registry import CSV_FILE
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import (
    COMMON_CASE,
    CommonCase,
    WireFields,
    checked_date,
    common_case_columns,
    configured_map,
    configured_types,
    date_text,
    declare_names,
    finish,
    integer_text,
    jvm_reading,
    let,
    listing,
    parse_json,
    parsed_with_common_case,
    qualified,
    spark_type_converters,
    spark_typed,
    timestamp_of_millis,
    timestamp_text,
    with_canonical_images,
)
from lakeloader.spark import DATAHUB_ROW

SEQUENCE, OPERATION, EXECUTE_TIME = "_sequence_id_", "_operation_type_", "_excute_time_"
SOURCE_TABLE, BEFORE_IMAGE, AFTER_IMAGE = "_source_table_", "_before_image_", "_after_image_"
METADATA = (SEQUENCE, OPERATION, EXECUTE_TIME, SOURCE_TABLE, BEFORE_IMAGE, AFTER_IMAGE)
REQUIRED = (SEQUENCE, OPERATION, SOURCE_TABLE, BEFORE_IMAGE, AFTER_IMAGE)
CSV_HEADER = "CSV_HEADER"

# (op, before-image flag, after-image flag) -> canonical op
ROW_OPS = {
    ("I", "N", "Y"): C.INSERT,
    ("U", "Y", "N"): C.UPDATE_BEFORE,
    ("U", "N", "Y"): C.UPDATE_AFTER,
    ("D", "Y", "N"): C.DELETE,
}
WIRE = WireFields(
    op=OPERATION,
    db="db (configuration)",
    table=SOURCE_TABLE,
    seq_problem=f"{SEQUENCE} is missing or not a number",
    op_label=OPERATION,
)

_CSV_FIELD = r'"[^"]*+(?:""[^"]*+)*+"|[^,"]*+'
_CSV_LINE = f"^(?:{_CSV_FIELD})(?:,(?:{_CSV_FIELD}))*+$"


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Numbered lines -> canonical change rows with `reject_reason` set on the ones to quarantine.

    The common case (a JSON line whose op and flags fit, every value a string or a number plainly of its column's
    type) is read by a JVM function in one pass (`read_common_case`); every other line, or every line without
    `common_case`, by the Spark SQL expressions of `_parsed`, the reference that function is held to
    (tests/spark/test_format_datahub_common_case.py)."""
    return parsed_with_common_case(lines, reader(lines, source)) if common_case else _parsed(lines, source)


def reader(_lines: DataFrame, source: SourceConfig) -> CommonCase:
    """The JVM common-case reader (`read_common_case`) and this parser's output columns from its fields."""
    return CommonCase(
        read_common_case(source), _from_common_case(F.col(COMMON_CASE)), rest=lambda ls: _parsed(ls, source)
    )


def read_common_case(source: SourceConfig) -> Column:
    """Each JSON line as lakeloader/jvm/DataHubRows.java reads it: the common case's fields
    (`lakeloader.spark.DATAHUB_COMMON_CASE`), NULL for any other line and for CSV lines. It is given the source's
    settings and this module's metadata columns and row ops, so that they are written once."""
    settings = {
        "column_types": source.column_types,
        "primary_keys": source.primary_keys,
        "db": source.db,
        "metadata": METADATA,
        "sequence": SEQUENCE,
        "operation": OPERATION,
        "execute_time": EXECUTE_TIME,
        "source_table": SOURCE_TABLE,
        "before_image": BEFORE_IMAGE,
        "after_image": AFTER_IMAGE,
        "row_ops": [[*flags, op] for flags, op in ROW_OPS.items()],
        "before_ops": [C.UPDATE_BEFORE, C.DELETE],
    }
    return F.when(~_is_csv(), jvm_reading(DATAHUB_ROW, settings))


def _from_common_case(common: Column) -> dict[str, Column]:
    """The parser's output columns from the JVM function's fields, which read the sequence id and the execute
    time's milliseconds as `integer_text` and `_execute_time` would."""
    return common_case_columns(common, ("raw_op", "op", "db", "table", "before", "after", "primary_key")) | {
        "seq": common["seq"].cast(C.SEQ_TYPE),
        "event_time": timestamp_of_millis(common["execute_millis"]),
    }


def _parsed(lines: DataFrame, source: SourceConfig) -> DataFrame:
    """The Spark SQL parse of every line."""
    frame = _rows(lines)
    row = F.col("row")
    op_type, before_flag, after_flag = row[OPERATION], row[BEFORE_IMAGE], row[AFTER_IMAGE]
    is_header = F.col("is_header")
    canonical_op = None
    for (op, before, after), canonical in ROW_OPS.items():
        fits = (op_type == op) & (before_flag == before) & (after_flag == after)
        canonical_op = (F.when if canonical_op is None else canonical_op.when)(fits, F.lit(canonical))
    assert canonical_op is not None  # ROW_OPS is not empty
    image = F.map_filter(row, lambda k, _v: ~k.isin(*METADATA))
    db, table = F.lit(source.db), row[SOURCE_TABLE]
    types = configured_types(source.column_types, db, table)
    excute_time = row[EXECUTE_TIME]
    frame = frame.select(
        *lines.columns,
        "envelope_error",
        F.when(is_header, F.lit(CSV_HEADER)).otherwise(op_type).alias("raw_op"),
        F.when(is_header, F.lit(C.CONTROL)).when(op_type.isin("I", "U", "D"), F.lit(C.DATA)).alias("kind"),
        F.when(is_header, F.lit(CSV_HEADER)).otherwise(canonical_op).alias("op"),
        db.alias("db"),
        table.alias("table"),
        F.when(canonical_op.isin(C.UPDATE_BEFORE, C.DELETE), image).alias("raw_before"),
        F.when(canonical_op.isin(C.INSERT, C.UPDATE_AFTER), image).alias("raw_after"),
        F.format_string(
            "%s/%s = '%s'/'%s' do not fit %s '%s'",
            F.lit(BEFORE_IMAGE),
            F.lit(AFTER_IMAGE),
            before_flag,
            after_flag,
            F.lit(OPERATION),
            op_type,
        ).alias("flag_problem"),
        F.when(~is_header, declare_names(F.map_keys(image), types, spark_typed)).alias("typed"),
        F.element_at(configured_map(source.primary_keys, "array<string>"), qualified(db, table)).alias("primary_key"),
        integer_text(row[SEQUENCE]).alias("seq"),
        excute_time.alias("raw_event_time"),
        _execute_time(excute_time).alias("event_time"),
    )
    converters = spark_type_converters(timestamp=_datahub_timestamp, timestamp_ntz=_datahub_datetime)
    converters["date"] = _datahub_date
    frame = with_canonical_images(frame, converters).withColumn("dates_off_midnight", _dates_off_midnight())
    is_data = F.col("kind") == C.DATA
    return finish(
        frame,
        WIRE,
        after_op=[
            (is_data & F.col("op").isNull(), F.col("flag_problem")),
            (
                is_data & F.col("raw_event_time").isNotNull() & F.col("event_time").isNull(),
                f"{EXECUTE_TIME} is not a time",
            ),
            (is_data & (F.size("dates_off_midnight") > 0), listing(OFF_MIDNIGHT, F.col("dates_off_midnight"))),
        ],
    )


def _execute_time(excute_time: Column) -> Column:
    """The change's time: epoch milliseconds, or timestamp text."""
    return F.coalesce(
        F.when(excute_time.rlike(r"^-?[0-9]+$"), timestamp_of_millis(excute_time.try_cast("bigint"))),
        F.when(~excute_time.rlike(r"^-?[0-9]+$"), excute_time.try_cast("timestamp")),
    )


def _is_csv() -> Column:
    """Whether the line is from a CSV export file (its name ends in .csv, optionally with a compression suffix)."""
    return F.col("origin_file").rlike(CSV_FILE)


def _rows(lines: DataFrame) -> DataFrame:
    """Each line as `row` (map column -> value text), with `is_header` and `envelope_error`: JSON lines
    parsed as objects (`parse_json`), CSV lines zipped with their file's header (parsed once per
    file)."""
    is_csv = _is_csv()
    headers = lines.where(is_csv & (F.col("origin_line") == 1)).select(
        F.col("origin_file").alias("header_file"),
        let(
            _csv_fields(F.col("text")), lambda names: F.struct(names.alias("names"), _header_problem("text", names))
        ).alias("header"),
    )
    frame = parse_json(lines, T.MapType(T.StringType(), T.StringType()))
    frame = frame.join(F.broadcast(headers), frame["origin_file"] == headers["header_file"], "left")
    is_header = is_csv & (F.col("origin_line") == 1)
    names, header_problem = F.col("header.names"), F.col("header.problem")
    values = _csv_fields(F.col("text"))
    csv_error = (
        F.when(F.trim("text") == "", F.lit("empty line"))
        .when(is_header, header_problem)
        .when(header_problem.isNotNull(), F.lit("the file's CSV header (line 1) is invalid"))
        .when(~F.col("text").rlike(_CSV_LINE), F.lit("malformed CSV line"))
        .when(
            F.size(values) != F.size(names),
            F.format_string("CSV line has %d fields, the header %d", F.size(values), F.size(names)),
        )
    )
    csv_row = F.when(~is_header & csv_error.isNull(), F.map_from_arrays(names, values))
    return frame.select(
        *lines.columns,
        is_header.alias("is_header"),
        F.when(is_csv, csv_row).otherwise(F.col("j")).alias("row"),
        F.when(is_csv, csv_error).otherwise(F.col("envelope_error")).alias("envelope_error"),
    )


def _csv_fields(line: Column) -> Column:
    """The fields of a CSV line: unquoted, "" inside quotes unescaped, an empty unquoted field NULL."""
    raw = F.regexp_extract_all(line, F.lit(f"(?:^|,)({_CSV_FIELD})"), 1)

    def value(field: Column) -> Column:
        inner = F.regexp_replace(field.substr(F.lit(2), F.length(field) - 2), '""', '"')
        return F.when(field == "", F.lit(None)).when(field.startswith('"'), inner).otherwise(field)

    return F.transform(raw, value)


def _header_problem(header: str, names: Column) -> Column:
    """Why a CSV header cannot name the columns, or NULL."""
    repeated = F.array_distinct(F.filter(names, lambda n: F.size(F.filter(names, lambda m: m == n)) > 1))
    missing = F.filter(F.array(*[F.lit(name) for name in REQUIRED]), lambda n: ~F.array_contains(names, n))
    return (
        F.when(~F.col(header).rlike(_CSV_LINE), F.lit("malformed CSV header"))
        .when(F.exists(names, lambda n: n.isNull()), F.lit("CSV header has an empty column name"))
        .when(F.size(repeated) > 0, listing("CSV header repeats column(s): ", repeated))
        .when(F.size(missing) > 0, listing("CSV header lacks metadata column(s): ", missing))
        .alias("problem")
    )


DAY_MICROS = 86_400_000_000
OFF_MIDNIGHT = "date column(s) holding a TIMESTAMP (epoch microseconds) that is not midnight UTC: "


def _datahub_date(v: Column, _type: Column | None = None) -> Column:
    """DataHub has no DATE type: a date column holds 'YYYY-MM-DD' text, or a TIMESTAMP's epoch microseconds at
    midnight UTC (another time of day is no date: NULL, so the row is rejected)."""
    micros = F.when(v.rlike(r"^-?[0-9]{1,19}$"), v.try_cast("bigint"))
    from_micros = F.when(F.pmod(micros, F.lit(DAY_MICROS)) == 0, date_text(F.to_date(F.timestamp_micros(micros))))
    return F.coalesce(checked_date(v), from_micros)


def _dates_off_midnight() -> Column:
    """Names of date columns whose value is epoch microseconds at another time than midnight (for the reason)."""
    lookup = F.map_from_entries(F.transform("typed", lambda c: F.struct(c["name"], c["type"])))
    image = F.coalesce(F.col("raw_after"), F.col("raw_before"), F.create_map().cast(C.IMAGE_TYPE))
    return F.coalesce(
        F.filter(
            F.map_keys(image),
            lambda name: (
                (F.element_at(lookup, name) == "date")
                & F.element_at(image, name).rlike(r"^-?[0-9]{1,19}$")
                & (F.pmod(F.element_at(image, name).try_cast("bigint"), F.lit(DAY_MICROS)) != 0)
            ),
        ),
        F.array().cast("array<string>"),
    )


def _datahub_timestamp(v: Column, _type: Column | None = None) -> Column:
    """DataHub TIMESTAMP values are epoch microseconds; text timestamps are accepted too."""
    return _epoch_micros_or_text(v, "timestamp")


def _datahub_datetime(v: Column, _type: Column | None = None) -> Column:
    """A timestamp_ntz column: the wall clock of the text, or the UTC wall clock of epoch microseconds."""
    return _epoch_micros_or_text(v, "timestamp_ntz")


def _epoch_micros_or_text(v: Column, text_type: str) -> Column:
    digits = v.rlike(r"^-?[0-9]+$")
    return timestamp_text(F.when(digits, F.timestamp_micros(v.try_cast("bigint"))).otherwise(v.try_cast(text_type)))
