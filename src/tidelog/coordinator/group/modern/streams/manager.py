"""Streams groups (KIP-1071): the broker assigns *tasks* (subtopology, partition) of a Kafka Streams
topology to the members (stream threads) of the group, grouped by process.

Rules (Kafka 4.4's GroupMetadataManager streams-group paths, StreamsGroup, CurrentAssignmentBuilder):

1. **Heartbeat.** StreamsGroupHeartbeat joins (epoch 0, with the topology and the rebalance timeout, and no
   tasks), heartbeats (the member's epoch, or its previous one), leaves (-1) or, as a static member, leaves
   for now (-2: it keeps its tasks until its session ends). The member id is the client's; Kafka 4.4's
   request checks answer INVALID_REQUEST with its messages (empty ids, a topology outside joining, source
   regexes, some but not all task kinds, an epoch below -2). An
   unknown member with epoch != 0 is UNKNOWN_MEMBER_ID, a wrong epoch FENCED_MEMBER_EPOCH; a heartbeat of a
   group that does not exist (epoch != 0) or of another type is GROUP_ID_NOT_FOUND. A group at
   ``group.streams.max.size`` members refuses new ones (GROUP_MAX_SIZE_REACHED).
2. **Static membership.** A member joining with the instance id of a member that left with -2 takes its
   place (its epoch and tasks); while that member has not left, UNRELEASED_INSTANCE_ID.
3. **Topology.** The first member's topology becomes the group's (StreamsGroupTopology record) for the
   group's life. A member with an older topology epoch gets STALE_TOPOLOGY; another topology at the same or
   a newer epoch is INVALID_REQUEST ("Topology updates are not supported yet.", as Kafka 4.4; deleting the
   empty group clears it). The topology is configured against
   the metadata (:mod:`~tidelog.coordinator.group.modern.streams.topology`): its statuses are sent to
   every member, and the internal topics it misses are handed to the service to create.
4. **Group epoch.** Bumped when the group is new, a member joins, leaves or is fenced, a member's process,
   rack, client tags, topology epoch or instance changes, the topology changes, or the metadata hash of its
   source and internal topics (name, id, partition count) changes.
5. **Target assignment.** When the group epoch is past the assignment epoch, the ``sticky`` assignor
   (:mod:`~tidelog.coordinator.group.modern.streams.assignor`) computes every member's tasks (none while
   the topology is not ready), with ``streams.num.standby.replicas`` standbys. A new group's first
   assignment waits ``streams.initial.rebalance.delay.ms`` from its first member (status ASSIGNMENT_DELAYED).
6. **Reconciliation** (:mod:`~tidelog.coordinator.group.modern.streams.reconciliation`): tasks are revoked
   before they move; a member that does not revoke within its rebalance timeout is fenced.
7. **Sessions.** A member silent for ``streams.session.timeout.ms`` (group config, else the broker's
   ``group.streams.session.timeout.ms``) is removed; heartbeats are asked every
   ``streams.heartbeat.interval.ms``. ``ShutdownApplication`` makes every member see SHUTDOWN_APPLICATION.
8. **Result + replay** as the other modern group types: operations return the runtime's Result and
   change nothing; :meth:`StreamsGroupCoordinator.replay` applies StreamsGroup* records.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.group import CLASSIC, GroupRegistry
from tidelog.coordinator.group.modern.member import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from tidelog.coordinator.group.modern.member_timers import ConsumerGroupTimers, MemberTimers
from tidelog.coordinator.group.modern.streams.assignor import MemberSpec, sticky_assign
from tidelog.coordinator.group.modern.streams.config import GROUP_CONFIGS, StreamsGroupConfig
from tidelog.coordinator.group.modern.streams.group import (
    StreamsGroup,
    StreamsGroupMember,
    StreamsMemberState,
    target_value,
)
from tidelog.coordinator.group.modern.streams.reconciliation import reconcile
from tidelog.coordinator.group.modern.streams.records import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
)
from tidelog.coordinator.group.modern.streams.tasks import EMPTY_TASKS, TasksTuple, task_ids, tasks_of
from tidelog.coordinator.group.modern.streams.topology import (
    ASSIGNMENT_DELAYED,
    MISSING_CLIENT_TAGS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    ConfiguredTopology,
    InternalTopic,
    configure,
)
from tidelog.coordinator.group.modern.subscription import metadata_hash
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse

log = logging.getLogger(__name__)

R = StreamsGroupHeartbeatResponse


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    """A heartbeat's answer and the internal topics the service is to create."""

    response: StreamsGroupHeartbeatResponse
    to_create: tuple[InternalTopic, ...] = ()


