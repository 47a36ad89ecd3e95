"""The streams group model (KIP-1071): members, their tasks, the group's epochs, topology and state, as
replaying ``StreamsGroup*`` records builds them (rules in
:mod:`tidelog.coordinator.group.modern.streams.manager`). Loop-only, not thread-safe."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from typing import Any, ClassVar

from tidelog.coordinator.group.group import Group
from tidelog.coordinator.group.modern.streams.records import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
)
from tidelog.coordinator.group.modern.streams.tasks import EMPTY_TASKS, TasksTuple, task_ids, tasks_of
from tidelog.coordinator.group.modern.streams.topology import ConfiguredTopology
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.errors import ErrorCode, KafkaError

STREAMS = "streams"
STREAMS_PROTOCOL_TYPE = "streams"


class StreamsGroupState(Enum):
    """Display names, as ListGroups and StreamsGroupDescribe return them (Kafka's StreamsGroupState)."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class StreamsMemberState(IntEnum):
    """A member's reconciliation state (persisted in the current assignment; Kafka 4.4's MemberState values)."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


#: (subtopology, partition, epoch): the member epoch at which a member was given an active task
TaskEpochs = tuple[tuple[str, int, int], ...]
#: Checks one committed partition (topic, partition) of an OffsetCommit; raises KafkaError
CommitValidator = Callable[[str, int], None]


def task_epochs(items: Iterable[Any] | None, default_epoch: int) -> TaskEpochs:
    """The epochs of a record's active ``TaskIds`` (their AssignmentEpochs; ``default_epoch`` for every
    partition when missing or not of the partitions' length, as Kafka's TasksTupleWithEpochs)."""
    out: dict[tuple[str, int], int] = {}
    for item in items or ():
        epochs = item.assignment_epochs
        if epochs is None or len(epochs) != len(item.partitions):
            epochs = [default_epoch] * len(item.partitions)
        for p, e in zip(item.partitions, epochs, strict=True):
            out[(item.subtopology_id, p)] = e
    return tuple(sorted((s, p, e) for (s, p), e in out.items()))


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    """One member: its metadata (MemberMetadata record) and current assignment. Immutable."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: StreamsMemberState = StreamsMemberState.STABLE
    assigned: TasksTuple = EMPTY_TASKS
    pending_revocation: TasksTuple = EMPTY_TASKS
    #: The epoch each active task (assigned or pending revocation) was assigned at (Kafka's
    #: TasksTupleWithEpochs; AssignmentEpochs in the record): what an OffsetCommit at an older epoch is
    #: checked against.
    active_epochs: TaskEpochs = ()
    #: Cumulative changelog offsets and end offsets the member reported (in memory only).
    task_offsets: tuple[tuple[str, int, int], ...] = ()
    task_end_offsets: tuple[tuple[str, int, int], ...] = ()

    def metadata(self) -> StreamsGroupMemberMetadataValue:
        V = StreamsGroupMemberMetadataValue
        endpoint = V.Endpoint(host=self.user_endpoint[0], port=self.user_endpoint[1]) if self.user_endpoint else None
        return V(instance_id=self.instance_id, rack_id=self.rack_id, client_id=self.client_id,
                 client_host=self.client_host, rebalance_timeout_ms=self.rebalance_timeout_ms,
                 topology_epoch=self.topology_epoch, process_id=self.process_id, user_endpoint=endpoint,
                 client_tags=[V.KeyValue(key=k, value=v) for k, v in self.client_tags])

    def current_assignment(self) -> StreamsGroupCurrentMemberAssignmentValue:
        V = StreamsGroupCurrentMemberAssignmentValue
        T = V.TaskIds

        epochs = self.epochs()

        def ids(tasks: Any, with_epochs: bool = False) -> list:
            return [T(subtopology_id=t.subtopology_id, partitions=t.partitions,
                      assignment_epochs=[epochs.get((t.subtopology_id, p), self.member_epoch) for p in t.partitions]
                      if with_epochs else None)
                    for t in task_ids(T, tasks)]

        return V(member_epoch=self.member_epoch, previous_member_epoch=self.previous_member_epoch,
                 state=int(self.state), active_tasks=ids(self.assigned.active, True),
                 standby_tasks=ids(self.assigned.standby), warmup_tasks=ids(self.assigned.warmup),
                 active_tasks_pending_revocation=ids(self.pending_revocation.active, True),
                 standby_tasks_pending_revocation=ids(self.pending_revocation.standby),
                 warmup_tasks_pending_revocation=ids(self.pending_revocation.warmup))

    def epochs(self) -> dict[tuple[str, int], int]:
        return {(s, p): e for s, p, e in self.active_epochs}


