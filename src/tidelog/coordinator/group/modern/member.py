"""A member of a modern (KIP-848) group as the shared machinery sees it: its reconciliation state, its
epochs and partitions, and the rules on them that every modern group type follows (consumer groups
now; share and streams groups next). Pure."""

from __future__ import annotations

import base64
import uuid
from enum import IntEnum
from typing import Protocol

from tidelog.coordinator.group.modern.assignors import TopicPartitions

#: The member epoch a member sends to leave the group; a static member's, to leave for now (its
#: instance id keeps its partitions until its session ends).
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
EMPTY: TopicPartitions = {}


class MemberState(IntEnum):
    """A member's reconciliation state; the values are Kafka's (persisted in the current assignment)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ModernGroupMember(Protocol):
    """What reconciliation and subscriptions read of a member (a group type's member class has more)."""

    @property
    def member_id(self) -> str: ...
    @property
    def member_epoch(self) -> int: ...
    @property
    def previous_member_epoch(self) -> int: ...
    @property
    def state(self) -> MemberState: ...
    @property
    def assigned_partitions(self) -> TopicPartitions: ...
    @property
    def partitions_pending_revocation(self) -> TopicPartitions: ...
    @property
    def subscribed_topic_names(self) -> tuple[str, ...]: ...
    @property
    def regex(self) -> str | None: ...


def frozen_partitions(tps: TopicPartitions) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(ps) for t, ps in tps.items() if ps}


def member_state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN


def new_member_id() -> str:
    """A member id as Kafka's coordinator makes one for consumer groups (``Uuid.randomUuid()``: 16 random
    bytes, URL-safe base64 without padding, never starting with a dash)."""
    while True:
        member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not member_id.startswith("-"):
            return member_id


__all__ = [
    "EMPTY",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "MemberState",
    "ModernGroupMember",
    "frozen_partitions",
    "member_state",
    "new_member_id",
]
