"""Delayed operations with a manual clock and captured timers."""

from __future__ import annotations

from tidelog.replica.purgatory import DelayedOperation, Purgatory
from tidelog.testing import ManualClock


class Timers:
    def __init__(self) -> None:
        self.pending: list[tuple[float, object]] = []

    def schedule(self, delay_ms: float, fn) -> None:
        self.pending.append((delay_ms, fn))

    def fire_all(self) -> None:
        pending, self.pending = self.pending, []
        for _, fn in pending:
            fn()


def _op(clock: ManualClock, ready: list[bool], results: list[bool], wait_ms: int = 100) -> DelayedOperation:
    return DelayedOperation(clock.monotonic_ms() + wait_ms, lambda: ready[0], results.append)


def test_completes_at_once_when_ready() -> None:
    clock, timers = ManualClock(), Timers()
    p = Purgatory(clock, timers.schedule)
    results: list[bool] = []
    assert p.watch(_op(clock, [True], results), ["k"])
    assert results == [False] and len(p) == 0 and not timers.pending


def test_check_completes_waiting_operations_once() -> None:
    clock, timers = ManualClock(), Timers()
    p = Purgatory(clock, timers.schedule)
    ready, results = [False], []
    op = _op(clock, ready, results)
    assert not p.watch(op, ["a", "b"])
    assert timers.pending[0][0] == 100
    assert p.check("a") == 0
    ready[0] = True
    assert p.check("b") == 1
    assert results == [False]
    assert p.check("a") == 0 and len(p) == 0
    timers.fire_all()  # the timer of a completed operation does nothing
    assert results == [False]


def test_timeout() -> None:
    clock, timers = ManualClock(), Timers()
    p = Purgatory(clock, timers.schedule)
    results: list[bool] = []
    p.watch(_op(clock, [False], results), ["a"])
    clock.advance(100)
    timers.fire_all()
    assert results == [True] and len(p) == 0


def test_complete_all_on_shutdown() -> None:
    clock, timers = ManualClock(), Timers()
    p = Purgatory(clock, timers.schedule)
    results: list[bool] = []
    for key in "abc":
        p.watch(_op(clock, [False], results), [key])
    p.complete_all()
    assert results == [True, True, True]
