"""What the ``tidelog groups`` actions know about a consumer group, through the admin API: its
description, whether it exists, its committed offsets, and Kafka's names for its states and types.

Group states are Kafka's names (``Empty``, ``PreparingRebalance``, ``CompletingRebalance``, ``Stable``,
``Dead``); the transitional states of KIP-848 groups (``Assigning``, ``Reconciling``) are shown as
``Unknown`` because librdkafka does not know them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, describe_error, error_code
from tidelog.cli.table import MISSING

STATES = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}
_STATE_BY_NAME = {name.lower(): state for state, name in STATES.items() if state != ConsumerGroupState.UNKNOWN}
TYPES = {ConsumerGroupType.CLASSIC: "Classic", ConsumerGroupType.CONSUMER: "Consumer",
         ConsumerGroupType.UNKNOWN: "Unknown"}
_TYPE_BY_NAME = {"classic": ConsumerGroupType.CLASSIC, "consumer": ConsumerGroupType.CONSUMER}
INACTIVE = {ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD}
REBALANCING = {ConsumerGroupState.PREPARING_REBALANCING, ConsumerGroupState.COMPLETING_REBALANCING}


# ------------------------------------------------------------------------------------------ argument types


def group_id(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("a group id must not be empty")
    return text


def state(text: str) -> ConsumerGroupState:
    found = _STATE_BY_NAME.get(text.lower())
    if found is None:
        valid = ", ".join(name for s, name in STATES.items() if s != ConsumerGroupState.UNKNOWN)
        raise argparse.ArgumentTypeError(f"unknown group state {text!r} (valid: {valid})")
    return found


def group_type(text: str) -> ConsumerGroupType:
    found = _TYPE_BY_NAME.get(text.lower())
    if found is None:
        raise argparse.ArgumentTypeError(f"unknown group type {text!r} (valid: classic, consumer)")
    return found


# ------------------------------------------------------------------------------------------ names


def state_name(value: Any) -> str:
    return STATES.get(value, str(value))


def type_name(value: Any) -> str:
    return TYPES.get(value, str(value))


def assignment_text(partitions: Iterable[TopicPartition]) -> str:
    """``topic:0,1,2;other:3`` (Kafka's ``--members --verbose`` notation), or ``-``."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ";".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items()))


# ------------------------------------------------------------------------------------------ lookups


def describe_groups(admin: AdminClient, groups: list[str]) -> dict[str, ConsumerGroupDescription | KafkaException]:
    futures = admin.describe_consumer_groups(groups, request_timeout=REQUEST_TIMEOUT_S)
    out: dict[str, ConsumerGroupDescription | KafkaException] = {}
    for group, future in futures.items():
        try:
            out[group] = future.result()
        except KafkaException as e:
            out[group] = e
    return out


def exists(description: ConsumerGroupDescription | KafkaException) -> bool:
    if isinstance(description, KafkaException):
        return error_code(description) != KafkaError.GROUP_ID_NOT_FOUND
    return description.state != ConsumerGroupState.DEAD


def committed(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets by (topic, partition)."""
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                               request_timeout=REQUEST_TIMEOUT_S)[group]
    try:
        result = future.result()
    except KafkaException as e:
        if error_code(e) == KafkaError.GROUP_ID_NOT_FOUND:
            return {}
        raise CliError(f"cannot fetch the committed offsets of group {group!r}: {describe_error(e)}") from None
    offsets = {}
    for tp in result.topic_partitions or ():
        if tp.error is not None:
            raise CliError(f"cannot fetch the committed offset of group {group!r} for {tp.topic}-{tp.partition}: "
                           f"{describe_error(tp.error)}")
        if tp.offset >= 0:
            offsets[(tp.topic, tp.partition)] = tp.offset
    return offsets


__all__ = [
    "INACTIVE",
    "REBALANCING",
    "STATES",
    "TYPES",
    "assignment_text",
    "committed",
    "describe_groups",
    "exists",
    "group_id",
    "group_type",
    "state",
    "state_name",
    "type_name",
]
