"""Consumer groups of the new rebalance protocol (KIP-848): the broker assigns, members reconcile.

Rules (Kafka's GroupMetadataManager, ConsumerGroup and CurrentAssignmentBuilder, 4.x):

1. **Group epoch.** Bumped when what the assignor would see changes: the group is new, a member's
   subscription (topic names or regex) changes, a member joins with a subscription, leaves or is
   fenced, or the metadata of the subscribed topics changes (created, deleted, partitions added:
   tracked by a hash of (name, id, partition count), Kafka 4.1's ``MetadataHash``).
2. **Target assignment.** When the group epoch is above the assignment epoch, the heartbeat that
   notices computes a new target with the group's assignor (the one most members ask for in
   ``ServerAssignor``, else the first of ``group.consumer.assignors``); its epoch is the group epoch.
3. **Reconciliation, revoke before assign.** A member moves towards its target one heartbeat at a time:
   it keeps ``current ∩ target``; partitions it holds outside its target must be revoked first
   (``UNREVOKED_PARTITIONS``: it stays at its epoch until a heartbeat reports owned partitions without
   them); then it gets ``target - current`` except the partitions another member still owns (their
   partition epoch is set): those stay pending (``UNRELEASED_PARTITIONS``) until released. With nothing
   left to revoke it moves to the assignment epoch; ``STABLE`` once it holds all of its target.
   A partition is therefore never owned by two members at once.
4. **Epochs.** A heartbeat's member epoch must be the member's (or its previous epoch, when it reports
   only partitions it still holds: the response with the bump may have been lost); otherwise
   FENCED_MEMBER_EPOCH. An unknown member id with epoch > 0 is UNKNOWN_MEMBER_ID. Both make the
   client drop its partitions and rejoin with epoch 0 and the same member id (v1: ids come from the
   client, KIP-1082; an empty one is INVALID_REQUEST).
5. **Leaving.** Epoch -1 removes the member (its partitions are free at once); -2 (static members)
   keeps it, epoch -2, until the same instance id rejoins or its session expires. A member silent for
   ``group.consumer.session.timeout.ms`` is fenced; one that does not revoke within its rebalance
   timeout (the client's max.poll.interval.ms) is fenced too. Timers live in memory (as in Kafka).
6. **Group state** is a function of the data, not a transition system (as in Kafka's ConsumerGroup):
   Empty (no members), Assigning (group epoch > assignment epoch), Reconciling (a member is not STABLE
   at the assignment epoch), Stable; Dead once deleted.
7. **Result + replay.** Operations return the runtime's :class:`~tidelog.coordinator.runtime.Result`
   (records, response) and change no group state; :meth:`ConsumerGroupCoordinator.replay` applies
   records, and loading is the same replay. The records are Kafka's ``ConsumerGroup*`` keys and values
   (layouts below), whose serdes the consumer group type adds to the coordinator's record table,
   so a restarted broker gets its consumer groups back: members keep their epochs and assignments and
   get a new session to heartbeat in. Timers (session, rebalance) are in memory, as in Kafka.
8. **Regex subscriptions** (``SubscribedTopicRegex``) are matched by the broker against every topic
   name (``fullmatch``, as RE2/J ``matches()``), when the regex first appears and whenever the metadata
   image changed since; the result is persisted as a ConsumerGroupRegularExpression record. Python's
   ``re`` stands in for RE2/J: it also accepts backreferences and lookarounds, which Kafka rejects,
   and rejects ``\\p{..}`` classes, which Kafka accepts.
9. **Offsets.** A member's OffsetCommit must be v9+ (UNSUPPORTED_VERSION otherwise) and carry its
   current member epoch (STALE_MEMBER_EPOCH otherwise); an unknown member id is UNKNOWN_MEMBER_ID;
   epoch -1 commits (admin tools) are allowed while the group is empty. OffsetFetch v9+ with a member id
   is checked the same way. Offsets expire ``offsets.retention.minutes`` after their commit, and only
   for topics the group no longer subscribes to (Kafka's ConsumerGroup rules).
10. **Both protocols in one group.** Members that use the classic protocol (JoinGroup/SyncGroup) go
   through the same rules 1-3 when they join (:mod:`~tidelog.coordinator.group.modern.consumer.classic_member`); a
   classic member's generation id is its member epoch (ILLEGAL_GENERATION instead of
   STALE_MEMBER_EPOCH, any OffsetCommit version). A non-empty classic group becomes a consumer group
   when a consumer-protocol member joins it, and back when the last one leaves
   (:mod:`~tidelog.coordinator.group.modern.consumer.migration`, ``group.consumer.migration.policy``).
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.classic.group import ClassicGroup
from tidelog.coordinator.group.group import GroupRegistry
from tidelog.coordinator.group.modern.assignors import (
    TopicPartitions,
)
from tidelog.coordinator.group.modern.consumer.config import ConsumerGroupConfig
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup, ConsumerGroupMember
from tidelog.coordinator.group.modern.consumer.heartbeat import member_from_heartbeat, validate_heartbeat
from tidelog.coordinator.group.modern.consumer.migration import (
    ClassicGroupHost,
    can_downgrade_after_leaving,
    check_upgrade,
    classic_group_from_consumer,
    consumer_group_from_classic,
    consumer_group_records,
    downgrade_records,
    stop_classic_group,
)
from tidelog.coordinator.group.modern.consumer.records import (
    KEY_TYPES,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
)
from tidelog.coordinator.group.modern.consumer.regex_resolution import RegexResolution
from tidelog.coordinator.group.modern.consumer.target_assignment import assignor_for, update_target
from tidelog.coordinator.group.modern.member import (
    EMPTY,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MemberState,
    new_member_id,
)
from tidelog.coordinator.group.modern.member_timers import ConsumerGroupTimers, MemberTimers
from tidelog.coordinator.group.modern.reconciliation import check_member_epoch, reconcile, tp_map
from tidelog.coordinator.group.modern.subscription import (
    ResolvedRegex,
    metadata_hash,
    regex_subscribers,
    subscribed_names,
    topic_ids,
)
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

log = logging.getLogger(__name__)


# -- the coordinator of all consumer groups --------------------------------------------------------------

class ConsumerGroupCoordinator:
    """The consumer groups of a coordinator: operations (-> runtime :class:`Result`), queries, replay.

    ``groups`` is the coordinator's map of every group (classic ones too: one group id, one type).
    Requests bring the current metadata image; the last one seen serves the timers (Kafka's
    ``onNewMetadataImage``). Loop-only, not thread-safe."""

    def __init__(self, clock: Clock, config: ConsumerGroupConfig | None = None,
                 timers: ConsumerGroupTimers | None = None, groups: GroupRegistry | None = None, *,
                 image_source: Callable[[], MetadataImage] | None = None,
                 classic_groups: ClassicGroupHost | None = None) -> None:
        """``image_source()`` gives the current metadata image (the broker's store; requests without one,
        JoinGroup of classic members, need it); ``classic_groups`` takes over downgraded groups (none:
        groups never downgrade)."""
        self.clock = clock
        self.config = config or ConsumerGroupConfig()
        self.image: MetadataImage | None = None
        self.image_source = image_source
        self.timers = timers
        self.member_timers = MemberTimers(timers, self.fence_member)
        self.classic_groups = classic_groups
        self.groups = groups if groups is not None else GroupRegistry()
        self._checked_image: dict[str, int] = {}  # group -> image version its topics were last hashed at
        self.regexes = RegexResolution(clock, timers, self.group, self.current_image)

    def group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def current_image(self) -> MetadataImage | None:
        """The latest metadata image: the source's, else the last one a request brought."""
        if self.image_source is not None:
            self.image = self.image_source()
        return self.image

    # -- heartbeat -------------------------------------------------------------------------------------

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, *, api_version: int, image: MetadataImage,
                  client_id: str | None = "", client_host: str = "") -> Result[ConsumerGroupHeartbeatResponse]:
        """ConsumerGroupHeartbeat: join (epoch 0), heartbeat (> 0) or leave (-1, -2). A KafkaError
        raised here is the response's error code (nothing is written)."""
        self.image = image
        validate_heartbeat(request, api_version, self.config.assignors)
        if request.member_epoch == 0 and not request.member_id:
            # v0 lets the coordinator choose a joining member's id (v1+ requires the client's own).
            request = copy.copy(request)
            request.member_id = new_member_id()
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        return self._heartbeat(request, client_id or "", client_host, image)

    def _heartbeat(self, request: ConsumerGroupHeartbeatRequest, client_id: str, client_host: str,
                   image: MetadataImage) -> Result[ConsumerGroupHeartbeatResponse]:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        records: list[CoordinatorRecord] = []
        after: list[Callable[[], None]] = []
        group = self._group_for_heartbeat(group_id, epoch, image, records, after)
        self.check_not_full(group, member_id)
        owned = tp_map(request.topic_partitions) if request.topic_partitions is not None else None
        member, replaced = self._get_or_subscribe(group, request, owned, records)
        updated = member_from_heartbeat(member, request, client_id, client_host)
        new_member = self.update_member(group, member, updated, replaced, owned, image, records, after)
        self.schedule_session_timeout(group_id, member_id)

        response = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=new_member.member_epoch,
                                                  heartbeat_interval_ms=self._group_config(
                                                      group_id, "consumer.heartbeat.interval.ms",
                                                      self.config.heartbeat_interval_ms))
        full = (request.rebalance_timeout_ms != -1 and owned is not None
                and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None))
        if epoch == 0 or full or new_member.assigned_partitions != member.assigned_partitions:
            response.assignment = ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[
                ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(new_member.assigned_partitions.items()) if ps])

        return Result(records, response, on_appended=_run_all(after))

    def check_not_full(self, group: ConsumerGroup, member_id: str) -> None:
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum "
                             f"capacity of {self.config.max_size} members.")

    def update_member(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                      replaced: str | None, owned: Mapping[uuid.UUID, frozenset[int]] | None, image: MetadataImage,
                      records: list[CoordinatorRecord], after: list[Callable[[], None]]) -> ConsumerGroupMember:
        """Rules 1-3 for one member that (re)joins or heartbeats (``member`` before, ``updated`` with what
        its request sets; ``replaced``: the static member it takes over): records for its subscription,
        the group epoch, a new target assignment, and one reconciliation step. Returns the member after
        that step; ``after`` gets what to do once the records are written."""
        members_after = {m: v for m, v in group.members.items() if m != replaced}
        members_after[updated.member_id] = updated
        group_epoch, regexes, _ = self.update_subscription(group, member, updated, members_after, image, records,
                                                           after)
        # 2. A new target assignment when the group epoch moved past it.
        if group_epoch > group.assignment_epoch:
            target = update_target(group, group_epoch, members_after, updated.member_id, replaced, regexes,
                                   image, self.config.assignors, records)
            assignment_epoch = group_epoch
        else:
            assignment_epoch = group.assignment_epoch
            target = group.target_assignment.get(replaced or updated.member_id, EMPTY)
        return self.reconcile_member(group, updated, assignment_epoch, target, owned, regexes, image, records)

    def update_subscription(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                            members_after: Mapping[str, ConsumerGroupMember], image: MetadataImage,
                            records: list[CoordinatorRecord], after: list[Callable[[], None]]
                            ) -> tuple[int, dict[str, ResolvedRegex], bool]:
        """Rule 1: the member's subscription record, the regexes, a new group epoch (and metadata hash)
        when needed. Returns (group epoch, regexes, whether the member's subscription changed)."""
        group_id, member_id = group.group_id, updated.member_id
        bump = group.group_epoch == 0
        changed = False
        if updated.subscription() != member.subscription():
            records.append(CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id, member_id), updated.subscription()))
            changed = (updated.subscribed_topic_names, updated.regex) != (member.subscribed_topic_names, member.regex)
            bump |= changed
        regexes, regex_bump = self.regexes.update(group, member, updated, members_after, image, records)
        group_epoch = group.group_epoch
        if bump or regex_bump or self._checked_image.get(group_id) != image.version:
            names = set().union(*(subscribed_names(m, regexes) for m in members_after.values()))
            new_hash = metadata_hash(names, image)
            if bump or regex_bump or new_hash != group.metadata_hash:
                group_epoch += 1
                records.append(CoordinatorRecord(ConsumerGroupMetadataKey(group_id),
                                                 ConsumerGroupMetadataValue(group_epoch, new_hash)))

            def checked_image() -> None:  # only once the records are written (a failed append retries the check)
                self._checked_image[group_id] = image.version
            after.append(checked_image)
        return group_epoch, regexes, changed

    def reconcile_member(self, group: ConsumerGroup, updated: ConsumerGroupMember, assignment_epoch: int,
                         target: TopicPartitions, owned: Mapping[uuid.UUID, frozenset[int]] | None,
                         regexes: Mapping[str, ResolvedRegex], image: MetadataImage,
                         records: list[CoordinatorRecord]) -> ConsumerGroupMember:
        """Rule 3: one reconciliation step towards ``target`` (classic members have join and sync
        timeouts instead of the rebalance timeout)."""
        if updated.is_reconciled_to(assignment_epoch):
            return updated
        group_id, member_id = group.group_id, updated.member_id
        new_member = reconcile(updated, assignment_epoch, target, group.partition_epoch, owned,
                               topic_ids(subscribed_names(updated, regexes), image))
        if new_member.current_assignment() != updated.current_assignment():
            records.append(CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id),
                                             new_member.current_assignment()))
            if new_member.state is MemberState.UNREVOKED_PARTITIONS and not new_member.uses_classic_protocol:
                self.member_timers.rebalance(group_id, member_id, new_member.member_epoch,
                                             new_member.rebalance_timeout_ms)
            else:
                self.member_timers.cancel(group_id, member_id, "rebalance")
        return new_member

    def _group_for_heartbeat(self, group_id: str, epoch: int, image: MetadataImage, records: list[CoordinatorRecord],
                             after: list[Callable[[], None]]) -> ConsumerGroup:
        existing = self.groups.get(group_id)
        if isinstance(existing, ConsumerGroup):
            return existing
        if existing is None and epoch != 0:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if existing is not None:
            if epoch == 0 and isinstance(existing, ClassicGroup) and not existing.is_empty():
                check_upgrade(existing, self.config)
                return self._upgrade(existing, image, records, after)
            if epoch != 0 or not existing.is_empty() or not isinstance(existing, ClassicGroup):
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            records += existing.tombstones()  # an empty classic group gives way (its offsets stay)
        return ConsumerGroup(group_id)  # materialised when its records are replayed

    def _upgrade(self, classic: ClassicGroup, image: MetadataImage, records: list[CoordinatorRecord],
                 after: list[Callable[[], None]]) -> ConsumerGroup:
        """Migration rule 1: the classic group's members carry on in a consumer group (not registered:
        the records, replayed after the append, materialise it)."""
        group = consumer_group_from_classic(classic, image)
        records += classic.tombstones()
        records += consumer_group_records(group)

        def switched() -> None:
            log.info("group %s upgraded from classic to consumer at epoch %d with %d members", group.group_id,
                     group.group_epoch, len(group.members))
            stop_classic_group(classic)
            for member in group.members.values():
                assert member.classic_member_metadata is not None
                self.schedule_session_timeout(group.group_id, member.member_id,
                                              member.classic_member_metadata.session_timeout_ms)
        after.append(switched)
        return group

    def _get_or_subscribe(self, group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest,
                          owned: Mapping[uuid.UUID, frozenset[int]] | None,
                          records: list[CoordinatorRecord]) -> tuple[ConsumerGroupMember, str | None]:
        """The member the heartbeat is about, and the id of the static member it replaces (or None)."""
        member_id, epoch, instance_id = request.member_id, request.member_epoch, request.instance_id
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
                return ConsumerGroupMember(member_id), None
            check_member_epoch(member, epoch, owned)
            return member, None
        existing = group.static_member(instance_id)
        if epoch == 0:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id), None
            if not existing.uses_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} cannot join the group because the instance id is owned by "
                                 f"{existing.member_id} member.")
            return self.replace_static_member(group, existing, member_id, records), existing.member_id
        if existing is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {existing.member_id}.")
        check_member_epoch(existing, epoch, owned)
        return existing, None

    @staticmethod
    def replace_static_member(group: ConsumerGroup, existing: ConsumerGroupMember, member_id: str,
                              records: list[CoordinatorRecord]) -> ConsumerGroupMember:
        """A static member's instance is back under a new member id: it takes over the old member's place
        (Kafka's replaceMember records); returns the new member, at epoch 0."""
        new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        gid, old_id = group.group_id, existing.member_id
        records += [
            CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, old_id)),
            CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, old_id)),
            CoordinatorRecord(ConsumerGroupMemberMetadataKey(gid, old_id)),
            CoordinatorRecord(ConsumerGroupMemberMetadataKey(gid, member_id), new.subscription()),
            CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, member_id),
                              ConsumerGroupTargetAssignmentMemberValue(group.target_assignment.get(old_id, EMPTY))),
            CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, member_id), new.current_assignment()),
        ]
        return new

    # -- leaving, fencing, timers ---------------------------------------------------------------------

    def _leave(self, request: ConsumerGroupHeartbeatRequest) -> Result[ConsumerGroupHeartbeatResponse]:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self.group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        response = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch)
        if request.instance_id is None:
            return self.fence(group, group._member(member_id), response)
        member = group.static_member(request.instance_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if member.member_id != member_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{request.instance_id} was fenced by member {member.member_id}.")
        if epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self.fence(group, member, response)
        # A static member leaving for a while keeps its place and partitions, at epoch -2.
        leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={})
        return Result([CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id),
                                         leaving.current_assignment())], response)

    def fence_member(self, group_id: str, member_id: str, epoch: int | None = None) -> Result[None]:
        """Remove a member (its session, rebalance, join or sync timeout ran out); with ``epoch``, only if
        it is still at that member epoch. Nothing to write if it is gone."""
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or (epoch is not None and member.member_epoch != epoch):
            return Result([])
        return self.fence(group, member, None)

    def fence(self, group: ConsumerGroup, member: ConsumerGroupMember, response: Any) -> Result[Any]:
        return self.fence_members(group, [member], response)

    def fence_members(self, group: ConsumerGroup, members: list[ConsumerGroupMember], response: Any) -> Result[Any]:
        """Kafka's consumerGroupFenceMembers: the members go (one new group epoch), or the group becomes
        a classic group when only classic members would be left (migration rule 2)."""
        if not members:
            return Result([], response)
        leaving = {m.member_id for m in members}
        if self.classic_groups is not None and can_downgrade_after_leaving(group, leaving, self.config):
            try:
                return self.downgrade(group, leaving, None, [], response, rebalance=True)
            except KafkaError as e:
                log.warning("group %s stays a consumer group: %s", group.group_id, e)
        return Result(self.removal_records(group, members), response)

    def removal_records(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember]) -> list[CoordinatorRecord]:
        """Kafka's removeMember for each member + a new group epoch (their partitions are free at once)."""
        gid = group.group_id
        records: list[CoordinatorRecord] = []
        for member in leaving:
            mid = member.member_id
            records += [CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, mid)),
                        CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, mid)),
                        CoordinatorRecord(ConsumerGroupMemberMetadataKey(gid, mid))]
            self.member_timers.cancel(gid, mid)
        gone = {m.member_id for m in leaving}
        rest = [m for m in group.members.values() if m.member_id not in gone]
        regexes = dict(group.resolved_regexes)
        for regex in {m.regex for m in leaving if m.regex is not None}:
            if regex not in regex_subscribers(rest) and regex in regexes:
                records.append(CoordinatorRecord(ConsumerGroupRegularExpressionKey(gid, regex)))
                del regexes[regex]
        # Without an image yet (timers right after a restart), keep the hash: the next heartbeat
        # recomputes it, and bumps the epoch once more if it changed.
        image = self.current_image()
        new_hash = group.metadata_hash
        if image is not None:
            new_hash = metadata_hash(set().union(*(subscribed_names(m, regexes) for m in rest)), image)
        records.append(CoordinatorRecord(ConsumerGroupMetadataKey(gid),
                                         ConsumerGroupMetadataValue(group.group_epoch + 1, new_hash)))
        return records

    def downgrade(self, group: ConsumerGroup, leaving: set[str], joining: ConsumerGroupMember | None,
                  records: list[CoordinatorRecord], response: Any, *, rebalance: bool) -> Result[Any]:
        """Migration rule 2: the result that makes ``group`` a classic group without the ``leaving``
        members (or with ``joining`` in place of its instance's static member), rebalancing at once if
        asked. Written without replay; the switch happens once the records are appended (a failed
        append leaves the consumer group as it was)."""
        image = self.current_image() or MetadataImage("", -1, {}, {})
        classic = classic_group_from_consumer(group, leaving, joining, image, self.clock)
        replaced = group.static_member(joining.instance_id) if joining is not None else None
        records = records + downgrade_records(
            group, classic, (replaced.member_id, joining.member_id) if replaced is not None and joining else None)
        host = self.classic_groups
        assert host is not None

        def switch() -> None:
            gid = group.group_id
            log.info("group %s downgraded from consumer to classic at generation %d with %d members", gid,
                     classic.generation_id, len(classic.members))
            for mid in {*group.members, *classic.members}:
                self.member_timers.cancel(gid, mid)
            self._checked_image.pop(gid, None)
            host.adopt(classic, f"Downgrade group {gid} from consumer to classic." if rebalance else None)

        return Result(records, response, replay=False, on_appended=switch)

    def _group_config(self, group_id: str, name: str, default: int) -> int:
        """A group config (ConfigResource GROUP): the group's override in the metadata, else the
        broker's ``group.consumer.*`` default."""
        image = self.current_image()
        overrides = image.group_configs.get(group_id) if image is not None else None
        return int(overrides[name]) if overrides and name in overrides else default

    def schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """(Re)arm a member's session: the group's session timeout, or ``timeout_ms`` (classic members)."""
        if timeout_ms is None:
            timeout_ms = self._group_config(group_id, "consumer.session.timeout.ms", self.config.session_timeout_ms)
        self.member_timers.session(group_id, member_id, timeout_ms)

    def on_unloaded(self) -> None:
        """Nothing is parked here: heartbeats are answered at once, and the timers stop with the runtime."""

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None:
        """After the replay (of the groups ``group_ids``; None: all): every member gets a full session
        to heartbeat again (as Kafka: the group's session timeout, for classic members too)."""
        ids = list(self.groups) if group_ids is None else [g for g in group_ids if g in self.groups]
        for group in [self.groups[g] for g in ids]:
            if isinstance(group, ConsumerGroup):
                for member_id in group.members:
                    self.schedule_session_timeout(group.group_id, member_id)

    # -- queries ---------------------------------------------------------------------------------------

    def describe(self, group_ids: Iterable[str], image: MetadataImage
                 ) -> list[ConsumerGroupDescribeResponse.DescribedGroup]:
        """ConsumerGroupDescribe: each group, or GROUP_ID_NOT_FOUND."""
        self.image = image
        names = {t.topic_id: t.name for t in image.topics.values()}
        R = ConsumerGroupDescribeResponse

        def assignment(tps: TopicPartitions) -> Any:
            return R.Assignment(topic_partitions=[R.TopicPartitions(topic_id=t, topic_name=names[t], partitions=sorted(ps))
                                                  for t, ps in sorted(tps.items()) if t in names and ps])

        described = []
        for group_id in group_ids:
            group = self.group(group_id)
            if group is None:
                message = (f"Group {group_id} is not a consumer group." if group_id in self.groups
                           else f"Group {group_id} not found.")
                described.append(R.DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                                  error_message=message))
                continue
            members = [R.Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                                member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                                subscribed_topic_names=list(m.subscribed_topic_names), subscribed_topic_regex=m.regex,
                                assignment=assignment(m.assigned_partitions),
                                target_assignment=assignment(group.target_assignment.get(m.member_id, EMPTY)),
                                member_type=0 if m.uses_classic_protocol else 1)
                       for _, m in sorted(group.members.items())]
            described.append(R.DescribedGroup(group_id=group_id, group_state=group.state_name(),
                                              group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                              assignor_name=assignor_for(group.members.values(), self.config.assignors),
                                              members=members))
        return described

    # -- replay ----------------------------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one ConsumerGroup* record: the only way consumer group state changes (load included)."""
        key, value = record.key, record.value
        group = self._group_for_replay(key.group_id, value is not None)
        if group is None:
            return
        if isinstance(key, ConsumerGroupMetadataKey) and value is None:
            del self.groups[key.group_id]
            self._checked_image.pop(key.group_id, None)
            return
        group.replay(key, value)

    def _group_for_replay(self, group_id: str, create: bool) -> ConsumerGroup | None:
        existing = self.groups.get(group_id)
        if isinstance(existing, ConsumerGroup):
            return existing
        if not create:
            return None  # a tombstone for a group that is gone (or of another type)
        if existing is not None and not existing.is_empty():
            log.error("consumer group record for %s, which is a non-empty %s group; skipped",
                      group_id, existing.group_type)
            return None
        # A missing group, or an empty one of another type (an offsets-only "simple" group) gives way.
        group = ConsumerGroup(group_id)
        self.groups[group_id] = group
        return group


def _run_all(callbacks: list[Callable[[], None]]) -> Callable[[], None] | None:
    if not callbacks:
        return None

    def run() -> None:
        for callback in callbacks:
            callback()
    return run


__all__ = ["KEY_TYPES", "ConsumerGroupCoordinator"]
