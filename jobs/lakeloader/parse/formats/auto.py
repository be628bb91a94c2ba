"""`format: auto`: each message's wire format recognised from its shape, then parsed by that format's parser.

A configured format always wins; auto is for topics that carry several formats, or a first look at an export.
Recognition reads each line's top-level JSON keys (`from_json` as a map of raw values, after `exact_numbers`,
so it costs one more pass over the text than a configured format) and takes the first of the formats' shapes
that matches (`Shape` in lakeloader.core.format_registry, most specific first); files named `*.csv` (optionally
compressed) are DataHub TUPLE CSV. A line that matches no shape is quarantined with AUTO_UNRECOGNISED as its
reason. The format-specific settings (`db`, `column_types`, ...) apply to the messages of their format.
"""

from __future__ import annotations

import functools
import operator

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeloader.core import format_registry as registry
from lakeloader.core.config import SourceConfig
from lakeloader.core.format_registry import Shape
from lakeloader.parse import canonical as C
from lakeloader.parse.formats.common import REJECT_REASON, exact_numbers, framing

AUTO_UNRECOGNISED = "format auto: the message matches no supported wire format"
FORMAT = "_wire_format"
_RAW = T.MapType(T.StringType(), T.StringType())


def _rules(text: Column, origin_file: Column) -> list[tuple[str, Column]]:
    """Each format's shapes (lakeloader.core.format_registry) as conditions on the line, in the order they are tried."""
    top = F.from_json(exact_numbers(text), _RAW)  # type: ignore[arg-type]  # quoted numbers: no number is too long for the JSON reader
    keys, payload_keys = F.map_keys(top), F.map_keys(F.from_json(top["payload"], _RAW))  # type: ignore[arg-type]

    def condition(shape: Shape) -> Column:
        parts = [has(keys, *shape.keys)] if shape.keys else []
        parts += [has(payload_keys, *shape.payload_keys)] if shape.payload_keys else []
        parts += [top[key] == value for key, value in shape.equal]
        if shape.contains:
            fields, part = shape.contains
            parts.append(F.concat_ws("", *[top[field] for field in fields]).contains(part))
        parts += [origin_file.rlike(shape.file_name)] if shape.file_name else []
        return functools.reduce(operator.and_, parts)

    return [(name, condition(shape)) for name, shape in registry.shapes()]


def has(keys: Column, *names: str) -> Column:
    """Whether every name is among the keys."""
    condition = F.array_contains(keys, names[0])
    for name in names[1:]:
        condition = condition & F.array_contains(keys, name)
    return condition


def detected_format(text: Column, origin_file: Column) -> Column:
    """The name of the first format whose rule the line matches, else NULL."""
    rules = _rules(text, origin_file)
    return F.coalesce(*[F.when(F.coalesce(rule, F.lit(False)), F.lit(name)) for name, rule in rules])


def parse(lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame:
    """Each line parsed by the parser of the format it is recognised as (with its JVM common-case reader unless
    not `common_case`); unrecognised lines quarantined."""
    marked = lines.withColumn(FORMAT, detected_format(F.col("text"), F.col("origin_file")))
    # one small aggregate: which formats occur, so only their parsers join the plan
    present = sorted(r[FORMAT] for r in marked.select(FORMAT).distinct().collect() if r[FORMAT] is not None)
    parts = [
        registry.parser(name)(marked.where(F.col(FORMAT) == name).drop(FORMAT), source, common_case) for name in present
    ]
    parts.append(_unrecognised(marked.where(F.col(FORMAT).isNull())))
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _unrecognised(lines: DataFrame) -> DataFrame:
    given = {name: F.col(name) for name in C.CHANGE_SCHEMA.names if name in lines.columns}
    given["origin_index"] = F.lit(0)
    return lines.select(
        *[given.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in C.CHANGE_SCHEMA.fields],
        F.lit(AUTO_UNRECOGNISED).alias(REJECT_REASON),
        F.col("text"),
        *framing(lines),
    )
