"""Replica fetchers: a follower copies its leaders' logs with Fetch requests, as a Kafka client would.

One :class:`ReplicaFetcher` per leader broker this broker follows partitions of (Kafka's
``ReplicaFetcherThread``, here an asyncio task): it sends a Fetch (version 12: topic names,
``replica_id`` = this broker, ``last_fetched_epoch`` for the divergence check, no fetch session)
for every partition it is given, over one connection to the leader's inter-broker listener (opened by
the injected ``connect``: TLS and SASL as that listener needs, :mod:`tidelog.server.inter_broker`), waits
for the answer (the leader long-polls up to ``replica.fetch.wait.max.ms``), hands it to the owner
and asks again at once. A connection that fails is closed and re-opened after
``replica.fetch.backoff.ms``; so is a round in which every partition answered with an error.

What a response means for a partition (append, truncate, back off) is the owner's (see
:mod:`tidelog.replica.replication`): the fetcher only moves bytes. Loop-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from tidelog.protocol import decode_response, encode_request
from tidelog.protocol.messages import FetchRequest, FetchResponse

log = logging.getLogger(__name__)

FETCH_VERSION = 12
_SIZE = struct.Struct(">i")


#: (host, port) -> an open (and, on TLS/SASL listeners, secured and authenticated) connection
#: (tidelog.server.inter_broker builds it from the inter-broker listener's settings)
Connect = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class LeaderRefusedError(ConnectionError):
    """The other broker refused this one (TLS or SASL authentication failed): the message says why."""


async def _plain_connection(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


class BrokerChannel:
    """One connection to another broker; one request at a time."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float, connect: Connect | None = None) -> None:
        self.host, self.port, self.client_id, self.timeout_s = host, port, client_id, timeout_s
        self._connect = connect or _plain_connection
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)

    async def request(self, body: Any, version: int) -> Any:
        if self._writer is None:
            self._reader, self._writer = await asyncio.wait_for(
                self._connect(self.host, self.port), self.timeout_s)
        assert self._reader is not None
        corr = next(self._ids)
        payload = encode_request(body, version, corr, self.client_id)
        self._writer.write(_SIZE.pack(len(payload)) + payload)
        await self._writer.drain()
        (size,) = _SIZE.unpack(await asyncio.wait_for(self._reader.readexactly(4), self.timeout_s))
        frame = await asyncio.wait_for(self._reader.readexactly(size), self.timeout_s)
        got, response = decode_response(frame, body.API_KEY, version)
        if got != corr:
            raise ConnectionError(f"correlation id {got}, expected {corr}")
        return response

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


#: (leader id) -> the request to send now (None: nothing to fetch)
BuildRequest = Callable[[int], FetchRequest | None]
#: (leader id, request sent, response) -> True if the next fetch may go at once (False: back off)
HandleResponse = Callable[[int, FetchRequest, FetchResponse], bool]
#: (leader id) -> (host, port) of its inter-broker listener, or None if it is not registered
Address = Callable[[int], tuple[str, int] | None]


class ReplicaFetcher:
    def __init__(self, broker_id: int, leader_id: int, address: Address, build: BuildRequest,
                 handle: HandleResponse, *, backoff_ms: int, timeout_ms: int, connect: Connect | None = None) -> None:
        self.broker_id = broker_id
        self._open = connect
        self.leader_id = leader_id
        self._address = address
        self._build = build
        self._handle = handle
        self.backoff_s = backoff_ms / 1000
        self.timeout_s = timeout_ms / 1000
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._channel: BrokerChannel | None = None
        self._refusal: str | None = None  # the last refusal logged
        self._stopping = False

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    def wake(self) -> None:
        """Partitions were added: fetch now if idle."""
        self._wakeup.set()

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            # Python 3.11's asyncio.wait_for can swallow a cancellation that arrives just as the awaited
            # read completes (fixed in 3.12): the loop then runs on. The flag ends it at its next turn,
            # and the task is cancelled again until it is done.
            while not self._task.done():
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait({self._task}, timeout=0.5)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                self._task.result()
            self._task = None
        self._close()

    def _close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    async def _run(self) -> None:
        while not self._stopping:
            request = self._build(self.leader_id)
            if request is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                channel = self._connect()
                if channel is None:
                    await asyncio.sleep(self.backoff_s)
                    continue
                response = await channel.request(request, FETCH_VERSION)
                self._refusal = None
            except LeaderRefusedError as e:
                # once per reason (it repeats every backoff until an operator fixes the credentials)
                (log.debug if str(e) == self._refusal else log.warning)(
                    "broker %d: leader %d refused this broker's connection: %s; retrying every %g s",
                    self.broker_id, self.leader_id, e, self.backoff_s)
                self._refusal = str(e)
                self._close()
                await asyncio.sleep(self.backoff_s)
                continue
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError) as e:
                log.info("broker %d: fetching from leader %d failed (%r); retrying in %g s", self.broker_id,
                         self.leader_id, e, self.backoff_s)
                self._close()
                await asyncio.sleep(self.backoff_s)
                continue
            try:
                go_on = self._handle(self.leader_id, request, response)
            except Exception:
                log.exception("broker %d: handling a fetch response from %d failed", self.broker_id, self.leader_id)
                go_on = False
            if not go_on:
                await asyncio.sleep(self.backoff_s)

    def _connect(self) -> BrokerChannel | None:
        if self._channel is None:
            address = self._address(self.leader_id)
            if address is None:
                return None
            self._channel = BrokerChannel(address[0], address[1], f"tidelog-replica-fetcher-{self.broker_id}",
                                          self.timeout_s, self._open)
        return self._channel


__all__ = ["FETCH_VERSION", "BrokerChannel", "Connect", "LeaderRefusedError", "ReplicaFetcher"]
