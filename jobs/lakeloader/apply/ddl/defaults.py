"""The value a column added by ALTER TABLE gives the rows the table already has.

MySQL, OceanBase and Oracle store a column's DEFAULT (MySQL: a NOT NULL number's or string's implicit 0 or '')
in every existing row when they add it, and no change message says so: the rows' next images carry it. So the
apply step fills it in, in the rows older than the statement (`lakeloader.apply.schema_changes`), and in the
images of changes older than it that are applied after it (`lakeloader.apply.ddl.columns`). Both read the value
from `fill`, as canonical text (`lakeloader.parse.canonical`) and as the Arrow value of the column's type.

A default this loader cannot know leaves the rows NULL: a non-constant one (CURRENT_TIMESTAMP, an expression),
one of a TIMESTAMP (an instant, written in the source session's zone, which the statement does not say), of a
binary column, or one the column's type cannot hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pyarrow as pa

from lakeloader.apply.ddl import statements as S
from lakeloader.apply.ddl.types import arrow_type

_INTEGERS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_WALL_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2}(\.\d{1,6})?)?")


@dataclass(frozen=True)
class Fill:
    """A column's value in the existing rows: `text` as the change images carry values, `value` as stored."""

    text: str
    value: pa.Scalar


def fill(column: S.Column) -> Fill | None:
    """The value the rows a table has get when `column` is added to it; None: they read NULL."""
    if column.default is None:
        return None
    try:
        text = _canonical(column.default.strip() if column.spark_type != "string" else column.default, column)
        return None if text is None else Fill(text, pa.array([text]).cast(arrow_type(column.spark_type))[0])
    except (ArithmeticError, InvalidOperation, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return None


def _canonical(text: str, column: S.Column) -> str | None:
    """The canonical text of `text` in the column's type, converted as the source converts a DEFAULT (a number
    rounded half up to the type's scale); None when the type cannot hold it or its value is not knowable."""
    spark_type = column.spark_type.replace(" ", "")
    if spark_type == "string":
        return text
    if spark_type in _INTEGERS:
        whole = Decimal(text).quantize(Decimal(1), ROUND_HALF_UP)
        bits = _INTEGERS[spark_type]
        return str(int(whole)) if -(2 ** (bits - 1)) <= whole < 2 ** (bits - 1) else None
    if match := _DECIMAL.fullmatch(spark_type):
        precision, scale = int(match[1]), int(match[2])
        rounded = Decimal(text).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)
        return format(rounded, "f") if len(rounded.as_tuple().digits) <= precision else None
    if spark_type in ("double", "float"):
        return repr(float(text))
    if spark_type == "boolean":
        return "true" if Decimal(text) != 0 else "false"
    if spark_type == "date":
        return date.fromisoformat(text).isoformat()
    if spark_type == "timestamp_ntz" and _WALL_CLOCK.fullmatch(text):
        return datetime.fromisoformat(text).isoformat(sep=" ")
    return None  # an instant (its zone is the source session's), binary, or a wall clock written otherwise
