"""Points of the total order (E.Point: seq, seq2 and the place after them, as `_cdc_position` holds it) as Spark
columns: a change's point compares with a statement's, a move's or a truncation's as one struct."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakeloader.engine import base as E
from lakeloader.parse import canonical as C


def change_point(seq: Column, seq2: Column, position: Column) -> Column:
    """A change's point; a NULL position (a row written before positions) counts as the oldest (E.NULL_AS_OLDEST)."""
    oldest = F.lit(E.NULL_AS_OLDEST[E.POSITION])
    return F.struct(
        seq.cast(C.SEQ_TYPE).alias("seq"),
        seq2.cast(C.SEQ_TYPE).alias("seq2"),
        F.coalesce(position, oldest).alias("position"),
    )


def point_literal(point: E.Point) -> Column:
    return change_point(F.lit(point[0]), F.lit(point[1]), F.lit(point[2]))
