"""The broker's periodic jobs (flushes, checkpoints, retention, compaction, idle connections, ...):
each runs on the event loop every ``interval_ms`` of the injected clock, a run that raises is logged
and the job goes on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from tidelog.clock import Clock

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[object]]


class PeriodicJobs:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._tasks: list[asyncio.Future] = []

    def start(self, jobs: Iterable[tuple[float, Job]]) -> None:
        """Start each ``(interval_ms, job)``; the first run comes one interval from now."""
        self._tasks += [asyncio.ensure_future(self._every(interval_ms, job)) for interval_ms, job in jobs]

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []

    async def _every(self, interval_ms: float, job: Job) -> None:
        while True:
            await self.clock.sleep(interval_ms)
            try:
                await job()
            except Exception:
                log.exception("housekeeping job %s failed", getattr(job, "__name__", job))


__all__ = ["PeriodicJobs"]