def topology_value(topology: Any) -> StreamsGroupTopologyValue:
    """The request's topology as the StreamsGroupTopology record's value."""
    V = StreamsGroupTopologyValue
    S = V.Subtopology

    def infos(items: Any) -> list:
        return [V.TopicInfo(name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                            topic_configs=[V.TopicConfig(key=c.key, value=c.value) for c in t.topic_configs])
                for t in items]

    return V(epoch=topology.epoch, subtopologies=[S(
        subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
        source_topic_regex=list(s.source_topic_regex), state_changelog_topics=infos(s.state_changelog_topics),
        repartition_sink_topics=list(s.repartition_sink_topics),
        repartition_source_topics=infos(s.repartition_source_topics),
        copartition_groups=[V.CopartitionGroup(source_topics=list(c.source_topics),
                                               source_topic_regex=list(c.source_topic_regex),
                                               repartition_source_topics=list(c.repartition_source_topics))
                            for c in s.copartition_groups])
        for s in topology.subtopologies])


def validate_topology(topology: Any) -> None:
    """Kafka 4.4's checks of a joining member's topology: source regexes are INVALID_REQUEST (not supported
    yet), a changelog topic with a partition count STREAMS_INVALID_TOPOLOGY; so are duplicate subtopology ids
    and copartition indexes out of range (Tidelog's own checks, which Kafka's clients never fail)."""
    for s in topology.subtopologies:
        if s.source_topic_regex:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Regular expressions for source topics are not supported yet.")
    for s in topology.subtopologies:
        for t in s.state_changelog_topics:
            if t.partitions != 0:
                raise KafkaError(ErrorCode.STREAMS_INVALID_TOPOLOGY, f"Changelog topic {t.name} must have an "
                                 f"undefined partition count, but it is set to {t.partitions}.")
    ids = [s.subtopology_id for s in topology.subtopologies]
    if len(set(ids)) != len(ids):
        raise KafkaError(ErrorCode.STREAMS_INVALID_TOPOLOGY, "Subtopology ids must be unique.")
    for s in topology.subtopologies:
        for c in s.copartition_groups:
            if (any(not 0 <= i < len(s.source_topics) for i in c.source_topics)
                    or any(not 0 <= i < len(s.repartition_source_topics) for i in c.repartition_source_topics)
                    or any(not 0 <= i < len(s.source_topic_regex) for i in c.source_topic_regex)):
                raise KafkaError(ErrorCode.STREAMS_INVALID_TOPOLOGY, "Copartition group index out of range.")


def _topics_of(topology: StreamsGroupTopologyValue | None, configured: ConfiguredTopology | None) -> set[str]:
    names: set[str] = set()
    if topology is not None:
        for s in topology.subtopologies:
            names.update(s.source_topics)
            names.update(t.name for t in s.state_changelog_topics)
    if configured is not None:
        names.update(n for ns in configured.source_topics.values() for n in ns)
        names.update(configured.internal_partitions)
    return names


