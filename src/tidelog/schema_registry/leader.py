"""The schema registry in a cluster (docs/schema-registry.md "Cluster mode"): one leader writes, every
broker answers reads from its own view of ``_schemas``.

* **The leader** is the leader of ``_schemas`` partition 0 (Confluent's registry elects one leader among
  its instances; here the partition's leader already is one, decided by the controller, fenced by its
  leader epoch). It runs every change (:class:`~tidelog.schema_registry.service.SchemaRegistry`: the
  first change of each leader epoch appends a NOOP record and waits until it is committed and read,
  so a new leader knows every id handed out before it; ids are never reused across a leader change).
  Its view is its own log, read up to the high watermark.
* **Every other broker** follows the topic as a consumer of the leader (:meth:`RegistryCluster.run`:
  long-polled Fetch requests at the view's next offset through the broker-to-broker client, records
  applied up to the leader's high watermark). A change sent to it is forwarded over HTTP to the
  leader's HTTP listener (its registration carries it) by :mod:`tidelog.web.schema_registry_forward`.
* **Read-your-write across brokers**: before a read, a follower asks the leader for its high watermark
  (a Fetch that does not wait) and waits, bounded by ``sync_timeout_ms``, until its view has read up to
  it (:meth:`RegistryCluster.sync`); so whatever a client was answered by any broker before it sent
  the read is in the answer. Without a reachable leader the read is answered at once from the view.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient
from tidelog.peer.connection import PeerRefusedError
from tidelog.protocol.messages import FetchRequest
from tidelog.records import iter_batches
from tidelog.schema_registry.service import SchemaRegistry

log = logging.getLogger(__name__)

FETCH_VERSION = 12
#: what a failed request to the leader raises (the peer client's failures)
_UNREACHABLE = (ConnectionError, TimeoutError, OSError, PeerRefusedError)


class RegistryCluster:
    """Leadership of ``_schemas`` and this broker's view of it (see the module docstring)."""

    def __init__(self, registry: SchemaRegistry, topic: str, broker_id: int, image: Callable[[], MetadataImage],
                 may_lead: Callable[[], bool], ready: Callable[[int], Awaitable[object]], follow: PeerClient,
                 ask: PeerClient, clock: Clock, *, wait_ms: int = 500, backoff_ms: int = 200,
                 sync_timeout_ms: int = 10_000, ask_timeout_ms: int = 5_000,
                 request_timeout_ms: int = 30_000) -> None:
        self.registry = registry
        self.topic = topic
        self.broker_id = broker_id
        self.image = image
        self.may_lead = may_lead
        #: InternalTopicManager.ready of _schemas: created on first use, its first leader waited for (bounded)
        self.ready = ready
        self.follow = follow  # the long-polled fetches
        self.ask = ask  # the high watermark, asked before a read (never behind a long poll)
        self.clock = clock
        self.wait_ms = wait_ms
        self.backoff_ms = backoff_ms
        self.sync_timeout_ms = sync_timeout_ms
        #: how long a read waits for the leader's high watermark (a leader that hangs: then the view answers)
        self.ask_timeout_ms = ask_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self._progress = asyncio.Event()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        registry.cluster = self

    # ------------------------------------------------------------------ who leads

    def _partition(self):
        topic = self.image().topics.get(self.topic)
        return topic.partitions[0] if topic is not None and topic.partitions else None

    def leader_id(self) -> int | None:
        partition = self._partition()
        return partition.leader if partition is not None and partition.leader >= 0 else None

    def leader_epoch(self) -> int:
        partition = self._partition()
        return partition.leader_epoch if partition is not None else -1

    def leads(self) -> bool:
        return self.leader_id() == self.broker_id and self.may_lead()

    def leader_http_url(self) -> str | None:
        """The leader's HTTP listener (``http://HOST:PORT``, from its registration), None if unknown."""
        leader = self.leader_id()
        broker = self.image().brokers.get(leader) if leader is not None else None
        return broker.http_url if broker is not None else None

    def on_metadata(self, old: MetadataImage, new: MetadataImage) -> None:
        """A metadata listener: a new leader of ``_schemas`` ends the follower loop's idle wait."""
        before, after = old.topics.get(self.topic), new.topics.get(self.topic)
        if before is None or after is None or before.partitions[:1] != after.partitions[:1]:
            self._wake.set()

    async def await_leader(self, timeout_ms: int) -> int | None:
        """The leader of ``_schemas``, creating the topic if it does not exist yet (on the first change,
        as a single node does) and waiting, bounded, for the controller to decide its leader."""
        if self.leader_id() is None:
            await self.ready(timeout_ms)
        return self.leader_id()

    # ------------------------------------------------------------------ the view

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.follow.close()
        self.ask.close()

    async def run(self) -> None:
        """Follow ``_schemas`` until stopped: as its leader, from the local log; else from the leader."""
        while True:
            leader = self.leader_id()
            if leader is None or self.leads():
                # the leader's view moves with its own changes and before each read (sync); this only
                # keeps what reads nothing (the console's pages) from lagging behind a new leader's log
                if leader is not None and self.registry.load():
                    self._advanced()
                await self._idle(self.backoff_ms if leader is None else 1000)
                continue
            try:
                response = await self.follow.send(leader, self._fetch(self.wait_ms), FETCH_VERSION,
                                                  timeout_ms=self.wait_ms + self.request_timeout_ms)
            except _UNREACHABLE as e:
                log.debug("schema registry: fetch of %s from broker %d failed: %s", self.topic, leader, e)
                await self._idle(self.backoff_ms)
                continue
            if not self._apply(response):
                await self._idle(self.backoff_ms)

    async def _idle(self, ms: int) -> None:
        """Sleep ``ms`` on the clock, or until the leader of ``_schemas`` changes (:meth:`on_metadata`)."""
        self._wake.clear()
        sleeping = asyncio.ensure_future(self.clock.sleep(ms))
        woken = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait((sleeping, woken), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeping.cancel()
            woken.cancel()

    def _fetch(self, max_wait_ms: int, max_bytes: int = 1 << 20) -> FetchRequest:
        partition = FetchRequest.FetchPartition(partition=0, fetch_offset=self.registry.state.next_offset,
                                                partition_max_bytes=max_bytes)
        return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=[FetchRequest.FetchTopic(topic=self.topic, partitions=[partition])])

    def _data(self, response):
        for topic in response.responses:
            for data in topic.partitions:
                if topic.topic == self.topic and data.partition_index == 0:
                    return data
        return None

    def _apply(self, response) -> bool:
        """Apply a fetched answer; False when it was an error (the next fetch backs off)."""
        data = self._data(response)
        if response.error_code or data is None:
            return False
        code = ErrorCode(data.error_code)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:  # the log this view was read from is gone: read it again
            log.warning("schema registry: offset %d of %s is out of range at its leader: reading it again",
                        self.registry.state.next_offset, self.topic)
            self.registry.reset()
            return True
        if code != ErrorCode.NONE:
            return False
        if self.leads():  # leadership came here while the fetch was out: the local log is the view now
            return True
        records = data.records
        if records is not None and len(records):
            # only what the leader's high watermark covers (a consumer's fetch never returns more)
            batches = [b for b in iter_batches(bytes(records), allow_partial=True)
                       if b.next_offset <= data.high_watermark]
            if self.registry.apply_batches(batches) or batches:
                self._advanced()
        return True

    def _advanced(self) -> None:
        self._progress.set()
        self._progress = asyncio.Event()

    async def wait_applied(self, offset: int, timeout_ms: int) -> bool:
        """Wait until the view has read up to ``offset`` (bounded); True if it has."""
        deadline = self.clock.monotonic_ms() + timeout_ms
        while self.registry.state.next_offset < offset:
            left = deadline - self.clock.monotonic_ms()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), min(left, 100) / 1000)
        return True

    async def sync(self) -> None:
        """Before a read: bring the view up to the leader's high watermark as it is now (bounded)."""
        if self.leads():
            if self.registry.load():
                self._advanced()
            return
        leader = self.leader_id()
        if leader is None:
            return
        try:
            response = await self.ask.send(leader, self._fetch(0, max_bytes=1), FETCH_VERSION,
                                           timeout_ms=self.ask_timeout_ms)
        except _UNREACHABLE as e:
            log.debug("schema registry: the leader's high watermark is not known (%s): answering from the view", e)
            return
        data = self._data(response)
        if response.error_code or data is None or data.error_code:
            return
        if not await self.wait_applied(data.high_watermark, self.sync_timeout_ms):
            log.info("schema registry: the view of %s did not reach offset %d in %d ms: answering from offset %d",
                     self.topic, data.high_watermark, self.sync_timeout_ms, self.registry.state.next_offset)


__all__ = ["RegistryCluster"]
