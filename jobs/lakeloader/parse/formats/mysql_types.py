"""MySQL column types as Canal-style messages declare them (`mysqlType`: 'decimal(8,3) unsigned zerofill',
'varchar(20)', 'tinyint(1)', 'bigint unsigned') -> struct(conv, type), and the converters of their values.

The mapping is lakeloader.parse.formats.source_types (shared with the DDL path and OMS's type names): UNSIGNED
integers widen, TINYINT(1)/BOOL are boolean, DECIMAL(p,s) is decimal(p,s) within Spark's 38 digits and the exact
number text beyond or without a precision, FLOAT float, DATETIME timestamp_ntz, TIMESTAMP timestamp, TIME string,
binary and spatial types binary. Binary values are written per the source's `canal_binary_encoding`: 'latin1'
(open-source Canal: one ISO-8859-1 character per byte) or 'base64' (OMS). BIT follows the same choice: Base64
bytes, or (open-source Canal) its value as a number -> decimal(20,0); and OMS's integer type names carry no
signedness, so with 'base64' every integer is typed to hold its UNSIGNED range too.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.parse.formats import ob_types, source_types
from lakeloader.parse.formats.common import Converter, base64_text, checked_base64, configured_converters


def _reading(binary_encoding: str) -> dict[str, bool]:
    """How declarations read per producer. Open-source Canal (ISO-8859-1 binary) sends a BIT's value as a number.
    OMS (Base64 binary) declares OMS's type names, which carry no signedness (seed 002's Canal example: `int64` for
    a signed BIGINT, `bigint` holding 10223372036854775806): every integer takes the type that also holds its
    UNSIGNED range, as in OMS's other formats (lakeloader.parse.formats.ob_types)."""
    return {"bit_as_number": binary_encoding == "latin1", "signedness_unknown": binary_encoding == "base64"}


def sampled_resolutions(messages: DataFrame, declarations: Column, binary_encoding: str) -> source_types.Resolutions:
    """The declarations of the batch's first messages, resolved once (`source_types.sampled_resolutions`) by the
    one mapping of lakeloader.parse.formats.source_types (a NULL declaration is a string), as the producer that
    `binary_encoding` implies declares them (`_reading`)."""
    return source_types.sampled_resolutions(messages, declarations, **_reading(binary_encoding))


def table_resolver(resolutions: source_types.Resolutions, binary_encoding: str) -> source_types.Resolver:
    """struct(conv, type) of a declared MySQL type, answered from `resolutions` where they hold the declaration
    (`source_types.table_resolver`), read as `sampled_resolutions` reads it."""
    return source_types.table_resolver(resolutions, **_reading(binary_encoding))


def _latin1_binary(v: Column, _type: Column | None = None) -> Column:
    """Bytes written as one ISO-8859-1 character each (open-source Canal) -> canonical Base64."""
    return F.when(v.rlike(r"^[\x{0}-\x{FF}]*$"), base64_text(F.encode(v, "ISO-8859-1")))


def configured(binary_encoding: str, column_types: Mapping[str, Mapping[str, str]]) -> dict[str, Converter]:
    """The converters of the columns the source's `column_types` types: values as OMS writes them, binary in the
    source's encoding."""
    by_family = ob_types.SPARK_TYPED_CONVERTERS | {"binary": converters(binary_encoding)["binary"]}
    return configured_converters(by_family, column_types)


def converters(binary_encoding: str) -> dict[str, Converter]:
    """The converter of each `conv` that `table_resolver` assigns (other columns keep their text)."""
    return {
        **ob_types.CONVERTERS,
        "binary": checked_base64 if binary_encoding == "base64" else _latin1_binary,
    }


# the greatest value of each integer type a declaration may name bare; a MEDIUMINT's type holds its UNSIGNED range
_SIGNED_MAX = {"tinyint": 2**7 - 1, "smallint": 2**15 - 1, "int": 2**31 - 1, "integer": 2**31 - 1, "bigint": 2**63 - 1}


def unsigned_as_values_show(declared: Column, *images: Column) -> Column:
    """`declared` (a message's `mysqlType`) with ' unsigned' added to each bare integer declaration ('int',
    'bigint', no width or other word) of a column one of `images` (arrays of rows) gives a value beyond its signed
    range: DTS declares types without their parameters (seed 004, "mysqlType": precision and the like are not
    given), so its 'bigint' may be a BIGINT UNSIGNED, and such a value is the word it left out, not an error."""
    limits = F.create_map(*[F.lit(v) for pair in _SIGNED_MAX.items() for v in (pair[0], str(pair[1]))])
    empty = F.array().cast("array<map<string,string>>")

    def unsigned(name: Column, declaration: Column) -> Column:
        limit = F.element_at(limits, F.lower(F.trim(declaration))).cast("decimal(20,0)")
        values = F.concat(*[F.transform(F.coalesce(rows, empty), lambda row: row[name]) for rows in images])
        beyond = F.exists(values, lambda v: v.rlike("^[0-9]{1,20}$") & (v.cast("decimal(20,0)") > limit))
        return F.when(limit.isNotNull() & beyond, F.concat(declaration, F.lit(" unsigned"))).otherwise(declaration)

    return F.transform_values(declared, unsigned)
