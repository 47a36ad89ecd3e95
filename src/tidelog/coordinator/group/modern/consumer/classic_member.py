"""Classic members of consumer groups: JoinGroup, SyncGroup, Heartbeat and LeaveGroup sent to a
KIP-848 consumer group by a consumer that uses the classic protocol (``group.protocol=classic``), as
Kafka 4.x serves them (GroupMetadataManager.classicGroupJoinToConsumerGroup, ...SyncToConsumerGroup,
...HeartbeatToConsumerGroup, ...LeaveToConsumerGroup).

The broker assigns; the classic member never leads. Rules:

1. **Join.** The protocol type must be ``consumer`` and one of the member's protocols supported by
   every classic member of the group (INCONSISTENT_GROUP_PROTOCOL otherwise); the group must have room
   (GROUP_MAX_SIZE_REACHED). A dynamic member without an id gets one with MEMBER_ID_REQUIRED (v4+); a
   dynamic member id the group does not know joins as a new member. A static member without an id
   replaces the instance's member whatever protocol that one uses (and when that was the last
   consumer-protocol member, the group becomes a classic group: migration rule 2). The member's
   subscription (topics, owned partitions, rack) is read from its first protocol's embedded
   ConsumerProtocolSubscription; then rules 1-3 of :mod:`~tidelog.coordinator.group.modern.consumer.manager` run for it
   exactly as for a consumer heartbeat, and it is answered once the records are written: generation id =
   its member epoch, protocol type ``consumer``, protocol name = its first protocol, no leader, no
   members. Its session (its own session timeout) and a sync timeout (its rebalance timeout) start.
2. **Sync.** The member must be a classic member (UNKNOWN_MEMBER_ID otherwise; FENCED_INSTANCE_ID for
   a stale instance), at its generation (ILLEGAL_GENERATION), with the protocol type and name it was
   given (INCONSISTENT_GROUP_PROTOCOL). When the group epoch has moved past its member epoch and it is
   not revoking, it must rejoin (REBALANCE_IN_PROGRESS); otherwise it gets its current assignment,
   encoded in the version of its own subscription. Nothing is written.
3. **Heartbeat.** Same member checks; REBALANCE_IN_PROGRESS when the group epoch is above its member
   epoch, when it has partitions to revoke, or when the partitions it waits for are all free now (it
   collects them by rejoining). Each REBALANCE_IN_PROGRESS starts a join timeout (its rebalance
   timeout) unless one is running; a member that does not rejoin in time is fenced.
4. **Leave.** By member id or by instance id alone (admin removal: ``kafka-consumer-groups
   --delete-members``); as in Kafka 4.x any member of the group can be removed so, whatever protocol it
   uses. The leavers are fenced together (one new group epoch, or a downgrade when only classic
   members remain); each is answered with the ids its request named.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.classic.consumer_protocol import (
    decode_subscription,
    encode_assignment,
    protocol_version,
)
from tidelog.coordinator.group.classic.group import ClassicGroup
from tidelog.coordinator.group.classic.manager import MEMBER_ID_REQUIRED_FROM_VERSION, ClassicGroupManager
from tidelog.coordinator.group.group import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    GroupRegistry,
    RequestInfo,
)
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup, ConsumerGroupMember
from tidelog.coordinator.group.modern.consumer.manager import ConsumerGroupCoordinator
from tidelog.coordinator.group.modern.consumer.migration import can_downgrade_after_replacing
from tidelog.coordinator.group.modern.consumer.records import ClassicMemberMetadata
from tidelog.coordinator.group.modern.member import MemberState, new_member_id
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.runtime import CoordinatorRuntime, Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.messages import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

_EMPTY_IMAGE = MetadataImage("", -1, {}, {})


class ClassicMembers:
    """The classic protocol's requests to consumer groups (the group coordinator dispatches JoinGroup to
    non-empty consumer groups here, SyncGroup, Heartbeat and LeaveGroup to any consumer group)."""

    def __init__(self, consumer_groups: ConsumerGroupCoordinator) -> None:
        self.consumer_groups = consumer_groups

    # ----------------------------------------------------------------------------------- join

    def join_group(self, info: RequestInfo, request: JoinGroupRequest,
                   respond: Callable[[JoinGroupResponse], None]) -> Result[None]:
        """Rule 1. A KafkaError raised here is the answer's error code (nothing is written)."""
        cg = self.consumer_groups
        group = self._group(request.group_id)
        instance_id = request.group_instance_id
        unknown = request.member_id == UNKNOWN_MEMBER_ID
        member_id = new_member_id() if unknown else request.member_id
        cg.check_not_full(group, member_id)
        protocols = tuple((p.name, bytes(p.metadata)) for p in request.protocols)
        if not group.supports_classic_protocols(request.protocol_type, {name for name, _ in protocols}):
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if unknown and instance_id is None and info.api_version >= MEMBER_ID_REQUIRED_FROM_VERSION:
            respond(JoinGroupResponse(error_code=int(ErrorCode.MEMBER_ID_REQUIRED), member_id=member_id))
            return Result()
        try:
            subscription = decode_subscription(protocols[0][1])
        except MalformedMessageError as e:
            # Kafka fails the join with an IllegalStateException (UNKNOWN_SERVER_ERROR) here too.
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Malformed embedded consumer protocol: {e}") from None

        records: list[CoordinatorRecord] = []
        existing = group.static_member(instance_id)
        downgrade = (existing is not None and cg.classic_groups is not None
                     and can_downgrade_after_replacing(group, existing, cg.config))
        member, replaced = self._get_or_subscribe(group, member_id, instance_id, unknown, records)
        image = cg.current_image() or _EMPTY_IMAGE
        updated = replace(
            member, instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(member.rebalance_timeout_ms if request.rebalance_timeout_ms == -1
                                  else request.rebalance_timeout_ms),
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            client_id=info.client_id, client_host=info.client_host,
            classic_member_metadata=ClassicMemberMetadata(request.session_timeout_ms, protocols))
        owned = _topic_ids(subscription.owned_partitions or {}, image)
        after: list[Callable[[], None]] = []
        gid = group.group_id
        if downgrade:
            assert existing is not None
            return self._join_downgrading(group, member, updated, existing, owned, image, records, after, protocols,
                                          respond)
        new_member = cg.update_member(group, member, updated, replaced, owned, image, records, after)
        response = _join_response(new_member, protocols)

        def joined() -> None:
            for callback in after:
                callback()
            cg.member_timers.cancel(gid, new_member.member_id, "join")
            cg.schedule_session_timeout(gid, new_member.member_id, request.session_timeout_ms)
            cg.member_timers.sync(gid, new_member.member_id, request.rebalance_timeout_ms)
            respond(response)

        return Result(records, on_appended=joined)

    def _join_downgrading(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                          replaced: ConsumerGroupMember, owned: Mapping[uuid.UUID, frozenset[int]],
                          image: MetadataImage, records: list[CoordinatorRecord], after: list[Callable[[], None]],
                          protocols: tuple[tuple[str, bytes], ...],
                          respond: Callable[[JoinGroupResponse], None]) -> Result[None]:
        """The joining classic member replaces the last consumer-protocol (static) member: the group
        becomes a classic group with it (migration rule 2). With the same subscription it takes over
        the replaced member's assignment and nobody rebalances; with another one, the group epoch moves
        and the classic group rebalances."""
        cg = self.consumer_groups
        members_after = {m: v for m, v in group.members.items() if m != replaced.member_id}
        members_after[updated.member_id] = updated
        _, regexes, changed = cg.update_subscription(group, member, updated, members_after, image, records, after)
        if not changed:
            updated = cg.reconcile_member(group, updated, group.assignment_epoch,
                                          group.target_assignment.get(replaced.member_id, {}), owned, regexes, image,
                                          records)
        result = cg.downgrade(group, set(), updated, records, None, rebalance=changed)
        switch = result.on_appended
        assert switch is not None
        response = _join_response(updated, protocols)

        def switched() -> None:
            switch()
            respond(response)
        result.on_appended = switched
        return result

    def _get_or_subscribe(self, group: ConsumerGroup, member_id: str, instance_id: str | None, unknown: bool,
                          records: list[CoordinatorRecord]) -> tuple[ConsumerGroupMember, str | None]:
        """The joining member, and the id of the static member it replaces (or None)."""
        if instance_id is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id), None
        existing = group.static_member(instance_id)
        if unknown:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id), None
            # The instance comes back under a new member id, whatever protocol its old member used.
            return self.consumer_groups.replace_static_member(group, existing, member_id, records), existing.member_id
        _check_instance(group, existing, member_id, instance_id)
        assert existing is not None
        return existing, None

    # ----------------------------------------------------------------------------------- sync

    def sync_group(self, info: RequestInfo, request: SyncGroupRequest,
                   respond: Callable[[SyncGroupResponse], None]) -> Result[None]:
        """Rule 2 (errors are answered here; nothing is written)."""
        cg = self.consumer_groups
        group = cg.group(request.group_id)
        try:
            if group is None or group.is_empty():
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {request.group_id} has no members.")
            member = self._classic_member(group, request.member_id, request.group_instance_id, request.generation_id)
            protocol_name = member.classic_protocols()[0][0]
            if request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"The protocol type {request.protocol_type} "
                                 f"from member {member.member_id} request is not equal to the group protocol type "
                                 f"{CONSUMER_PROTOCOL_TYPE}.")
            if request.protocol_name is not None and request.protocol_name != protocol_name:
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"The protocol name {request.protocol_name} "
                                 f"from member {member.member_id} request is not equal to the protocol name "
                                 f"{protocol_name} returned in the join response.")
            if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
                cg.member_timers.join(group.group_id, member.member_id, member.rebalance_timeout_ms)
                raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group "
                                 f"{group.group_id} and member {member.member_id} should rejoin to catch up.")
        except KafkaError as e:
            respond(SyncGroupResponse(error_code=int(e.code)))
            return Result()
        assignment = self._assignment_bytes(member)
        gid, mid = group.group_id, member.member_id
        assert member.classic_member_metadata is not None
        session_ms = member.classic_member_metadata.session_timeout_ms

        def synced() -> None:
            cg.member_timers.cancel(gid, mid, "sync")
            cg.schedule_session_timeout(gid, mid, session_ms)
            respond(SyncGroupResponse(protocol_type=request.protocol_type, protocol_name=request.protocol_name,
                                      assignment=assignment))

        return Result(on_appended=synced)

    def _assignment_bytes(self, member: ConsumerGroupMember) -> bytes:
        """The member's current assignment in its subscription's ConsumerProtocolAssignment version."""
        image = self.consumer_groups.current_image() or _EMPTY_IMAGE
        names = {t.topic_id: name for name, t in image.topics.items()}
        partitions = {names[t]: sorted(ps) for t, ps in sorted(member.assigned_partitions.items())
                      if t in names and ps}
        return encode_assignment(partitions, version=protocol_version(member.classic_protocols()[0][1]))

    # ------------------------------------------------------------------------------ heartbeat

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> Result[HeartbeatResponse]:
        """Rule 3 (errors are the response's code; nothing is written)."""
        cg = self.consumer_groups
        group = cg.group(group_id)
        try:
            if group is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} not found.")
            member = self._classic_member(group, member_id, group_instance_id, generation_id)
        except KafkaError as e:
            return Result(response=HeartbeatResponse(error_code=int(e.code)))
        assert member.classic_member_metadata is not None
        cg.schedule_session_timeout(group_id, member.member_id, member.classic_member_metadata.session_timeout_ms)
        rejoin = (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                  or (member.state is MemberState.UNRELEASED_PARTITIONS
                      and not group.waiting_on_unreleased_partition(member)))
        if rejoin:
            cg.member_timers.join(group_id, member.member_id, member.rebalance_timeout_ms)
        code = ErrorCode.REBALANCE_IN_PROGRESS if rejoin else ErrorCode.NONE
        return Result(response=HeartbeatResponse(error_code=int(code)))

    # ---------------------------------------------------------------------------------- leave

    def leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]]
                    ) -> Result[LeaveGroupResponse]:
        """Rule 4. ``members``: (member id, group instance id, reason)."""
        cg = self.consumer_groups
        group = cg.group(group_id)
        Member = LeaveGroupResponse.MemberResponse
        responses = []
        leaving: dict[str, ConsumerGroupMember] = {}
        for member_id, instance_id, reason in members:
            try:
                if group is None:
                    raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} not found.")
                if instance_id is None:
                    member = group._member(member_id)
                else:
                    member = group.static_member(instance_id)
                    if member is None:
                        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    if member_id != UNKNOWN_MEMBER_ID:  # admin tools remove by instance id alone
                        _check_instance(group, member, member_id, instance_id)
                log.info("member %s left group %s through LeaveGroup (reason: %s)", member.member_id, group_id,
                         reason or "not provided")
                leaving[member.member_id] = member
                responses.append(Member(member_id=member_id, group_instance_id=instance_id))
            except KafkaError as e:
                responses.append(Member(member_id=member_id, group_instance_id=instance_id, error_code=int(e.code)))
        if group is None:
            return Result([], LeaveGroupResponse(members=responses))
        return cg.fence_members(group, list(leaving.values()), LeaveGroupResponse(members=responses))

    # -------------------------------------------------------------------------------- helpers

    def _group(self, group_id: str) -> ConsumerGroup:
        group = self.consumer_groups.group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} is not a consumer group.")
        return group

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation_id: int) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember, then the member must use the classic protocol and be at
        ``generation_id`` (its member epoch)."""
        if instance_id is None:
            member = group._member(member_id)
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a "
                                 f"member of group {group.group_id}.")
            _check_instance(group, member, member_id, instance_id)
        _check_classic(member)
        if generation_id != member.member_epoch:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not "
                             f"equal to the member epoch {member.member_epoch} of member {member.member_id}.")
        return member

    def on_loaded(self, group_ids: object = None) -> None:
        """Nothing of its own: classic members' sessions are armed with the consumer groups'."""

    def on_unloaded(self) -> None:
        """Nothing is parked here: every request is answered once its records are written."""


def _check_instance(group: ConsumerGroup, member: ConsumerGroupMember | None, member_id: str, instance_id: str) -> None:
    if member is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if member.member_id != member_id:
        raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                         f"was fenced by member {member.member_id}.")


def _check_classic(member: ConsumerGroupMember) -> None:
    if not member.uses_classic_protocol:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")


def _join_response(member: ConsumerGroupMember, protocols: tuple[tuple[str, bytes], ...]) -> JoinGroupResponse:
    """A classic member's JoinGroup answer: its epoch as the generation, its first protocol, no leader."""
    return JoinGroupResponse(member_id=member.member_id, generation_id=member.member_epoch,
                             protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0], leader="", members=[])


def _topic_ids(partitions: Mapping[str, Any], image: MetadataImage) -> dict[uuid.UUID, frozenset[int]]:
    """A subscription's owned partitions by topic id (topics the image does not know are left out)."""
    return {image.topics[t].topic_id: frozenset(ps) for t, ps in partitions.items() if t in image.topics and ps}


class ClassicGroupAdopter:
    """:class:`~tidelog.coordinator.group.modern.consumer.migration.ClassicGroupHost` over the classic manager: a
    downgraded group's members get their sessions, then the group rebalances."""

    def __init__(self, groups: GroupRegistry, classic: ClassicGroupManager, runtime: CoordinatorRuntime,
                 partition_for: Callable[[str], int]) -> None:
        self.groups = groups
        self.classic = classic
        self.runtime = runtime
        self.partition_for = partition_for

    def adopt(self, group: ClassicGroup, rebalance_reason: str | None) -> None:
        self.groups[group.group_id] = group
        for member in group.members.values():
            self.classic.reschedule_heartbeat(group, member)
        if rebalance_reason is not None:
            self.runtime.write(self.partition_for(group.group_id), self.classic.prepare_rebalance(group, rebalance_reason))


__all__ = ["ClassicGroupAdopter", "ClassicMembers"]
