"""OffsetForLeaderEpoch (v0-v4): where a leader epoch ended in the leader's log (KIP-101, KIP-320).

For each partition, on its leader: the largest epoch the leader's leader-epoch cache knows at or
below the requested one, and the offset where it ended (the log end for the current epoch), per
:class:`~tidelog.storage.leader_epoch.LeaderEpochCache`; an epoch newer than every known one, or an
empty cache, answers -1/-1. Errors as for a fetch: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a ``current_leader_epoch`` (v2+) that is not the
partition's; with an authorizer, TOPIC_AUTHORIZATION_FAILED without DESCRIBE on the topic (a replica:
CLUSTER_ACTION on the cluster). Consumers use it to detect log truncation after a leader change (KIP-320); Tidelog's
followers use Fetch's diverging epoch instead.
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

TopicResult = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset


def offset_for_leader_epoch_error_response(request: OffsetForLeaderEpochRequest, code: ErrorCode,
                                           message: str | None = None) -> OffsetForLeaderEpochResponse:
    return OffsetForLeaderEpochResponse(topics=[
        TopicResult(topic=t.topic, partitions=[EpochEndOffset(error_code=int(code), partition=p.partition)
                                               for p in t.partitions])
        for t in request.topics])


class OffsetForLeaderEpochHandler:
    def __init__(self, replicas: ReplicaManager, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.replicas = replicas
        self.authorizer = authorizer

    def _allowed(self, ctx: RequestContext, request: OffsetForLeaderEpochRequest, topic: str) -> bool:
        """Kafka's checks: a replica (replica_id >= 0, v3+) needs CLUSTER_ACTION, a client DESCRIBE on the topic."""
        if not self.authorizer.enabled:
            return True
        if ctx.api_version >= 3 and request.replica_id >= 0:
            return self.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        return self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)

    @handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, offset_for_leader_epoch_error_response)
    def handle_offset_for_leader_epoch(self, ctx: RequestContext, request: OffsetForLeaderEpochRequest,
                                       ) -> OffsetForLeaderEpochResponse:
        topics = []
        for t in request.topics:
            parts = []
            if not self._allowed(ctx, request, t.topic):
                topics.append(TopicResult(topic=t.topic, partitions=[
                    EpochEndOffset(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), partition=p.partition)
                    for p in t.partitions]))
                continue
            for p in t.partitions:
                current = p.current_leader_epoch if ctx.api_version >= 2 else -1
                try:
                    epoch, end = self.replicas.end_offset_for_epoch(t.topic, p.partition, current, p.leader_epoch)
                    parts.append(EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=epoch,
                                                end_offset=end))
                except KafkaError as e:
                    parts.append(EpochEndOffset(error_code=int(e.code), partition=p.partition))
            topics.append(TopicResult(topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(topics=topics)


__all__ = ["OffsetForLeaderEpochHandler"]
