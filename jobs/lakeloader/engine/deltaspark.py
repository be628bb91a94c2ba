"""The cluster table engine: Delta Lake on Spark (delta-spark, the pinned jars of config/jars), for sources whose
`engine` is `delta_spark`.

The same operations as the embedded engine (`deltars`), on the job's own Spark session: change sets arrive as
Arrow tables and become Spark frames, merges are Delta MERGEs, schema changes Delta DDL. Tables stay readable by
delta-rs (the Airflow side reads audit tables with it): our properties live in the table description (Delta's
`comment`), as the embedded engine keeps them, and no table feature is enabled that delta-rs 1.6 cannot read
(type changes rewrite the table instead of Delta's type widening). Each commit carries the step's commit info as
JSON in Delta's `userMetadata`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import date, datetime
from decimal import Decimal
from functools import partial
from typing import Any

import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type, to_arrow_schema
from pyspark.sql.types import DataType, StructType

from lakeloader.core.storage import spark_path
from lakeloader.engine.base import (
    CHECKPOINT_INTERVAL,
    FILE_SIZE_PROPERTY,
    NULL_AS_OLDEST,
    PARTIAL,
    Dialect,
    MergeResult,
    Predicate,
    Value,
    converts_exactly,
    merge_plan,
    render_newer,
    render_predicate,
)

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
OPTIMIZE_FILE_SIZE = "spark.databricks.delta.optimize.maxFileSize"
# delta.targetFileSize is a property delta-rs writes by; open-source Delta on Spark does not know it
ANY_PROPERTY = {"spark.databricks.delta.allowArbitraryProperties.enabled": "true"}


def quote(name: str) -> str:
    """A Spark SQL identifier: every name in backticks, embedded backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


DIALECT = Dialect(quote, literal, "array_contains")


def spark_type(arrow_type: pa.DataType) -> DataType:
    """The Spark type of an Arrow type; a timestamp without a zone (a wall clock) stays one (TIMESTAMP_NTZ), where
    PySpark's default would make it an instant in the session's zone."""
    return from_arrow_type(arrow_type, prefer_timestamp_ntz=True)


def spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


