"""Delayed operations (long-polling Fetch, later acks=all Produce) waiting for a condition or a timeout.

Rules:

1. An operation is watched under one or more keys (topic-partitions). ``check(key)`` re-tests every
   operation watching ``key`` (called after an append to that partition); one whose condition now
   holds completes at once.
2. An operation that is still waiting at its deadline completes with ``timed_out=True``.
3. An operation completes exactly once; completing removes it from every key it watched.

Time comes from the injected clock and timers from the injected ``schedule(delay_ms, callback)`` (the
broker passes its clock's :meth:`~tidelog.clock.Clock.call_later`: deadline and wake-up are both the
clock's), so the purgatory is unit-tested with a ManualClock. Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from tidelog.clock import Clock


class DelayedOperation:
    """``try_complete()`` says whether the condition holds; ``on_complete(timed_out)`` runs once."""

    __slots__ = ("deadline_ms", "done", "keys", "on_complete", "try_complete")

    def __init__(
        self, deadline_ms: int, try_complete: Callable[[], bool], on_complete: Callable[[bool], None]
    ) -> None:
        self.deadline_ms = deadline_ms
        self.try_complete = try_complete
        self.on_complete = on_complete
        self.done = False
        self.keys: tuple[Hashable, ...] = ()


class Purgatory:
    def __init__(self, clock: Clock, schedule: Callable[[float, Callable[[], None]], Any]) -> None:
        self.clock = clock
        self.schedule = schedule
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    def __len__(self) -> int:
        return len({id(op) for ops in self._watchers.values() for op in ops})

    def watched(self) -> int:
        """Watch entries (an operation counts once per key it watches: Kafka's PurgatorySize)."""
        return sum(len(ops) for ops in self._watchers.values())

    def watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if it can; otherwise park it. Returns True if it completed now."""
        if op.try_complete():
            self._complete(op, False)
            return True
        op.keys = tuple(keys)
        for key in op.keys:
            self._watchers.setdefault(key, []).append(op)
        delay = max(0, op.deadline_ms - self.clock.monotonic_ms())
        self.schedule(delay, lambda: self._expire(op))
        return False

    def check(self, key: Hashable) -> int:
        """Re-test the operations watching ``key``; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for op in list(ops):
            if not op.done and op.try_complete():
                self._complete(op, False)
                completed += 1
        return completed

    def _expire(self, op: DelayedOperation) -> None:
        if not op.done:
            self._complete(op, True)

    def _complete(self, op: DelayedOperation, timed_out: bool) -> None:
        op.done = True
        for key in op.keys:
            ops = self._watchers.get(key)
            if ops is not None:
                try:
                    ops.remove(op)
                except ValueError:
                    pass
                if not ops:
                    del self._watchers[key]
        op.on_complete(timed_out)

    def complete_all(self) -> None:
        """Shut-down: time out everything still waiting."""
        for ops in list(self._watchers.values()):
            for op in list(ops):
                self._expire(op)


__all__ = ["DelayedOperation", "Purgatory"]
