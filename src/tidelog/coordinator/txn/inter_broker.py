"""Requests a transaction needs from other brokers in a cluster (Kafka's
``TransactionMarkerChannelManager`` and ``AddPartitionsToTxnManager`` senders).

* :meth:`InterBrokerClient.write_marker` sends WriteTxnMarkers (v1) for one partition to its leader,
  which answers once the marker is committed there (acks=all);
* :meth:`InterBrokerClient.add_partitions` sends AddPartitionsToTxn (v5, the brokers' batched form)
  to the broker coordinating a transactional id: ``verify_only`` for KIP-890 verification, or adding
  the partitions (transaction version 2).

Both go through peer clients (:class:`~tidelog.peer.client.PeerClient`: a connection per broker, to its
inter-broker listener, with that listener's TLS/SASL, requests pipelined and each awaited), one for the
markers and one for the verification (Kafka's two senders), so a marker waiting for its ISR never
delays a produce's verification. A request that cannot be sent or answered answers
NETWORK_EXCEPTION (the callers retry). Loop-only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
ADD_PARTITIONS_TO_TXN_VERSION = 5


class InterBrokerClient:
    """``peers``: where the other brokers are and how to connect to them."""

    def __init__(self, broker_id: int, peers: PeerSettings) -> None:
        self.broker_id = broker_id
        self.markers = PeerClient(peers, f"tidelog-txn-markers-{broker_id}")
        self.verification = PeerClient(peers, f"tidelog-txn-verification-{broker_id}")

    @staticmethod
    async def _send(client: PeerClient, broker_id: int, body, version: int):
        try:
            return await client.send(broker_id, body, version)
        except (TimeoutError, OSError, EOFError, ConnectionError) as e:
            log.info("request to broker %d failed: %r", broker_id, e)
            return None

    async def write_marker(self, broker_id: int, topic: str, partition: int, producer_id: int, producer_epoch: int,
                           coordinator_epoch: int, commit: bool) -> ErrorCode:
        request = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])])])
        response: WriteTxnMarkersResponse | None = await self._send(self.markers, broker_id, request,
                                                                     WRITE_TXN_MARKERS_VERSION)
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
        response: AddPartitionsToTxnResponse | None = await self._send(self.verification, broker_id, request,
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
        self.markers.close()
        self.verification.close()


__all__ = ["InterBrokerClient"]
