"""The JVM fold of partial images (`jvm/src/lakeloader/jvm/FoldedHistories.java`) against the Spark SQL aggregate
it replaced, kept here as the reference: random histories of random keys, every output column compared."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeloader.apply import key_actions as K
from lakeloader.engine import base as E
from lakeloader.parse import canonical as C

SCHEMA = (
    "db string, table string, segment int, op string, seq decimal(38,0), seq2 decimal(38,0), event_time timestamp, "
    "origin_file string, origin_line long, origin_index int, origin_offset long, batch_hour string, "
    "before map<string,string>, after map<string,string>, after_partial boolean, origin_topic string, "
    "origin_partition int"
)
OPS = [C.INSERT, C.UPDATE, C.UPDATE, C.UPDATE, C.UPDATE_BEFORE, C.UPDATE_AFTER, C.DELETE]
HOURS = ["2026-11-21T05", "2026-11-21T06"]
# days a calendar would move (1582-10-09 is in the days the Julian calendar skipped), and one it would not
EVENT_DAYS = [datetime(y, m, d, tzinfo=UTC) for y, m, d in ((1500, 3, 1), (1582, 10, 9), (2026, 11, 21))]


def reference_folded(actions: DataFrame, newer: list[Column], delivered: list[Column]) -> DataFrame:
    """`key_actions._folded` as it was before the JVM fold: collect each key's actions, sort them with a lambda,
    fold them with `aggregate`."""
    fields = [c for c in actions.columns if c not in (K.KEY_HASH, *K.KEY_COLUMNS)]
    entry = F.struct(F.struct(*newer).alias("_newer"), F.struct(*delivered).alias("_delivered"), *fields)

    def newest_first(left: Column, right: Column) -> Column:
        a, b = left["_newer"], right["_newer"]
        c, d = left["_delivered"], right["_delivered"]
        return F.when(a > b, -1).when(a < b, 1).when(c < d, -1).when(c > d, 1).otherwise(0)

    def step(state: Column, action: Column) -> Column:
        overlaid = F.map_concat(
            F.map_filter(
                F.coalesce(state["image"], F.create_map().cast(C.IMAGE_TYPE)),
                lambda k, _: ~F.map_contains_key(action["image"], k),
            ),
            action["image"],
        )
        cleared = F.struct(F.lit(None).cast(C.IMAGE_TYPE).alias("image"), F.lit(True).alias("partial"))
        return (
            F.when(action[E.ACTION] == E.DELETE, cleared)
            .when(~action["partial"], F.struct(action["image"].alias("image"), F.lit(False).alias("partial")))
            .otherwise(F.struct(overlaid.alias("image"), state["partial"].alias("partial")))
        )

    history = F.array_sort(F.collect_list(entry), newest_first)
    grouped = actions.groupBy(K.KEY_HASH, *K.KEY_COLUMNS).agg(history.alias("_history"))
    start = F.struct(F.lit(None).cast(C.IMAGE_TYPE).alias("image"), F.lit(True).alias("partial"))
    grouped = grouped.select(
        *K.KEY_COLUMNS,
        F.col("_history")[0].alias("_deciding"),
        F.aggregate(F.reverse("_history"), start, step).alias("_folded"),
    )
    deciding, folded = F.col("_deciding"), F.col("_folded")
    deleted = deciding[E.ACTION] == E.DELETE
    return grouped.select(
        *K.KEY_COLUMNS,
        *[deciding[name].alias(name) for name in fields if name not in ("image", "partial")],
        F.when(deleted, deciding["image"]).otherwise(folded["image"]).alias("image"),
        F.when(deleted, F.lit(False)).otherwise(folded["partial"]).alias("partial"),
    )


def random_changes(rng: random.Random, n: int) -> list[tuple]:
    """Changes of a few keys of two tables: every op, partial and full images of 0-7 columns (Scala keeps the order
    of 4 at most), null images, null partial flags, keys that move, copies of one message in both hours, equal
    sequences, event times in and before the days of 1582 the Julian calendar skipped, and none."""
    rows: list[tuple] = []
    for i in range(n):
        table = rng.choice(["items", "orders"])
        key, moved = str(rng.randrange(40)), str(rng.randrange(40))
        op = rng.choice(OPS)
        columns = rng.sample(["name", "qty", "price", "note", "sku", "color", "size"], rng.randrange(0, 8))
        after = {"id": moved if op == C.UPDATE and rng.random() < 0.2 else key}
        after |= {c: rng.choice([None, f"{c}{i}"]) for c in columns}
        before = {"id": key, "name": f"old{i}"}
        if rng.random() < 0.05:
            after = None
        partial = rng.choice([True, True, False, None]) if op in (C.UPDATE, C.UPDATE_AFTER) else False
        event_time = rng.choice([None, *EVENT_DAYS])
        if event_time is not None:
            event_time += timedelta(microseconds=rng.randrange(10**9))
        hour = rng.choice(HOURS)
        offset = rng.randrange(40)
        row = (
            "shop",
            table,
            rng.choice([0, 0, 1]),
            op,
            Decimal(rng.randrange(30)),
            Decimal(rng.randrange(2)),
            event_time,
            f"export-{hour}",
            offset,
            rng.randrange(2),
            offset if rng.random() < 0.5 else None,
            hour,
            None if op == C.INSERT else before,
            None if op in (C.DELETE, C.UPDATE_BEFORE) else after,
            partial,
            "topic",
            0,
        )
        rows.append(row)
        if rng.random() < 0.2:  # the same message delivered again, in the other hour's file
            other = HOURS[1 - HOURS.index(hour)]
            rows.append((*row[:7], f"export-{other}", *row[8:11], other, *row[12:]))
    return rows


def comparable(frame: DataFrame) -> list[dict]:
    """Every row, its images as sorted entries (the JVM fold keeps no column order), in one order."""
    rows = [
        {k: sorted(v.items()) if isinstance(v, dict) else v for k, v in r.asDict().items()} for r in frame.collect()
    ]
    return sorted(rows, key=repr)


def test_the_jvm_fold_equals_the_aggregate_it_replaced_on_random_histories(spark, monkeypatch):
    rng = random.Random(29)
    data = spark.createDataFrame(random_changes(rng, 1500), SCHEMA).repartition(4)
    data = K.with_order(data, "shareplex_json")
    shapes = [
        K.TableShape("shop", table, [("id", "bigint"), ("name", "string")], ["id"], segment)
        for table in ("items", "orders")
        for segment in (0, 1)
    ]
    ours = comparable(K.key_actions(data, shapes, "shareplex_json"))
    monkeypatch.setattr(K, "_folded", reference_folded)
    reference = comparable(K.key_actions(data, shapes, "shareplex_json"))
    assert ours == reference
    assert len(ours) > 120
    assert any(len(r["image"] or []) > 4 for r in ours)  # images that a Scala map holds unordered
    assert {r["partial"] for r in ours} == {True, False}


def test_the_jvm_fold_runs_from_a_thread_other_than_the_one_that_added_the_jar(spark):
    """`collect_together` plans frames on pool threads: the JVM class must be found there too."""
    data = K.with_order(spark.createDataFrame(random_changes(random.Random(3), 50), SCHEMA), "shareplex_json")
    shapes = [K.TableShape("shop", t, [("id", "bigint")], ["id"]) for t in ("items", "orders")]
    with ThreadPoolExecutor(1) as pool:
        on_a_pool_thread = pool.submit(lambda: comparable(K.key_actions(data, shapes, "shareplex_json"))).result()
    assert on_a_pool_thread == comparable(K.key_actions(data, shapes, "shareplex_json"))
    assert len(on_a_pool_thread) > 20
