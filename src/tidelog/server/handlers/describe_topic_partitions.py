"""DescribeTopicPartitions (KIP-966): Metadata's topic and partition part, paged.

Topics are answered in name order, from the request's cursor (its topic at its partition) on, at
most ``min(response_partition_limit, max.request.partition.size.limit)`` partitions in all (at
least one); when a topic's partitions do not all fit, ``next_cursor`` names the first one left out.
No topics asked for means every topic (then unknown or invalid names cannot occur). A cursor whose
topic is not among the requested ones, or with a negative partition, is INVALID_REQUEST for every
requested topic. With one replica per
partition there are no eligible leader replicas (empty lists).
"""

from __future__ import annotations

from tidelog.cluster.controller import validate_topic_name
from tidelog.cluster.metadata import MetadataImage
from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from tidelog.security.acl import TOPIC_OPERATIONS, AclOperation, ResourceType, authorized_operations
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
Partition = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition
Cursor = DescribeTopicPartitionsResponse.Cursor
#: Kafka's ``max.request.partition.size.limit`` default: the most partitions one answer holds.
MAX_PARTITIONS = 2000
#: No authorizer: every topic operation is allowed, also reported for names that are no topic (as Kafka).
OPERATIONS = authorized_operations(TOPIC_OPERATIONS)


class DescribeTopicPartitionsHandler:
    def __init__(self, store: MetadataStore, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.store = store
        self.authorizer = authorizer

    @handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0)
    def handle_describe_topic_partitions(self, ctx: RequestContext,
                                         request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
        image = self.store.image
        cursor = request.cursor
        start_topic = cursor.topic_name if cursor is not None else ""
        every = not request.topics
        names = sorted(image.topics) if every else sorted({t.name for t in request.topics})
        if cursor is not None and (cursor.partition_index < 0 or (not every and start_topic not in names)):
            return DescribeTopicPartitionsResponse(topics=[
                Topic(error_code=int(ErrorCode.INVALID_REQUEST), name=n) for n in names])
        remaining = max(1, min(request.response_partition_limit, MAX_PARTITIONS))
        topics: list[Topic] = []
        next_cursor = None
        # topics the requester may not DESCRIBE: left out of an all-topics answer, else refused (at the end)
        auth = self.authorizer
        denied = [n for n in names if n >= start_topic
                  and not auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n)]
        for name in (n for n in names if n >= start_topic and n not in denied):
            known = _known(image, name)
            if isinstance(known, Topic):
                topics.append(known)
                continue
            first = cursor.partition_index if cursor is not None and name == start_topic else 0
            if remaining <= 0:
                next_cursor = Cursor(topic_name=name, partition_index=first)
                break
            partitions = image.topics[name].partitions[max(first, 0):]
            shown = partitions[:remaining]
            topics.append(described_topic(image, name, shown))
            remaining -= len(shown)
            if len(shown) < len(partitions):
                next_cursor = Cursor(topic_name=name, partition_index=shown[-1].partition + 1 if shown else first)
                break
        if auth.enabled:
            for t in topics:
                t.topic_authorized_operations = auth.authorized_operations(ctx, ResourceType.TOPIC, t.name)
        if not every:
            topics += [Topic(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), name=n, is_internal=False,
                             partitions=[]) for n in denied]
        return DescribeTopicPartitionsResponse(topics=topics, next_cursor=next_cursor)


def _known(image: MetadataImage, name: str) -> Topic | None:
    """An error entry for a name that is not a topic; None for a topic."""
    if name in image.topics:
        return None
    try:
        validate_topic_name(name)
    except KafkaError as e:
        return Topic(error_code=int(e.code), name=name, topic_authorized_operations=OPERATIONS)
    return Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name, topic_authorized_operations=OPERATIONS)


def described_topic(image: MetadataImage, name: str, partitions) -> Topic:
    t = image.topics[name]
    decided = {p.partition for p in t.decided_partitions}
    if not decided:  # being created: not yet seen with its first leaders (see metadata.py)
        return Topic(error_code=int(ErrorCode.LEADER_NOT_AVAILABLE), name=name, topic_id=t.topic_id,
                     is_internal=t.is_internal, topic_authorized_operations=OPERATIONS)
    return Topic(
        error_code=0, name=name, topic_id=t.topic_id, is_internal=t.is_internal,
        topic_authorized_operations=OPERATIONS,
        # as Kafka: a leader that is not a live broker is -1 (no error code here), replicas on
        # brokers that are not live are offline
        partitions=[Partition(error_code=0, partition_index=p.partition,
                              leader_id=p.leader if p.leader in image.brokers else -1,
                              leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas), isr_nodes=list(p.isr),
                              eligible_leader_replicas=[], last_known_elr=[],
                              offline_replicas=[r for r in p.replicas if r not in image.brokers])
                    for p in partitions if p.partition in decided])


__all__ = ["DescribeTopicPartitionsHandler", "described_topic"]
