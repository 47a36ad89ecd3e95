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
   (layouts below), registered with :func:`~tidelog.coordinator.group.records.register_record_type`,
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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.assignors import (
    ASSIGNORS,
    AssignorError,
    MemberSpec,
    TopicPartitions,
)
from tidelog.coordinator.group.consumer_config import ConsumerGroupConfig
from tidelog.coordinator.group.consumer_group import (
    CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION,
    EMPTY,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    ResolvedRegex,
)
from tidelog.coordinator.group.consumer_records import (
    KEY_TYPES,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from tidelog.coordinator.group.group import Group
from tidelog.coordinator.group.reconciliation import check_member_epoch, reconcile, tp_map
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.group.subscription import (
    compile_regex,
    metadata_hash,
    regex_subscribers,
    resolve_regex,
    subscribed_names,
    topic_ids,
)
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

log = logging.getLogger(__name__)


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



# -- the coordinator of all consumer groups --------------------------------------------------------------

class ConsumerGroupTimers(Protocol):
    """Coordinator timers (the runtime's): ``op`` runs as an operation on the group's partition."""

    def schedule(self, key: str, delay_ms: int, group_id: str, op: Callable[[], Result[Any] | None]) -> None: ...

    def cancel(self, key: str) -> None: ...


def _session_key(group_id: str, member_id: str) -> str:
    return f"session-timeout-{group_id}-{member_id}"


def _regex_key(group_id: str) -> str:
    return f"regex-refresh-{group_id}"


def _rebalance_key(group_id: str, member_id: str) -> str:
    return f"rebalance-timeout-{group_id}-{member_id}"


class ConsumerGroupCoordinator:
    """The consumer groups of a coordinator: operations (-> runtime :class:`Result`), queries, replay.

    ``groups`` is the coordinator's map of every group (classic ones too: one group id, one type).
    Requests bring the current metadata image; the last one seen serves the timers (Kafka's
    ``onNewMetadataImage``). Loop-only, not thread-safe."""

    def __init__(self, clock: Clock, config: ConsumerGroupConfig | None = None,
                 timers: ConsumerGroupTimers | None = None, groups: dict[str, Group] | None = None) -> None:
        self.clock = clock
        self.config = config or ConsumerGroupConfig()
        self.image: MetadataImage | None = None
        self.timers = timers
        self.groups: dict[str, Group] = groups if groups is not None else {}
        self._checked_image: dict[str, int] = {}  # group -> image version its topics were last hashed at
        self._regex_checked: dict[tuple[str, str], int] = {}  # (group, regex) -> image version last resolved at
        self._regex_refresh_pending: set[str] = set()

    def group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    # -- heartbeat -------------------------------------------------------------------------------------

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, *, api_version: int, image: MetadataImage,
                  client_id: str | None = "", client_host: str = "") -> Result[ConsumerGroupHeartbeatResponse]:
        """ConsumerGroupHeartbeat: join (epoch 0), heartbeat (> 0) or leave (-1, -2). A KafkaError
        raised here is the response's error code (nothing is written)."""
        self.image = image
        validate_heartbeat(request, api_version, self.config.assignors)
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        return self._heartbeat(request, client_id or "", client_host, image)

    def _heartbeat(self, request: ConsumerGroupHeartbeatRequest, client_id: str, client_host: str,
                   image: MetadataImage) -> Result[ConsumerGroupHeartbeatResponse]:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        records: list[CoordinatorRecord] = []
        group = self._group_for_heartbeat(group_id, epoch, records)
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum "
                             f"capacity of {self.config.max_size} members.")
        owned = tp_map(request.topic_partitions) if request.topic_partitions is not None else None
        member, replaced = self._get_or_subscribe(group, request, owned, records)
        updated = _apply_request(member, request, client_id, client_host)
        members_after = {m: v for m, v in group.members.items() if m != replaced}
        members_after[member_id] = updated

        # 1. The member's subscription, the regexes, the group epoch.
        bump = group.group_epoch == 0
        if updated.subscription() != member.subscription():
            records.append(CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id, member_id), updated.subscription()))
            bump |= (updated.subscribed_topic_names, updated.regex) != (member.subscribed_topic_names, member.regex)
        regexes, regex_bump = self._update_regexes(group, member, updated, members_after, image, records)
        group_epoch = group.group_epoch
        checked = self._checked_image.get(group_id) == image.version
        if bump or regex_bump or not checked:
            names = set().union(*(subscribed_names(m, regexes) for m in members_after.values()))
            new_hash = metadata_hash(names, image)
            if bump or regex_bump or new_hash != group.metadata_hash:
                group_epoch += 1
                records.append(CoordinatorRecord(ConsumerGroupMetadataKey(group_id),
                                                 ConsumerGroupMetadataValue(group_epoch, new_hash)))

        # 2. A new target assignment when the group epoch moved past it.
        if group_epoch > group.assignment_epoch:
            target = self._update_target(group, group_epoch, members_after, member_id, replaced, regexes, image,
                                         records)
            assignment_epoch = group_epoch
        else:
            assignment_epoch = group.assignment_epoch
            target = group.target_assignment.get(replaced or member_id, EMPTY)

        # 3. One reconciliation step for this member.
        new_member = updated
        if not updated.is_reconciled_to(assignment_epoch):
            new_member = reconcile(updated, assignment_epoch, target, group.partition_epoch, owned,
                                   topic_ids(subscribed_names(updated, regexes), image))
            if new_member.current_assignment() != updated.current_assignment():
                records.append(CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id),
                                                 new_member.current_assignment()))
                if new_member.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group_id, new_member)
                elif self.timers is not None:
                    self.timers.cancel(_rebalance_key(group_id, member_id))
        self._schedule_session_timeout(group_id, member_id)

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

        def checked_image() -> None:  # only once the records are written (a failed append retries the check)
            self._checked_image[group_id] = image.version

        return Result(records, response, on_appended=None if checked else checked_image)

    def _group_for_heartbeat(self, group_id: str, epoch: int, records: list[CoordinatorRecord]) -> ConsumerGroup:
        existing = self.groups.get(group_id)
        if isinstance(existing, ConsumerGroup):
            return existing
        if existing is None and epoch != 0:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if existing is not None:
            if epoch != 0 or not existing.is_empty():
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            records += existing.tombstones()  # an empty classic group gives way (its offsets stay)
        return ConsumerGroup(group_id)  # materialised when its records are replayed

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
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} cannot join the group because the instance id is owned by "
                                 f"{existing.member_id} member.")
            # The instance is back (under a new member id): it takes over the old member's place.
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
            return new, old_id
        if existing is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {existing.member_id}.")
        check_member_epoch(existing, epoch, owned)
        return existing, None

    def _update_regexes(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                        members_after: Mapping[str, ConsumerGroupMember], image: MetadataImage,
                        records: list[CoordinatorRecord]) -> tuple[dict[str, ResolvedRegex], bool]:
        """Rule 8, the heartbeat's part: records for regexes that go; the regexes as they are now; and
        whether the subscriptions change because of them (a new group epoch). A regex that is new, or
        was resolved against an older metadata image, is resolved later, off the heartbeat
        (:meth:`_refresh_regexes`), as Kafka's coordinator does; only its syntax is checked now."""
        gid = group.group_id
        regexes = dict(group.resolved_regexes)
        bump = False
        in_use = regex_subscribers(members_after.values())
        old, new = member.regex, updated.regex
        if old != new:
            if old is not None and old not in in_use and old in regexes:
                records.append(CoordinatorRecord(ConsumerGroupRegularExpressionKey(gid, old)))
                del regexes[old]
                bump = True
            if new is not None:
                if new in regexes:
                    bump = True  # a new subscriber of a regex already resolved
                else:
                    compile_regex(new)  # INVALID_REGULAR_EXPRESSION before anything is written
        if any(r not in regexes or (self._regex_checked.get((gid, r)) != image.version
               and regexes[r].version != image.version) for r in in_use):
            self._schedule_regex_refresh(gid)
        return regexes, bump

    def _schedule_regex_refresh(self, group_id: str) -> None:
        if self.timers is not None and group_id not in self._regex_refresh_pending:
            self._regex_refresh_pending.add(group_id)
            self.timers.schedule(_regex_key(group_id), 0, group_id, lambda: self._refresh_regexes(group_id))

    def _refresh_regexes(self, group_id: str) -> Result[None] | None:
        """Resolve the group's regexes against the latest metadata image: records for those whose
        topics changed and, if any did, a new group epoch (members get the topics on their next
        heartbeat)."""
        self._regex_refresh_pending.discard(group_id)
        group = self.group(group_id)
        image = self.image
        if group is None or image is None:
            return None
        regexes = dict(group.resolved_regexes)
        records: list[CoordinatorRecord] = []
        for regex in sorted(regex_subscribers(group.members.values())):
            known = regexes.get(regex)
            if known is not None and known.version == image.version:
                continue
            try:
                topics = resolve_regex(regex, image)
            except KafkaError:
                continue  # refused at subscription; a record written by an older version: leave it
            self._regex_checked[(group_id, regex)] = image.version
            if known is None or known.topics != topics:
                regexes[regex] = ResolvedRegex(topics, image.version, self.clock.wall_ms())
                records.append(CoordinatorRecord(ConsumerGroupRegularExpressionKey(group_id, regex),
                                                 ConsumerGroupRegularExpressionValue(
                                                     tuple(sorted(topics)), image.version, regexes[regex].timestamp)))
        if not records:
            return None
        names = set().union(*(subscribed_names(m, regexes) for m in group.members.values()))
        records.append(CoordinatorRecord(ConsumerGroupMetadataKey(group_id),
                                         ConsumerGroupMetadataValue(group.group_epoch + 1, metadata_hash(names, image))))
        return Result(records)

    def _update_target(self, group: ConsumerGroup, group_epoch: int, members: Mapping[str, ConsumerGroupMember],
                       member_id: str, replaced: str | None, regexes: Mapping[str, ResolvedRegex],
                       image: MetadataImage, records: list[CoordinatorRecord]) -> TopicPartitions:
        """Rule 2: records for every member whose target changes, then the assignment epoch. Returns
        the new target of ``member_id`` (which takes over ``replaced``'s target, if any)."""
        def previous(mid: str) -> TopicPartitions | None:
            return group.target_assignment.get(replaced if mid == member_id and replaced else mid)

        specs: dict[str, MemberSpec] = {}
        counts: dict[uuid.UUID, int] = {}
        for mid, m in members.items():
            names = subscribed_names(m, regexes)
            for name in names & image.topics.keys():
                counts[image.topics[name].topic_id] = len(image.topics[name].partitions)
            specs[mid] = MemberSpec(topic_ids(names, image), previous(mid) or EMPTY, m.instance_id, m.rack_id)
        try:
            new_target = ASSIGNORS[self._assignor_for(members.values())](specs, counts)
        except AssignorError as e:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                             f"epoch {group_epoch}: {e}") from None
        for mid in sorted(members):
            new = new_target.get(mid, {})
            old = previous(mid)
            if old is None or dict(old) != new:
                records.append(CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(group.group_id, mid),
                                                 ConsumerGroupTargetAssignmentMemberValue(new)))
        records.append(CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(group.group_id),
                                         ConsumerGroupTargetAssignmentMetadataValue(group_epoch)))
        return new_target.get(member_id, {})

    def _assignor_for(self, members: Iterable[ConsumerGroupMember]) -> str:
        """The assignor most members ask for (ties: the first configured), else the default."""
        votes: dict[str, int] = {}
        for m in members:
            if m.server_assignor is not None:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return self.config.assignors[0]
        order = {n: i for i, n in enumerate(self.config.assignors)}
        return min(votes, key=lambda n: (-votes[n], order.get(n, len(order)), n))

    # -- leaving, fencing, timers ---------------------------------------------------------------------

    def _leave(self, request: ConsumerGroupHeartbeatRequest) -> Result[ConsumerGroupHeartbeatResponse]:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self.group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        response = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch)
        if request.instance_id is None:
            return Result(self._fence_records(group, group._member(member_id)), response)
        member = group.static_member(request.instance_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if member.member_id != member_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{request.instance_id} was fenced by member {member.member_id}.")
        if epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return Result(self._fence_records(group, member), response)
        # A static member leaving for a while keeps its place and partitions, at epoch -2.
        leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={})
        return Result([CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id),
                                         leaving.current_assignment())], response)

    def fence_member(self, group_id: str, member_id: str) -> Result[None]:
        """Remove a member (session or rebalance timeout). Nothing to write if it is already gone."""
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return Result([])
        return Result(self._fence_records(group, member))

    def _fence_records(self, group: ConsumerGroup, member: ConsumerGroupMember) -> list[CoordinatorRecord]:
        """Kafka's removeMember + a new group epoch (the member's partitions are free at once)."""
        gid, mid = group.group_id, member.member_id
        records = [CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, mid)),
                   CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, mid)),
                   CoordinatorRecord(ConsumerGroupMemberMetadataKey(gid, mid))]
        rest = [m for m in group.members.values() if m.member_id != mid]
        regexes = dict(group.resolved_regexes)
        if member.regex is not None and member.regex not in regex_subscribers(rest) and member.regex in regexes:
            records.append(CoordinatorRecord(ConsumerGroupRegularExpressionKey(gid, member.regex)))
            del regexes[member.regex]
        # Without an image yet (timers right after a restart), keep the hash: the next heartbeat
        # recomputes it, and bumps the epoch once more if it changed.
        new_hash = group.metadata_hash
        if self.image is not None:
            new_hash = metadata_hash(set().union(*(subscribed_names(m, regexes) for m in rest)), self.image)
        records.append(CoordinatorRecord(ConsumerGroupMetadataKey(gid),
                                         ConsumerGroupMetadataValue(group.group_epoch + 1, new_hash)))
        if self.timers is not None:
            self.timers.cancel(_session_key(gid, mid))
            self.timers.cancel(_rebalance_key(gid, mid))
        return records

    def _group_config(self, group_id: str, name: str, default: int) -> int:
        """A group config (ConfigResource GROUP): the group's override in the metadata, else the
        broker's ``group.consumer.*`` default."""
        overrides = self.image.group_configs.get(group_id) if self.image is not None else None
        return int(overrides[name]) if overrides and name in overrides else default

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        if self.timers is not None:
            timeout_ms = self._group_config(group_id, "consumer.session.timeout.ms", self.config.session_timeout_ms)
            self.timers.schedule(_session_key(group_id, member_id), timeout_ms, group_id,
                                 lambda: self.fence_member(group_id, member_id))

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        if self.timers is None:
            return
        member_id, epoch = member.member_id, member.member_epoch

        def fence_if_still_revoking() -> Result[None]:
            group = self.group(group_id)
            current = group.members.get(member_id) if group is not None else None
            if current is None or current.member_epoch != epoch:
                return Result([])
            return self.fence_member(group_id, member_id)

        self.timers.schedule(_rebalance_key(group_id, member_id), max(member.rebalance_timeout_ms, 0), group_id,
                             fence_if_still_revoking)

    def on_unloaded(self) -> None:
        """Nothing is parked here: heartbeats are answered at once, and the timers stop with the runtime."""

    def on_loaded(self) -> None:
        """After the replay at start-up: every member gets a full session to heartbeat again (as Kafka)."""
        for group in list(self.groups.values()):
            if isinstance(group, ConsumerGroup):
                for member_id in group.members:
                    self._schedule_session_timeout(group.group_id, member_id)

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
                                member_type=1)
                       for _, m in sorted(group.members.items())]
            described.append(R.DescribedGroup(group_id=group_id, group_state=group.state_name(),
                                              group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                              assignor_name=self._assignor_for(group.members.values()),
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


class _RuntimeTimers:
    """:class:`ConsumerGroupTimers` over the group coordinator's runtime: a group's timers run on its
    ``__consumer_offsets`` partition."""

    def __init__(self, coordinator: Any) -> None:
        self._coordinator = coordinator

    def schedule(self, key: str, delay_ms: int, group_id: str, op: Callable[[], Result[Any] | None]) -> None:
        self._coordinator.runtime.schedule(key, delay_ms, self._coordinator.partition_for(group_id), op)

    def cancel(self, key: str) -> None:
        self._coordinator.runtime.cancel(key)


def install(coordinator: Any) -> ConsumerGroupCoordinator:
    """The group coordinator extension (its hook 3): consumer groups sharing the coordinator's group
    map, runtime and timers, with their records replayed here (hook 2). ``coordinator`` is a
    :class:`~tidelog.coordinator.group.coordinator.GroupCoordinator`."""
    config = ConsumerGroupConfig.from_broker_config(coordinator.config)
    consumer_groups = ConsumerGroupCoordinator(coordinator.clock, config, _RuntimeTimers(coordinator),
                                               coordinator.groups)
    for key_cls in KEY_TYPES:
        coordinator.register_replayer(key_cls, lambda _partition, _offset, record: consumer_groups.replay(record))
    return consumer_groups


def _apply_request(member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest, client_id: str,
                   client_host: str) -> ConsumerGroupMember:
    """The member with what the heartbeat sets (null fields leave it unchanged)."""
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
        client_id=client_id, client_host=client_host)


__all__ = ["KEY_TYPES", "ConsumerGroupCoordinator", "ConsumerGroupTimers", "install", "validate_heartbeat"]
