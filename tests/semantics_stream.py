"""The semantics oracle's random stream (tests/spark/test_semantics.py), shared with the same oracle run with
`engine: delta_spark` (tests/system/test_delta_spark_oracle.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
H6, H7 = H5 + timedelta(hours=1), H5 + timedelta(hours=2)
AT = datetime(2026, 11, 21, 5, 30, tzinfo=UTC)
ITEMS = dw.TableSpec("shop", "items", (("id", "LONG"), ("name", "STRING"), ("qty", "LONG")), ("id",))


def item(id_: int, name: str, qty: int = 1) -> dict:
    return {"id": id_, "name": name, "qty": qty}


def random_stream(
    seed: int, table: dw.TableSpec = ITEMS, first_seq: int = 100
) -> tuple[dict[datetime, list[str]], list[tuple], list[datetime]]:
    """The oracle's stream of `seed` into `table` (ITEMS' columns), sequences from `first_seq`: each hour's
    DataWorks lines, the model's rows (id, name, qty) and the hour order to load them in."""
    rng = random.Random(seed)
    model: dict[int, dict] = {}
    messages: list[str] = []
    for seq in range(first_seq, first_seq + 60):
        key = rng.randrange(8)
        if key not in model:
            row = item(key, f"n{seq}", seq)
            model[key] = row
            messages += dw.insert(table, seq, AT, row)
        elif rng.random() < 0.3:
            messages += dw.delete(table, seq, AT, model.pop(key))
        else:
            new_key = key
            if rng.random() < 0.2 and (candidate := rng.randrange(8, 12)) not in model:
                new_key = candidate  # the update moves the row to a new key
            new = item(new_key, f"n{seq}", seq)
            messages += dw.update(table, seq, AT, model.pop(key), new, one_message=rng.random() < 0.5)
            model[new_key] = new
    messages += rng.sample(messages, 10)  # delivered twice
    rng.shuffle(messages)
    hours = [H5, H6, H7]
    files = {hour: messages[i::3] for i, hour in enumerate(hours)}
    order = rng.sample(hours, 3)
    return files, sorted((r["id"], r["name"], r["qty"]) for r in model.values()), order
