"""The controller's one event queue (Kafka's ZooKeeper-era ``ControllerEventManager``): every event that
changes what this broker knows of the cluster, or that decides a partition state, runs here, one at a
time, in arrival order, on the broker's event loop.

Who enqueues:

* ZooKeeper's callbacks (kazoo's threads, through the store's reader thread): a re-read image to apply,
  a lost or renewed session. They call :meth:`ControllerEventManager.put_threadsafe`, which only hands
  the event to the loop (``loop.call_soon_threadsafe``): no decision and no ZooKeeper write is made on
  those threads.
* The partition controller (:mod:`tidelog.server.partition_controller`), on the loop: its duties after
  each applied image (elections after a broker loss or an ISR change, reassignment completion, topic
  deletions), and the requests it carries out (ControlledShutdown, ElectLeaders, the auto rebalance) with
  :meth:`ControllerEventManager.call`.

An event is a callable; if it returns an awaitable, the queue waits for it before the next event (an
event may await ZooKeeper's answer to its own writes, which arrive outside the queue, never an event
queued behind it). An event that raises is logged and the queue goes on. Loop-only, but for
:meth:`put_threadsafe`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
#: How long :meth:`ControllerEventManager.stop` waits for the running event to end once cancelled.
STOP_TIMEOUT_S = 5.0
Event = Callable[[], Awaitable[None] | None]


class ControllerEventManager:
    def __init__(self) -> None:
        self._queue: deque[Event] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._wakeup: asyncio.Event | None = None
        self._busy = False
        self._idle: list[asyncio.Future] = []

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Start processing on ``loop`` (default: the running one); events put before wait until now."""
        self._loop = loop or asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._task = self._loop.create_task(self._run(), name="tidelog-controller-events")

    async def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop processing (events still queued are dropped). The running event is cancelled; one that
        does not end within ``timeout_s`` (it swallowed the cancellation, or waits on something that
        never answers) is left behind with a warning rather than holding up the broker's shutdown."""
        task, self._task = self._task, None
        if task is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while not task.done():
                task.cancel()  # again each round: a cancellation can be lost (wait_for's race in 3.11)
                await asyncio.wait({task}, timeout=min(0.1, max(deadline - loop.time(), 0)))
                if not task.done() and loop.time() >= deadline:
                    log.warning("the controller's event queue did not stop within %.0f s; leaving it", timeout_s)
                    break
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.warning("the controller's event queue ended with %r", task.exception())
        self._queue.clear()
        self._wake_idle()

    # --------------------------------------------------------------------------------- enqueueing

    def put(self, event: Event) -> None:
        """The loop: run ``event`` after those queued before it."""
        self._queue.append(event)
        if self._wakeup is not None:
            self._wakeup.set()

    def put_threadsafe(self, event: Event) -> None:
        """Any thread (ZooKeeper's callbacks): hand ``event`` to the loop, where it is queued."""
        loop = self._loop
        if loop is None:
            self._queue.append(event)  # not started yet: processed once it is (deque appends are atomic)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self.put, event)

    def dispatch_threadsafe(self, fn: Callable[[], object]) -> None:
        """Any thread (ZooKeeper's callbacks): run ``fn`` on the loop, outside the queue: the answers to
        this broker's own ZooKeeper writes, which an event of the queue may be waiting for (queued, they
        would wait behind it). Dropped before :meth:`start` (nothing has been written yet) and once the
        loop is closed."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(fn)

    def call(self, fn: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """The loop: run ``fn`` as an event; its result (or exception) comes back in the future."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        async def event() -> None:
            if future.done():  # the caller gave up
                return
            try:
                result = await fn()
            except asyncio.CancelledError:
                future.cancel()
                raise
            except Exception as e:
                if not future.done():
                    future.set_exception(e)
            else:
                if not future.done():
                    future.set_result(result)

        self.put(event)
        return future

    # --------------------------------------------------------------------------------- processing

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing running."""
        return not self._queue and not self._busy

    async def wait_idle(self) -> None:
        """Until every event queued so far (and any they queue) has run."""
        if self.idle:
            return
        future = asyncio.get_running_loop().create_future()
        self._idle.append(future)
        await future

    def _wake_idle(self) -> None:
        waiters, self._idle = self._idle, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            if not self._queue:
                self._wake_idle()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            event = self._queue.popleft()
            self._busy = True
            try:
                result = event()
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller event %r failed", event)
            finally:
                self._busy = False


__all__ = ["ControllerEventManager", "Event"]
