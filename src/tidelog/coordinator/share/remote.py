"""The share-state persister over the network, and the one the broker uses.

:class:`RemoteSharePersister` is Kafka's ``DefaultStatePersister`` (its ``PersisterStateManager``): for a
share partition it finds the share coordinator with FindCoordinator (v6, key type SHARE, the key
``group:topic id:partition``) sent to a live broker, then sends the RPC (Initialize/Read/Write/Delete
ShareGroupState, ReadShareGroupStateSummary) to that coordinator through the peer client
(:class:`~tidelog.peer.client.PeerClient`: the inter-broker listener, its TLS/SASL). Kafka's retries: when
the coordinator is not found or answers NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
COORDINATOR_LOAD_IN_PROGRESS, or the broker cannot be reached, it looks the coordinator up again after a
backoff (1 s doubling to 30 s) for at most 5 attempts, then answers the last error.

:class:`BrokerSharePersister` is the composition point: "the" persister of a broker. A call goes to the
local share coordinator's service when this broker leads the key's ``__share_group_state`` partition (no
network), to the remote persister otherwise (cluster mode; a single node leads every partition).

Loop-only.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.config import BrokerConfig
from tidelog.coordinator.runtime import PartitionWriter
from tidelog.coordinator.share.coordinator import ShareCoordinator, ShareCoordinatorConfig
from tidelog.coordinator.share.persister import (
    DeliveryState,
    SharePartitionKey,
    ShareState,
    StateBatch,
    StateWrite,
)
from tidelog.coordinator.share.service import ShareCoordinatorService
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import (
    DeleteShareGroupStateRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
)

log = logging.getLogger(__name__)

SHARE_KEY_TYPE = 2
FIND_COORDINATOR_VERSION = 6
#: Kafka's PersisterStateManager: backoff between attempts, its cap, and the attempts
REQUEST_BACKOFF_MS = 1_000
REQUEST_BACKOFF_MAX_MS = 30_000
MAX_ATTEMPTS = 5

RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NETWORK_EXCEPTION,
                       ErrorCode.REQUEST_TIMED_OUT})

_NETWORK_ERRORS = (TimeoutError, OSError, EOFError, ConnectionError)


def _only_partition(response: Any, key: SharePartitionKey) -> Any | None:
    for t in response.results:
        if t.topic_id == key.topic_id:
            for p in t.partitions:
                if p.partition == key.partition:
                    return p
    return None


class RemoteSharePersister:
    """:class:`~tidelog.coordinator.share.persister.SharePersister` through the share coordinator's RPCs.

    ``brokers()``: the ids of live brokers to ask FindCoordinator (the first answering is used)."""

    def __init__(self, client: PeerClient, brokers: Callable[[], Sequence[int]], clock: Clock, *,
                 backoff_ms: int = REQUEST_BACKOFF_MS, backoff_max_ms: int = REQUEST_BACKOFF_MAX_MS,
                 max_attempts: int = MAX_ATTEMPTS) -> None:
        self.client = client
        self.brokers = brokers
        self.clock = clock
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.max_attempts = max(1, max_attempts)

    async def find_coordinator(self, key: SharePartitionKey) -> tuple[ErrorCode, int]:
        """(NONE, broker id) of the key's share coordinator, or (the error, -1)."""
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        request = FindCoordinatorRequest(key_type=SHARE_KEY_TYPE, coordinator_keys=[key.coordinator_key()])
        for broker in self.brokers():
            try:
                response: FindCoordinatorResponse = await self.client.send(broker, request, FIND_COORDINATOR_VERSION)
            except _NETWORK_ERRORS as e:
                log.debug("FindCoordinator to broker %d failed: %r", broker, e)
                code = ErrorCode.NETWORK_EXCEPTION
                continue
            for c in response.coordinators:
                if c.error_code == ErrorCode.NONE and c.node_id >= 0:
                    return ErrorCode.NONE, c.node_id
                code = ErrorCode(c.error_code) if c.error_code else ErrorCode.COORDINATOR_NOT_AVAILABLE
            if code not in RETRIABLE:
                break
        return code, -1

    async def _call(self, key: SharePartitionKey, request: Any, version: int,
                    answer: Callable[[Any | None], Any], error: Callable[[ErrorCode, str | None], Any]) -> Any:
        """Find the coordinator, send, retry (module docstring). ``answer(partition result)`` builds the
        result from the response's partition (None: the response did not have it); ``error(code, message)``
        the result of a failure; the partition result's ``error_code`` says whether to retry."""
        backoff = self.backoff_ms
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        for attempt in range(self.max_attempts):
            if attempt:
                await self.clock.sleep(backoff * random.uniform(0.8, 1.2))
                backoff = min(backoff * 2, self.backoff_max_ms)
            code, broker = await self.find_coordinator(key)
            if code != ErrorCode.NONE:
                message = None
                if code in RETRIABLE:
                    continue
                return error(code, message)
            try:
                response = await self.client.send(broker, request, version)
            except _NETWORK_ERRORS as e:
                log.debug("%s to broker %d failed: %r", type(request).__name__, broker, e)
                code, message = ErrorCode.NETWORK_EXCEPTION, str(e)
                continue
            partition = _only_partition(response, key)
            if partition is None:
                return error(ErrorCode.UNKNOWN_SERVER_ERROR, "the response did not answer for the share partition")
            code, message = ErrorCode(partition.error_code), partition.error_message
            if code in RETRIABLE:
                log.debug("share coordinator %d answered %s for %s; looking it up again", broker, code.name,
                          key.coordinator_key())
                continue
            return answer(partition)
        return error(code, message)

    # ------------------------------------------------------------------------------ SharePersister

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        r = InitializeShareGroupStateRequest
        request = r(group_id=key.group_id, topics=[r.InitializeStateData(topic_id=key.topic_id, partitions=[
            r.PartitionData(partition=key.partition, state_epoch=state_epoch, start_offset=start_offset)])])
        return await self._call(key, request, r.MAX_VERSION, lambda p: ErrorCode(p.error_code),
                                lambda code, _m: code)

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        r = ReadShareGroupStateRequest
        request = r(group_id=key.group_id, topics=[r.ReadStateData(topic_id=key.topic_id, partitions=[
            r.PartitionData(partition=key.partition, leader_epoch=leader_epoch)])])

        def answer(p: ReadShareGroupStateResponse.PartitionResult) -> ShareState:
            code = ErrorCode(p.error_code)
            if code != ErrorCode.NONE:
                return ShareState(-1, -1, error=code, error_message=p.error_message)
            return ShareState(state_epoch=p.state_epoch, start_offset=p.start_offset, leader_epoch=leader_epoch,
                              state_batches=tuple(StateBatch(b.first_offset, b.last_offset,
                                                             DeliveryState(b.delivery_state), b.delivery_count)
                                                  for b in p.state_batches))

        return await self._call(key, request, r.MAX_VERSION, answer,
                                lambda code, m: ShareState(-1, -1, error=code, error_message=m))

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        r = ReadShareGroupStateSummaryRequest
        request = r(group_id=key.group_id, topics=[r.ReadStateSummaryData(topic_id=key.topic_id, partitions=[
            r.PartitionData(partition=key.partition, leader_epoch=leader_epoch)])])

        def answer(p: ReadShareGroupStateSummaryResponse.PartitionResult) -> ShareState:
            code = ErrorCode(p.error_code)
            if code != ErrorCode.NONE:
                return ShareState(-1, -1, error=code, error_message=p.error_message)
            return ShareState(state_epoch=p.state_epoch, start_offset=p.start_offset, leader_epoch=p.leader_epoch,
                              delivery_complete_count=getattr(p, "delivery_complete_count", -1))

        return await self._call(key, request, r.MAX_VERSION, answer,
                                lambda code, m: ShareState(-1, -1, error=code, error_message=m))

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        r = WriteShareGroupStateRequest
        partition = r.PartitionData(
            partition=key.partition, state_epoch=write.state_epoch, leader_epoch=write.leader_epoch,
            start_offset=write.start_offset,
            state_batches=[r.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                        delivery_state=int(b.delivery_state), delivery_count=b.delivery_count)
                           for b in write.state_batches])
        if "delivery_complete_count" in type(partition).__slots__:
            partition.delivery_complete_count = write.delivery_complete_count
        request = r(group_id=key.group_id, topics=[r.WriteStateData(topic_id=key.topic_id, partitions=[partition])])
        return await self._call(key, request, r.MAX_VERSION, lambda p: ErrorCode(p.error_code),
                                lambda code, _m: code)

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        r = DeleteShareGroupStateRequest
        request = r(group_id=key.group_id, topics=[r.DeleteStateData(topic_id=key.topic_id, partitions=[
            r.PartitionData(partition=key.partition)])])
        return await self._call(key, request, r.MAX_VERSION, lambda p: ErrorCode(p.error_code),
                                lambda code, _m: code)

    def close(self) -> None:
        self.client.close()


