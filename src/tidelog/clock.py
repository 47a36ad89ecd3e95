"""Time, in one place: the only module of Tidelog that reads the clocks.

Components take a :class:`Clock`; tests inject ``tidelog.testing.ManualClock``.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (timestamps written into records and files)."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin that never goes backwards (timeouts, expiry)."""
        ...


class SystemClock:
    """The real clocks. Immutable, thread-safe."""

    __slots__ = ()

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


__all__ = ["Clock", "SystemClock"]
