"""Progress of a local run: on a terminal, one line per step that redraws a bar of the step's Spark tasks.

`lakeloader run` (the local runner) can take minutes per hour; this shows which hour and step it is in, how far
the step's Spark stages are (tasks done of tasks known, from Spark's status tracker, polled by a thread), and how
long the step has taken. On a stream that is not a terminal (logs, CI) a line when a step starts and one when
it ends, with its duration.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

BAR_WIDTH = 24
POLL_SECONDS = 0.5


def bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """`[#####...]`: the share of `total` that is `done` (an empty bar while nothing is known)."""
    filled = 0 if total <= 0 else min(width, done * width // total)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def line(label: str, done: int, total: int, elapsed: float) -> str:
    """One progress line: label, bar, tasks and elapsed time."""
    tasks = f"{done}/{total} tasks" if total else "starting"
    return f"{label} {bar(done, total)} {tasks} {clock(elapsed)}"


class Progress:
    """Reports the steps of a run to `stream`; `tasks` gives (done, total) of the running Spark stages."""

    def __init__(self, stream: TextIO, tasks=None, step_count: int = 0) -> None:
        self.stream, self.tasks, self.step_count = stream, tasks, step_count
        self.live = bool(getattr(stream, "isatty", lambda: False)())
        self.finished = 0

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        """Around one step: `<label> ...` when it starts (a redrawn bar while it runs, on a terminal), then
        `<label> done in mm:ss (n/steps)`."""
        started, stop = time.monotonic(), threading.Event()
        drawer = None
        if self.live:
            drawer = threading.Thread(target=self._draw, args=(label, started, stop), daemon=True)
            drawer.start()
        else:
            self.stream.write(f"{label} ...\n")
            self.stream.flush()
        try:
            yield
        finally:
            stop.set()
            if drawer is not None:
                drawer.join()
            self.finished += 1
            counted = f" ({self.finished}/{self.step_count})" if self.step_count else ""
            erase = "\r\033[K" if self.live else ""
            self.stream.write(f"{erase}{label} done in {clock(time.monotonic() - started)}{counted}\n")
            self.stream.flush()

    def _draw(self, label: str, started: float, stop: threading.Event) -> None:
        while True:
            done, total = self.tasks() if self.tasks else (0, 0)
            self.stream.write("\r\033[K" + line(label, done, total, time.monotonic() - started))
            self.stream.flush()
            if stop.wait(POLL_SECONDS):
                return


def spark_tasks(spark):
    """(tasks done, tasks) of the stages Spark is running now, from its status tracker (no UI needed)."""
    tracker = spark.sparkContext.statusTracker()

    def tasks() -> tuple[int, int]:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        stages = [s for s in stages if s is not None]
        return sum(s.numCompletedTasks for s in stages), sum(s.numTasks for s in stages)

    return tasks
