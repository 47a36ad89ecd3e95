"""The controller's event queue: one event at a time, in arrival order, on the loop; other threads only
enqueue; an awaited event holds the queue; a failing event does not stop it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tidelog.server.controller_events import ControllerEventManager


def test_events_from_other_threads_run_on_the_loop_in_arrival_order() -> None:
    events = ControllerEventManager()
    ran: list[tuple[str, int]] = []

    async def main() -> None:
        events.start()
        loop_thread = threading.get_ident()
        events.put(lambda: ran.append(("loop", 0)))

        def producer() -> None:
            for i in range(1, 51):
                events.put_threadsafe(lambda i=i: ran.append(("thread", i)))

        worker = threading.Thread(target=producer)
        worker.start()
        await asyncio.get_running_loop().run_in_executor(None, worker.join)
        await events.wait_idle()
        assert [i for _, i in ran] == list(range(51))
        assert events.idle
        seen: list[int] = []
        events.put(lambda: seen.append(threading.get_ident()))
        await events.wait_idle()
        assert seen == [loop_thread]
        await events.stop()

    asyncio.run(main())


def test_an_awaited_event_holds_the_queue_and_call_returns_its_result() -> None:
    events = ControllerEventManager()
    order: list[str] = []

    async def main() -> None:
        events.start()
        gate = asyncio.get_running_loop().create_future()

        async def slow() -> str:
            order.append("slow started")
            await gate
            order.append("slow done")
            return "decided"

        answer = events.call(slow)
        events.put(lambda: order.append("next"))
        await asyncio.sleep(0)  # the queue runs: slow starts and waits
        await asyncio.sleep(0)
        assert order == ["slow started"] and not events.idle
        gate.set_result(None)
        assert await answer == "decided"
        await events.wait_idle()
        assert order == ["slow started", "slow done", "next"]
        await events.stop()

    asyncio.run(main())


def test_a_failing_event_is_logged_and_the_queue_goes_on(caplog) -> None:
    events = ControllerEventManager()
    ran: list[int] = []

    async def main() -> None:
        events.start()

        def broken() -> None:
            raise RuntimeError("a bug")

        async def refused() -> None:
            raise ValueError("for the caller")

        events.put(broken)
        with pytest.raises(ValueError, match="for the caller"):
            await events.call(refused)
        events.put(lambda: ran.append(1))
        await events.wait_idle()
        await events.stop()

    asyncio.run(main())
    assert ran == [1]
    assert "controller event" in caplog.text and "a bug" in caplog.text


def test_events_put_before_start_run_once_started() -> None:
    events = ControllerEventManager()
    ran: list[int] = []
    early = threading.Thread(target=lambda: events.put_threadsafe(lambda: ran.append(1)))
    early.start()
    early.join()
    events.put(lambda: ran.append(2))

    async def main() -> None:
        events.start()
        await events.wait_idle()
        await events.stop()

    asyncio.run(main())
    assert sorted(ran) == [1, 2]


def test_stop_does_not_hang_on_an_event_that_swallows_its_cancellation() -> None:
    """A broker's shutdown stops the queue; an event that ignores being cancelled (or waits on an answer
    that never comes) is left behind after the timeout instead of holding the shutdown forever."""
    events = ControllerEventManager()
    cancelled = 0
    stopped = False

    async def stubborn() -> None:
        nonlocal cancelled
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled += 1
                if stopped:  # asyncio.run's own clean-up at the end of the test: give in
                    raise
                # swallowed while stop() runs: the loop goes on

    async def main() -> float:
        nonlocal stopped
        events.start()
        events.put(stubborn)
        await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        began = loop.time()
        await events.stop(timeout_s=0.5)
        took = loop.time() - began
        stopped = True
        return took

    took = asyncio.run(main())
    assert cancelled >= 2  # cancelled again each round, not once
    assert took < 5  # bounded by the timeout (0.5 s), with room for a loaded machine


def test_stop_ends_an_event_whose_first_cancellation_is_lost() -> None:
    events = ControllerEventManager()

    async def main() -> bool:
        done = asyncio.Event()

        async def loses_one() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass  # the first cancellation lost (asyncio.wait_for's race in Python 3.11)
            try:
                await asyncio.sleep(3600)
            finally:
                done.set()

        events.start()
        events.put(loses_one)
        await asyncio.sleep(0.05)
        await events.stop(timeout_s=30)
        return done.is_set()

    assert asyncio.run(main())


def test_an_answer_dispatched_from_another_thread_reaches_the_event_that_awaits_it() -> None:
    """ZooKeeper's answer to this broker's own write goes to the loop outside the queue: the event that
    wrote waits for it (queued, the answer would wait behind that event for ever); before start it is dropped."""
    events = ControllerEventManager()
    events.dispatch_threadsafe(lambda: pytest.fail("dispatched before start"))

    async def main() -> None:
        events.start()
        loop_thread = threading.get_ident()
        answered: list[int] = []

        async def writes() -> str:
            answer = asyncio.get_running_loop().create_future()

            def kazoo_thread() -> None:  # as ZooKeeper's callback answering the write
                events.dispatch_threadsafe(lambda: (answered.append(threading.get_ident()), answer.set_result("ok")))

            threading.Thread(target=kazoo_thread).start()
            return await asyncio.wait_for(answer, 10)

        assert await events.call(writes) == "ok"
        assert answered == [loop_thread]
        await events.stop()

    asyncio.run(main())
