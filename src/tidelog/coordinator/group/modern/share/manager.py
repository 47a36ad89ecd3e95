"""Share groups (KIP-932): the broker assigns partitions, several members may share one, and records are
handed out by the share partitions (one consumer at a time per record), not by the group.

Rules (Kafka 4.4's GroupMetadataManager share-group paths, ShareGroup and ShareGroupAssignmentBuilder):

1. **Heartbeat.** ShareGroupHeartbeat joins (epoch 0, with ``SubscribedTopicNames``), heartbeats (the
   member's epoch, or its previous one) or leaves (-1). The member id is the client's (v1); an empty one, an
   empty group id or rack id, or another epoch is INVALID_REQUEST. An unknown member with epoch > 0 is
   UNKNOWN_MEMBER_ID, a wrong epoch FENCED_MEMBER_EPOCH; a heartbeat of a group that does not exist (epoch
   != 0) GROUP_ID_NOT_FOUND, as is any heartbeat to a group of another type. A group at
   ``group.share.max.size`` members refuses new ones (GROUP_MAX_SIZE_REACHED). A member that rejoins with
   epoch 0 and its id gets its place back (its assignment is sent in full).
2. **Group epoch.** Bumped when the group is new, a member's subscription changes, a member joins or leaves
   (or is fenced), the subscribed topics' metadata changes (hash of name, id, partition count), or share
   partitions finish initializing (rule 4).
3. **Target assignment and reconciliation.** When the group epoch is past the assignment epoch, the
   ``simple`` assignor (:mod:`~tidelog.coordinator.group.modern.share.assignor`) computes every member's
   target. A share partition has no single owner, so nothing is revoked first: a member takes its target and
   the assignment epoch at its next heartbeat (Kafka's ShareGroupAssignmentBuilder).
4. **Share-state initialization** (Kafka 4.1+). Only partitions whose share state is initialized are
   assigned. A heartbeat that finds subscribed partitions neither initialized nor initializing writes them as
   *initializing* (ShareGroupStatePartitionMetadata); the service then initializes each through the
   :class:`~tidelog.coordinator.share.persister.SharePersister` (state epoch = group epoch, start offset -1:
   the share partition applies ``share.auto.offset.reset`` at its first fetch) and :meth:`initialized`
   moves them to *initialized* and bumps the group epoch; a failed one leaves *initializing* and is tried
   again at a later heartbeat. Partitions left *initializing* by a broker that stopped are tried again.
   A subscribed topic that is deleted becomes *deleting* (found at a heartbeat); the service deletes its
   share partitions' state, then :meth:`deleted` forgets it.
5. **Sessions.** A member silent for ``share.session.timeout.ms`` (the group config; else
   ``group.share.session.timeout.ms``) is fenced; heartbeats are asked every ``share.heartbeat.interval.ms``
   (else ``group.share.heartbeat.interval.ms``). Timers live in memory: after a load every member gets a
   new session.
6. **State**: Empty (no members), Stable (members), Dead once deleted. DeleteGroups needs it Empty
   (NON_EMPTY_GROUP); OffsetCommit/OffsetFetch/OffsetDelete on it answer GROUP_ID_NOT_FOUND. An empty
   share group is never expired by the offset expiry pass (Kafka's ``shouldExpire``: false).
7. **Result + replay**, as consumer groups: operations return the runtime's Result and change nothing;
   :meth:`ShareGroupCoordinator.replay` applies ShareGroup* records, and loading is the same replay.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.group import GroupRegistry
from tidelog.coordinator.group.modern.assignors import MemberSpec, TopicPartitions
from tidelog.coordinator.group.modern.member import (
    EMPTY,
    LEAVE_GROUP_MEMBER_EPOCH,
    MemberState,
    new_member_id,
)
from tidelog.coordinator.group.modern.member_timers import ConsumerGroupTimers, MemberTimers
from tidelog.coordinator.group.modern.share.assignor import SIMPLE_ASSIGNOR_NAME, simple_assign
from tidelog.coordinator.group.modern.share.config import ShareGroupConfig
from tidelog.coordinator.group.modern.share.group import (
    ShareGroup,
    ShareGroupMember,
    merge_infos,
    remove_infos,
)
from tidelog.coordinator.group.modern.share.records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    TopicPartitionsInfo,
)
from tidelog.coordinator.group.modern.subscription import metadata_hash, topic_ids
from tidelog.coordinator.group.modern.target_assignment import TargetRecords, build_target
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import (
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)

log = logging.getLogger(__name__)

Infos = dict[uuid.UUID, tuple[str, frozenset[int]]]


def _target_records(clock: Clock) -> TargetRecords:
    return TargetRecords(
        member=lambda gid, mid, tps: CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(gid, mid),
                                                       ShareGroupTargetAssignmentMemberValue(tps)),
        epoch=lambda gid, epoch: CoordinatorRecord(ShareGroupTargetAssignmentMetadataKey(gid),
                                                   ShareGroupTargetAssignmentMetadataValue(epoch, clock.wall_ms())))


class ShareGroupCoordinator:
    """The share groups of a coordinator: operations (-> runtime :class:`Result`), queries, replay."""

    def __init__(self, clock: Clock, config: ShareGroupConfig | None = None,
                 timers: ConsumerGroupTimers | None = None, groups: GroupRegistry | None = None, *,
                 image_source: Callable[[], MetadataImage] | None = None) -> None:
        self.clock = clock
        self.config = config or ShareGroupConfig()
        self.image_source = image_source
        self.image: MetadataImage | None = None
        self.member_timers = MemberTimers(timers, self.fence_member)
        self.groups = groups if groups is not None else GroupRegistry()
        self.target_records = _target_records(clock)
        #: (group id, topic id, partition) whose initialization this broker has started (rule 4).
        self.in_flight: set[tuple[str, uuid.UUID, int]] = set()

    def group(self, group_id: str) -> ShareGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ShareGroup) else None

    def current_image(self) -> MetadataImage | None:
        if self.image_source is not None:
            self.image = self.image_source()
        return self.image

    def group_config(self, group_id: str, name: str, default: int) -> int:
        """A share group config (ConfigResource GROUP) override, else the broker's default."""
        image = self.current_image()
        overrides = image.group_configs.get(group_id) if image is not None else None
        return int(overrides[name]) if overrides and name in overrides else default

    # -- heartbeat -------------------------------------------------------------------------------------

    def heartbeat(self, request: ShareGroupHeartbeatRequest, *, api_version: int, image: MetadataImage,
                  client_id: str | None = "", client_host: str = "") -> Result[ShareGroupHeartbeatResponse]:
        """Rule 1; a KafkaError raised here is the response's error code (nothing is written)."""
        self.image = image
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if request.rack_id is not None and not request.rack_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if not member_id and (epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH or (epoch == 0 and api_version >= 1)):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if epoch == 0:
            if not request.subscribed_topic_names:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
            member_id = member_id or new_member_id()
        elif epoch < 0 and epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(group_id, member_id, epoch)
        return self._heartbeat(request, member_id, client_id or "", client_host, image)

    def _group_for_heartbeat(self, group_id: str, epoch: int) -> ShareGroup:
        existing = self.groups.get(group_id)
        if isinstance(existing, ShareGroup):
            return existing
        if existing is not None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if epoch != 0:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        return ShareGroup(group_id)  # created by the replay of its first records

    def _heartbeat(self, request: ShareGroupHeartbeatRequest, member_id: str, client_id: str, client_host: str,
                   image: MetadataImage) -> Result[ShareGroupHeartbeatResponse]:
        group_id, epoch = request.group_id, request.member_epoch
        group = self._group_for_heartbeat(group_id, epoch)
        if member_id not in group.members and len(group.members) >= self.config.max_size:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum "
                             f"capacity of {self.config.max_size} members.")
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            member = ShareGroupMember(member_id)
        elif epoch != 0 and epoch != member.member_epoch and epoch != member.previous_member_epoch:
            if epoch > member.member_epoch:
                detail = f"a greater member epoch ({epoch}) than the one known by the group coordinator " \
                         f"({member.member_epoch})"
            else:
                detail = (f"a smaller member epoch ({epoch}) than the one known by the group coordinator "
                          f"({member.member_epoch}), and it does not match the previous member epoch "
                          f"({member.previous_member_epoch})")
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, f"The share group member has {detail}. The member must "
                             "abandon all its partitions and rejoin.")
        updated = replace(member, rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
                          subscribed_topic_names=(tuple(request.subscribed_topic_names)
                                                  if request.subscribed_topic_names is not None
                                                  else member.subscribed_topic_names),
                          client_id=client_id, client_host=client_host)
        records: list[CoordinatorRecord] = []
        members_after = dict(group.members)
        members_after[member_id] = updated
        bump = group.group_epoch == 0 or member_id not in group.members
        if updated.subscription() != member.subscription() or member_id not in group.members:
            records.append(CoordinatorRecord(ShareGroupMemberMetadataKey(group_id, member_id), updated.subscription()))
            bump = bump or updated.subscribed_topic_names != member.subscribed_topic_names
        names = {t for m in members_after.values() for t in m.subscribed_topic_names}
        new_hash = metadata_hash(names, image)
        group_epoch = group.group_epoch
        if bump or new_hash != group.metadata_hash:
            group_epoch += 1
            records.append(CoordinatorRecord(ShareGroupMetadataKey(group_id), ShareGroupMetadataValue(group_epoch,
                                                                                                       new_hash)))
        # 3. The target assignment, then the member takes its target.
        if group_epoch > group.assignment_epoch:
            target = self._update_target(group, group_epoch, members_after, image, records).get(member_id, EMPTY)
            assignment_epoch = group_epoch
        else:
            assignment_epoch = group.assignment_epoch
            target = group.target_assignment.get(member_id, EMPTY)
        new_member = updated
        if updated.member_epoch != assignment_epoch or dict(updated.assigned_partitions) != dict(target) or epoch == 0:
            new_member = replace(updated, member_epoch=assignment_epoch, previous_member_epoch=updated.member_epoch,
                                 state=MemberState.STABLE, assigned_partitions=dict(target))
            records.append(CoordinatorRecord(ShareGroupCurrentMemberAssignmentKey(group_id, member_id),
                                             new_member.current_assignment()))
        # 4. Subscribed partitions without share state start initializing.
        self._maybe_initialize(group, names, image, records)
        self.member_timers.session(group_id, member_id, self.group_config(
            group_id, "share.session.timeout.ms", self.config.session_timeout_ms))
        response = ShareGroupHeartbeatResponse(
            member_id=member_id, member_epoch=new_member.member_epoch,
            heartbeat_interval_ms=self.group_config(group_id, "share.heartbeat.interval.ms",
                                                    self.config.heartbeat_interval_ms))
        if epoch == 0 or dict(new_member.assigned_partitions) != dict(member.assigned_partitions):
            response.assignment = ShareGroupHeartbeatResponse.Assignment(topic_partitions=[
                ShareGroupHeartbeatResponse.TopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(new_member.assigned_partitions.items()) if ps])
        return Result(records, response)

    def _update_target(self, group: ShareGroup, group_epoch: int, members: dict[str, ShareGroupMember],
                       image: MetadataImage, records: list[CoordinatorRecord]) -> dict[str, Any]:
        specs: dict[str, MemberSpec] = {}
        assignable: dict[uuid.UUID, list[int]] = {}
        for mid, m in members.items():
            for name in m.subscribed_topic_names:
                topic = image.topics.get(name)
                if topic is not None:
                    initialized = group.initialized.get(topic.topic_id, ("", frozenset()))[1]
                    assignable[topic.topic_id] = sorted(p for p in initialized if p < len(topic.partitions))
            specs[mid] = MemberSpec(topic_ids(m.subscribed_topic_names, image), group.target_assignment.get(mid) or EMPTY)
        return build_target(group.group_id, group_epoch, members, group.target_assignment.get,
                            lambda: simple_assign(specs, assignable), self.target_records, records)

    def _maybe_initialize(self, group: ShareGroup, names: Iterable[str], image: MetadataImage,
                          records: list[CoordinatorRecord]) -> None:
        """Rule 4: subscribed partitions without share state start initializing; topics that were deleted
        (their id is gone from the metadata) leave *initializing* and are marked *deleting*."""
        needed: Infos = {}
        for name in sorted(names):
            topic = image.topics.get(name)
            if topic is None:
                continue
            tid = topic.topic_id
            have = group.initialized.get(tid, ("", frozenset()))[1] | group.initializing.get(tid, ("", frozenset()))[1]
            missing = frozenset(range(len(topic.partitions))) - have
            if missing:
                needed[tid] = (name, missing)
        live = {t.topic_id for t in image.topics.values()}
        gone = {tid: name for tid, (name, _) in {**group.initialized, **group.initializing}.items()
                if tid not in live and tid not in group.deleting}
        if needed or gone:
            initializing = {t: v for t, v in merge_infos(group.initializing, needed).items() if t not in gone}
            records.append(CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group.group_id),
                                             ShareGroupStatePartitionMetadataValue(
                                                 initializing, dict(group.initialized), {**group.deleting, **gone})))

    def take_deletion(self, group_id: str) -> Infos:
        """The group's *deleting* topics (deleted from the cluster) whose share state this broker has not
        started to delete yet (now marked started), with their initialized partitions."""
        group = self.group(group_id)
        if group is None:
            return {}
        out: Infos = {}
        for tid, name in group.deleting.items():
            if (group_id, tid, -1) not in self.in_flight:
                self.in_flight.add((group_id, tid, -1))
                out[tid] = (name, group.initialized.get(tid, (name, frozenset()))[1])
        return out

    def deleted(self, group_id: str, done: Iterable[uuid.UUID], failed: Iterable[uuid.UUID]) -> Result[None]:
        """The share state of the ``done`` deleting topics is gone: they leave the group's state partitions;
        ``failed`` ones stay *deleting*, to be tried again."""
        done = list(done)
        for tid in [*done, *failed]:
            self.in_flight.discard((group_id, tid, -1))
        group = self.group(group_id)
        if group is None or not done:
            return Result([])
        return Result([CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id), ShareGroupStatePartitionMetadataValue(
            {t: v for t, v in group.initializing.items() if t not in done},
            {t: v for t, v in group.initialized.items() if t not in done},
            {t: n for t, n in group.deleting.items() if t not in done}))])

    # -- share-state initialization (rule 4) -------------------------------------------------------------

    def take_initialization(self, group_id: str) -> tuple[int, Infos]:
        """The group's initializing partitions this broker has not started to initialize yet (now marked
        started), and the state epoch to initialize them with."""
        group = self.group(group_id)
        if group is None:
            return 0, {}
        out: Infos = {}
        for tid, (name, ps) in group.initializing.items():
            fresh = frozenset(p for p in ps if (group_id, tid, p) not in self.in_flight)
            if fresh:
                out[tid] = (name, fresh)
                self.in_flight.update((group_id, tid, p) for p in fresh)
        return group.group_epoch, out

    def initialized(self, group_id: str, done: TopicPartitionsInfo, failed: TopicPartitionsInfo) -> Result[None]:
        """The persister answered: ``done`` partitions become initialized (a new group epoch), ``failed``
        ones leave *initializing* to be tried again."""
        for infos in (done, failed):
            for tid, (_, ps) in infos.items():
                self.in_flight.difference_update((group_id, tid, p) for p in ps)
        group = self.group(group_id)
        if group is None or not (done or failed):
            return Result([])
        still = {t: (n, ps) for t, (n, ps) in done.items() if t in group.initializing}
        records = [CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id), ShareGroupStatePartitionMetadataValue(
            remove_infos(remove_infos(group.initializing, done), failed), merge_infos(group.initialized, still),
            dict(group.deleting)))]
        if still:
            records.append(CoordinatorRecord(ShareGroupMetadataKey(group_id), ShareGroupMetadataValue(
                group.group_epoch + 1, group.metadata_hash)))
        return Result(records)

    def record_initialized(self, group_id: str, done: TopicPartitionsInfo) -> Result[None]:
        """AlterShareGroupOffsets initialized ``done`` again (at a new start offset): they are initialized."""
        group = self.group(group_id)
        if group is None or not done:
            return Result([])
        return Result([CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id), ShareGroupStatePartitionMetadataValue(
            remove_infos(group.initializing, done), merge_infos(group.initialized, done), dict(group.deleting)))])

    def forget_partitions(self, group_id: str, gone: TopicPartitionsInfo) -> Result[None]:
        """DeleteShareGroupOffsets deleted the share state of ``gone``: they are neither initialized nor
        initializing any more (a member subscribing to them again initializes them again)."""
        group = self.group(group_id)
        if group is None or not gone:
            return Result([])
        return Result([CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id), ShareGroupStatePartitionMetadataValue(
            remove_infos(group.initializing, gone), remove_infos(group.initialized, gone), dict(group.deleting)))])

    # -- leaving, fencing, timers ---------------------------------------------------------------------

    def _leave(self, group_id: str, member_id: str, epoch: int) -> Result[ShareGroupHeartbeatResponse]:
        group = self.group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        log.info("member %s left share group %s", member_id, group_id)
        return Result(self.removal_records(group, member),
                      ShareGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch))

    def fence_member(self, group_id: str, member_id: str, epoch: int | None = None) -> Result[None]:
        """A member's session ran out: remove it, if it is still there."""
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return Result([])
        log.info("share group %s: member %s fenced (session timeout)", group_id, member_id)
        return Result(self.removal_records(group, member))

    def removal_records(self, group: ShareGroup, member: ShareGroupMember) -> list[CoordinatorRecord]:
        gid, mid = group.group_id, member.member_id
        self.member_timers.cancel(gid, mid)
        remaining = {m: v for m, v in group.members.items() if m != mid}
        rest = {t for m in remaining.values() for t in m.subscribed_topic_names}
        image = self.current_image()
        new_hash = metadata_hash(rest, image) if image is not None else group.metadata_hash
        epoch = group.group_epoch + 1
        records = [CoordinatorRecord(ShareGroupCurrentMemberAssignmentKey(gid, mid)),
                   CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(gid, mid)),
                   CoordinatorRecord(ShareGroupMemberMetadataKey(gid, mid)),
                   CoordinatorRecord(ShareGroupMetadataKey(gid), ShareGroupMetadataValue(epoch, new_hash))]
        if image is not None:  # the others' new targets at once, as Kafka 4.4 (the members take them next)
            try:
                self._update_target(group, epoch, remaining, image, records)
            except KafkaError as e:
                log.warning("share group %s: no new target assignment after %s left: %s", gid, mid, e)
        return records

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None:
        """Every member of the loaded groups gets a full session to heartbeat again."""
        ids = list(self.groups) if group_ids is None else [g for g in group_ids if g in self.groups]
        for group in [self.groups[g] for g in ids]:
            if isinstance(group, ShareGroup):
                for member_id in group.members:
                    self.member_timers.session(group.group_id, member_id, self.group_config(
                        group.group_id, "share.session.timeout.ms", self.config.session_timeout_ms))

    def on_unloaded(self) -> None:
        self.in_flight.clear()

    # -- queries ---------------------------------------------------------------------------------------

    def describe(self, group_ids: Iterable[str], image: MetadataImage) -> list[ShareGroupDescribeResponse.DescribedGroup]:
        """ShareGroupDescribe: each group, or GROUP_ID_NOT_FOUND."""
        self.image = image
        names = {t.topic_id: t.name for t in image.topics.values()}
        R = ShareGroupDescribeResponse

        def assignment(tps: TopicPartitions) -> Any:
            return R.Assignment(topic_partitions=[R.TopicPartitions(topic_id=t, topic_name=names[t], partitions=sorted(ps))
                                                  for t, ps in sorted(tps.items()) if t in names and ps])

        described = []
        for group_id in group_ids:
            group = self.group(group_id)
            if group is None:
                message = (f"Group {group_id} is not a share group." if group_id in self.groups
                           else f"Group {group_id} not found.")
                described.append(R.DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                                  error_message=message))
                continue
            members = [R.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                                client_id=m.client_id, client_host=m.client_host,
                                subscribed_topic_names=list(m.subscribed_topic_names),
                                assignment=assignment(m.assigned_partitions))
                       for _, m in sorted(group.members.items())]
            described.append(R.DescribedGroup(group_id=group_id, group_state=group.state_name(),
                                              group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                              assignor_name=SIMPLE_ASSIGNOR_NAME, members=members))
        return described

    # -- replay ----------------------------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one ShareGroup* record: the only way share group state changes (load included)."""
        key, value = record.key, record.value
        existing = self.groups.get(key.group_id)
        group = existing if isinstance(existing, ShareGroup) else None
        if group is None:
            if value is None:
                return
            if existing is not None and not existing.is_empty():
                log.error("share group record for %s, which is a non-empty %s group; skipped", key.group_id,
                          existing.group_type)
                return
            group = self.groups[key.group_id] = ShareGroup(key.group_id)
        if isinstance(key, ShareGroupMetadataKey) and value is None:
            del self.groups[key.group_id]
            self.in_flight = {k for k in self.in_flight if k[0] != key.group_id}
            return
        group.replay(key, value)


__all__ = ["ShareGroupCoordinator"]
