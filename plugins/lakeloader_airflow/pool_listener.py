"""Creates the sources' one-slot pools whenever an Airflow scheduler, DAG processor or triggerer starts (an
Airflow lifecycle listener registered by the lakeloader plugin), so no pool has to be created by hand.

The pools only queue a source's lake-writing tasks one after another; the lake lock (lakeloader.core.lock) is what
keeps two writers of a source apart, whatever launched them.
"""

from __future__ import annotations

import logging

from airflow.listeners import hookimpl

log = logging.getLogger(__name__)


@hookimpl
def on_starting(component) -> None:
    """On a scheduler (or other job) start: create or update every configured source's pool. Task processes
    (which have no metadata database) are skipped; a failure is logged and never stops the component."""
    if not hasattr(component, "job_type"):
        return
    try:
        from lakeloader_airflow.pools import ensure_pools

        log.info("lakeloader pools ensured: %s", ", ".join(ensure_pools()))
    except Exception:
        log.exception("could not create the lakeloader pools; run `python -m lakeloader_airflow.pools`")
