"""A clock that only moves when told to (tests of time-driven logic).

Its timers (:meth:`ManualClock.call_later`, :meth:`ManualClock.sleep`) come due only when
:meth:`ManualClock.advance` moves the clock past their deadline (or at once when armed with no
delay). A timer armed on a running event loop runs as a callback of that loop (handed over
thread-safely, so ``advance`` may be called from any thread); one armed outside a loop runs inside
``advance`` (or ``run_due``). Timers come due in deadline order, those of one deadline in the order
they were armed.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import Callable


class ManualTimer:
    """A timer of a :class:`ManualClock` (cancellable, as an ``asyncio.TimerHandle``)."""

    __slots__ = ("_fn", "_loop", "cancelled", "deadline_ms")

    def __init__(self, deadline_ms: float, fn: Callable[[], object], loop: asyncio.AbstractEventLoop | None) -> None:
        self.deadline_ms = deadline_ms
        self._fn = fn
        self._loop = loop
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def _fire(self) -> None:
        """Due: run now (no loop) or hand to the loop it was armed on (a closed loop: dropped)."""
        if self.cancelled:
            return
        if self._loop is None:
            self._run()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._run)

    def _run(self) -> None:
        if not self.cancelled:
            self.cancelled = True  # runs once
            self._fn()


class ManualClock:
    """Implements :class:`tidelog.clock.Clock`; starts at a fixed wall time."""

    __slots__ = ("_lock", "_monotonic", "_sequence", "_timers", "_wall")

    def __init__(self, wall_ms: int = 1_700_000_000_000, monotonic_ms: int = 1_000_000) -> None:
        self._wall = wall_ms
        self._monotonic = monotonic_ms
        self._timers: list[tuple[float, int, ManualTimer]] = []
        self._sequence = itertools.count()
        self._lock = threading.Lock()

    def wall_ms(self) -> int:
        return self._wall

    def monotonic_ms(self) -> int:
        return self._monotonic

    def advance(self, ms: int) -> None:
        """Move both clocks forward by ``ms``; the timers then due come due."""
        if ms < 0:
            raise ValueError("time does not go backwards")
        with self._lock:
            self._wall += ms
            self._monotonic += ms
        self.run_due()

    def call_later(self, ms: float, fn: Callable[[], object]) -> ManualTimer:
        """Run ``fn`` once the clock has advanced ``ms`` from now (``ms`` <= 0: at once, as a callback of
        the running loop; outside a loop at the next :meth:`advance` or :meth:`run_due`)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            timer = ManualTimer(self._monotonic + max(0.0, ms), fn, loop)
            due = loop is not None and timer.deadline_ms <= self._monotonic
            if not due:
                heapq.heappush(self._timers, (timer.deadline_ms, next(self._sequence), timer))
                if len(self._timers) > 1024:  # cancelled timers (re-armed wake-ups, ended sleeps) go
                    self._timers = [entry for entry in self._timers if not entry[2].cancelled]
                    heapq.heapify(self._timers)
        if due:
            timer._fire()
        return timer

    async def sleep(self, ms: float) -> None:
        """Return once the clock has advanced ``ms`` from now (``ms`` <= 0: at the loop's next turn)."""
        done = asyncio.get_running_loop().create_future()
        timer = self.call_later(ms, lambda: done.done() or done.set_result(None))
        try:
            await done
        finally:
            timer.cancel()

    def run_due(self) -> int:
        """Fire every timer due now; returns how many were."""
        with self._lock:
            due: list[ManualTimer] = []
            while self._timers and self._timers[0][0] <= self._monotonic:
                timer = heapq.heappop(self._timers)[2]
                if not timer.cancelled:
                    due.append(timer)
        for timer in due:
            timer._fire()
        return len(due)

    def pending_timers(self) -> int:
        """Timers armed and not yet due (cancelled ones not counted)."""
        with self._lock:
            return sum(1 for _, _, timer in self._timers if not timer.cancelled)

    def next_deadline_ms(self) -> float | None:
        """How far the next pending timer is from now (None: no timer pending)."""
        with self._lock:
            while self._timers and self._timers[0][2].cancelled:
                heapq.heappop(self._timers)
            return self._timers[0][0] - self._monotonic if self._timers else None


__all__ = ["ManualClock", "ManualTimer"]
