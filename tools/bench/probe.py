"""Time, CPU, peak memory and machine load of each benchmark phase, for the Python driver and the Spark JVM.

Peak memory is each process's resident-set high-water mark (`VmHWM` in /proc/<pid>/status), reset at the
start of every phase by writing 5 to /proc/<pid>/clear_refs, so a phase's peak is its own and not an
earlier phase's. Where the reset is not allowed, a sampler thread (every 50 ms) records the peak of
`VmRSS` instead. The Python driver is this process (delta-rs merges run in it); the JVM is the Spark
driver (in local mode it runs the executors too).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

SAMPLE_SECONDS = 0.05
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class PhaseRecord:
    """One measured phase. `changes` is the number of change messages the phase handled (for rates)."""

    name: str
    changes: int
    seconds: float = 0.0
    driver_peak_mb: float = 0.0
    jvm_peak_mb: float = 0.0
    driver_cpu_seconds: float = 0.0
    jvm_cpu_seconds: float = 0.0
    load_before: float = 0.0
    load_after: float = 0.0
    details: dict = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.changes / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "changes_per_second": round(self.per_second, 1)}


def _status_kb(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    # fields after the parenthesised command name: utime and stime are the 12th and 13th
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class _Sampler(threading.Thread):
    """Peak VmRSS of some processes since the last `reset()`."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(daemon=True, name="bench-memory-sampler")
        self.pids = pids
        self.peaks = dict.fromkeys(pids, 0)
        self.stopped = threading.Event()

    def reset(self) -> None:
        self.peaks = {pid: _status_kb(pid, "VmRSS") for pid in self.pids}

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            for pid in self.pids:
                self.peaks[pid] = max(self.peaks[pid], _status_kb(pid, "VmRSS"))


class Probe:
    """Measures phases; `records` holds every phase measured, in order."""

    def __init__(self, jvm_pid: int) -> None:
        self.driver_pid, self.jvm_pid = os.getpid(), jvm_pid
        self.records: list[PhaseRecord] = []
        self.sampler: _Sampler | None = None
        if not (_reset_peak(self.driver_pid) and _reset_peak(jvm_pid)):
            self.sampler = _Sampler([self.driver_pid, jvm_pid])
            self.sampler.start()

    @property
    def peak_method(self) -> str:
        return "VmRSS sampled every 50 ms" if self.sampler else "VmHWM reset per phase"

    def _peaks_kb(self) -> tuple[int, int]:
        if self.sampler:
            return self.sampler.peaks[self.driver_pid], self.sampler.peaks[self.jvm_pid]
        return _status_kb(self.driver_pid, "VmHWM"), _status_kb(self.jvm_pid, "VmHWM")

    @contextmanager
    def phase(self, name: str, changes: int) -> Iterator[PhaseRecord]:
        """Measure the body as one phase; the body may add `details` to the yielded record."""
        record = PhaseRecord(name, changes, load_before=os.getloadavg()[0])
        if self.sampler:
            self.sampler.reset()
        else:
            _reset_peak(self.driver_pid)
            _reset_peak(self.jvm_pid)
        driver_cpu, jvm_cpu = _own_cpu_seconds(), _cpu_seconds(self.jvm_pid)
        started = time.perf_counter()
        yield record
        record.seconds = time.perf_counter() - started
        record.driver_cpu_seconds = _own_cpu_seconds() - driver_cpu
        record.jvm_cpu_seconds = _cpu_seconds(self.jvm_pid) - jvm_cpu
        driver_kb, jvm_kb = self._peaks_kb()
        record.driver_peak_mb, record.jvm_peak_mb = driver_kb / 1024, jvm_kb / 1024
        record.load_after = os.getloadavg()[0]
        self.records.append(record)

    def close(self) -> None:
        if self.sampler:
            self.sampler.stopped.set()


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def jvm_pid(spark) -> int:
    """The Spark driver JVM's process id (through the py4j gateway)."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
