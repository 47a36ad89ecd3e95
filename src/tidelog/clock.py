"""Time, in one place: the only module of Tidelog that reads the clocks and arms timers on them.

Components take a :class:`Clock` for what time it is *and* for waiting (``sleep``, ``call_later``);
tests inject ``tidelog.testing.ManualClock``, whose waits end when the test advances it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class TimerHandle(Protocol):
    """What :meth:`Clock.call_later` returns (an ``asyncio.TimerHandle`` is one)."""

    def cancel(self) -> None:
        """The callback will not run (no effect once it has)."""
        ...


class Clock(Protocol):
    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (timestamps written into records and files)."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin that never goes backwards (timeouts, expiry)."""
        ...

    async def sleep(self, ms: float) -> None:
        """Return once ``ms`` milliseconds of this clock's monotonic time have passed (a coroutine
        of the running event loop; cancellable)."""
        ...

    def call_later(self, ms: float, fn: Callable[[], object]) -> TimerHandle:
        """Run ``fn`` on the running event loop once ``ms`` milliseconds of this clock have passed."""
        ...


class SystemClock:
    """The real clocks; waits are the running event loop's. Immutable, thread-safe."""

    __slots__ = ()

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    async def sleep(self, ms: float) -> None:
        await asyncio.sleep(max(0.0, ms) / 1000)

    def call_later(self, ms: float, fn: Callable[[], object]) -> asyncio.TimerHandle:
        """The running loop's timer (components built before the loop runs look it up only when arming)."""
        return asyncio.get_running_loop().call_later(max(0.0, ms) / 1000, fn)


@contextlib.asynccontextmanager
async def clock_timeout(clock: Clock, ms: float) -> AsyncIterator[None]:
    """``asyncio.timeout`` whose deadline is ``ms`` of ``clock`` from now: the block is cancelled and
    TimeoutError raised once the clock's timer fires (a ManualClock's when the test advances it past)."""
    async with asyncio.timeout(None) as timeout:
        loop = asyncio.get_running_loop()
        inside = True

        def expire() -> None:
            if inside:
                timeout.reschedule(loop.time())  # due now: asyncio.timeout cancels the block at once

        timer = clock.call_later(ms, expire)
        try:
            yield
        finally:
            inside = False
            timer.cancel()


async def within(clock: Clock, ms: float, awaitable: Awaitable[T]) -> T:
    """``await awaitable`` for at most ``ms`` milliseconds of ``clock`` (``asyncio.wait_for`` on the
    clock's time, through :func:`clock_timeout`): once they pass, it is cancelled and TimeoutError
    raised. Cancelling the caller cancels it too."""
    try:
        async with clock_timeout(clock, ms):
            return await awaitable
    except TimeoutError:
        raise TimeoutError(f"not done within {ms:g} ms") from None


__all__ = ["Clock", "SystemClock", "TimerHandle", "clock_timeout", "within"]
