"""The classic group: its states and their transition table, and the in-memory model of a classic
group and its members (the contract it fulfils is :class:`~tidelog.coordinator.group.group.Group`).

Classic group states (the values are Kafka's display names, which ListGroups/DescribeGroups return).
Each state's *action* (how requests are answered) and *transitions*, as Kafka's ``ClassicGroupState``
documents them::

    Empty               no members; lingers until its offsets expire (also "simple" groups that only
                        commit offsets). join -> new member added; sync/heartbeat/leave/commit with a
                        member id -> UNKNOWN_MEMBER_ID; fetch allowed.
                        => PreparingRebalance (a member joins); => Dead (removed: deleted, expired)
    PreparingRebalance  heartbeat and sync -> REBALANCE_IN_PROGRESS; leave removes the member; joins
                        are parked until every known member has rejoined or the rebalance timeout;
                        commits from the previous generation allowed.
                        => CompletingRebalance (members joined); => Empty (everyone left); => Dead
    CompletingRebalance waiting for the leader's assignment: heartbeat ok, commit ->
                        REBALANCE_IN_PROGRESS, follower syncs parked until the leader's sync arrives.
                        => Stable (leader's sync written); => PreparingRebalance (join from a new member
                        or with new metadata, leave, member failure); => Dead
    Stable              heartbeats, syncs (current assignment) and commits of the current generation.
                        => PreparingRebalance (failure, leave, leader rejoins, follower rejoins with new
                        metadata); => Dead
    Dead                final; its metadata is being removed.

Rules of the model (Kafka's ``ClassicGroup``):

1. ``transition_to`` refuses a move that :data:`VALID_PREVIOUS_STATES` does not list
   (:class:`IllegalStateTransition`) and stamps ``current_state_timestamp``.
2. The leader is the first member added; when it leaves, the next member in join order leads. At the
   end of a join phase a leader that did not rejoin is replaced by the first member that did.
3. A protocol is a candidate when every member supports it; each member votes for its first
   candidate and the most-voted wins (ties: the earliest vote). A member that supports no candidate
   cannot join (INCONSISTENT_GROUP_PROTOCOL).
4. Static members (``group.instance.id``) map instance id -> member id; a request naming the instance
   with another member id is fenced (FENCED_INSTANCE_ID).

Concurrency: loop-only, not thread-safe.
"""

from __future__ import annotations

import enum
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tidelog.clock import Clock
from tidelog.coordinator.group.classic.consumer_protocol import subscription_topics
from tidelog.coordinator.group.group import (
    CLASSIC,
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    Group,
)
from tidelog.coordinator.group.records import GroupMetadataValue, MemberMetadata
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.messages import (
    DescribeGroupsResponse,
    JoinGroupResponse,
    SyncGroupResponse,
)


class ClassicGroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


#: The states a group may be in to move to the key state (Kafka's ``validPreviousStates``).
VALID_PREVIOUS_STATES: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    ClassicGroupState.EMPTY: frozenset({ClassicGroupState.PREPARING_REBALANCE}),
    ClassicGroupState.PREPARING_REBALANCE: frozenset({ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.EMPTY}),
    ClassicGroupState.COMPLETING_REBALANCE: frozenset({ClassicGroupState.PREPARING_REBALANCE}),
    ClassicGroupState.STABLE: frozenset({ClassicGroupState.COMPLETING_REBALANCE}),
    ClassicGroupState.DEAD: frozenset({ClassicGroupState.STABLE, ClassicGroupState.PREPARING_REBALANCE, ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.EMPTY, ClassicGroupState.DEAD}),
}


def can_transition(source: ClassicGroupState, target: ClassicGroupState) -> bool:
    return source in VALID_PREVIOUS_STATES[target]


class IllegalStateTransition(RuntimeError):
    """A transition the table does not allow: a coordinator bug, never a client error."""


# ---------------------------------------------------------------------------------- classic model

JoinCallback = Callable[[JoinGroupResponse], None]
SyncCallback = Callable[[SyncGroupResponse], None]


