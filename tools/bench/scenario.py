"""What one benchmark run loads: the change stream's size and shape and the tables it lands on.

Tables `bench.t00` .. are identical in shape (columns below, key `id`); table t holds the keys
0 .. rows_per_table-1 before the run, written in key order, so the most recently written keys are the
highest. A change is an INSERT of a new key (above every existing one), a one-message UPDATE
(`UPDATE_AFTER` with both images) or a DELETE; updates and deletes pick their key by `keys`:

- `local`: a share `hot_share` (0.8) of them hit the most recently written `hot_fraction` (10%) of the
  keys, the rest the older keys, uniformly;
- `uniform`: any existing key, uniformly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Literal

SOURCE, DB = "bench", "bench"
KEY = "id"
# DataWorks column types; silver types follow the parser's type table (LONG -> bigint, DATE -> timestamp ...).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "LONG"),
    ("customer_id", "LONG"),
    ("status", "STRING"),
    ("amount", "DOUBLE"),
    ("quantity", "LONG"),
    ("active", "BOOLEAN"),
    ("created_at", "DATE"),
    ("updated_at", "DATE"),
    ("note", "STRING"),
)
SPARK_TYPES = {"LONG": "bigint", "STRING": "string", "DOUBLE": "double", "BOOLEAN": "boolean", "DATE": "timestamp"}
FIRST_HOUR = datetime(2026, 11, 21, 0, tzinfo=UTC)
# Sequence ids of the stream start here; pre-existing rows carry smaller ones (their key + 1).
FIRST_SEQUENCE = 10**15

KeyDistribution = Literal["local", "uniform"]


@dataclass(frozen=True)
class Scenario:
    changes: int = 1_000_000
    tables: int = 20
    existing_rows: int = 10_000_000
    hours: int = 1
    keys: KeyDistribution = "local"
    hot_share: float = 0.8
    hot_fraction: float = 0.1
    insert_share: float = 0.1
    delete_share: float = 0.05
    seed: int = 7

    def __post_init__(self) -> None:
        if min(self.changes, self.tables, self.hours) < 1 or self.existing_rows < self.tables:
            raise ValueError("changes, tables and hours must be >= 1, existing_rows >= tables")
        if self.insert_share + self.delete_share > 1:
            raise ValueError("insert_share + delete_share must not exceed 1")

    @property
    def rows_per_table(self) -> int:
        return self.existing_rows // self.tables

    def table_names(self) -> list[str]:
        return [f"t{t:02d}" for t in range(self.tables)]

    def label(self) -> str:
        size = f"{_short(self.changes)} changes, {self.tables} tables, {_short(self.existing_rows)} rows"
        return f"{size}, {self.hours}h, {self.keys}"

    def as_dict(self) -> dict:
        return asdict(self)


def _short(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size and n % (size // 10) == 0:
            return f"{n / size:g}{unit}"
    return str(n)
