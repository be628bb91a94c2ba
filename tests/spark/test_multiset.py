"""Tables without any key are multisets: identical rows count, a delete removes one copy, and the loaded table
equals a multiset model whatever the hour order, re-deliveries and reruns."""

from __future__ import annotations

import os
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeloader.apply.multiset import KEY
from lakeloader.apply.silver import recorded_key
from lakeloader.cli.local_runner import run_hours
from lakeloader.core import zones
from lakeloader.core.config import SourceConfig
from lakeloader.engine.deltars import DeltaRsEngine
from tools.cdcgen import dataworks as dw

H5 = datetime(2026, 11, 21, 5, tzinfo=UTC)
HOURS = [H5, H5 + timedelta(hours=1), H5 + timedelta(hours=2)]
AT = datetime(2026, 11, 21, 5, 30, tzinfo=UTC)
EVENTS = dw.TableSpec("shop", "events", (("kind", "STRING"), ("n", "LONG")), None)


def ev(kind: str, n: int) -> dict:
    return {"kind": kind, "n": n}


def load(spark, root: Path, files: dict[datetime, list[str]], order: list[datetime]) -> Counter:
    """Export the files, run the hours in `order`; the events table as a multiset of (kind, n)."""
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(root / "exports"), lake_root=str(root / "lake")
    )
    for hour, lines in files.items():
        path = root / "exports" / f"part-{hour:%H}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (hour.timestamp() + 60, hour.timestamp() + 60))
    run_hours(spark, source, order, emit=lambda _: None)
    uri = str(root / "lake" / zones.silver_table_dir("shop", "shop", "events"))
    assert recorded_key(DeltaRsEngine(), uri) == KEY
    return Counter((r["kind"], r["n"]) for r in DeltaRsEngine().read(uri).to_pylist())


def test_identical_rows_count_and_a_delete_or_update_takes_one_copy(spark, tmp_path):
    files = {
        HOURS[0]: [*dw.insert(EVENTS, 10, AT, ev("click", 1)), *dw.insert(EVENTS, 11, AT, ev("click", 1))],
        HOURS[1]: [
            *dw.insert(EVENTS, 12, AT, ev("click", 1)),
            *dw.delete(EVENTS, 13, AT, ev("click", 1)),
            *dw.update(EVENTS, 14, AT, ev("click", 1), ev("view", 2), one_message=True),
        ],
    }

    in_order = load(spark, tmp_path / "a", files, HOURS[:2])
    backwards_and_again = load(spark, tmp_path / "b", files, [HOURS[1], HOURS[0], HOURS[1], HOURS[0]])

    assert in_order == backwards_and_again == Counter({("click", 1): 1, ("view", 2): 1})


def test_the_copies_a_delete_or_update_left_keep_the_metadata_of_the_insert_that_gave_them(spark, tmp_path):
    files = {
        HOURS[0]: [
            *dw.insert(EVENTS, 10, AT, ev("click", 1)),
            *dw.insert(EVENTS, 11, AT, ev("click", 1)),
            *dw.delete(EVENTS, 12, AT, ev("click", 1)),
            *dw.insert(EVENTS, 13, AT, ev("view", 2)),
            *dw.insert(EVENTS, 14, AT, ev("view", 2)),
            *dw.update(EVENTS, 15, AT, ev("view", 2), ev("buy", 3), one_message=True),
        ]
    }
    load(spark, tmp_path, files, HOURS[:1])

    rows = DeltaRsEngine().read(str(tmp_path / "lake" / zones.silver_table_dir("shop", "shop", "events"))).to_pylist()
    assert sorted((r["kind"], r["_cdc_op"], int(r["_cdc_seq"]), r["_cdc_source_line"]) for r in rows) == [
        ("buy", "UPDATE", 15, 6),
        ("click", "INSERT", 11, 2),
        ("view", "INSERT", 14, 5),
    ]