class BrokerSharePersister:
    """The broker's persister: local when this broker leads the key's partition, remote otherwise (and
    remote when the local coordinator turns out not to be the key's: the topic was just created, or
    leadership moved, between the choice and the call)."""

    def __init__(self, local: ShareCoordinatorService, remote: RemoteSharePersister | None = None) -> None:
        self.local = local
        self.remote = remote

    def _remote_for(self, key: SharePartitionKey) -> RemoteSharePersister | None:
        return None if self.remote is None or self.local.leads(key) else self.remote

    def _moved(self, code: ErrorCode) -> bool:
        return self.remote is not None and code == ErrorCode.NOT_COORDINATOR

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        remote = self._remote_for(key)
        if remote is None:
            code = await self.local.initialize(key, state_epoch, start_offset)
            if not self._moved(code):
                return code
            remote = self.remote
        assert remote is not None
        return await remote.initialize(key, state_epoch, start_offset)

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        remote = self._remote_for(key)
        if remote is None:
            state = await self.local.read(key, leader_epoch)
            if not self._moved(state.error):
                return state
            remote = self.remote
        assert remote is not None
        return await remote.read(key, leader_epoch)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        remote = self._remote_for(key)
        if remote is None:
            state = await self.local.read_summary(key, leader_epoch)
            if not self._moved(state.error):
                return state
            remote = self.remote
        assert remote is not None
        return await remote.read_summary(key, leader_epoch)

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        remote = self._remote_for(key)
        if remote is None:
            code = await self.local.write(key, write)
            if not self._moved(code):
                return code
            remote = self.remote
        assert remote is not None
        return await remote.write(key, write)

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        remote = self._remote_for(key)
        if remote is None:
            code = await self.local.delete(key)
            if not self._moved(code):
                return code
            remote = self.remote
        assert remote is not None
        return await remote.delete(key)

    def close(self) -> None:
        """The broker stops: the local coordinator stops, the remote connections close."""
        self.local.coordinator.close()
        if self.remote is not None:
            self.remote.close()


def share_state(config: BrokerConfig, clock: Clock, writer: PartitionWriter,
                schedule: Callable[[float, Callable[[], None]], Any] | None, image: Callable[[], MetadataImage],
                peers: PeerSettings | None, broker_id: int) -> tuple[ShareCoordinator, BrokerSharePersister]:
    """The share coordinator of a broker writing through ``writer``, and the broker's persister (remote
    calls through ``peers``: None on a single node, which leads every partition)."""

    def partition_exists(topic_id: uuid.UUID, partition: int) -> bool:
        topic = image().topic_by_id(topic_id)
        return topic is not None and 0 <= partition < len(topic.partitions)

    coordinator = ShareCoordinator(ShareCoordinatorConfig.from_broker_config(config), clock, writer, schedule,
                                   partition_exists=partition_exists)
    remote = None
    if peers is not None:
        remote = RemoteSharePersister(PeerClient(peers, f"tidelog-share-persister-{broker_id}"),
                                      lambda: sorted(image().brokers, key=lambda b: (b != broker_id, b)), clock)
    return coordinator, BrokerSharePersister(ShareCoordinatorService(coordinator), remote)


__all__ = ["BrokerSharePersister", "RemoteSharePersister", "share_state"]
