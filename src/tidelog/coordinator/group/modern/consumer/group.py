"""The consumer group model of the KIP-848 protocol: members, their assignments, the group's epochs
and state, as replaying ``ConsumerGroup*`` records builds them (rules in
:mod:`tidelog.coordinator.group.modern.consumer.manager`). Loop-only, not thread-safe."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar

from tidelog.coordinator.group.group import CONSUMER, CONSUMER_PROTOCOL_TYPE, Group
from tidelog.coordinator.group.modern.assignors import TopicPartitions
from tidelog.coordinator.group.modern.consumer.records import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from tidelog.coordinator.group.modern.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    MemberState,
    frozen_partitions,
    member_state,
)
from tidelog.coordinator.group.modern.subscription import ResolvedRegex
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.errors import ErrorCode, KafkaError

#: ConsumerGroupHeartbeat v1+: the client generates the member id (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


class ConsumerGroupState(Enum):
    """Display names, as ListGroups, DescribeGroups and ConsumerGroupDescribe return them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


# -- members and groups ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member: its subscription (MemberMetadata record) and current assignment. Immutable."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: TopicPartitions = field(default_factory=dict)
    partitions_pending_revocation: TopicPartitions = field(default_factory=dict)
    #: Set for a member that uses the classic protocol (JoinGroup/SyncGroup), None for KIP-848 members.
    classic_member_metadata: ClassicMemberMetadata | None = None

    def subscription(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(self.instance_id, self.rack_id, self.client_id, self.client_host,
                                                self.subscribed_topic_names, self.subscribed_topic_regex,
                                                self.rebalance_timeout_ms, self.server_assignor,
                                                self.classic_member_metadata)

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def classic_protocols(self) -> tuple[tuple[str, bytes], ...]:
        """(name, embedded subscription) of a classic member, in its order of preference; () otherwise."""
        return self.classic_member_metadata.supported_protocols if self.classic_member_metadata else ()

    def current_assignment(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(self.member_epoch, self.previous_member_epoch, self.state,
                                                         self.assigned_partitions, self.partitions_pending_revocation)

    @property
    def regex(self) -> str | None:
        return self.subscribed_topic_regex or None

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch


class ConsumerGroup(Group):
    """One consumer group's state, built only by replaying its records. Loop-only, not thread-safe."""

    group_type: ClassVar[str] = CONSUMER

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target_assignment: dict[str, TopicPartitions] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self._partition_epochs: dict[tuple[uuid.UUID, int], int] = {}

    # ---------------------------------------------------------------------- the Group contract

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def state_name(self) -> str:
        return self.state.value

    def protocol_type_name(self) -> str:
        return CONSUMER_PROTOCOL_TYPE

    def is_empty(self) -> bool:
        return not self.members

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_or_epoch: int,
                               api_version: int, transactional: bool = False) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit (rule 9); a classic member commits with any
        OffsetCommit version and its generation id, which is its member epoch."""
        if generation_or_epoch < 0 and not self.members:
            return  # admin tools and manual commits, while the group is empty
        if transactional and generation_or_epoch == -1 and member_id == "" and group_instance_id is None:
            return
        member = self._member(member_id)
        if not transactional and not member.uses_classic_protocol and api_version < 9:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by "
                             "members using the modern group protocol")
        check_same_epoch(generation_or_epoch, member)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetFetch: a member id (OffsetFetch v9+) must match its epoch."""
        if member_id is None and member_epoch < 0:
            return
        check_same_epoch(member_epoch, self._member(member_id or ""))

    # ----------------------------------------------------------- members of the classic protocol

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.uses_classic_protocol]

    def supports_classic_protocols(self, protocol_type: str | None, protocols: set[str]) -> bool:
        """Kafka's supportsClassicProtocols: a classic member may join if its protocol type is
        ``consumer`` and one of its protocols is supported by every classic member already here."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        if not self.members:
            return bool(protocols)
        classic = self.classic_members()
        return any(all(name in {n for n, _ in m.classic_protocols()} for m in classic) for name in protocols)

    def all_members_use_classic_protocol_except(self, member_ids: set[str]) -> bool:
        """Whether every member but ``member_ids`` uses the classic protocol (Kafka's set version)."""
        leaving = [m for mid, m in self.members.items() if mid in member_ids]
        remaining_classic = len(self.classic_members()) - sum(m.uses_classic_protocol for m in leaving)
        return remaining_classic == len(self.members) - len(leaving)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member in UNRELEASED_PARTITIONS still waits for a partition another member owns."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target_assignment.get(member.member_id, {}).items():
            assigned = member.assigned_partitions.get(topic_id, frozenset())
            if any(p not in assigned and self.partition_epoch(topic_id, p) != -1 for p in partitions):
                return True
        return False

    def validate_delete(self) -> None:
        if self.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {self.group_id} has members")

    def is_subscribed_to(self, topic: str) -> bool:
        if any(topic in r.topics for r in self.resolved_regexes.values()):
            return True
        return any(topic in m.subscribed_topic_names for m in self.members.values())

    def offsets_expire_from(self, commit_timestamp_ms: int) -> int | None:
        return commit_timestamp_ms  # Kafka's consumer groups: retention counts from each commit

    def tombstones(self) -> list[CoordinatorRecord]:
        """Kafka's createGroupTombstoneRecords, in its order."""
        gid = self.group_id
        out = [CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, m)) for m in sorted(self.members)]
        out += [CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, m)) for m in sorted(self.members)]
        out.append(CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(gid)))
        out += [CoordinatorRecord(ConsumerGroupMemberMetadataKey(gid, m)) for m in sorted(self.members)]
        out += [CoordinatorRecord(ConsumerGroupRegularExpressionKey(gid, r)) for r in sorted(self.resolved_regexes)]
        out.append(CoordinatorRecord(ConsumerGroupMetadataKey(gid)))
        return out

    # ---------------------------------------------------------------------------- the model

    def _member(self, member_id: str) -> ConsumerGroupMember:
        member = self.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                             f"{self.group_id}.")
        return member

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning (or revoking) the partition, or -1 when it is free."""
        return self._partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._drop_epochs(old)
        self.members[member.member_id] = member
        for tps in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, partitions in tps.items():
                for p in partitions:
                    self._partition_epochs[(topic_id, p)] = member.member_epoch
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._drop_epochs(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    # ---------------------------------------------------------------------------------- replay

    def replay(self, key: Any, value: Any) -> None:
        """Apply one of the group's ConsumerGroup* records (value None = tombstone)."""
        if isinstance(key, ConsumerGroupMetadataKey):
            if value is not None:  # the group's tombstone is the registry's to apply
                self.group_epoch, self.metadata_hash = value.epoch, value.metadata_hash
        elif isinstance(key, ConsumerGroupMemberMetadataKey):
            if value is None:
                self.remove_member(key.member_id)
            else:
                old = self.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
                self.update_member(replace(
                    old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
                    client_host=value.client_host, subscribed_topic_names=tuple(value.subscribed_topic_names),
                    subscribed_topic_regex=value.subscribed_topic_regex,
                    rebalance_timeout_ms=value.rebalance_timeout_ms, server_assignor=value.server_assignor,
                    classic_member_metadata=value.classic_member_metadata))
        elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
            old = self.members.get(key.member_id)
            if value is None:
                if old is not None:  # Kafka: epoch -1 and nothing assigned, until the member record goes
                    self.update_member(replace(old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                                assigned_partitions={}, partitions_pending_revocation={}))
            else:
                self.update_member(replace(
                    old or ConsumerGroupMember(key.member_id), member_epoch=value.member_epoch,
                    previous_member_epoch=value.previous_member_epoch, state=member_state(value.state),
                    assigned_partitions=frozen_partitions(value.assigned_partitions),
                    partitions_pending_revocation=frozen_partitions(value.partitions_pending_revocation)))
        elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            if value is None:
                self.target_assignment.pop(key.member_id, None)
            else:
                self.target_assignment[key.member_id] = frozen_partitions(value.topic_partitions)
        elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
            self.assignment_epoch = -1 if value is None else value.assignment_epoch
        elif isinstance(key, ConsumerGroupRegularExpressionKey):
            if value is None:
                self.resolved_regexes.pop(key.regex, None)
            else:
                self.resolved_regexes[key.regex] = ResolvedRegex(frozenset(value.topics), value.version,
                                                                  value.timestamp)
        else:
            raise TypeError(f"not a consumer group record: {type(key).__name__}")

    def _drop_epochs(self, member: ConsumerGroupMember) -> None:
        for tps in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, partitions in tps.items():
                for p in partitions:
                    if self._partition_epochs.get((topic_id, p)) == member.member_epoch:
                        del self._partition_epochs[(topic_id, p)]


def check_same_epoch(epoch: int, member: ConsumerGroupMember) -> None:
    """A commit or fetch must carry the member's epoch: STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a
    classic member (its generation id is its member epoch)."""
    if epoch == member.member_epoch:
        return
    if member.uses_classic_protocol:
        raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"The received generation id {epoch} does not match the "
                         f"expected member epoch {member.member_epoch}.")
    raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"The received member epoch {epoch} does not match the "
                     f"expected member epoch {member.member_epoch}.")


__all__ = [
    "CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "check_same_epoch",
]
