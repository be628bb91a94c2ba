"""A table segment's typed change set: its key actions with the images' canonical text typed into the table's
columns (`typed_change_set`, a Spark frame), and, for an engine that merges in the driver (delta-rs), the
typed change sets of a batch collected there as Arrow, several segments in one Spark job (`CollectedChangeSets`).

Why several at once: a collection is a Spark job that costs about the same whatever its rows (building and
planning the typed frame, then a job over the batch's cached actions): 0.1-0.17 s on two cores. An hour of many
small tables pays it once per table (20 tables of 5,000 changes: 3.4 s one job each, 0.55 s in one). Segments
typed alike (the same columns and types, the same columns kept as text: sharded tables, or a source whose tables
share a shape) are collected in one job, holding at most `HELD_CHANGES` changes in the driver for the segments
still to merge, and split by segment in Arrow.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply.key_actions import POSITION, TableShape
from lakeloader.apply.table_identity import TableId
from lakeloader.engine import base as E

# Changes held in the driver for segments collected with an earlier one (about 25 MB of Arrow for the benchmark's
# tables of nine columns): bounds what grouping adds to the driver's memory
HELD_CHANGES = 100_000
MEMBER = "_cdc_member"  # which segment of a collection a change is of (the prefix is the loader's, no column's)

SegmentId = tuple[str, str, int]  # (db, table, segment)


def segment_rows(shape: TableShape) -> Column:
    """The rows of one table segment (of a frame with `db`, `table` and `segment` columns)."""
    return (F.col("db") == shape.db) & (F.col("table") == shape.table) & (F.col("segment") == shape.segment)


def typed_change_set(
    actions: DataFrame, shape: TableShape, loaded_at: datetime, as_text: Collection[str] = ()
) -> DataFrame:
    """One table segment's actions with its columns typed from canonical text, the _cdc_* metadata, and
    the staging columns the writer needs (action, rank, partial, present columns). A column of `as_text` keeps
    its canonical text (checked against its type all the same)."""
    return _typed(actions.where(segment_rows(shape)), shape.columns, loaded_at, as_text)


def _typed(
    actions: DataFrame,
    columns: Sequence[tuple[str, str]],
    loaded_at: datetime,
    as_text: Collection[str],
    *carried: Column,
) -> DataFrame:
    """`actions` (of segments with these columns) typed, with the `carried` columns last."""
    texts = {name: f"_text_{i}" for i, (name, _) in enumerate(columns)}

    def typed(name: str, spark_type: str) -> Column:
        text = F.col(texts[name])
        return F.unbase64(text) if spark_type == "binary" else text.try_cast(spark_type)

    def unfit(name: str, spark_type: str) -> Column:
        """The column's name when its text is not a value of the segment's type (declared by an earlier
        message of the batch, `key_actions.batch_tables`), so the change is rejected rather than loaded as NULL."""
        return F.when(F.col(texts[name]).isNotNull() & typed(name, spark_type).isNull(), F.lit(name))

    unfits = [unfit(n, t) for n, t in columns]
    # the lambda (interpreted) only for a change with a value that did not fit: most have none
    unfit_columns = F.when(F.coalesce(*unfits, F.lit(None)).isNull(), F.array()).otherwise(
        F.filter(F.array(*unfits, F.lit(None)), lambda c: c.isNotNull())
    )

    def value(name: str, spark_type: str) -> Column:
        return F.col(texts[name]) if name in as_text else typed(name, spark_type)

    # each column's text looked up in the image once (a map lookup scans the keys), then typed and checked
    looked_up = actions.select("*", *[F.element_at("image", F.lit(name)).alias(text) for name, text in texts.items()])
    return looked_up.select(
        *[value(name, spark_type).alias(name) for name, spark_type in columns],
        F.col("seq").alias(E.SEQ),
        F.col("seq2").alias(E.SEQ2),
        F.col("op").alias(E.OP),
        F.col("event_time").alias(E.EVENT_TIME),
        F.col("origin_file").alias(E.SOURCE_FILE),
        F.col("origin_line").alias(E.SOURCE_LINE),
        F.col(POSITION).alias(E.POSITION),
        F.lit(loaded_at).cast("timestamp").alias(E.LOADED_AT),
        E.ACTION,
        F.col("rank").cast("int").alias(E.RANK),
        F.col("partial").alias(E.PARTIAL),
        F.when(F.col("partial"), F.map_keys("image")).alias(E.PRESENT),
        unfit_columns.cast("array<string>").alias(E.UNFIT),
        *carried,
    )


@dataclass(frozen=True)
class Typing:
    """How a segment's change set is typed: its columns with their Spark types, and those kept as text."""

    columns: tuple[tuple[str, str], ...]
    as_text: frozenset[str]

    @classmethod
    def of(cls, shape: TableShape, as_text: Collection[str]) -> Typing:
        return cls(tuple(shape.columns), frozenset(as_text))


