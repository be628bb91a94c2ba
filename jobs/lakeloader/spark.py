"""The Spark session every job uses, with the settings the jobs rely on."""

from __future__ import annotations

import glob
import math
import os
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from py4j.java_gateway import JavaObject
from pyspark import SparkConf, SparkContext, StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T

from lakeloader.core.spark_conf import JVM_JAR_ENV, jvm_jar
from lakeloader.core.storage import Store, spark_path

# Set unless the session's `conf`, spark-submit's --conf or the conf dir's spark-defaults.conf already set them.
DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",  # canonical timestamps are UTC text
    "spark.sql.shuffle.partitions": "8",  # hourly batches; adaptive execution coalesces further
    "spark.ui.showConsoleProgress": "false",
    # PySpark otherwise records the Python call site of every Column function in the JVM (five more py4j round
    # trips each) for error messages: about 40% of the time spent building a format's parse plan
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # one hour's parse and apply generate more classes than Spark keeps compiled (100): a session that runs
    # several hours (the local runner, the tests) compiled them again each hour (docs/performance.md)
    "spark.sql.codegen.cache.maxEntries": "2000",
    # a write partitioned by a column of few values (the parse step's destination) keeps a file open per value
    # instead of sorting every row by it first
    "spark.sql.maxConcurrentOutputFileWriters": "8",
}

# How the jobs cache a frame they read more than once: in the executors' memory, deserialized, else on their disks.
# PySpark's MEMORY_AND_DISK is the serialized level (Scala's is not): each read of such a cache deserializes every
# batch of every partition before any filter (apply's reads of one table each: 8.1-9.0 s -> 4.1-5.2 for a million
# changes, docs/performance.md). The level `DataFrame.cache()` uses.
CACHED = StorageLevel.MEMORY_AND_DISK_DESER

