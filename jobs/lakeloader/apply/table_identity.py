"""A table's identity, (db, table), as a Python value and as a Spark column: what the change log, the
table-moves ledger, key actions and multisets match tables by."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

TableId = tuple[str, str]  # (db, table): db names may contain dots (OMS tenant.database)


def table_id(db: Column, table: Column) -> Column:
    """A (db, table) struct column, comparable with `table_id_literal`."""
    return F.struct(db.alias("db"), table.alias("table"))


def table_id_literal(name: TableId) -> Column:
    return table_id(F.lit(name[0]), F.lit(name[1]))


def per_table(values: dict[TableId, Column]) -> Column:
    """The value for the row's (db, table) out of a literal map (NULL for a table not in it)."""
    entries = [item for name, value in values.items() for item in (table_id_literal(name), value)]
    return F.create_map(*entries)[table_id(F.col("db"), F.col("table"))]