def _segment_id(shape: TableShape) -> SegmentId:
    return (shape.db, shape.table, shape.segment)


class CollectedChangeSets:
    """A batch's typed change sets in the driver as Arrow, each segment's taken once (`change_set`).

    `segments`: those typed straight from the batch's cached `actions`, in the order they will be taken;
    `changes`: each table's changes in the batch (its segment's rows are at most that); `typing_of`: how a
    segment would be typed now, or None if it will not be typed from `actions` alone (its own turn says why)."""

    def __init__(
        self,
        actions: DataFrame,
        loaded_at: datetime,
        segments: Sequence[TableShape],
        changes: Mapping[TableId, int],
        typing_of: Callable[[TableShape], Typing | None],
        held_changes: int = HELD_CHANGES,
    ) -> None:
        self._actions, self._loaded_at, self._changes, self._typing_of = actions, loaded_at, changes, typing_of
        self._waiting = {_segment_id(s): s for s in segments}  # not collected yet
        self._held: dict[SegmentId, tuple[Typing, pa.Table]] = {}  # collected with an earlier segment
        self._held_changes, self._room = held_changes, held_changes

    def expects(self, shape: TableShape) -> bool:
        return _segment_id(shape) in self._waiting or _segment_id(shape) in self._held

    def change_set(self, shape: TableShape, as_text: Collection[str]) -> pa.Table:
        """The segment's typed change set (`typed_change_set` as Arrow): collected with an earlier segment typed
        alike, else now, with the waiting segments typed alike that the room for held changes allows (a segment
        larger than that room is collected alone: the split copies each segment's rows once)."""
        typing = Typing.of(shape, as_text)
        held = self._held.pop(_segment_id(shape), None)
        if held is not None:
            self._room += self._size(shape)
            if held[0] == typing:
                return held[1]
        self._waiting.pop(_segment_id(shape), None)
        if self._size(shape) > self._held_changes:  # alone, so that splitting never copies a large segment
            return typed_change_set(self._actions, shape, self._loaded_at, typing.as_text).toArrow()
        members = [shape, *self._alike(shape, typing)]
        member = F.when(segment_rows(shape), 0)
        for index, other in enumerate(members[1:], 1):
            member = member.when(segment_rows(other), index)
        rows = self._actions.where(reduce(operator.or_, map(segment_rows, members)))
        collected = _typed(rows, shape.columns, self._loaded_at, typing.as_text, member.alias(MEMBER)).toArrow()
        tables = [collected.filter(pc.equal(collected[MEMBER], i)).drop_columns([MEMBER]) for i in range(len(members))]
        for other, table in zip(members[1:], tables[1:], strict=True):
            self._held[_segment_id(other)] = (typing, table)
        return tables[0]

    def _size(self, shape: TableShape) -> int:
        return self._changes.get((shape.db, shape.table), 0)

    def _alike(self, shape: TableShape, typing: Typing) -> list[TableShape]:
        """The waiting segments typed as `typing`, as many as there is room to hold (taken off the waiting)."""
        alike = []
        for segment_id, other in list(self._waiting.items()):
            if tuple(other.columns) != typing.columns or self._size(other) > self._room:
                continue
            try:
                other_typing = self._typing_of(other)
            except Exception:  # e.g. a broken silver table: its own turn finds it again, and holds that table back
                other_typing = None
            if other_typing is None:
                del self._waiting[segment_id]
            elif other_typing == typing:
                del self._waiting[segment_id]
                self._room -= self._size(other)
                alike.append(other)
        return alike
