"""One writer per source: a lock object in the lake, taken by every step that writes a source's zones (land,
parse, apply, reconcile, replay), whatever launched it (Airflow, the local runner, a hand-run spark-submit).

The lock is `audit/<source>/lock.json`, created only if absent: `O_CREAT|O_EXCL` on a local or mounted
directory, a conditional put (`If-None-Match: *`) on S3. It names its owner (host, process, step), when it was
taken and its heartbeat, which a daemon thread renews every `HEARTBEAT_SECONDS`. A holder that died (kill -9,
a lost node) stops renewing it: once its heartbeat is older than `EXPIRY_SECONDS` the next writer takes it
over, at once when the holder was a process of the same host that no longer runs. A step that finds the
lock held fails at once with "source S is being written by <owner> since <time>".

Within one process the lock is re-entrant (a replay runs apply hour by hour under its own lock).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from lakeloader.core.errors import LakeloaderError
from lakeloader.core.storage import Store, open_store

T = TypeVar("T")

HEARTBEAT_SECONDS = 30.0
EXPIRY_SECONDS = 300.0  # ten missed heartbeats: the holder is dead

log = logging.getLogger(__name__)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_held: dict[tuple[str, str], int] = {}
_held_guard = threading.Lock()


class SourceBusy(LakeloaderError, RuntimeError):
    """Another writer holds the source's lock."""


def lock_key(source: str) -> str:
    return f"audit/{source}/lock.json"


@contextmanager
def source_lock(lake: Store, source: str, step: str, now=lambda: datetime.now(UTC)) -> Iterator[None]:
    """Hold the source's lake lock while the block runs (module docstring); raises SourceBusy if another
    writer holds it."""
    ident = (lake.uri, source)
    with _held_guard:
        if _held.get(ident):
            _held[ident] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                _held[ident] -= 1
        return
    key = lock_key(source)
    owner = f"{socket.gethostname()}:{os.getpid()}:{step}:{uuid.uuid4().hex[:8]}"
    since = now().replace(microsecond=0).isoformat()
    _acquire(lake, key, source, owner, since, now)
    with _held_guard:
        _held[ident] = 1
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(lake, key, owner, since, stop, now), daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join(timeout=5)
        with _held_guard:
            _held.pop(ident, None)
        _release(lake, key, owner)


def _record(owner: str, since: str, now) -> bytes:
    beat = now().replace(microsecond=0).isoformat()
    return json.dumps({"owner": owner, "since": since, "heartbeat": beat}).encode()


def _acquire(lake: Store, key: str, source: str, owner: str, since: str, now) -> None:
    for _ in range(3):
        if lake.create_exclusive(key, _record(owner, since, now)):
            return
        current = _read(lake, key)
        if current is None:
            continue  # released meanwhile
        stored = lake.stat(key)
        beat = current.get("heartbeat")  # a record without one (not ours): the object's own time
        heartbeat = datetime.fromisoformat(beat) if beat else stored.modified if stored else _EPOCH
        if now() - heartbeat <= timedelta(seconds=EXPIRY_SECONDS) and not _dead_here(current.get("owner") or ""):
            raise SourceBusy(
                f"source {source} is being written by {current.get('owner')} since {current.get('since')} "
                f"(last heartbeat {current.get('heartbeat')}; lock {lake.child(key)})"
            )
        log.warning("taking over the lock of source %s from %s: no heartbeat since %s", source, current, heartbeat)
        lake.delete(key)  # a dead holder's: the exclusive create above decides between concurrent takers
    raise SourceBusy(f"source {source}: could not take its lock {lake.child(key)} (contended)")


def _dead_here(owner: str) -> bool:
    """Whether the owner is a process of this host that no longer runs (killed: its lock can go at once)."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _read(lake: Store, key: str) -> dict | None:
    try:
        return json.loads(lake.read_bytes(key))
    except (FileNotFoundError, ValueError):
        return None
    except Exception as error:  # S3: NoSuchKey
        if "NoSuchKey" in type(error).__name__ or "NoSuchKey" in str(error):
            return None
        raise


def _heartbeat(lake: Store, key: str, owner: str, since: str, stop: threading.Event, now) -> None:
    while not stop.wait(HEARTBEAT_SECONDS):
        try:
            current = _read(lake, key)
            if current is None or current.get("owner") != owner:
                log.error("lost the lake lock %s (now %s)", key, current)
                return
            lake.write_bytes(key, _record(owner, since, now))
        except Exception:  # a missed beat is retried; ten in a row let another writer take over
            log.exception("could not renew the lake lock %s", key)


def _release(lake: Store, key: str, owner: str) -> None:
    current = _read(lake, key)
    if current is not None and current.get("owner") == owner:
        lake.delete(key)


def writes_source(step: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Run a step function under its source's lock. The function takes the source (a SourceConfig) as its
    `source` argument and an optional `lake` store; the lock is taken on that store (or on the source's lake)."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def locked(*args: Any, **kwargs: Any) -> T:
            bound = signature.bind(*args, **kwargs)
            source = bound.arguments["source"]
            lake = bound.arguments.get("lake") or open_store(source.lake_root, source.s3_endpoint_url)
            bound.arguments["lake"] = lake
            with source_lock(lake, source.name, step):
                return function(*bound.args, **bound.kwargs)

        return locked

    return decorate
