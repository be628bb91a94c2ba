"""The local run's progress lines (lakeloader.cli.progress): a bar of a step's Spark tasks on a terminal, a
line per step start and end elsewhere."""

from __future__ import annotations

import io
import time

from lakeloader.cli import progress
from lakeloader.cli.progress import Progress, bar, clock, line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_fills_with_the_share_of_tasks_done() -> None:
    assert bar(0, 0, width=4) == "[....]"
    assert bar(1, 4, width=4) == "[#...]"
    assert bar(9, 8, width=4) == "[####]"
    assert clock(125.9) == "02:05"
    assert line("parse 2026-11-21T05", 3, 12, 7) == "parse 2026-11-21T05 [######..................] 3/12 tasks 00:07"
    assert line("land 2026-11-21T05", 0, 0, 0).endswith("starting 00:00")


def test_on_a_terminal_a_step_redraws_its_bar_then_prints_its_duration(monkeypatch) -> None:
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.01)
    stream, polled = Terminal(), iter([(0, 4), (2, 4), (4, 4)] + [(4, 4)] * 1000)
    shown = Progress(stream, lambda: next(polled), step_count=3)
    with shown.step("parse 2026-11-21T05"):
        time.sleep(0.1)
    text = stream.getvalue()
    assert "\r\x1b[Kparse 2026-11-21T05 [" in text and "2/4 tasks" in text and "4/4 tasks" in text
    assert text.endswith("\r\x1b[Kparse 2026-11-21T05 done in 00:00 (1/3)\n")


def test_elsewhere_each_step_gets_a_start_and_an_end_line() -> None:
    stream = io.StringIO()
    shown = Progress(stream, lambda: (1, 2), step_count=2)
    for step in ("land", "parse"):
        with shown.step(f"{step} 2026-11-21T05"):
            pass
    assert stream.getvalue().splitlines() == [
        "land 2026-11-21T05 ...",
        "land 2026-11-21T05 done in 00:00 (1/2)",
        "parse 2026-11-21T05 ...",
        "parse 2026-11-21T05 done in 00:00 (2/2)",
    ]
