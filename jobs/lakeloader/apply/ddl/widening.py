"""One lattice of safe type widenings (Spark SQL type names), used by DDL and by data that outgrows a column.

A widening from `old` to `new` holds every value of `old` exactly in `new`:
- integers: tinyint -> smallint -> int -> bigint; an integer into a decimal with enough integer digits
  (3, 5, 10, 19); tinyint and smallint into float, up to int into double (their values are exact there);
- float -> double; decimal(p,s) -> decimal(p',s') when s' >= s and p'-s' >= p-s (neither the scale nor the
  integer digits shrink); date -> timestamp_ntz (midnight);
- anything -> string, when the caller allows it (a DDL statement saying so; data never widens to text).

`widest` is the lattice's join: the narrowest type holding every value of two types, what a silver column
becomes when a batch declares a type it cannot hold (Canal's mysqlType int -> bigint, Debezium int32 ->
int64, a larger decimal). bigint and double, or a decimal and a float, have no exact join.
"""

from __future__ import annotations

import re

INTEGERS = ("tinyint", "smallint", "int", "bigint")
_INTEGER_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}
_EXACT_IN = {"float": ("tinyint", "smallint"), "double": ("tinyint", "smallint", "int", "float")}
MAX_DECIMAL_PRECISION = 38
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def decimal_parts(spark_type: str) -> tuple[int, int] | None:
    """(precision, scale) of a decimal type name, else None."""
    match = _DECIMAL.fullmatch(spark_type.replace(" ", ""))
    return (int(match[1]), int(match[2])) if match else None


def _digits(spark_type: str) -> tuple[int, int] | None:
    """(integer digits, scale) that a decimal needs to hold every value of an integer or decimal type."""
    if spark_type in _INTEGER_DIGITS:
        return _INTEGER_DIGITS[spark_type], 0
    if parts := decimal_parts(spark_type):
        return parts[0] - parts[1], parts[1]
    return None


def is_widening(old: str, new: str, to_string: bool = True) -> bool:
    """Whether every value of `old` is exactly representable in `new` (see the module docstring); `to_string`:
    whether string counts as holding everything."""
    if old == new:
        return True
    if new == "string":
        return to_string
    if old in INTEGERS and new in INTEGERS:
        return INTEGERS.index(old) <= INTEGERS.index(new)
    if old in _EXACT_IN.get(new, ()):
        return True
    if (need := _digits(old)) and (have := decimal_parts(new)):
        return have[1] >= need[1] and have[0] - have[1] >= need[0]
    return old == "date" and new == "timestamp_ntz"


def widest(a: str, b: str) -> str | None:
    """The narrowest type holding every value of both `a` and `b` (never string), or None when no type does."""
    if is_widening(a, b, to_string=False):
        return b
    if is_widening(b, a, to_string=False):
        return a
    need_a, need_b = _digits(a), _digits(b)
    if need_a and need_b:
        integer_digits, scale = max(need_a[0], need_b[0]), max(need_a[1], need_b[1])
        if integer_digits + scale <= MAX_DECIMAL_PRECISION:
            return f"decimal({integer_digits + scale},{scale})"
        return None
    if is_widening(a, "double", to_string=False) and is_widening(b, "double", to_string=False):
        return "double"
    return None
