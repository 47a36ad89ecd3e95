"""The clocks' waits: ManualClock's timers come due when it advances (in deadline order, on the loop
that armed them, also when advanced from another thread); SystemClock's are the event loop's."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tidelog.clock import SystemClock, clock_timeout, within
from tidelog.testing import ManualClock


async def turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_timers_come_due_in_deadline_order_when_the_clock_advances() -> None:
    async def main() -> None:
        clock, fired = ManualClock(), []
        clock.call_later(300, lambda: fired.append("c"))
        clock.call_later(100, lambda: fired.append("a"))
        clock.call_later(100, lambda: fired.append("b"))  # same deadline: in the order armed
        cancelled = clock.call_later(200, lambda: fired.append("cancelled"))
        assert clock.pending_timers() == 4 and clock.next_deadline_ms() == 100
        cancelled.cancel()
        clock.advance(99)
        await turns()
        assert fired == []
        clock.advance(201)
        assert fired == []  # they run as callbacks of the loop, not inside advance()
        await turns()
        assert fired == ["a", "b", "c"]
        assert clock.pending_timers() == 0 and clock.next_deadline_ms() is None

    asyncio.run(main())


def test_a_timer_without_delay_runs_at_the_loops_next_turn() -> None:
    async def main() -> None:
        clock, fired = ManualClock(), []
        clock.call_later(0, lambda: fired.append(1))
        assert fired == []
        await turns()
        assert fired == [1]

    asyncio.run(main())


def test_sleep_returns_once_the_clock_has_advanced_that_far_and_is_cancellable() -> None:
    async def main() -> None:
        clock = ManualClock()
        sleeper = asyncio.ensure_future(clock.sleep(60_000))
        await turns()
        clock.advance(59_999)
        await turns()
        assert not sleeper.done()
        clock.advance(1)
        await asyncio.wait_for(sleeper, 5)

        cancelled = asyncio.ensure_future(clock.sleep(1_000))
        await turns()
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert clock.pending_timers() == 0

    asyncio.run(main())


def test_advancing_from_another_thread_wakes_the_loop() -> None:
    async def main() -> None:
        clock = ManualClock()
        sleeper = asyncio.ensure_future(clock.sleep(5_000))
        await turns()
        thread = threading.Thread(target=clock.advance, args=(5_000,))
        thread.start()
        await asyncio.wait_for(sleeper, 10)
        thread.join()

    asyncio.run(main())


def test_timers_armed_outside_a_loop_run_inside_advance() -> None:
    clock, fired = ManualClock(), []
    clock.call_later(10, lambda: fired.append(clock.monotonic_ms()))
    clock.call_later(0, lambda: fired.append(-1))  # no loop: at the next advance (or run_due)
    assert clock.run_due() == 1 and fired == [-1]
    clock.advance(10)
    assert fired == [-1, 1_000_010]
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_the_system_clock_waits_on_the_event_loop() -> None:
    async def main() -> None:
        clock = SystemClock()
        started = clock.monotonic_ms()
        await clock.sleep(20)
        assert clock.monotonic_ms() - started >= 19
        fired = asyncio.get_running_loop().create_future()
        clock.call_later(10, lambda: fired.set_result(clock.monotonic_ms()))
        assert await asyncio.wait_for(fired, 10) >= started + 29
        handle = clock.call_later(10, lambda: fired.set_result(0))  # would raise: the future is done
        handle.cancel()
        await asyncio.sleep(0.05)

    asyncio.run(main())


def test_cancelled_timers_do_not_pile_up() -> None:
    async def main() -> None:
        clock, fired = ManualClock(), []
        for i in range(5_000):
            clock.call_later(1_000 + i, lambda: fired.append("cancelled")).cancel()
        clock.call_later(10_000, lambda: fired.append("kept"))
        assert clock.pending_timers() == 1 and len(clock._timers) <= 1025
        clock.advance(10_000)
        await turns()
        assert fired == ["kept"]

    asyncio.run(main())


def test_within_ends_a_wait_when_its_clock_passes_the_timeout_not_before() -> None:
    """clock.within: asyncio.wait_for counted on a Clock (the peer client's request timeouts)."""

    async def main() -> None:
        clock = ManualClock()
        answer = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(within(clock, 1000, answer))
        await turns()
        clock.advance(999)
        await turns()
        assert not waiting.done()
        clock.advance(1)
        with pytest.raises(TimeoutError):
            await waiting
        assert answer.cancelled()  # what it waited for is cancelled, as asyncio.wait_for does
        assert clock.pending_timers() == 0

        done = asyncio.ensure_future(within(clock, 1000, asyncio.sleep(0, result="answered")))
        assert await done == "answered"
        assert clock.pending_timers() == 0  # its timer is cancelled

        inner = asyncio.get_running_loop().create_future()
        outer = asyncio.ensure_future(within(clock, 1000, inner))
        await turns()
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer
        assert inner.cancelled()

    asyncio.run(main())


def test_clock_timeout_ends_the_block_when_the_clock_says_not_real_time() -> None:
    clock = ManualClock()

    async def main() -> None:
        never = asyncio.get_running_loop().create_future()

        async def bounded() -> None:
            async with clock_timeout(clock, 5_000):
                await never

        waiting = asyncio.ensure_future(bounded())
        await asyncio.sleep(0.05)  # real time passes: still waiting
        assert not waiting.done()
        clock.advance(4_999)
        await asyncio.sleep(0.01)
        assert not waiting.done()
        clock.advance(1)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(waiting, 5)
        # a block that ends in time leaves no timer behind, and a late timer does nothing
        async with clock_timeout(clock, 1_000):
            await asyncio.sleep(0)
        assert clock.pending_timers() == 0

    asyncio.run(main())
