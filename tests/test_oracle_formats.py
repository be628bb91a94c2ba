"""The oracle in every wire format: one random change stream (inserts, updates in place and to a new key,
deletes) applied to a model in true order, written in each format, shuffled over three hours' files with
re-deliveries where the format's ordering key allows it, loaded in a random hour order and rerun: silver
equals the model."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from format_support import run, silver_rows, source_for, write_export

from lakeloader.generator import wire

HOURS = [wire.BASE + timedelta(hours=h) for h in range(3)]


def stream(rng: random.Random, changes: int = 60) -> tuple[list[wire.Change], dict[int, dict]]:
    """Random changes over a few keys, and the table they leave (the model)."""
    model: dict[int, dict] = {}
    stream_ = []
    for seq in range(1, changes + 1):
        key = rng.randrange(8)
        if key not in model:
            model[key] = {"id": key, "name": f"n{seq}", "qty": seq}
            stream_.append(wire.Change(wire.INSERT, seq, None, model[key]))
        elif rng.random() < 0.3:
            stream_.append(wire.Change(wire.DELETE, seq, model.pop(key), None))
        else:
            new_key = key
            if rng.random() < 0.2 and (candidate := rng.randrange(8, 12)) not in model:
                new_key = candidate  # the update moves the row to a new key
            after = {"id": new_key, "name": f"n{seq}" if rng.random() < 0.7 else model[key]["name"], "qty": seq}
            stream_.append(wire.Change(wire.UPDATE, seq, model.pop(key), after))
            model[new_key] = after
    return stream_, model


@pytest.mark.parametrize("fmt", sorted(wire.WRITERS))
def test_a_random_stream_in_each_format_loads_to_the_model(spark, tmp_path, fmt):
    rng = random.Random(f"oracle-{fmt}")
    changes, model = stream(rng)
    messages = [line for change in changes for line in wire.WRITERS[fmt](change)]
    if fmt in wire.ORDERED_BY_EXPORT_POSITION:
        files = {hour: messages[i * len(messages) // 3 : (i + 1) * len(messages) // 3] for i, hour in enumerate(HOURS)}
        order = HOURS  # later hours win: they must hold the later messages
    else:
        messages += rng.sample(messages, 10)  # delivered twice
        rng.shuffle(messages)
        files = {hour: messages[i::3] for i, hour in enumerate(HOURS)}
        order = rng.sample(HOURS, 3)
    source = source_for(fmt, tmp_path, **wire.settings(fmt))
    for hour, lines in files.items():
        write_export(source, f"items-topic/part-{hour:%H}.json", lines, hour)

    run(spark, source, [*order, *order])

    expected = sorted(({k: str(v) for k, v in row.items()} for row in model.values()), key=lambda r: int(r["id"]))
    loaded = [{k: str(v) for k, v in row.items()} for row in silver_rows(source, wire.DB, wire.TABLE)]
    assert sorted(loaded, key=lambda r: int(r["id"])) == expected
