"""The partition leader's side of transactions: WriteTxnMarkers and DescribeProducers.

* WriteTxnMarkers: a transaction coordinator (or an admin aborting a hanging transaction, as
  ``kafka-transactions.sh abort`` does) asks for COMMIT/ABORT markers; each is written through the
  :class:`~tidelog.coordinator.txn.marker_writer.TxnMarkerWriter` (which also lets the group
  coordinator apply markers of ``__consumer_offsets``). Per partition the append's error
  (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH,
  TRANSACTION_COORDINATOR_FENCED ...), grouped by producer id as Kafka answers. From v2 (KIP-1228) a
  marker names its transaction version; one of version 2 must carry an epoch above the producer's
  last one in the partition (the coordinator bumped it), else INVALID_PRODUCER_EPOCH.
* DescribeProducers: the active producers of each partition this broker leads (producer state:
  epoch, last sequence and timestamp, the coordinator epoch of its last marker, the first offset
  of its open transaction or -1).
"""

from __future__ import annotations

from tidelog.coordinator.txn.marker_writer import TxnMarkerWriter
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

MarkerResult = WriteTxnMarkersResponse.WritableTxnMarkerResult
MarkerTopic = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
MarkerPartition = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult


def _markers_error(request: WriteTxnMarkersRequest, code: ErrorCode, message: str | None) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(markers=[
        MarkerResult(producer_id=m.producer_id, topics=[
            MarkerTopic(name=t.name, partitions=[MarkerPartition(partition_index=p, error_code=int(code))
                                                 for p in t.partition_indexes]) for t in m.topics])
        for m in request.markers])


def _producers_error(request: DescribeProducersRequest, code: ErrorCode,
                     message: str | None) -> DescribeProducersResponse:
    return DescribeProducersResponse(topics=[
        DescribeProducersResponse.TopicResponse(name=t.name, partitions=[
            DescribeProducersResponse.PartitionResponse(partition_index=p, error_code=int(code), error_message=message)
            for p in t.partition_indexes]) for t in request.topics])


MARKER_TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms default, the WriteTxnMarkers produce timeout


class TxnPartitionHandlers:
    def __init__(self, markers: TxnMarkerWriter, replicas: ReplicaManager,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.authorizer = authorizer
        self.markers = markers
        self.replicas = replicas

    @handles(ApiKey.WRITE_TXN_MARKERS, 0, 2, _markers_error)
    def handle_write_txn_markers(self, ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        auth = self.authorizer  # brokers only: ALTER or CLUSTER_ACTION on the cluster
        if not (auth.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
                or auth.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)):
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        by_producer: dict[int, dict[str, list]] = {}
        for marker in request.markers:
            topics = by_producer.setdefault(marker.producer_id, {})
            for t in marker.topics:
                for p in t.partition_indexes:
                    code = self._stale_tv2_marker(t.name, p, marker) or self.markers.write(
                        t.name, p, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                        marker.transaction_result)
                    topics.setdefault(t.name, []).append(MarkerPartition(partition_index=p, error_code=int(code)))
        response = WriteTxnMarkersResponse(markers=[
            MarkerResult(producer_id=pid, topics=[MarkerTopic(name=name, partitions=parts)
                                                  for name, parts in topics.items()])
            for pid, topics in by_producer.items()])
        if self.replicas.replication is None:
            return response
        return self._when_committed(response)

    def _stale_tv2_marker(self, topic: str, partition: int, marker) -> ErrorCode | None:
        """v2 (KIP-1228): a marker of transaction version 2 ends a transaction whose epoch the
        coordinator bumped, so its epoch must be above the producer's last one here; an equal one is a
        late or duplicate marker: INVALID_PRODUCER_EPOCH. Other errors are the write's to report."""
        if marker.transaction_version < 2:
            return None
        try:
            current = self.replicas.producer_epoch(topic, partition, marker.producer_id)
        except KafkaError:
            return None
        if current is not None and marker.producer_epoch <= current:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return None

    async def _when_committed(self, response: WriteTxnMarkersResponse) -> WriteTxnMarkersResponse:
        """Cluster mode: answered once each marker written is committed (Kafka writes them acks=all)."""
        for marker in response.markers:
            for t in marker.topics:
                for p in t.partitions:
                    if p.error_code == ErrorCode.NONE:
                        p.error_code = int(await self.markers.committed(t.name, p.partition_index, MARKER_TIMEOUT_MS))
        return response

    @handles(ApiKey.DESCRIBE_PRODUCERS, 0, 0, _producers_error)
    def handle_describe_producers(self, ctx: RequestContext,
                                  request: DescribeProducersRequest) -> DescribeProducersResponse:
        denied = DescribeProducersResponse.PartitionResponse
        return DescribeProducersResponse(topics=[
            DescribeProducersResponse.TopicResponse(name=t.name, partitions=[
                self._describe(t.name, p) if self.authorizer.authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
                else denied(partition_index=p, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                for p in t.partition_indexes])
            for t in request.topics])

    def _describe(self, topic: str, partition: int):
        try:
            entries = self.replicas.producer_states(topic, partition)
        except KafkaError as e:
            return DescribeProducersResponse.PartitionResponse(partition_index=partition, error_code=int(e.code))
        return DescribeProducersResponse.PartitionResponse(partition_index=partition, error_code=0, active_producers=[
            DescribeProducersResponse.ProducerState(
                producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
            for e in entries])


__all__ = ["TxnPartitionHandlers"]