def can_compute_target(last_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka's canComputeNextTargetAssignment: a group's target is computed at most once per
    ``group.streams.assignment.interval.ms`` (the first one, and with interval 0, at once)."""
    return last_ms == 0 or interval_ms == 0 or now_ms >= last_ms + interval_ms


class StreamsGroupCoordinator:
    """The streams groups of a coordinator: operations (-> runtime :class:`Result`), queries, replay."""

    def __init__(self, clock: Clock, config: StreamsGroupConfig | None = None,
                 timers: ConsumerGroupTimers | None = None, groups: GroupRegistry | None = None, *,
                 image_source: Callable[[], MetadataImage] | None = None) -> None:
        self.clock = clock
        self.config = config or StreamsGroupConfig()
        self.image_source = image_source
        self.image: MetadataImage | None = None
        self.member_timers = MemberTimers(timers, self.fence_member)
        self.groups = groups if groups is not None else GroupRegistry()

    def group(self, group_id: str) -> StreamsGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, StreamsGroup) else None

    def current_image(self) -> MetadataImage | None:
        if self.image_source is not None:
            self.image = self.image_source()
        return self.image

    def setting(self, group_id: str, name: str) -> int:
        """A ``streams.*`` group config (ConfigResource GROUP) override, else the broker's default."""
        image = self.image if self.image is not None else self.current_image()
        overrides = image.group_configs.get(group_id) if image is not None else None
        if overrides and name in overrides:
            return int(overrides[name])
        return int(getattr(self.config, GROUP_CONFIGS[name]))

    def configured(self, group: StreamsGroup, image: MetadataImage) -> ConfiguredTopology | None:
        group.configured = configure(group.topology, image) if group.topology is not None else None
        return group.configured

    # -- heartbeat -------------------------------------------------------------------------------------

    def heartbeat(self, request: StreamsGroupHeartbeatRequest, *, api_version: int, image: MetadataImage,
                  client_id: str | None = "", client_host: str = "") -> Result[HeartbeatOutcome]:
        """Rule 1; a KafkaError raised here is the response's error code (nothing is written)."""
        self.image = image
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        # Kafka 4.4's GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid, in its order
        if not member_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if request.instance_id is not None and not request.instance_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
        if request.rack_id is not None and not request.rack_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            for tasks, name in ((request.active_tasks, "ActiveTasks"), (request.standby_tasks, "StandbyTasks"),
                                (request.warmup_tasks, "WarmupTasks")):
                if tasks:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"{name} must be empty when (re-)joining.")
            if request.topology is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
            validate_topology(request.topology)
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"MemberEpoch is {epoch}, but must be greater than or equal "
                             "to -2.")
        kinds = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
        if any(k is not None for k in kinds) and any(k is None for k in kinds):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "If one task-type is non-null, all must be non-null.")
        if epoch != 0 and request.topology is not None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Topology can only be provided when (re-)joining.")
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group_id, member_id, epoch)
        takeover: list[CoordinatorRecord] = []
        group = self._group_for_heartbeat(group_id, epoch, takeover)
        result = self._heartbeat(request, group, client_id or "", client_host, image, api_version)
        return Result(takeover + list(result.records), result.response) if takeover else result

    def _group_for_heartbeat(self, group_id: str, epoch: int, records: list[CoordinatorRecord]) -> StreamsGroup:
        existing = self.groups.get(group_id)
        if isinstance(existing, StreamsGroup):
            return existing
        if existing is not None:
            # an empty classic group gives way to a joining streams member (an offline upgrade of a Kafka
            # Streams application; its committed offsets stay)
            if epoch != 0 or not existing.is_empty() or existing.group_type != CLASSIC:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
            records += existing.tombstones()
        elif epoch != 0:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        return StreamsGroup(group_id)  # created by the replay of its first records

    def _member_for_heartbeat(self, group: StreamsGroup, request: StreamsGroupHeartbeatRequest,
                              records: list[CoordinatorRecord]
                              ) -> tuple[StreamsGroupMember, bool, TasksTuple | None]:
        """The member (rules 1-2), whether it is new to the group, and the target it inherits (a static
        member taking a departed one's place)."""
        member_id, epoch, gid = request.member_id, request.member_epoch, group.group_id
        member = group.members.get(member_id)
        if member is None and len(group.members) >= self.config.max_size:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The streams group has reached its maximum "
                             f"capacity of {self.config.max_size} members.")
        if member is None and epoch == 0 and request.instance_id is not None:
            old = group.static_member(request.instance_id)
            if old is not None:
                if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {old.member_id} with "
                                     f"instance id {request.instance_id} is not released yet.")
                # the new member takes the old one's place: its tasks and epoch
                self.member_timers.cancel(gid, old.member_id)
                records += [CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(gid, old.member_id)),
                            CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(gid, old.member_id)),
                            CoordinatorRecord(StreamsGroupMemberMetadataKey(gid, old.member_id))]
                target = group.target_assignment.get(old.member_id, EMPTY_TASKS)
                records.append(CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(gid, member_id),
                                                 target_value(target)))
                return replace(old, member_id=member_id, member_epoch=group.assignment_epoch,
                               previous_member_epoch=old.previous_member_epoch), True, target
        if member is None:
            if epoch != 0:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {gid}.")
            return StreamsGroupMember(member_id), True, None
        if epoch != 0 and epoch != member.member_epoch:
            owned = self._owned(request)
            if not (epoch == member.previous_member_epoch and owned is not None
                    and owned.minus(member.assigned).is_empty()):
                raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, f"The streams group member has a member epoch "
                                 f"({epoch}) other than the one known by the group coordinator "
                                 f"({member.member_epoch}). The member must abandon all its tasks and rejoin.")
        return member, False, None

    @staticmethod
    def _owned(request: StreamsGroupHeartbeatRequest) -> TasksTuple | None:
        if request.active_tasks is None and request.standby_tasks is None and request.warmup_tasks is None:
            return None
        return TasksTuple(tasks_of(request.active_tasks), tasks_of(request.standby_tasks),
                          tasks_of(request.warmup_tasks))

    def _heartbeat(self, request: StreamsGroupHeartbeatRequest, group: StreamsGroup, client_id: str,
                   client_host: str, image: MetadataImage, api_version: int) -> Result[HeartbeatOutcome]:
        gid, member_id, epoch = group.group_id, request.member_id, request.member_epoch
        records: list[CoordinatorRecord] = []
        member, new, inherited = self._member_for_heartbeat(group, request, records)
        # 3. the topology
        statuses: list[tuple[int, str]] = []
        topology = group.topology
        others = [m for mid, m in group.members.items() if mid != member_id]
        bump = group.group_epoch == 0 or (new and inherited is None)  # a static member's return: no rebalance
        replaced = {m.member_id for m in others if inherited is not None and m.instance_id == request.instance_id}
        if request.topology is not None:  # Kafka 4.4's maybeUpdateTopology
            asked = topology_value(request.topology)
            if topology is None:
                topology = asked
                records.append(CoordinatorRecord(StreamsGroupTopologyKey(gid), topology))
                bump = True
            elif asked.epoch >= topology.epoch and asked != topology:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
        # the member's metadata
        endpoint = request.user_endpoint
        updated = replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms > 0
                                  else member.rebalance_timeout_ms),
            topology_epoch=request.topology.epoch if request.topology is not None else member.topology_epoch,
            process_id=request.process_id if request.process_id is not None else member.process_id,
            user_endpoint=(endpoint.host, endpoint.port) if endpoint is not None else member.user_endpoint,
            client_tags=(tuple((kv.key, kv.value) for kv in request.client_tags) if request.client_tags is not None
                         else member.client_tags),
            client_id=client_id, client_host=client_host,
            task_offsets=(tuple((o.subtopology_id, o.partition, o.offset) for o in request.task_offsets)
                          if request.task_offsets is not None else member.task_offsets),
            task_end_offsets=(tuple((o.subtopology_id, o.partition, o.offset) for o in request.task_end_offsets)
                              if request.task_end_offsets is not None else member.task_end_offsets))
        if new or updated.metadata() != member.metadata():
            records.append(CoordinatorRecord(StreamsGroupMemberMetadataKey(gid, member_id), updated.metadata()))
            bump = bump or (updated.process_id, updated.rack_id, updated.client_tags, updated.topology_epoch,
                            updated.instance_id) != (member.process_id, member.rack_id, member.client_tags,
                                                     member.topology_epoch, member.instance_id)
        if topology is not None and updated.topology_epoch < topology.epoch:
            statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is behind the "
                             f"group's topology epoch {topology.epoch}."))
        missing_tags = [t for t in self.config.rack_aware_assignment_tags if t not in dict(updated.client_tags)]
        if missing_tags and api_version >= 1:  # v0 clients do not know this status (KAFKA-20744)
            statuses.append((MISSING_CLIENT_TAGS, "Missing required client tags for rack-aware standby assignment: "
                             f"{', '.join(missing_tags)}. Configure them via 'client.tag.<tagKey>' in your Streams "
                             "config."))
        if request.shutdown_application:
            group.shutdown_requested = True
        # 4. configured topology, metadata hash, group epoch
        configured = configure(topology, image) if topology is not None else None
        group.configured = configured
        new_hash = metadata_hash(_topics_of(topology, configured), image)
        group_epoch = group.group_epoch
        validated = topology.epoch if configured is not None and configured.ready and topology is not None else \
            group.validated_topology_epoch
        if bump or new_hash != group.metadata_hash or validated != group.validated_topology_epoch:
            if bump or new_hash != group.metadata_hash:
                group_epoch += 1
            records.append(CoordinatorRecord(StreamsGroupMetadataKey(gid), StreamsGroupMetadataValue(
                epoch=group_epoch, metadata_hash=new_hash, validated_topology_epoch=validated)))
        if configured is not None:
            statuses += list(configured.statuses)
        # 5. the target assignment
        members_after = {mid: m for mid, m in group.members.items() if m.instance_id != updated.instance_id
                         or updated.instance_id is None or mid == member_id}
        members_after[member_id] = updated
        target_epoch = group.assignment_epoch
        targets = dict(group.target_assignment)
        if inherited is not None:
            targets[member_id] = inherited
        if group_epoch > group.assignment_epoch:
            delay = self.setting(gid, "streams.initial.rebalance.delay.ms")
            created = group.created_ms if group.group_id in self.groups else self.clock.wall_ms()
            if group.assignment_epoch <= 0 and created is not None and self.clock.wall_ms() < created + delay:
                statuses.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance "
                                 "delay."))
            elif not can_compute_target(group.assignment_timestamp,
                                        self.setting(gid, "streams.assignment.interval.ms"), self.clock.wall_ms()):
                statuses.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment "
                                 "interval."))
            else:
                targets = self._update_target(group, group_epoch, members_after, configured, records, targets)
                target_epoch = group_epoch
        # 6. reconciliation
        owned = self._owned(request)
        reconciled = reconcile(updated, target_epoch, targets.get(member_id, EMPTY_TASKS), owned,
                               lambda s, p, mid: group.active_owner(s, p, mid) not in (None, *replaced),
                               lambda s, p, m: any(o.process_id == m.process_id and o.member_id != m.member_id
                                                   and p in o.assigned.active.get(s, frozenset())
                                                   for o in group.members.values()))
        if new or (reconciled.member_epoch, reconciled.previous_member_epoch, reconciled.state, reconciled.assigned,
                   reconciled.pending_revocation, reconciled.active_epochs) != (
                       member.member_epoch, member.previous_member_epoch, member.state, member.assigned,
                       member.pending_revocation, member.active_epochs):
            records.append(CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(gid, member_id),
                                             reconciled.current_assignment()))
        if reconciled.state == StreamsMemberState.UNREVOKED_TASKS:
            self.member_timers.rebalance(gid, member_id, reconciled.member_epoch,
                                         max(reconciled.rebalance_timeout_ms, 1))
        else:
            self.member_timers.cancel(gid, member_id, "rebalance")
        self.member_timers.session(gid, member_id, self.setting(gid, "streams.session.timeout.ms"))
        if group.shutdown_requested:
            statuses.append((SHUTDOWN_APPLICATION, "A KafkaStreams instance encountered a fatal error and "
                             "requested a shutdown for the entire application."))
        response = R(member_id=member_id, member_epoch=reconciled.member_epoch,
                     heartbeat_interval_ms=self.setting(gid, "streams.heartbeat.interval.ms"),
                     task_offset_interval_ms=self.setting(gid, "streams.task.offset.interval.ms"),
                     status=[R.Status(status_code=c, status_detail=d) for c, d in statuses],
                     endpoint_information_epoch=group_epoch)
        lag = self.setting(gid, "streams.acceptable.recovery.lag")
        if api_version >= 1:
            response.acceptable_recovery_lag = lag
        else:
            response.acceptable_recovery_lag_legacy = min(lag, 2**31 - 1)
        # The tasks go out when they change, and in full to a (re)joining member once it has an epoch (Kafka
        # Streams takes a task list as the end of its joining: a member left at epoch 0 while its assignment is
        # delayed gets none, and sends its topology again)
        if reconciled.assigned != member.assigned or (epoch == 0 and reconciled.member_epoch > 0):
            response.active_tasks = task_ids(R.TaskIds, reconciled.assigned.active)
            response.standby_tasks = task_ids(R.TaskIds, reconciled.assigned.standby)
            response.warmup_tasks = task_ids(R.TaskIds, reconciled.assigned.warmup)
        if request.endpoint_information_epoch < group_epoch:
            response.partitions_by_user_endpoint = self._endpoints(group, {**members_after, member_id: reconciled},
                                                                   configured, image)
        to_create = configured.to_create if configured is not None else ()
        return Result(records, HeartbeatOutcome(response, to_create))

    def _update_target(self, group: StreamsGroup, group_epoch: int, members: dict[str, StreamsGroupMember],
                       configured: ConfiguredTopology | None, records: list[CoordinatorRecord],
                       previous: dict[str, TasksTuple] | None = None) -> dict[str, TasksTuple]:
        previous = group.target_assignment if previous is None else previous
        task_counts = configured.task_counts if configured is not None and configured.ready else {}
        specs = {mid: MemberSpec(m.process_id or mid, previous.get(mid, EMPTY_TASKS),
                                 {(sub, p): o for sub, p, o in m.task_offsets}, dict(m.client_tags))
                 for mid, m in members.items()}
        new = sticky_assign(specs, task_counts, self.setting(group.group_id, "streams.num.standby.replicas"),
                            self.config.rack_aware_assignment_tags)
        gid = group.group_id
        for mid in sorted(members):
            tasks = new.get(mid, EMPTY_TASKS)
            if previous.get(mid) != tasks:
                records.append(CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(gid, mid), target_value(tasks)))
        records.append(CoordinatorRecord(StreamsGroupTargetAssignmentMetadataKey(gid),
                                         StreamsGroupTargetAssignmentMetadataValue(
                                             assignment_epoch=group_epoch, assignment_timestamp=self.clock.wall_ms())))
        return new

    @staticmethod
    def _endpoints(group: StreamsGroup, members: dict[str, StreamsGroupMember], configured: ConfiguredTopology | None,
                   image: MetadataImage) -> list:
        """PartitionsByUserEndpoint: per member with an endpoint, the source partitions of its tasks."""
        out = []
        for _, m in sorted(members.items()):
            if m.user_endpoint is None:
                continue

            def partitions(tasks: Iterable[tuple[str, frozenset[int]]]) -> list:
                by_topic: dict[str, set[int]] = {}
                for sub, ps in tasks:
                    for topic in (configured.topics_of(sub) if configured is not None else ()):
                        by_topic.setdefault(topic, set()).update(ps)
                return [R.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(by_topic.items())]

            standby = {**m.assigned.standby}
            for s, ps in m.assigned.warmup.items():
                standby[s] = standby.get(s, frozenset()) | ps
            out.append(R.EndpointToPartitions(user_endpoint=R.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]),
                                              active_partitions=partitions(m.assigned.active.items()),
                                              standby_partitions=partitions(standby.items())))
        return out

    # -- leaving, fencing, timers ---------------------------------------------------------------------

    def _leave(self, group_id: str, member_id: str, epoch: int) -> Result[HeartbeatOutcome]:
        group = self.group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        response = R(member_id=member_id, member_epoch=epoch)
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            log.info("static member %s of streams group %s left for now", member_id, group_id)
            left = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
            return Result([CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(group_id, member_id),
                                             left.current_assignment())], HeartbeatOutcome(response))
        log.info("member %s left streams group %s", member_id, group_id)
        return Result(self.removal_records(group, member), HeartbeatOutcome(response))

    def fence_member(self, group_id: str, member_id: str, epoch: int | None = None) -> Result[None]:
        """A member's session (or, at ``epoch``, its rebalance timeout) ran out: remove it if still there."""
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or (epoch is not None and member.member_epoch != epoch):
            return Result([])
        log.info("streams group %s: member %s fenced (%s timeout)", group_id, member_id,
                 "session" if epoch is None else "rebalance")
        return Result(self.removal_records(group, member))

    def removal_records(self, group: StreamsGroup, member: StreamsGroupMember) -> list[CoordinatorRecord]:
        gid, mid = group.group_id, member.member_id
        self.member_timers.cancel(gid, mid)
        records = [CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(gid, mid)),
                   CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(gid, mid)),
                   CoordinatorRecord(StreamsGroupMemberMetadataKey(gid, mid))]
        remaining = {m: v for m, v in group.members.items() if m != mid}
        epoch = group.group_epoch + 1
        records.append(CoordinatorRecord(StreamsGroupMetadataKey(gid), StreamsGroupMetadataValue(
            epoch=epoch, metadata_hash=group.metadata_hash, validated_topology_epoch=group.validated_topology_epoch)))
        if remaining:  # the others' new targets at once (they take them at their next heartbeat)
            image = self.current_image()
            configured = configure(group.topology, image) if group.topology is not None and image is not None \
                else group.configured
            self._update_target(group, epoch, remaining, configured, records)
        return records

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None:
        """Every member of the loaded groups gets a full session to heartbeat again."""
        ids = list(self.groups) if group_ids is None else [g for g in group_ids if g in self.groups]
        for group in [self.groups[g] for g in ids]:
            if isinstance(group, StreamsGroup):
                for member_id in group.members:
                    self.member_timers.session(group.group_id, member_id,
                                               self.setting(group.group_id, "streams.session.timeout.ms"))

    def on_unloaded(self) -> None:
        return None

    # -- replay ----------------------------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one StreamsGroup* record: the only way streams group state changes (load included)."""
        key, value = record.key, record.value
        existing = self.groups.get(key.group_id)
        group = existing if isinstance(existing, StreamsGroup) else None
        if group is None:
            if value is None:
                return
            if existing is not None and not existing.is_empty():
                log.error("streams group record for %s, which is a non-empty %s group; skipped", key.group_id,
                          existing.group_type)
                return
            group = self.groups[key.group_id] = StreamsGroup(key.group_id)
            group.created_ms = self.clock.wall_ms()
        if isinstance(key, StreamsGroupMetadataKey) and value is None:
            del self.groups[key.group_id]
            return
        group.replay(key, value)
        if not group.members:
            group.shutdown_requested = False  # a shutdown request ends with the application's last member


__all__ = ["HeartbeatOutcome", "StreamsGroupCoordinator", "topology_value", "validate_topology"]
