"""What the benchmark measures about a broker process: CPU time and resident memory (from /proc), a
partition's high watermark, the busy time of each core, and the machine's load; and pinning processes to cores."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, TopicPartition

if TYPE_CHECKING:
    from perf.target import Endpoint


def cpu_seconds(pids: list[int]) -> float | None:
    """CPU time the broker processes have used so far, all threads, from /proc/PID/task/*/schedstat
    (nanoseconds on the CPU; /proc/PID/stat's clock ticks are too coarse for a one-second phase)."""
    if not pids:
        return None
    total = 0
    try:
        for pid in pids:
            for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
                with contextlib.suppress(FileNotFoundError):  # a thread that just ended
                    total += int(stat.read_text().split()[0])
    except (OSError, ValueError):
        return None
    return total / 1e9


@dataclass
class Phase:
    seconds: float
    records: int
    cpu: float | None = None  # broker CPU seconds during the phase

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def cpu_per_million(self) -> float:
        return self.cpu / self.records * 1e6 if self.cpu is not None else float("nan")


def measured(ep: Endpoint, fn: Callable[[], tuple[float, int]]) -> Phase:
    before = cpu_seconds(ep.pids)
    seconds, records = fn()
    after = cpu_seconds(ep.pids)
    return Phase(seconds, records, after - before if before is not None and after is not None else None)


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def rss_bytes(pids: list[int]) -> int | None:
    """Resident memory of the broker processes (VmRSS of /proc/PID/status), in bytes."""
    if not pids:
        return None
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def core_busy() -> dict[int, tuple[int, int]]:
    """Per core: (busy, total) jiffies from /proc/stat, to tell which core a phase kept busy."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu":
            ticks = [int(x) for x in fields]
            idle = ticks[3] + ticks[4]  # idle + iowait
            out[int(name[3:])] = (sum(ticks[:8]) - idle, sum(ticks[:8]))
    return out


def busy_fraction(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]], core: int) -> float:
    busy = after[core][0] - before[core][0]
    total = after[core][1] - before[core][1]
    return busy / total if total else float("nan")


@contextlib.contextmanager
def pinned(cpus: set[int]) -> Iterator[None]:
    """Run this process (and the processes it starts meanwhile, which inherit it) on ``cpus``."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def high_watermark(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The partition's high watermark: how many records the broker holds (from offset 0)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermark"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    finally:
        c.close()
