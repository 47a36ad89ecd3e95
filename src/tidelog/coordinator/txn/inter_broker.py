"""Requests a transaction needs from other brokers in a cluster (Kafka's
``TransactionMarkerChannelManager`` and ``AddPartitionsToTxnManager`` senders).

* :meth:`InterBrokerClient.write_marker` sends WriteTxnMarkers (v1) for one partition to its leader,
  which answers once the marker is committed there (acks=all);
* :meth:`InterBrokerClient.add_partitions` sends AddPartitionsToTxn (v5, the brokers' batched form)
  to the broker coordinating a transactional id: ``verify_only`` for KIP-890 verification, or adding
  the partitions (transaction version 2).

One connection per broker (:class:`~tidelog.replica.fetcher.BrokerChannel`, the followers' kind), to
its inter-broker listener (with that listener's TLS/SASL, as followers connect), one request at a time; a failed connection is dropped and the request
answers NETWORK_EXCEPTION (the callers retry). Loop-only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from tidelog.replica.fetcher import BrokerChannel, Connect

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
ADD_PARTITIONS_TO_TXN_VERSION = 5


class InterBrokerClient:
    """``address(broker_id)`` is the broker's inter-broker (host, port), or None if unknown."""

    def __init__(self, broker_id: int, address: Callable[[int], tuple[str, int] | None],
                 timeout_ms: int = 30_000, connect: Connect | None = None) -> None:
        """``connect``: opens a connection with the inter-broker listener's TLS/SASL (None: plain TCP)."""
        self.broker_id = broker_id
        self.connect = connect
        self.address = address
        self.timeout_s = timeout_ms / 1000
        self._channels: dict[int, tuple[tuple[str, int], BrokerChannel, asyncio.Lock]] = {}

    async def _send(self, broker_id: int, body, version: int):
        address = self.address(broker_id)
        if address is None:
            return None
        entry = self._channels.get(broker_id)
        if entry is None or entry[0] != address:
            if entry is not None:
                entry[1].close()
            entry = self._channels[broker_id] = (address, BrokerChannel(*address, f"tidelog-txn-{self.broker_id}",
                                                                          self.timeout_s, self.connect),
                                                            asyncio.Lock())
        _, channel, lock = entry
        async with lock:
            try:
                return await channel.request(body, version)
            except (TimeoutError, OSError, EOFError, ConnectionError, asyncio.IncompleteReadError) as e:
                log.info("request to broker %d failed: %r", broker_id, e)
                channel.close()
                return None

    async def write_marker(self, broker_id: int, topic: str, partition: int, producer_id: int, producer_epoch: int,
                           coordinator_epoch: int, commit: bool) -> ErrorCode:
        request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])])])
        response: WriteTxnMarkersResponse | None = await self._send(broker_id, request, WRITE_TXN_MARKERS_VERSION)
        if response is None:
            return ErrorCode.NETWORK_EXCEPTION
        for marker in response.markers:
            for t in marker.topics:
                for p in t.partitions:
                    if t.name == topic and p.partition_index == partition:
                        return ErrorCode(p.error_code)
        return ErrorCode.UNKNOWN_SERVER_ERROR

    async def add_partitions(self, broker_id: int, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Iterable[tuple[str, int]], verify_only: bool) -> dict[tuple[str, int], ErrorCode]:
        parts = list(partitions)
        topics: dict[str, list[int]] = {}
        for topic, partition in parts:
            topics.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=verify_only,
            topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                    for t, ps in topics.items()])])
        response: AddPartitionsToTxnResponse | None = await self._send(broker_id, request,
                                                                       ADD_PARTITIONS_TO_TXN_VERSION)
        if response is None:
            return dict.fromkeys(parts, ErrorCode.NETWORK_EXCEPTION)
        if response.error_code:
            return dict.fromkeys(parts, ErrorCode(response.error_code))
        out = dict.fromkeys(parts, ErrorCode.UNKNOWN_SERVER_ERROR)
        for result in response.results_by_transaction:
            for t in result.topic_results:
                for p in t.results_by_partition:
                    if (t.name, p.partition_index) in out:
                        out[(t.name, p.partition_index)] = ErrorCode(p.partition_error_code)
        return out

    def close(self) -> None:
        for _, channel, _ in self._channels.values():
            channel.close()
        self._channels.clear()


__all__ = ["InterBrokerClient"]