def value_sql(value: Value) -> str:
    """A Python value as a Spark SQL literal of its own type."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        scale = max(0, -exponent) if isinstance(exponent, int) else 0
        return f"CAST({literal(str(value))} AS DECIMAL(38,{scale}))"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime):
        return f"TIMESTAMP {literal(value.isoformat())}"
    if isinstance(value, date):
        return f"DATE {literal(value.isoformat())}"
    if isinstance(value, str):
        return literal(value)
    raise TypeError(f"no SQL literal for {type(value).__name__} {value!r}")


def predicate_sql(predicate: Predicate) -> str:
    """A typed predicate (`lakeloader.engine.base`) in Spark SQL."""
    return render_predicate(predicate, quote, value_sql)


def newer(order_columns: tuple[str, ...], source_columns: set[str], target_columns: set[str]) -> str:
    """Spark SQL for 'the source row's ordering key is greater than the target row's' (lexicographic; a NULL in,
    or a side's lack of, a column of NULL_AS_OLDEST is the oldest value); TRUE without ordering columns."""

    def value(side: str, columns: set[str], column: str) -> str:
        if column not in NULL_AS_OLDEST:
            return f"{side}.{quote(column)}"
        oldest = value_sql(NULL_AS_OLDEST[column])
        return f"coalesce({side}.{quote(column)}, {oldest})" if column in columns else oldest

    return render_newer(order_columns, partial(value, "s", source_columns), partial(value, "t", target_columns))


class DeltaSparkEngine:
    """`TableEngine` on a Spark session that has Delta's jars and SQL extension (`lakeloader.spark.jars_conf`)."""

    runs_in_spark = True  # change sets stay Spark frames (`lakeloader.apply.change_set`)

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def tables_held(self) -> AbstractContextManager[None]:
        """Delta on Spark keeps each table's log cached itself (and checks it for new commits at each use)."""
        return nullcontext()

    def let_go(self, uri: str) -> None:
        """Nothing is held (`tables_held`)."""

    def _spark_frame(self, rows: pa.Table) -> DataFrame:
        """Arrow rows as a Spark frame of the same types (`spark_type`)."""
        return self.spark.createDataFrame(rows, schema=spark_schema(rows.schema))

    def _path(self, uri: str) -> str:
        """The table's location as Hadoop names it (`file:/x`: Delta takes `file:///x` for another path)."""
        path = spark_path(uri)
        return "file:" + path[len("file://") :] if path.startswith("file:///") else path

    def _table(self, uri: str) -> DeltaTable:
        return DeltaTable.forPath(self.spark, self._path(uri))

    def _frame(self, uri: str) -> DataFrame:
        return self.spark.read.format("delta").load(self._path(uri))

    def _sql_name(self, uri: str) -> str:
        return f"delta.{quote(self._path(uri))}"

    @contextmanager
    def _committing(self, commit_info: dict[str, str] | None, **conf: str) -> Iterator[None]:
        """Session settings for the commits made inside: the commit info as Delta's userMetadata, and `conf`."""
        settings = {**({USER_METADATA: json.dumps(commit_info, sort_keys=True)} if commit_info else {}), **conf}
        previous: dict[str, str | None] = {key: self.spark.conf.get(key, None) for key in settings}
        for key, value in settings.items():
            self.spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, old in previous.items():
                if old is None:
                    self.spark.conf.unset(key)
                else:
                    self.spark.conf.set(key, old)

    def exists(self, uri: str) -> bool:
        return DeltaTable.isDeltaTable(self.spark, self._path(uri))

    def create(
        self,
        uri: str,
        schema: pa.Schema,
        properties: dict[str, str],
        commit_info: dict[str, str],
        file_size: int | None = None,
    ) -> None:
        builder = (
            DeltaTable.createIfNotExists(self.spark)
            .location(self._path(uri))
            .addColumns(spark_schema(schema))
            .comment(json.dumps(properties, sort_keys=True))
        )
        configuration = {FILE_SIZE_PROPERTY: str(file_size)} if file_size else {}
        for name, value in {**configuration, **CHECKPOINT_INTERVAL}.items():
            builder = builder.property(name, value)
        with self._committing(commit_info, **ANY_PROPERTY):
            builder.execute()

    def _detail(self, uri: str):
        return self._table(uri).detail().collect()[0]

    def _snapshot(self, uri: str) -> Any:
        """The table's latest snapshot, through Delta's JVM `DeltaLog` (the Python API has no handle on it): its
        metadata and version come from the log in milliseconds, where `DeltaTable.detail()` also computes the
        table's size and file count, a Spark job of about a second after every commit (the DDL oracle read
        properties 111 times in 3 hours)."""
        jvm = self.spark._jvm
        assert jvm is not None
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, self._path(uri))
        none = jvm.scala.Option.empty()
        snapshot = log.update(False, none, none)  # not stale; no commit timestamp or catalog table to check
        if snapshot.version() < 0:
            raise FileNotFoundError(f"no Delta table at {uri}")
        return snapshot

    def _description(self, uri: str) -> str | None:
        return self._snapshot(uri).metadata().description()

    def properties(self, uri: str) -> dict[str, str]:
        """Delta's table configuration only takes delta.* keys, so ours live in the table description."""
        description = self._description(uri)
        try:
            return dict(json.loads(description)) if description else {}
        except ValueError:
            return {}

    def set_properties(self, uri: str, properties: dict[str, str], commit_info: dict[str, str]) -> None:
        merged = json.dumps({**self.properties(uri), **properties}, sort_keys=True)
        with self._committing(commit_info):
            self.spark.sql(f"ALTER TABLE {self._sql_name(uri)} SET TBLPROPERTIES ('comment' = {literal(merged)})")

    def schema(self, uri: str) -> pa.Schema:
        return to_arrow_schema(self._frame(uri).schema, timestamp_utc=True)

    def add_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None:
        columns = ", ".join(f"{quote(f.name)} {spark_type(f.type).simpleString()}" for f in fields)
        with self._committing(commit_info):
            self.spark.sql(f"ALTER TABLE {self._sql_name(uri)} ADD COLUMNS ({columns})")

    def widen_columns(self, uri: str, fields: list[pa.Field], commit_info: dict[str, str]) -> None:
        """A rewrite with the columns cast (Delta's type widening is a table feature delta-rs cannot read)."""
        types = {f.name: spark_type(f.type) for f in fields}
        frame = self._frame(uri)
        cast = frame.select(
            *[F.col(quote(c)).cast(types[c]).alias(c) if c in types else F.col(quote(c)) for c in frame.columns]
        )
        self._overwrite(uri, cast, commit_info)

    def _overwrite(self, uri: str, frame: DataFrame, commit_info: dict[str, str]) -> None:
        """One overwrite commit with the frame's schema; the table's description and properties are kept."""
        with self._committing(commit_info):
            frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(self._path(uri))

    def merge(
        self,
        uri: str,
        changes: pa.Table | DataFrame,
        key_columns: list[str],
        order_columns: tuple[str, ...],
        commit_info: dict[str, str],
    ) -> MergeResult:
        """A Spark frame merges as it is (its rows never reach the driver); an Arrow table (audit tables, the
        contract's small change sets) becomes a frame first."""
        source = changes if isinstance(changes, DataFrame) else self._spark_frame(changes)
        target_columns = self._frame(uri).columns
        # a frame's partial markers are not looked at (a job): the CASE keeps a non-partial row's values anyway
        plan = merge_plan(source.columns, PARTIAL in source.columns, target_columns, key_columns, DIALECT)
        is_newer = newer(order_columns, set(source.columns), set(target_columns))
        staged = source.select(*[F.col(quote(c)) for c in plan.source_columns])
        with self._committing(commit_info):
            (
                self._table(uri)
                .alias("t")
                .merge(staged.alias("s"), plan.on)
                .whenMatchedDelete(condition=f"{plan.is_delete} AND {is_newer}")
                .whenMatchedUpdate(condition=f"{plan.is_upsert} AND {is_newer}", set=dict(plan.updates))
                .whenNotMatchedInsert(condition=plan.is_upsert, values=dict(plan.inserts))
                .execute()
            )
        metrics, version = self._last_commit(uri)
        return MergeResult(
            inserted=int(metrics.get("numTargetRowsInserted", 0)),
            updated=int(metrics.get("numTargetRowsUpdated", 0)),
            deleted=int(metrics.get("numTargetRowsDeleted", 0)),
            version=version,
        )

    def _last_commit(self, uri: str) -> tuple[dict[str, str], int]:
        """The operation metrics and version of the table's latest commit."""
        last = self._table(uri).history(1).collect()[0]
        return dict(last["operationMetrics"] or {}), int(last["version"])

    def delete_where(self, uri: str, predicate: Predicate, commit_info: dict[str, str]) -> int:
        before = self.version(uri)
        with self._committing(commit_info):
            self._table(uri).delete(predicate_sql(predicate))
        metrics, version = self._last_commit(uri)
        return int(metrics.get("numDeletedRows", 0)) if version > before else 0

    def rewrite(
        self, uri: str, schema: pa.Schema, transform: Callable[[pa.Table], pa.Table], commit_info: dict[str, str]
    ) -> None:
        def batches(source: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in source:
                yield from transform(pa.Table.from_batches([batch])).cast(schema).to_batches()

        self._overwrite(uri, self._frame(uri).mapInArrow(batches, spark_schema(schema)), commit_info)

    def clustered(self, uri: str, column: str, file_size: int) -> bool:
        """Whether the table targets `file_size` and has at most one file (the per-file ranges in the Delta log
        are not exposed by the delta-spark API; a table of several files is laid out again by `recluster`)."""
        detail = self._detail(uri)
        aims = (detail["properties"] or {}).get(FILE_SIZE_PROPERTY) == str(file_size)
        return aims and int(detail["numFiles"]) <= 1

    def recluster(self, uri: str, columns: list[str], file_size: int, commit_info: dict[str, str]) -> int:
        """Delta's OPTIMIZE: Z-order by a one-column key, else compaction; files aim at `file_size`."""
        configuration = {FILE_SIZE_PROPERTY: str(file_size), **CHECKPOINT_INTERVAL}  # a table created before has none
        listed = ", ".join(f"'{name}' = '{value}'" for name, value in configuration.items())
        with self._committing(commit_info, **ANY_PROPERTY):
            self.spark.sql(f"ALTER TABLE {self._sql_name(uri)} SET TBLPROPERTIES ({listed})")
        with self._committing(commit_info, **{OPTIMIZE_FILE_SIZE: str(file_size)}):
            optimize = self._table(uri).optimize()
            result = optimize.executeZOrderBy(columns[0]) if len(columns) == 1 else optimize.executeCompaction()
        return int(result.collect()[0]["metrics"]["numFilesAdded"])

    def read(self, uri: str, columns: Sequence[str] | None = None) -> pa.Table:
        frame = self._frame(uri)
        return (frame if columns is None else frame.select(*columns)).toArrow()

    def append(self, uri: str, rows: pa.Table) -> None:
        self._spark_frame(rows).write.format("delta").mode("append").save(self._path(uri))

    def replace_with(self, uri: str, source_uri: str, commit_info: dict[str, str]) -> None:
        """The table at `uri` keeps its description (our properties), or takes the source's when it is new."""
        description = self._description(uri if self.exists(uri) else source_uri)
        self._overwrite(uri, self._frame(source_uri), commit_info)
        with self._committing(commit_info):
            self.spark.sql(
                f"ALTER TABLE {self._sql_name(uri)} SET TBLPROPERTIES ('comment' = {literal(description or '')})"
            )

    def spark_frame(self, spark: SparkSession, uri: str) -> DataFrame:
        return spark.read.format("delta").load(self._path(uri))

    def version(self, uri: str) -> int:
        return int(self._snapshot(uri).version())

    def row_count(self, uri: str, where: Predicate | None = None) -> int:
        frame = self._frame(uri)
        return (frame.where(predicate_sql(where)) if where is not None else frame).count()

    def converts(self, uri: str, column: str, arrow: pa.DataType) -> bool:
        def unfit(source: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in source:
                if not converts_exactly(batch.column(0), arrow):
                    yield pa.RecordBatch.from_pydict({"unfit": [True]})

        frame = self._frame(uri).select(F.col(quote(column)))
        return frame.mapInArrow(unfit, "unfit boolean").limit(1).count() == 0
