"""ListOffsets: the offset for a timestamp (or EARLIEST -2, LATEST -1, MAX_TIMESTAMP -3) per partition.

v0 answers with ``old_style_offsets`` (for LATEST, the end offset and the segments' base offsets, up
to ``max_num_offsets``; otherwise the one offset); v1+ with timestamp and offset.
With read_committed, LATEST is the last stable offset. A negative timestamp is a spec only from the
version that introduced it (MAX_TIMESTAMP v7, EARLIEST_LOCAL v8, LATEST_TIERED v9,
EARLIEST_PENDING_UPLOAD v11); earlier, or when no version knows it, the partition gets
UNSUPPORTED_VERSION, as in Kafka. Without tiered storage EARLIEST_LOCAL is the log start offset (with
no timestamp) and LATEST_TIERED and EARLIEST_PENDING_UPLOAD
(v11, KIP-1023) find nothing; an answer that finds nothing has leader epoch -1.
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse
#: Negative timestamps (specs) -> the first ListOffsets version that knows them.
SPEC_VERSIONS = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}
EARLIEST_TIMESTAMP = -2
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6


class ListOffsetsHandler:
    def __init__(self, replicas: ReplicaManager, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.replicas = replicas
        self.authorizer = authorizer

    @handles(ApiKey.LIST_OFFSETS, 0, 11)
    def handle_list_offsets(self, ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
        topics = []
        for t in request.topics:
            if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name):
                topics.append(TopicResponse(name=t.name, partitions=[PartitionResponse(
                    partition_index=p.partition_index, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                    timestamp=-1, offset=-1) for p in t.partitions]))
                continue
            parts = [self._list_offset(ctx.api_version, t.name, p, request.isolation_level) for p in t.partitions]
            topics.append(TopicResponse(name=t.name, partitions=parts))
        return ListOffsetsResponse(topics=topics)

    def _list_offset(self, v: int, topic: str, p, isolation_level: int) -> PartitionResponse:
        if p.timestamp < 0 and v < SPEC_VERSIONS.get(p.timestamp, 1 << 15):
            return PartitionResponse(partition_index=p.partition_index, error_code=int(ErrorCode.UNSUPPORTED_VERSION))
        if p.timestamp == EARLIEST_PENDING_UPLOAD_TIMESTAMP:  # v11 (KIP-1023)
            return self._pending_upload(topic, p)
        try:
            if v == 0:  # Kafka's legacyFetchOffsetsBefore
                return PartitionResponse(partition_index=p.partition_index, error_code=0,
                                         old_style_offsets=self.replicas.legacy_offsets(
                                             topic, p.partition_index, p.timestamp, p.max_num_offsets,
                                             p.current_leader_epoch))
            found = self.replicas.offset_for_timestamp(topic, p.partition_index, p.timestamp,
                                                       p.current_leader_epoch, isolation_level)
        except KafkaError as e:
            return PartitionResponse(partition_index=p.partition_index, error_code=int(e.code))
        epoch = self.replicas.leader_epoch(topic, p.partition_index)
        if found is None or p.timestamp == LATEST_TIERED_TIMESTAMP:
            # Nothing found (and no tiered storage, so no tiered offset): no leader epoch either.
            return PartitionResponse(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1,
                                     leader_epoch=-1)
        ts, offset = found
        if p.timestamp == EARLIEST_LOCAL_TIMESTAMP:
            ts = -1  # Kafka answers the local log start offset without a timestamp
        return PartitionResponse(partition_index=p.partition_index, error_code=0, timestamp=ts, offset=offset,
                                 leader_epoch=epoch if v >= 4 else -1)

    def _pending_upload(self, topic: str, p) -> PartitionResponse:
        """EARLIEST_PENDING_UPLOAD: without remote storage, Kafka finds nothing (offset and epoch -1)."""
        try:
            self.replicas.offset_for_timestamp(topic, p.partition_index, EARLIEST_TIMESTAMP, p.current_leader_epoch)
        except KafkaError as e:  # leadership and the leader epoch are checked as for the other specs
            return PartitionResponse(partition_index=p.partition_index, error_code=int(e.code))
        return PartitionResponse(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1,
                                 leader_epoch=-1)


__all__ = ["ListOffsetsHandler"]
