"""A clock that only moves when told to (unit tests of time-driven logic). Not thread-safe."""

from __future__ import annotations


class ManualClock:
    """Implements :class:`tidelog.clock.Clock`; starts at a fixed wall time."""

    __slots__ = ("_monotonic", "_wall")

    def __init__(self, wall_ms: int = 1_700_000_000_000, monotonic_ms: int = 1_000_000) -> None:
        self._wall = wall_ms
        self._monotonic = monotonic_ms

    def wall_ms(self) -> int:
        return self._wall

    def monotonic_ms(self) -> int:
        return self._monotonic

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._wall += ms
        self._monotonic += ms


__all__ = ["ManualClock"]