def test_a_truncate_empties_a_multiset_and_older_copies_arriving_late_do_not_count(spark, tmp_path):
    truncate = dw.message(EVENTS, "TRUNCATE", 40, AT, ddl="TRUNCATE TABLE events")
    files = {
        HOURS[0]: [*dw.insert(EVENTS, 10, AT, ev("a", 1)), *dw.insert(EVENTS, 11, AT, ev("a", 1))],
        HOURS[1]: [*dw.insert(EVENTS, 39, AT, ev("a", 1)), truncate, *dw.insert(EVENTS, 41, AT, ev("a", 1))],
        HOURS[2]: [*dw.insert(EVENTS, 12, AT, ev("a", 1)), *dw.insert(EVENTS, 42, AT, ev("b", 2))],
    }

    in_order = load(spark, tmp_path / "a", files, HOURS)
    shuffled = load(spark, tmp_path / "b", files, [HOURS[0], HOURS[2], HOURS[1]])

    assert in_order == shuffled == Counter({("a", 1): 1, ("b", 2): 1})


@pytest.mark.parametrize("created", ["by a later hour", "after it in its hour"])
def test_a_truncate_applied_before_the_multiset_exists_still_drops_older_copies_exported_later(
    spark, tmp_path, created
):
    truncate = dw.message(EVENTS, "TRUNCATE", 40, AT, ddl="TRUNCATE TABLE events")
    newer = dw.insert(EVENTS, 42, AT, ev("b", 2))
    arrivals = {
        HOURS[1]: [truncate, *(newer if created == "after it in its hour" else [])],
        HOURS[2]: [*dw.insert(EVENTS, 12, AT, ev("a", 1)), *(newer if created == "by a later hour" else [])],
        HOURS[0]: [*dw.insert(EVENTS, 10, AT, ev("a", 1))],
    }
    source = SourceConfig(
        name="shop", format="dataworks_json", export_uri=str(tmp_path / "exports"), lake_root=str(tmp_path / "lake")
    )
    for hour, lines in arrivals.items():  # each hour's export written just before the hour runs: none lands early
        path = tmp_path / "exports" / f"part-{hour:%H}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (hour.timestamp() + 60, hour.timestamp() + 60))
        run_hours(spark, source, [hour], emit=lambda _: None)
    assert load(spark, tmp_path, arrivals, []) == Counter({("b", 2): 1})


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_streams_over_few_contents_equal_the_multiset_model(spark, tmp_path_factory, seed):
    """Inserts of few distinct contents (so copies pile up), deletes and updates of existing copies (both
    update modes), re-deliveries, shuffled over three hours, loaded in a random order and the first hour again."""
    rng = random.Random(seed)
    model: Counter = Counter()
    messages: list[str] = []
    for seq in range(100, 170):
        present = sorted(model.elements())
        roll = rng.random()
        if not present or roll < 0.5:
            row = ev(rng.choice("xy"), rng.randrange(2))
            model[(row["kind"], row["n"])] += 1
            messages += dw.insert(EVENTS, seq, AT, row)
        elif roll < 0.75:
            kind, n = rng.choice(present)
            model[(kind, n)] -= 1
            messages += dw.delete(EVENTS, seq, AT, ev(kind, n))
        else:
            kind, n = rng.choice(present)
            new = ev(rng.choice("xy"), rng.randrange(2))
            model[(kind, n)] -= 1
            model[(new["kind"], new["n"])] += 1
            messages += dw.update(EVENTS, seq, AT, ev(kind, n), new, one_message=rng.random() < 0.5)
    messages += rng.sample(messages, 10)  # delivered twice
    rng.shuffle(messages)
    files = {hour: messages[i::3] for i, hour in enumerate(HOURS)}
    order = rng.sample(HOURS, 3)

    loaded = load(spark, tmp_path_factory.mktemp("multiset"), files, [*order, order[0]])

    assert loaded == +model
