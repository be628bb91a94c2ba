"""The table-engine contract as one scripted exercise, run against each engine (tests/system/test_engine_contract.py):
every `TableEngine` operation the loader uses, on one table, with what each returned or left behind. Both
engines must give the same record. Run as a script it exercises the Delta-on-Spark engine in its own Spark
(the pinned jars must be in the JVM when it starts) and prints the record as JSON:

    python tests/engine_contract.py WORKDIR [S3_ENDPOINT BUCKET]   (AWS_* credentials in the environment)
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

from lakeloader.engine import base as E

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("n", pa.int32()),
        *E.METADATA_FIELDS,
    ]
)
COMMIT = {"lakeloader.step": "contract"}


def change_set(rows: list[tuple]) -> pa.Table:
    """(id, name, n, seq, action[, present]) rows as a change set; `present` makes the row partial."""
    partial = any(len(r) > 5 for r in rows)
    columns = {
        "id": pa.array([r[0] for r in rows], pa.int64()),
        "name": pa.array([r[1] for r in rows], pa.string()),
        "n": pa.array([r[2] for r in rows], pa.int32()),
        E.SEQ: pa.array([Decimal(r[3]) for r in rows], pa.decimal128(38, 0)),
        E.SEQ2: pa.array([Decimal(0)] * len(rows), pa.decimal128(38, 0)),
        E.OP: pa.array(["u"] * len(rows)),
        E.EVENT_TIME: pa.array([None] * len(rows), pa.timestamp("us", tz="UTC")),
        E.SOURCE_FILE: pa.array(["f"] * len(rows)),
        E.SOURCE_LINE: pa.array([r[3] for r in rows], pa.int64()),
        E.POSITION: pa.array([None] * len(rows), pa.string()),
        E.LOADED_AT: pa.array([None] * len(rows), pa.timestamp("us", tz="UTC")),
        E.ACTION: pa.array([r[4] for r in rows]),
    }
    if partial:
        columns[E.PARTIAL] = pa.array([len(r) > 5 for r in rows])
        columns[E.PRESENT] = pa.array([list(r[5]) if len(r) > 5 else [] for r in rows], pa.list_(pa.string()))
    return pa.table(columns)


def rows(engine, uri: str, columns: tuple[str, ...] = ("id", "name", "n")) -> list[list]:
    table = engine.read(uri)
    return sorted([[row[c] for c in columns if c in row] for row in table.to_pylist()], key=repr)


def exercise(engine, root: str) -> dict:
    """Every operation once; the record of results (plain JSON values)."""
    uri, copy, audit = f"{root}/t", f"{root}/copy", f"{root}/audit"
    record: dict = {"exists_before": engine.exists(uri)}
    engine.create(uri, SCHEMA, {"primary_key": '["id"]'}, COMMIT, file_size=1 << 20)
    record["exists_after"] = engine.exists(uri)
    record["properties"] = engine.properties(uri)
    engine.set_properties(uri, {"lakeloader.schemaSeq": "[7, 0]"}, COMMIT)
    record["properties_set"] = engine.properties(uri)
    record["schema"] = [f"{f.name}:{f.type}" for f in engine.schema(uri)]
    order = ORDER
    first = engine.merge(
        uri, change_set([(1, "a", 1, 10, "upsert"), (2, "b", 2, 10, "upsert"), (3, "c", 3, 10, "upsert")]), ["id"],
        order, COMMIT,
    )  # fmt: skip
    # id 1: an older upsert is ignored; id 2: newer, partial (only n); id 3: newer delete; id 4: a delete of nothing
    second = engine.merge(
        uri,
        change_set(
            [(1, "old", 9, 5, "upsert"), (2, "ignored", 20, 11, "upsert", ["id", "n"]), (3, None, None, 12, "delete"),
             (4, None, None, 12, "delete")]
        ),
        ["id"],
        order,
        COMMIT,
    )  # fmt: skip
    record["merges"] = [[m.inserted, m.updated, m.deleted] for m in (first, second)]
    record["after_merges"] = rows(engine, uri)
    projected = engine.read(uri, ["n", "id"])
    record["read_columns"] = [projected.column_names, sorted(projected.to_pylist(), key=repr)]
    newer = E.after((E.SEQ, E.SEQ2), (Decimal(10), Decimal(0)))
    record["row_count"] = [engine.row_count(uri), engine.row_count(uri, newer)]  # all; those newer than (10, 0)
    record["converts"] = [engine.converts(uri, "name", pa.int64()), engine.converts(uri, "n", pa.int8())]
    engine.add_columns(uri, [pa.field("extra", pa.string())], COMMIT)
    engine.widen_columns(uri, [pa.field("n", pa.int64())], COMMIT)
    record["widened"] = [f"{f.name}:{f.type}" for f in engine.schema(uri) if f.name in ("n", "extra")]
    record["properties_kept"] = engine.properties(uri)
    deleted = engine.delete_where(uri, E.And((E.Compare("id", ">=", 2), E.NotNull("name"))), COMMIT)
    record["deleted"] = [deleted, rows(engine, uri)]

    def upper(batch: pa.Table) -> pa.Table:
        return batch.rename_columns([c.upper() if c == "name" else c for c in batch.column_names])

    renamed = pa.schema([f.with_name("NAME") if f.name == "name" else f for f in engine.schema(uri)])
    engine.rewrite(uri, renamed, upper, COMMIT)
    record["rewritten"] = rows(engine, uri, ("id", "NAME", "n"))
    engine.merge(uri, change_set([(5, "e", 5, 20, "upsert")]).rename_columns(
        ["id", "NAME", *change_set([]).column_names[2:]]), ["id"], order, COMMIT)  # fmt: skip
    record["reclustered_files"] = engine.recluster(uri, ["id"], 1 << 20, COMMIT)
    record["clustered"] = engine.clustered(uri, "id", 1 << 20)
    engine.replace_with(copy, uri, COMMIT)
    record["replaced"] = [rows(engine, copy, ("id", "NAME")), engine.properties(copy)]
    engine.append(audit, pa.table({"hour": ["2026-01-01T00"], "rows": pa.array([3], pa.int64())}))
    engine.append(audit, pa.table({"hour": ["2026-01-01T01"], "rows": pa.array([4], pa.int64())}))
    record["appended"] = rows(engine, audit, ("hour", "rows"))
    record["version_grows"] = engine.version(uri) > first.version
    record["checkpoints"] = _checkpoints(uri)
    return record


def _checkpoints(uri: str) -> dict:
    """The table's checkpoint interval (every table the engines create: 10 commits) and whether its log has a
    checkpoint after the dozen commits `exercise` made."""
    from deltalake import DeltaTable

    configuration = DeltaTable(uri).metadata().configuration
    log = Path(uri) / "_delta_log"
    return {"interval": configuration.get("delta.checkpointInterval"), "written": any(log.glob("*.checkpoint.parquet"))}


ORDER = (E.SEQ, E.SEQ2, E.POSITION)
# written by delta-rs before the script runs (`start_crossing`), continued by Delta on Spark in it
CROSSING = "crossing"


def start_crossing(engine, root: str) -> None:
    """A table created and merged by one engine, for the other to continue (`continue_crossing`)."""
    uri = f"{root}/{CROSSING}"
    engine.create(uri, SCHEMA, {"primary_key": '["id"]'}, COMMIT)
    engine.merge(uri, change_set([(1, "a", 1, 10, "upsert"), (2, "b", 2, 10, "upsert")]), ["id"], ORDER, COMMIT)


def continue_crossing(engine, root: str, seq: int) -> list[list]:
    """The other engine merges into the table: 1 updated, one new row with the next id; returns the rows."""
    uri = f"{root}/{CROSSING}"
    next_id = len(engine.read(uri)) + 1
    engine.merge(
        uri, change_set([(1, f"a{seq}", 1, seq, "upsert"), (next_id, "n", next_id, seq, "upsert")]), ["id"], ORDER,
        COMMIT,
    )  # fmt: skip
    return rows(engine, uri)


def main(workdir: str, endpoint: str | None = None, bucket: str | None = None) -> None:
    """The exercise with the Delta-on-Spark engine in a local directory and, given an S3 endpoint and bucket, on
    S3 through s3a, in one Spark; then Delta on Spark continues `workdir`'s crossing table if delta-rs started
    one. Prints {"local": record, "crossing": rows, "s3": record}."""
    from lakeloader.core.spark_conf import jars_conf, s3a_conf
    from lakeloader.engine.deltaspark import DeltaSparkEngine
    from lakeloader.spark import spark_session

    conf = {**jars_conf(), "spark.sql.shuffle.partitions": "1", "spark.local.dir": workdir}
    conf |= s3a_conf(endpoint) if endpoint else {}
    spark = spark_session("engine-contract", master="local[1]", conf=conf)
    engine = DeltaSparkEngine(spark)
    records: dict = {"local": exercise(engine, f"{workdir}/tables")}
    if engine.exists(f"{workdir}/{CROSSING}"):
        records["crossing"] = continue_crossing(engine, workdir, seq=20)
    if endpoint and bucket:
        records["s3"] = exercise(engine, f"s3://{bucket}/contract")
    spark.stop()
    print(json.dumps(records, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:4])