@dataclass(eq=False, slots=True)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (name, metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    is_new: bool = False

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def has_satisfied_heartbeat(self) -> bool:
        """Members waiting for a join/sync answer need no heartbeat, except new ones (Kafka's rule)."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def describe(self, protocol: str | None) -> DescribeGroupsResponse.DescribedGroupMember:
        return DescribeGroupsResponse.DescribedGroupMember(
            member_id=self.member_id, group_instance_id=self.group_instance_id, client_id=self.client_id,
            client_host=self.client_host, member_metadata=self.metadata(protocol) if protocol else b"",
            member_assignment=self.assignment)


@dataclass(eq=False)
class ClassicGroup(Group):
    """A classic group: membership, generation, protocol, leader and the rebalance bookkeeping."""

    group_type: ClassVar[str] = CLASSIC

    group_id: str
    clock: Clock
    state: ClassicGroupState = ClassicGroupState.EMPTY
    previous_state: ClassicGroupState = ClassicGroupState.EMPTY
    current_state_timestamp: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    num_awaiting_join: int = 0
    supported_protocols: Counter[str] = field(default_factory=Counter)
    subscribed_topics: set[str] | None = None
    new_member_added: bool = False

    # ------------------------------------------------------------------------------- contract

    def state_name(self) -> str:
        return self.state.value

    def protocol_type_name(self) -> str:
        return self.protocol_type or ""

    def is_empty(self) -> bool:
        return self.state is ClassicGroupState.EMPTY

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def validate_member(self, member_id: str, group_instance_id: str | None, operation: str) -> None:
        """Rule 4, then membership: FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"static member {group_instance_id} is unknown to group {self.group_id}")
            if existing != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"{operation}: member {member_id} of instance {group_instance_id} is fenced "
                                 f"by {existing}")
        if member_id not in self.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id!r} is unknown to group {self.group_id}")

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_or_epoch: int,
                               api_version: int, transactional: bool = False) -> None:
        """Kafka's ClassicGroup.validateOffsetCommit; a transactional commit (TxnOffsetCommit) without
        member id and generation is accepted whatever the group's state, and is not refused while
        the group completes a rebalance."""
        if self.state is ClassicGroupState.DEAD:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"group {self.group_id} is dead")
        if generation_or_epoch < 0 and self.state is ClassicGroupState.EMPTY:
            return  # a simple (admin or manual-assignment) commit to an empty group
        if generation_or_epoch >= 0 or member_id or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id, "txn-offset-commit" if transactional else "offset-commit")
            if generation_or_epoch != self.generation_id:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION,
                                 f"generation {generation_or_epoch} is not {self.generation_id}")
        elif not transactional and self.state is not ClassicGroupState.EMPTY:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"group {self.group_id} has members: commits need a member id and generation")
        if not transactional and self.state is ClassicGroupState.COMPLETING_REBALANCE:
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"group {self.group_id} is completing a rebalance")

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if self.state is ClassicGroupState.DEAD:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is in dead state.")

    def validate_offset_delete(self) -> None:
        if self.state is ClassicGroupState.DEAD:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is in dead state.")
        if self.state is not ClassicGroupState.EMPTY and not self.uses_consumer_protocol():
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {self.group_id} has members")

    def validate_delete(self) -> None:
        if self.state is ClassicGroupState.DEAD:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is in dead state.")
        if self.state is not ClassicGroupState.EMPTY:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {self.group_id} has members")

    def is_subscribed_to(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.uses_consumer_protocol()

    def offsets_expire_from(self, commit_timestamp_ms: int) -> int | None:
        if self.protocol_type is None:
            return commit_timestamp_ms  # a simple group: retention counts from each commit
        if self.state is ClassicGroupState.EMPTY:
            # Kafka 2.1+: retention counts from the moment the group became empty.
            return self.current_state_timestamp if self.current_state_timestamp is not None else commit_timestamp_ms
        if self.uses_consumer_protocol() and self.subscribed_topics is not None and self.state is ClassicGroupState.STABLE:
            return commit_timestamp_ms  # only topics the group no longer subscribes to get this far
        return None

    # -------------------------------------------------------------------------------- members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def add(self, member: ClassicMember, respond: JoinCallback | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError("the group and the member's protocol types differ")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names())
        member.awaiting_join = respond
        if member.is_awaiting_join:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names())
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: ClassicMember, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, respond: JoinCallback | None) -> None:
        self.supported_protocols.subtract(member.protocol_names())
        member.protocols = list(protocols)
        self.supported_protocols.update(member.protocol_names())
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if respond is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif respond is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        superseded = member.awaiting_join
        member.awaiting_join = respond
        if respond is not None and superseded is not None and superseded is not respond:
            # A repeated join replaces a parked one; answer the old request rather than leave it (and
            # every response queued behind it on its connection) waiting forever.
            superseded(JoinGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> ClassicMember:
        """The new member id takes over the instance; a request parked under the old id is fenced."""
        old = self.members.pop(old_member_id)
        self.complete_join(old, JoinGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id,
                                                  protocol_name=None, protocol_type=None, leader=""))
        self.complete_sync(old, SyncGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID))
        new = ClassicMember(new_member_id, old.group_instance_id, old.client_id, old.client_host,
                            old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type, list(old.protocols),
                            old.assignment)
        self.members[new_member_id] = new
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return new

    def maybe_elect_new_joined_leader(self) -> bool:
        """Rule 2 at the end of a join phase; False when nobody rejoined (or there is no leader)."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def not_yet_rejoined(self) -> list[ClassicMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def complete_join(self, member: ClassicMember, response: JoinGroupResponse) -> bool:
        if member.awaiting_join is None:
            return False
        respond, member.awaiting_join = member.awaiting_join, None
        self.num_awaiting_join -= 1
        respond(response)
        return True

    def complete_sync(self, member: ClassicMember, response: SyncGroupResponse) -> bool:
        if member.awaiting_sync is None:
            return False
        respond, member.awaiting_sync = member.awaiting_sync, None
        respond(response)
        return True

    # -------------------------------------------------------------------------- transitions

    def can_rebalance(self) -> bool:
        return can_transition(self.state, ClassicGroupState.PREPARING_REBALANCE)

    def transition_to(self, target: ClassicGroupState) -> None:
        if not can_transition(self.state, target):
            raise IllegalStateTransition(f"group {self.group_id} cannot move from {self.state.value} to {target.value}")
        self.previous_state, self.state = self.state, target
        self.current_state_timestamp = self.clock.wall_ms()

    # ----------------------------------------------------------------------------- protocols

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n and n > 0}

    def select_protocol(self) -> str:
        """Rule 3."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for the empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])  # Counter keeps first-vote order: ties go to the earliest

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        names = set(protocols)
        if self.state is ClassicGroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(self.supported_protocols[name] == n for name in names)

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(subscription_topics(member.metadata(self.protocol_name)))
        except (MalformedMessageError, ValueError):
            return None
        return topics

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(ClassicGroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(ClassicGroupState.EMPTY)
        self.pending_sync_members.clear()

    # ------------------------------------------------------------------------------ responses

    def join_response(self, member_id: str, *, with_members: bool) -> JoinGroupResponse:
        return JoinGroupResponse(
            error_code=0, generation_id=self.generation_id, protocol_type=self.protocol_type,
            protocol_name=self.protocol_name, leader=self.leader_id or "", member_id=member_id,
            members=self.member_list() if with_members else [])

    def member_list(self) -> list[JoinGroupResponse.JoinGroupResponseMember]:
        return [JoinGroupResponse.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                          metadata=m.metadata(self.protocol_name))
                for m in self.members.values()]

    def describe(self) -> DescribeGroupsResponse.DescribedGroup:
        stable = self.state is ClassicGroupState.STABLE
        return DescribeGroupsResponse.DescribedGroup(
            error_code=0, group_id=self.group_id, group_state=self.state.value,
            protocol_type=self.protocol_type or "", protocol_data=(self.protocol_name or "") if stable else "",
            members=[m.describe(self.protocol_name if stable else None) for m in self.members.values()])

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    def to_record_value(self, assignment: dict[str, bytes]) -> GroupMetadataValue:
        """The GroupMetadataValue that persists this group with ``assignment`` (member id -> bytes)."""
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "", generation=self.generation_id, protocol=self.protocol_name,
            leader=self.leader_id, current_state_timestamp=self.current_state_timestamp
            if self.current_state_timestamp is not None else -1,
            members=tuple(MemberMetadata(
                member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(self.protocol_name) if self.protocol_name else b"",
                assignment=assignment.get(m.member_id, b""), rebalance_timeout=m.rebalance_timeout_ms,
                group_instance_id=m.group_instance_id) for m in self.members.values()))

    @classmethod
    def from_record_value(cls, group_id: str, value: GroupMetadataValue, clock: Clock) -> ClassicGroup:
        """A group as loaded: Stable with its members, or Empty (Kafka's replay of GroupMetadataValue)."""
        group = cls(group_id, clock, state=ClassicGroupState.STABLE if value.members else ClassicGroupState.EMPTY,
                    protocol_type=value.protocol_type or None, protocol_name=value.protocol,
                    generation_id=value.generation, leader_id=value.leader,
                    current_state_timestamp=None if value.current_state_timestamp == -1
                    else value.current_state_timestamp)
        for m in value.members:
            rebalance_timeout = m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
            member = ClassicMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, rebalance_timeout,
                                   m.session_timeout, value.protocol_type,
                                   [(value.protocol or "", m.subscription)], m.assignment)
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
            group.members[member.member_id] = member
            group.supported_protocols.update(member.protocol_names())
        if group.leader_id is not None and group.leader_id not in group.members:
            group.leader_id = next(iter(group.members), None)
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    def snapshot(self) -> dict[str, Any]:
        """The durable part of the group as plain data (tests compare a replayed group with this)."""
        return {
            "group_id": self.group_id, "state": self.state, "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name, "generation_id": self.generation_id, "leader_id": self.leader_id,
            "members": {mid: (m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                              m.rebalance_timeout_ms, m.metadata(self.protocol_name) if self.protocol_name else b"",
                              m.assignment) for mid, m in self.members.items()},
            "static_members": dict(self.static_members), "subscribed_topics": self.subscribed_topics,
        }


# Timer keys of the classic protocol (one join and one sync timer per group, a session per member)


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


def join_error(code: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=int(code), member_id=member_id)


__all__ = [
    "VALID_PREVIOUS_STATES",
    "ClassicGroup",
    "ClassicGroupState",
    "ClassicMember",
    "IllegalStateTransition",
    "JoinCallback",
    "SyncCallback",
    "can_transition",
    "heartbeat_key",
    "join_error",
    "join_key",
    "sync_key",
]