def target_value(tasks: TasksTuple) -> StreamsGroupTargetAssignmentMemberValue:
    V = StreamsGroupTargetAssignmentMemberValue
    return V(active_tasks=task_ids(V.TaskIds, tasks.active), standby_tasks=task_ids(V.TaskIds, tasks.standby),
             warmup_tasks=task_ids(V.TaskIds, tasks.warmup))


def _member_state(value: int) -> StreamsMemberState:
    try:
        return StreamsMemberState(value)
    except ValueError:
        return StreamsMemberState.UNKNOWN


class StreamsGroup(Group):
    """One streams group's state, built only by replaying its records. Loop-only, not thread-safe."""

    group_type: ClassVar[str] = STREAMS
    classic_joinable: ClassVar[bool] = False

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.validated_topology_epoch = -1
        self.assignment_epoch = 0
        #: When the target assignment was last computed (wall clock ms; 0: never)
        self.assignment_timestamp = 0
        self.topology: StreamsGroupTopologyValue | None = None
        self.members: dict[str, StreamsGroupMember] = {}
        self.target_assignment: dict[str, TasksTuple] = {}
        #: The topology configured against the latest metadata (the manager keeps it current; not a record).
        self.configured: ConfiguredTopology | None = None
        #: In memory: when the group got its first member (the initial rebalance delay counts from it).
        self.created_ms: int | None = None
        self.shutdown_requested = False

    # ---------------------------------------------------------------------- the Group contract

    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.state != StreamsMemberState.STABLE or m.member_epoch != self.assignment_epoch
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def state_name(self) -> str:
        return self.state.value

    def protocol_type_name(self) -> str:
        return STREAMS_PROTOCOL_TYPE

    def is_empty(self) -> bool:
        return not self.members

    def _member(self, member_id: str) -> StreamsGroupMember:
        member = self.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                             f"{self.group_id}.")
        return member

    @staticmethod
    def _check_epoch(epoch: int, member: StreamsGroupMember) -> None:
        if epoch != member.member_epoch:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"The member epoch {epoch} is not the member's "
                             f"current epoch {member.member_epoch}.")

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_or_epoch: int,
                               api_version: int, transactional: bool = False) -> CommitValidator | None:
        """As Kafka 4.4's StreamsGroup.validateOffsetCommit: a negative epoch commits while the group is empty
        (tools); a member commits at its epoch (OffsetCommit v9+), a newer one is STALE_MEMBER_EPOCH. An
        older epoch returns a validator the coordinator runs on each committed partition (the whole request
        fails at the first refused one): its topic must be a source topic of the topology, and the task of
        that subtopology and partition must be one of the member's active tasks (assigned or pending
        revocation) assigned to it at that epoch or before."""
        if generation_or_epoch < 0 and not self.members:
            return None
        if transactional and generation_or_epoch == -1 and member_id == "" and group_instance_id is None:
            return None
        member = self._member(member_id)
        if not transactional and api_version < 9:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by "
                             "members using the streams group protocol")
        if generation_or_epoch == member.member_epoch:
            return None
        if generation_or_epoch > member.member_epoch:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"Received member epoch {generation_or_epoch} is newer "
                             f"than current member epoch {member.member_epoch}.")
        return self._assignment_epoch_validator(member, generation_or_epoch)

    def _assignment_epoch_validator(self, member: StreamsGroupMember, epoch: int) -> CommitValidator:
        """Kafka's createAssignmentEpochValidator."""
        if self.topology is None:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, "Topology is not available for offset commit validation.")
        by_topic: dict[str, str] = {}
        for sub in self.topology.subtopologies:
            for name in [*sub.source_topics, *(t.name for t in sub.repartition_source_topics)]:
                by_topic[name] = sub.subtopology_id
        epochs = member.epochs()
        held = member.assigned.active, member.pending_revocation.active

        def validate(topic: str, partition: int) -> None:
            subtopology = by_topic.get(topic)
            if subtopology is None:
                raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"Topic {topic} is not in the topology.")
            assigned_at = epochs.get((subtopology, partition))
            if assigned_at is None or not any(partition in tasks.get(subtopology, ()) for tasks in held):
                raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"Task {subtopology}-{partition} is not assigned or "
                                 "pending revocation for member.")
            if epoch < assigned_at:
                raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"Received member epoch {epoch} is older than "
                                 f"assignment epoch {assigned_at} for task {subtopology}-{partition}.")

        return validate

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if member_id is None and member_epoch < 0:
            return
        self._check_epoch(member_epoch, self._member(member_id or ""))

    def validate_offset_delete(self) -> None:
        return None  # Kafka: offsets of topics no member's tasks read may be deleted (checked per topic there)

    def validate_delete(self) -> None:
        if self.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {self.group_id} has members")

    def is_subscribed_to(self, topic: str) -> bool:
        if not self.members or self.configured is None:
            return False
        return any(topic in names for names in self.configured.source_topics.values())

    def offsets_expire_from(self, commit_timestamp_ms: int) -> int | None:
        return commit_timestamp_ms if not self.members else None

    def tombstones(self) -> list[CoordinatorRecord]:
        """Kafka's streams group tombstones, in its order."""
        gid = self.group_id
        out = [CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(gid, m)) for m in sorted(self.members)]
        out += [CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(gid, m)) for m in sorted(self.target_assignment)]
        out.append(CoordinatorRecord(StreamsGroupTargetAssignmentMetadataKey(gid)))
        out += [CoordinatorRecord(StreamsGroupMemberMetadataKey(gid, m)) for m in sorted(self.members)]
        out.append(CoordinatorRecord(StreamsGroupTopologyKey(gid)))
        out.append(CoordinatorRecord(StreamsGroupMetadataKey(gid)))
        return out

    # ---------------------------------------------------------------------------- the model

    def static_member(self, instance_id: str) -> StreamsGroupMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def active_owner(self, subtopology: str, partition: int, but: str) -> str | None:
        """The member other than ``but`` holding the task as active (assigned or pending revocation)."""
        for m in self.members.values():
            if m.member_id != but and (partition in m.assigned.active.get(subtopology, frozenset())
                                       or partition in m.pending_revocation.active.get(subtopology, frozenset())):
                return m.member_id
        return None

    # ---------------------------------------------------------------------------------- replay

    def replay(self, key: Any, value: Any) -> None:
        """Apply one of the group's StreamsGroup* records (value None = tombstone)."""
        if isinstance(key, StreamsGroupMetadataKey):
            if value is not None:  # the group's tombstone is the registry's to apply
                self.group_epoch, self.metadata_hash = value.epoch, value.metadata_hash
                self.validated_topology_epoch = value.validated_topology_epoch
        elif isinstance(key, StreamsGroupMemberMetadataKey):
            if value is None:
                self.members.pop(key.member_id, None)
            else:
                old = self.members.get(key.member_id) or StreamsGroupMember(key.member_id)
                self.members[key.member_id] = replace(
                    old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
                    client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
                    topology_epoch=value.topology_epoch, process_id=value.process_id,
                    user_endpoint=(value.user_endpoint.host, value.user_endpoint.port) if value.user_endpoint else None,
                    client_tags=tuple((kv.key, kv.value) for kv in value.client_tags))
        elif isinstance(key, StreamsGroupCurrentMemberAssignmentKey):
            old = self.members.get(key.member_id)
            if value is None:
                if old is not None:
                    self.members[key.member_id] = replace(old, member_epoch=-1, previous_member_epoch=-1,
                                                          assigned=EMPTY_TASKS, pending_revocation=EMPTY_TASKS)
            else:
                self.members[key.member_id] = replace(
                    old or StreamsGroupMember(key.member_id), member_epoch=value.member_epoch,
                    previous_member_epoch=value.previous_member_epoch, state=_member_state(value.state),
                    assigned=TasksTuple.of(value),
                    pending_revocation=TasksTuple(tasks_of(value.active_tasks_pending_revocation),
                                                  tasks_of(value.standby_tasks_pending_revocation),
                                                  tasks_of(value.warmup_tasks_pending_revocation)),
                    active_epochs=tuple(sorted(
                        task_epochs(value.active_tasks, value.member_epoch)
                        + task_epochs(value.active_tasks_pending_revocation, value.member_epoch))))
        elif isinstance(key, StreamsGroupTargetAssignmentMemberKey):
            if value is None:
                self.target_assignment.pop(key.member_id, None)
            else:
                self.target_assignment[key.member_id] = TasksTuple.of(value)
        elif isinstance(key, StreamsGroupTargetAssignmentMetadataKey):
            self.assignment_epoch = -1 if value is None else value.assignment_epoch
            self.assignment_timestamp = 0 if value is None else value.assignment_timestamp
        elif isinstance(key, StreamsGroupTopologyKey):
            self.topology = value
        else:
            raise TypeError(f"not a streams group record: {type(key).__name__}")


__all__ = ["STREAMS", "STREAMS_PROTOCOL_TYPE", "CommitValidator", "StreamsGroup", "StreamsGroupMember",
           "StreamsGroupState", "StreamsMemberState", "TaskEpochs", "target_value", "task_epochs"]
