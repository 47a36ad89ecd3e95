"""What the benchmark measures about a broker process: CPU time (from /proc), and the machine's load."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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
