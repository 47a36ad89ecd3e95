"""Replica fetchers: a follower copies its leaders' logs with Fetch requests, as a Kafka client would.

One :class:`ReplicaFetcher` per leader broker this broker follows partitions of (Kafka's
``ReplicaFetcherThread``, here an asyncio task): it sends a Fetch (version 12: topic names,
``replica_id`` = this broker, ``last_fetched_epoch`` for the divergence check, no fetch session)
for every partition it is given, through the replicas' peer client (:class:`~tidelog.peer.client.PeerClient`:
one connection per leader, to its inter-broker listener, with that listener's TLS and SASL), waits
for the answer (the leader long-polls up to ``replica.fetch.wait.max.ms``), hands it to the owner
and asks again at once. A request that fails (leader unknown or unreachable, connection lost, no
answer in time) is asked again after ``replica.fetch.backoff.ms`` (of the injected clock); so is a round in which every
partition answered with an error. The peer client reconnects (with its own backoff).

What a response means for a partition (append, truncate, back off) is the owner's (see
:mod:`tidelog.replica.replication`): the fetcher only moves bytes. Loop-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from tidelog.clock import Clock
from tidelog.peer.client import PeerBackingOff, PeerClient, PeerUnknown
from tidelog.peer.connection import PeerRefusedError
from tidelog.protocol.messages import FetchRequest, FetchResponse

log = logging.getLogger(__name__)

FETCH_VERSION = 12

#: (leader id) -> the request to send now (None: nothing to fetch)
BuildRequest = Callable[[int], FetchRequest | None]
#: (leader id, request sent, response) -> True if the next fetch may go at once (False: back off)
HandleResponse = Callable[[int, FetchRequest, FetchResponse], bool]


class ReplicaFetcher:
    def __init__(self, broker_id: int, leader_id: int, peers: PeerClient, build: BuildRequest,
                 handle: HandleResponse, clock: Clock, *, backoff_ms: int, timeout_ms: int) -> None:
        self.broker_id = broker_id
        self.leader_id = leader_id
        self.peers = peers
        self._build = build
        self._handle = handle
        self.clock = clock
        self.backoff_ms = backoff_ms
        self.timeout_ms = timeout_ms
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
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
        self.peers.disconnect(self.leader_id)

    async def _run(self) -> None:
        while not self._stopping:
            request = self._build(self.leader_id)
            if request is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                response = await self.peers.send(self.leader_id, request, FETCH_VERSION, timeout_ms=self.timeout_ms)
                self._refusal = None
            except PeerRefusedError as e:
                # once per reason (it repeats every backoff until an operator fixes the credentials)
                (log.debug if str(e) == self._refusal else log.warning)(
                    "broker %d: leader %d refused this broker's connection: %s; retrying every %d ms",
                    self.broker_id, self.leader_id, e, self.backoff_ms)
                self._refusal = str(e)
                await self.clock.sleep(self.backoff_ms)
                continue
            except (PeerUnknown, PeerBackingOff) as e:  # not registered (yet), or reconnecting: said before
                log.debug("broker %d: leader %d: %s; retrying in %d ms", self.broker_id, self.leader_id, e,
                          self.backoff_ms)
                await self.clock.sleep(self.backoff_ms)
                continue
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError) as e:
                log.info("broker %d: fetching from leader %d failed (%r); retrying in %d ms", self.broker_id,
                         self.leader_id, e, self.backoff_ms)
                await self.clock.sleep(self.backoff_ms)
                continue
            try:
                go_on = self._handle(self.leader_id, request, response)
            except Exception:
                log.exception("broker %d: handling a fetch response from %d failed", self.broker_id, self.leader_id)
                go_on = False
            if not go_on:
                await self.clock.sleep(self.backoff_ms)


__all__ = ["FETCH_VERSION", "ReplicaFetcher"]