# The project's JVM functions (jvm/src), registered in every session by `spark_session`: SQL name -> (class, the
# type it returns).
EXACT_NUMBERS = "lakeloader_exact_numbers"  # JSON text with its numbers quoted (lakeloader.parse.formats.common)
# JSON text -> why it is no single message though the JSON reader reads one (a name twice, text after it), or NULL
JSON_PROBLEM = "lakeloader_json_problem"
# a message's bytes -> why they cannot be the JSON text they spell: a control character JSON forbids unescaped,
# a lone surrogate escape (lakeloader.parse.framing), or NULL
JSON_TEXT_PROBLEM = "lakeloader_json_text_problem"
# a message's bytes -> whether they are valid UTF-8, as `is_valid_utf8` decides, faster on ASCII (parse.framing)
VALID_UTF8 = "lakeloader_valid_utf8"
# epoch text and the fraction digits that make a microsecond -> microseconds (lakeloader.parse.formats.common)
EPOCH_MICROS = "lakeloader_epoch_micros"
# a DTS Avro line -> DTS_DECODED: its flat record of exact text, or why it is no record (parse.formats.dts_avro)
DTS_RECORD = "lakeloader_dts_record"
_S, _I = T.StringType(), T.IntegerType()
DTS_VALUE = T.StructType(
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
_DTS_FIELD = T.StructType([T.StructField("name", _S), T.StructField("type_number", _I)])
_DTS_RECORD = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("id", "source_timestamp", "source_type", "operation", "object_name")],
        T.StructField("fields", T.ArrayType(_DTS_FIELD)),
        T.StructField("ddl", _S),  # the images' string branch (a DDL record's statement)
        T.StructField("before", T.ArrayType(DTS_VALUE)),
        T.StructField("after", T.ArrayType(DTS_VALUE)),
        T.StructField("pk_uk_info", _S),  # the tag naming the table's keys: {"PRIMARY": [column], "<index>": [...]}
    ]
)
DTS_DECODED = T.StructType([T.StructField("decode_error", _S), T.StructField("record", _DTS_RECORD)])
# a DTS Avro line and the source's settings (JSON) -> DTS_COMMON_CASE: the common case's fields, or NULL for any other
# line, which takes the Spark SQL parser (lakeloader.parse.formats.dts_avro)
DTS_MESSAGE = "lakeloader_dts_message"
DTS_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "table")],
        *[T.StructField(name, T.LongType()) for name in ("id", "source_timestamp")],
        *[T.StructField(name, T.MapType(_S, _S)) for name in ("before", "after")],
        *[T.StructField(name, T.ArrayType(_S)) for name in ("primary_key", "names", "types", "declarations")],
    ]
)
# a DataWorks JSON line and the source's settings (JSON) -> DATAWORKS_COMMON_CASE: the common case's fields, or NULL
# for any other message, which takes the Spark SQL parser (lakeloader.parse.formats.dataworks)
DATAWORKS_MESSAGE = "lakeloader_dataworks_message"
_STRINGS, _IMAGE = T.ArrayType(_S), T.MapType(_S, _S)
DATAWORKS_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "schema_name", "table")],
        T.StructField("seq", T.LongType()),
        T.StructField("event_time", _S),
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# an OMS Default JSON line and the source's settings (JSON) -> OMS_COMMON_CASE: the common case's fields, or NULL for
# any other message, which takes the Spark SQL parser (lakeloader.parse.formats.oms_default)
OMS_MESSAGE = "lakeloader_oms_message"
OMS_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "table")],
        *[T.StructField(name, T.LongType()) for name in ("seq", "seq2", "event_micros")],
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# a DataWorks 2.0 JSON line and the source's settings (JSON) -> DATAWORKS2_COMMON_CASE: the common case's fields, or
# NULL for any other message, which takes the Spark SQL parser (lakeloader.parse.formats.dataworks_v2)
DATAWORKS2_MESSAGE = "lakeloader_dataworks2_message"
DATAWORKS2_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "schema_name", "table", "event_time")],
        T.StructField("scn", T.LongType()),
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# a Canal JSON line and the source's settings (JSON) -> CANAL_COMMON_CASE: the common case's fields, or NULL for any
# other message, which takes the Spark SQL parser (lakeloader.parse.formats.canal)
CANAL_MESSAGE = "lakeloader_canal_message"
CANAL_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "table")],
        *[T.StructField(name, T.LongType()) for name in ("es", "id")],
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# a DataHub TUPLE JSON line and the source's settings (JSON) -> DATAHUB_COMMON_CASE: the common case's fields, or NULL
# for any other line, which takes the Spark SQL parser (lakeloader.parse.formats.datahub_tuple)
DATAHUB_ROW = "lakeloader_datahub_row"
DATAHUB_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "table")],
        *[T.StructField(name, T.LongType()) for name in ("seq", "execute_millis")],
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# a DebeziumSmt JSON line, its table ('db.table') and the source's settings (JSON) -> DEBEZIUM_SMT_COMMON_CASE: the
# common case's fields, or NULL for any other message, which takes the Spark SQL parser (parse.formats.debezium_smt)
DEBEZIUM_SMT_ROW = "lakeloader_debezium_smt_row"
DEBEZIUM_SMT_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op")],
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# a Debezium JSON or DebeziumFlatten line and the source's settings (JSON) -> DEBEZIUM_COMMON_CASE: the common case's
# fields, or NULL for any other message, which takes the Spark SQL parser (lakeloader.parse.formats.debezium)
DEBEZIUM_EVENT = "lakeloader_debezium_event"
DEBEZIUM_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "table", "source_time")],
        *[T.StructField(name, T.LongType()) for name in ("seq", "seq2")],
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

# a SharePlex JSON line and the source's settings (JSON) -> SHAREPLEX_COMMON_CASE: the common case's fields, or NULL
# for any other message, which takes the Spark SQL parser (lakeloader.parse.formats.shareplex)
SHAREPLEX_MESSAGE = "lakeloader_shareplex_message"
SHAREPLEX_COMMON_CASE = T.StructType(
    [
        *[T.StructField(name, _S) for name in ("raw_op", "op", "db", "table")],
        *[T.StructField(name, T.LongType()) for name in ("scn", "seq")],
        T.StructField("time", _S),
        *[T.StructField(name, _IMAGE) for name in ("before", "after")],
        T.StructField("after_partial", T.BooleanType()),
        *[T.StructField(name, _STRINGS) for name in ("primary_key", "names", "types")],
    ]
)

