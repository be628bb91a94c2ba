"""Create (or update) the one-slot pool of every configured source in the Airflow metadata DB.

    python -m lakeloader_airflow.pools [--config FILE]

The hourly, replay and daily reconciliation DAGs run their lake-writing tasks in pool `lakeloader_<source>`
with one slot, so two of them never write a source's tables at once. Airflow has no way for a DAG to
declare a pool, and a task whose pool does not exist is never scheduled: the plugin's listener
(`pool_listener`) runs this whenever a scheduler starts; run it by hand after adding a source to a running
scheduler (or `airflow pools set lakeloader_<source> 1 ...`)."""

from __future__ import annotations

import argparse
import sys

from lakeloader.core.config import load_config
from lakeloader_airflow.dag_factory import pool_for


def ensure_pools(config: str | None = None) -> list[str]:
    from airflow.models.pool import Pool

    names = []
    for source in load_config(config).sources:
        name = pool_for(source.name)
        description = f"lakeloader {source.name}: one lake-writing task at a time (hourly, replay, reconcile)"
        Pool.create_or_update_pool(name, slots=1, description=description, include_deferred=False)
        names.append(name)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakeloader_airflow.pools", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    args = parser.parse_args(argv)
    for name in ensure_pools(args.config):
        print(f"pool {name}: 1 slot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
