"""A real broker on the test's own event loop: no subprocess, no sockets between the test and the
handlers, time on a :class:`~tidelog.testing.ManualClock` (unit-speed tests of the Kafka handlers).

Time: the broker reads the ManualClock and waits on it (its timers, delayed operations, backoffs and
periodic jobs are the clock's), so :meth:`InProcessBroker.advance` lets a session timeout, a
transaction timeout or a retry backoff pass at once instead of in real time.

The broker is the one ``tidelog serve`` runs (:class:`tidelog.server.broker.Broker`, a single node with
its data in a temporary directory). A test speaks the wire contract only: it builds a request message,
:meth:`InProcessBroker.request` encodes it in the version named, hands the frame to the broker's request
dispatcher as the network layer does, encodes the answer as the network layer would and decodes it
again, so what the test asserts on is exactly what a client would read. Nothing of the broker's inside
is reached for, so the tests stay true while the layers under the handlers are rebuilt::

    def test_something(tmp_path):
        async def scenario(b: InProcessBroker) -> None:
            r = await b.request(CreateTopicsRequest(...), 7)
            assert r.topics[0].error_code == 0

        run(tmp_path, scenario, overrides={"num.partitions": "2"})
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from tidelog.config import BrokerConfig
from tidelog.protocol import encode_request
from tidelog.protocol.headers import decode_response, encode_response_buffers
from tidelog.protocol.message import Message
from tidelog.protocol.messages import CreateTopicsRequest
from tidelog.records import RecordBatchBuilder
from tidelog.security.principal import KafkaPrincipal
from tidelog.server.broker import Broker
from tidelog.server.context import RequestContext
from tidelog.testing import ManualClock

#: A test broker's settings that differ from a production one: a classic group's first rebalance does
#: not wait 3 s for more members (as tidelog.embedded's test brokers); the coordinators' internal topics
#: have 5 partitions instead of 50 (each is a log directory made on first use).
TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "5",
                 "transaction.state.log.num.partitions": "5"}
#: How long a scenario may take at most (a hang fails the test instead of the run).
SCENARIO_TIMEOUT_S = 120.0


class InProcessBroker:
    """A started :class:`~tidelog.server.broker.Broker` and the requests a test sends it."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None,
                 clock: ManualClock | None = None, broker_options: Mapping[str, Any] | None = None) -> None:
        props = {"log.dirs": str(data_dir), "listeners": "PLAINTEXT://127.0.0.1:0", **TEST_DEFAULTS,
                 **dict(overrides or {})}
        self.config = BrokerConfig.from_props(props)
        self.clock = clock if clock is not None else ManualClock()
        #: keyword arguments of the Broker (a share-state persister for the share-fetch tests)
        self.broker_options = dict(broker_options or {})
        self.broker = Broker(self.config, self.clock, **self.broker_options)
        self._correlation = itertools.count(1)

    async def advance(self, ms: int) -> None:
        """Let ``ms`` milliseconds pass on the ManualClock (the broker's timers then due run), then let
        the loop settle. What was sent before starts first (its deadlines counted from the time before)."""
        await self.settle()
        self.clock.advance(ms)
        await self.settle()

    @staticmethod
    async def settle() -> None:
        """Let the loop run what is ready (requests just sent, timers just due, what they start)."""
        for _ in range(20):
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)

    async def restart(self) -> None:
        """Stop the broker and start a new one on the same data dir and clock (the replay check: what
        it answers afterwards was read back from its logs)."""
        await self.broker.stop()
        self.broker = Broker(self.config, self.clock, **self.broker_options)
        await self.broker.start()

    async def __aenter__(self) -> InProcessBroker:
        await self.broker.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.broker.stop()

    def send(self, body: Message, version: int, *, connection: str = "conn-1",
             principal: KafkaPrincipal | None = None, client_id: str = "inprocess-test") -> asyncio.Future:
        """Dispatch ``body`` at once (as the network layer does on reading its frame) and give the
        decoded answer as a future: requests sent one after another are dispatched in that order,
        also when their answers wait (pipelining). The future's result is None for a request that is
        not answered (Produce with acks=0)."""
        correlation_id = next(self._correlation)
        frame = encode_request(body, version, correlation_id, client_id)

        def context(header: Any) -> RequestContext:
            if principal is None:
                return RequestContext(header, connection, "127.0.0.1")
            return RequestContext(header, connection, "127.0.0.1", principal=principal)

        dispatched = self.broker.handlers.dispatch(frame, context)
        api_version = dispatched.api_version

        async def answer() -> Message | None:
            result = dispatched.result
            if inspect.isawaitable(result):
                result = await result
            if result is None:
                return None
            # What the client reads: the answer through the codec both ways (size prefix off). Record
            # data read from a segment is a file slice the network layer sends with sendfile: read here.
            parts = encode_response_buffers(result, api_version, dispatched.correlation_id)
            frame_out = b"".join(_read(part) for part in parts)[4:]
            got_correlation, decoded = decode_response(frame_out, body.API_KEY, api_version)
            assert got_correlation == correlation_id
            return decoded

        return asyncio.ensure_future(answer())

    async def request(self, body: Message, version: int, *, timeout_s: float = 60.0, **kwargs: Any) -> Any:
        """The decoded response to ``body`` sent in ``version`` (see :meth:`send`)."""
        return await asyncio.wait_for(self.send(body, version, **kwargs), timeout_s)

    # ------------------------------------------------------------------------------- common requests

    async def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])
        r = await self.request(CreateTopicsRequest(topics=[topic], timeout_ms=10_000), 7)
        assert [(t.name, t.error_code) for t in r.topics] == [(name, 0)], r

    async def wait_until(self, predicate: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 30.0) -> None:
        """Until ``predicate()`` holds (work the broker does on its loop after answering: loading a
        coordinator, writing a marker); fails naming ``what``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not await predicate():
            if loop.time() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
            await asyncio.sleep(0.01)


def _read(part: Any) -> bytes:
    """A buffer of an encoded response as bytes; a file slice (has ``read``) read and released."""
    if isinstance(part, bytes | bytearray | memoryview):
        return bytes(part)
    try:
        return part.read()
    finally:
        part.release()


def batch(*values: bytes, key: bytes | None = None, timestamp_ms: int = 1_700_000_000_000, producer_id: int = -1,
          producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False) -> bytes:
    """A record batch (magic 2) of ``values``, one record each, as a client builds it."""
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                                 is_transactional=transactional)
    for i, value in enumerate(values):
        builder.append(timestamp_ms + i, key, value)
    return builder.build()


def run(tmp_path: Path, scenario: Callable[[InProcessBroker], Awaitable[None]], *,
        overrides: Mapping[str, str] | None = None, clock: ManualClock | None = None,
        broker_options: Mapping[str, Any] | None = None) -> None:
    """Start a broker in ``tmp_path``, run ``scenario`` with it on a fresh event loop, stop it."""

    async def main() -> None:
        async with InProcessBroker(tmp_path / "data", overrides, clock, broker_options) as b:
            await asyncio.wait_for(scenario(b), SCENARIO_TIMEOUT_S)

    asyncio.run(main())


__all__ = ["InProcessBroker", "batch", "run"]