JVM_FUNCTIONS: dict[str, tuple[str, T.DataType]] = {
    EXACT_NUMBERS: ("lakeloader.jvm.ExactNumbers", T.StringType()),
    JSON_PROBLEM: ("lakeloader.jvm.JsonProblems", T.StringType()),
    JSON_TEXT_PROBLEM: ("lakeloader.jvm.JsonTextProblem", T.StringType()),
    VALID_UTF8: ("lakeloader.jvm.ValidUtf8", T.BooleanType()),
    EPOCH_MICROS: ("lakeloader.jvm.EpochMicros", T.LongType()),
    DTS_RECORD: ("lakeloader.jvm.DtsRecords", DTS_DECODED),
    DTS_MESSAGE: ("lakeloader.jvm.DtsMessages", DTS_COMMON_CASE),
    DATAWORKS_MESSAGE: ("lakeloader.jvm.DataWorksMessages", DATAWORKS_COMMON_CASE),
    OMS_MESSAGE: ("lakeloader.jvm.OmsMessages", OMS_COMMON_CASE),
    DATAWORKS2_MESSAGE: ("lakeloader.jvm.DataWorks2Messages", DATAWORKS2_COMMON_CASE),
    CANAL_MESSAGE: ("lakeloader.jvm.CanalMessages", CANAL_COMMON_CASE),
    DATAHUB_ROW: ("lakeloader.jvm.DataHubRows", DATAHUB_COMMON_CASE),
    DEBEZIUM_SMT_ROW: ("lakeloader.jvm.DebeziumSmtRows", DEBEZIUM_SMT_COMMON_CASE),
    DEBEZIUM_EVENT: ("lakeloader.jvm.DebeziumEvents", DEBEZIUM_COMMON_CASE),
    SHAREPLEX_MESSAGE: ("lakeloader.jvm.SharePlexMessages", SHAREPLEX_COMMON_CASE),
}


