"""The share group model (KIP-932): members, their assignments, the group's epochs, state and share-state
partitions, as replaying ``ShareGroup*`` records builds them (rules in
:mod:`tidelog.coordinator.group.modern.share.manager`). Loop-only, not thread-safe."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar

from tidelog.coordinator.group.group import Group
from tidelog.coordinator.group.modern.assignors import TopicPartitions
from tidelog.coordinator.group.modern.member import MemberState, frozen_partitions, member_state
from tidelog.coordinator.group.modern.share.records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
    TopicPartitionsInfo,
)
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.errors import ErrorCode, KafkaError

SHARE = "share"
SHARE_PROTOCOL_TYPE = "share"


class ShareGroupState(Enum):
    """Display names, as ListGroups and ShareGroupDescribe return them (Kafka's ShareGroupState)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    """One member: its subscription (MemberMetadata record) and current assignment. Immutable."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: TopicPartitions = field(default_factory=dict)

    def subscription(self) -> ShareGroupMemberMetadataValue:
        return ShareGroupMemberMetadataValue(self.rack_id, self.client_id, self.client_host,
                                             self.subscribed_topic_names)

    def current_assignment(self) -> ShareGroupCurrentMemberAssignmentValue:
        return ShareGroupCurrentMemberAssignmentValue(self.member_epoch, self.previous_member_epoch, self.state,
                                                      self.assigned_partitions)


class ShareGroup(Group):
    """One share group's state, built only by replaying its records. Loop-only, not thread-safe."""

    group_type: ClassVar[str] = SHARE
    classic_joinable: ClassVar[bool] = False

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target_assignment: dict[str, TopicPartitions] = {}
        #: The share-state partitions (ShareGroupStatePartitionMetadata): topic id -> (name, partitions).
        self.initializing: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        self.initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        self.deleting: dict[uuid.UUID, str] = {}

    # ---------------------------------------------------------------------- the Group contract

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def state_name(self) -> str:
        return self.state.value

    def protocol_type_name(self) -> str:
        return SHARE_PROTOCOL_TYPE

    def is_empty(self) -> bool:
        return not self.members

    def _not_consumer(self) -> KafkaError:
        return KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is not a consumer group.")

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_or_epoch: int,
                               api_version: int, transactional: bool = False) -> None:
        raise self._not_consumer()

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        raise self._not_consumer()

    def validate_offset_delete(self) -> None:
        raise self._not_consumer()

    def validate_delete(self) -> None:
        if self.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {self.group_id} has members")

    def is_subscribed_to(self, topic: str) -> bool:
        return any(topic in m.subscribed_topic_names for m in self.members.values())

    def should_expire(self) -> bool:
        return False  # as Kafka's ShareGroup: an empty share group stays (its share state outlives members)

    def tombstones(self) -> list[CoordinatorRecord]:
        """Kafka's share group tombstones, in its order."""
        gid = self.group_id
        out = [CoordinatorRecord(ShareGroupCurrentMemberAssignmentKey(gid, m)) for m in sorted(self.members)]
        out += [CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(gid, m)) for m in sorted(self.members)]
        out.append(CoordinatorRecord(ShareGroupTargetAssignmentMetadataKey(gid)))
        out += [CoordinatorRecord(ShareGroupMemberMetadataKey(gid, m)) for m in sorted(self.members)]
        out.append(CoordinatorRecord(ShareGroupStatePartitionMetadataKey(gid)))
        out.append(CoordinatorRecord(ShareGroupMetadataKey(gid)))
        return out

    # ---------------------------------------------------------------------------- the model

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def state_partitions(self) -> ShareGroupStatePartitionMetadataValue:
        return ShareGroupStatePartitionMetadataValue(dict(self.initializing), dict(self.initialized),
                                                     dict(self.deleting))

    def share_partitions(self) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        """Every partition with share state, initialized or being initialized (DeleteGroups deletes them)."""
        out = dict(self.initialized)
        for t, (name, ps) in self.initializing.items():
            out[t] = (name, out.get(t, (name, frozenset()))[1] | ps)
        return out

    # ---------------------------------------------------------------------------------- replay

    def replay(self, key: Any, value: Any) -> None:
        """Apply one of the group's ShareGroup* records (value None = tombstone)."""
        if isinstance(key, ShareGroupMetadataKey):
            if value is not None:  # the group's tombstone is the registry's to apply
                self.group_epoch, self.metadata_hash = value.epoch, value.metadata_hash
        elif isinstance(key, ShareGroupMemberMetadataKey):
            if value is None:
                self.members.pop(key.member_id, None)
            else:
                old = self.members.get(key.member_id) or ShareGroupMember(key.member_id)
                self.members[key.member_id] = replace(
                    old, rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
                    subscribed_topic_names=tuple(value.subscribed_topic_names))
        elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
            old = self.members.get(key.member_id)
            if value is None:
                if old is not None:
                    self.members[key.member_id] = replace(old, member_epoch=-1, previous_member_epoch=-1,
                                                          assigned_partitions={})
            else:
                self.members[key.member_id] = replace(
                    old or ShareGroupMember(key.member_id), member_epoch=value.member_epoch,
                    previous_member_epoch=value.previous_member_epoch, state=member_state(value.state),
                    assigned_partitions=frozen_partitions(value.assigned_partitions))
        elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
            if value is None:
                self.target_assignment.pop(key.member_id, None)
            else:
                self.target_assignment[key.member_id] = frozen_partitions(value.topic_partitions)
        elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
            self.assignment_epoch = -1 if value is None else value.assignment_epoch
        elif isinstance(key, ShareGroupStatePartitionMetadataKey):
            state = value or ShareGroupStatePartitionMetadataValue()
            self.initializing, self.initialized = dict(state.initializing), dict(state.initialized)
            self.deleting = dict(state.deleting)
        else:
            raise TypeError(f"not a share group record: {type(key).__name__}")


def merge_infos(base: TopicPartitionsInfo, add: TopicPartitionsInfo) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    out = dict(base)
    for t, (name, ps) in add.items():
        out[t] = (name, out.get(t, (name, frozenset()))[1] | ps)
    return out


def remove_infos(base: TopicPartitionsInfo, gone: TopicPartitionsInfo) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    out = {}
    for t, (name, ps) in base.items():
        rest = ps - gone.get(t, ("", frozenset()))[1]
        if rest:
            out[t] = (name, rest)
    return out


__all__ = ["SHARE", "SHARE_PROTOCOL_TYPE", "ShareGroup", "ShareGroupMember", "ShareGroupState", "merge_infos",
           "remove_infos"]
