"""The ConsumerGroupHeartbeat request as the consumer group coordinator reads it: its validation
(Kafka's GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid, 4.x) and the member it
describes. Pure functions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tidelog.coordinator.group.modern.consumer.group import (
    CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION,
    ConsumerGroupMember,
)
from tidelog.coordinator.group.modern.member import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import ConsumerGroupHeartbeatRequest


def validate_heartbeat(request: Any, api_version: int, assignors: Iterable[str]) -> None:
    """Kafka's GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid (4.x)."""
    def invalid(message: str) -> KafkaError:
        return KafkaError(ErrorCode.INVALID_REQUEST, message)

    epoch = request.member_epoch
    needs_member_id = (api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0
                       or epoch == LEAVE_GROUP_MEMBER_EPOCH)
    if needs_member_id and not request.member_id.strip():
        raise invalid("MemberId can't be empty.")
    if not request.group_id.strip():
        raise invalid("GroupId can't be empty.")
    if request.instance_id is not None and not request.instance_id.strip():
        raise invalid("InstanceId can't be empty.")
    if request.rack_id is not None and not request.rack_id.strip():
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    names = list(assignors)
    if request.server_assignor is not None and request.server_assignor not in names:
        raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not "
                         f"supported. Supported assignors: {', '.join(names)}.")


def member_from_heartbeat(member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest, client_id: str,
                   client_host: str) -> ConsumerGroupMember:
    """The member with what the heartbeat sets (null fields leave it unchanged); a heartbeat makes it a
    consumer-protocol member (no classic member metadata)."""
    def pick(new: Any, old: Any) -> Any:
        return old if new is None else new

    names = request.subscribed_topic_names
    return replace(
        member, instance_id=pick(request.instance_id, member.instance_id), rack_id=pick(request.rack_id, member.rack_id),
        rebalance_timeout_ms=(member.rebalance_timeout_ms if request.rebalance_timeout_ms == -1
                              else request.rebalance_timeout_ms),
        server_assignor=pick(request.server_assignor, member.server_assignor),
        subscribed_topic_names=member.subscribed_topic_names if names is None else tuple(sorted(set(names))),
        subscribed_topic_regex=pick(request.subscribed_topic_regex, member.subscribed_topic_regex),
        client_id=client_id, client_host=client_host, classic_member_metadata=None)


__all__ = ["member_from_heartbeat", "validate_heartbeat"]