def spark_session(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The active session, or a new one, with the project's JVM functions registered (`register_jvm_functions`);
    `master` only for runs outside spark-submit (local runner, tests); `conf` adds settings (e.g. the
    benchmark's spark.driver.memory); DEFAULTS fill in the rest."""
    if not jvm_jar().is_file():
        raise FileNotFoundError(
            f"no {jvm_jar()}: run `make setup` (bin/build-jvm builds it) or point {JVM_JAR_ENV} at the jar"
        )
    options = {key: expand_jars(value) if key == "spark.jars" else value for key, value in (conf or {}).items()}
    if master:
        options = {"spark.master": master, "spark.ui.enabled": "false", **options}
        # local Python workers (splitting `.bin` files) on this interpreter, which has the project's packages
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    given = driver_settings(options)
    defaults = {key: value for key, value in DEFAULTS.items() if key not in options and not given.contains(key)}
    builder = SparkSession.builder.appName(app_name)
    for key, value in {**defaults, **options}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    register_jvm_functions(session)
    return session


def register_jvm_functions(session: SparkSession) -> None:
    """Add the JVM functions' jar to the running session (SQL `ADD JAR`: the driver loads it, and serves it to the
    executors as it does `spark.jars`) and register `JVM_FUNCTIONS`. Added at run time rather than in
    `spark.jars`, which a session's setting would replace, not extend (a cluster's spark-defaults.conf may list
    jars there)."""
    path = str(jvm_jar()).replace("\\", "\\\\").replace('"', '\\"')
    session.sql(f'ADD JAR "{path}"')
    for name, (class_name, return_type) in JVM_FUNCTIONS.items():
        session.udf.registerJavaFunction(name, class_name, return_type)


def driver_settings(launch: dict[str, str]) -> SparkConf:
    """The settings the driver's JVM holds: spark-submit's --conf and the conf dir's spark-defaults.conf (and
    `launch` when this call starts the JVM). The JVM is started first, or joined under spark-submit: before
    that a SparkConf is empty, so DEFAULTS could not see what was set, and a session's settings override
    everything the JVM was given."""
    SparkContext._ensure_initialized(conf=SparkConf().setAll(list(launch.items())))
    return SparkConf()


def expand_jars(jars: str) -> str:
    """`spark.jars` with each local glob pattern (`session_conf`'s `<jars_dir>/*.jar`) replaced by the files it
    matches. SparkContext.addJar takes no patterns: a pattern reaches the driver's class path through
    spark-submit, but executors on a cluster would never get the jars (Delta's classes then fail to deserialize
    there), and a session's conf given here replaces the list spark-submit expanded."""
    entries = []
    for entry in filter(None, jars.split(",")):
        local = "://" not in entry
        matches = sorted(glob.glob(entry)) if local and glob.has_magic(entry) else []
        entries.extend(matches or [entry])
    return ",".join(entries)


def read_parquet_dir(spark: SparkSession, lake: Store, key: str, schema: T.StructType) -> DataFrame:
    """A Parquet directory of the lake, or an empty frame when nothing was ever written there (an hour whose
    parse was skipped because nothing landed in it has no bronze directory)."""
    if next(iter(lake.list(key + "/")), None) is None:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(spark_path(lake.child(key)))


def jvm_instance(session: SparkSession, class_name: str) -> JavaObject:
    """A new instance of one of the project's JVM classes (jvm/src; a constructor without arguments). Made through
    the class loader the session's `ADD JAR` filled: py4j's own look-up (`session._jvm.lakeloader...`) sees the jar
    only on the thread that ran `ADD JAR` (that statement makes the loader that thread's context class loader), not
    on `collect_together`'s threads, say. The instance's methods can then be called from any thread."""
    gateway, jvm = session.sparkContext._gateway, session._jvm
    assert gateway is not None and jvm is not None, "a session with a JVM (not Spark Connect)"
    loader = session._jsparkSession.sharedState().jarClassLoader()
    java_class = jvm.java.lang.Class.forName(class_name, True, loader)
    no_types, no_arguments = gateway.new_array(jvm.java.lang.Class, 0), gateway.new_array(jvm.java.lang.Object, 0)
    return java_class.getDeclaredConstructor(no_types).newInstance(no_arguments)


MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes"


@contextmanager
def splits_even_over_cores(spark: SparkSession, sizes: Iterable[int]) -> Iterator[None]:
    """Within the block, Spark's reads of files of `sizes` bytes in all are split into chunks of about equal size,
    as many as a multiple of the cores (the session's default parallelism), no larger than
    spark.sql.files.maxPartitionBytes. Spark cuts such reads into chunks of that size and a remainder: 333 MiB on two
    cores read as 128 + 128 + 77 MiB, two rounds of tasks of which the second keeps one core idle, where four
    chunks of 83 take the same two rounds at two thirds of the length (a million DataHub messages: the parse
    11.4-12.3 s -> 9.9-10.5). Smaller reads are left to Spark, which splits them about evenly over the cores itself
    (or, a few MiB, into chunks of spark.sql.files.openCostInBytes). The setting is the session's for the block:
    the reads must be planned (their action run) within it."""
    conf = spark._jsparkSession.sessionState().conf()
    largest, cores, total = conf.filesMaxPartitionBytes(), spark.sparkContext.defaultParallelism, sum(sizes)
    if total <= cores * largest:
        yield
        return
    chunks = cores * math.ceil(total / (cores * largest))
    spark.conf.set(MAX_PARTITION_BYTES, str(math.ceil(total / chunks)))
    try:
        yield
    finally:
        spark.conf.set(MAX_PARTITION_BYTES, str(largest))


def collect_together(*frames: DataFrame) -> list[list[Row]]:
    """Each frame's rows, its jobs submitted at the same time (one thread each) rather than one after another.
    For small aggregates of one batch, whose jobs are mostly waits between stages (adaptive execution runs each
    shuffle stage as a job of its own), the wait is the longest instead of the sum."""
    with ThreadPoolExecutor(max_workers=len(frames)) as pool:
        return list(pool.map(DataFrame.collect, frames))
