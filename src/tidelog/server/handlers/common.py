"""Small pieces every handler shares: resolving a topic-partition to its log, with Kafka's errors."""

from __future__ import annotations

import uuid

from tidelog.errors import ErrorCode, KafkaError
from tidelog.server.context import RequestContext
from tidelog.storage.log import PartitionLog


def partition_log(ctx: RequestContext, topic: str, partition: int) -> PartitionLog:
    """The leader log of ``topic``-``partition`` on this broker, or KafkaError."""
    t = ctx.broker.store.image.topics.get(topic)
    if t is None or not 0 <= partition < len(t.partitions):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
    if t.partitions[partition].leader != ctx.broker.broker_id:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {ctx.broker.broker_id} does not lead {topic}-{partition}")
    plog = ctx.broker.logs.get_log(topic, partition)
    if plog is None:
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"no log for {topic}-{partition}")
    return plog


def topic_name(ctx: RequestContext, name: str, topic_id: uuid.UUID, version: int, ids_from: int) -> str | None:
    """The topic a request names: by id from version ``ids_from`` on, by name before. None if unknown."""
    if version >= ids_from:
        t = ctx.broker.store.image.topic_by_id(topic_id)
        return t.name if t else None
    return name


def check_leader_epoch(ctx: RequestContext, topic: str, partition: int, requested: int) -> None:
    """Kafka's current-leader-epoch check (-1 = no check)."""
    if requested < 0:
        return
    epoch = ctx.broker.store.image.topics[topic].partitions[partition].leader_epoch
    if requested > epoch:
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"leader epoch {requested} is newer than {epoch}")
    if requested < epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"leader epoch {requested} is older than {epoch}")


__all__ = ["check_leader_epoch", "partition_log", "topic_name"]
