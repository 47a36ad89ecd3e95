"""Online migration between the classic and the consumer group protocol (Kafka 4.x, KIP-848): a group
changes type while it has members, so consumers can move from ``group.protocol=classic`` to
``consumer`` (or back) one process at a time.

Rules (Kafka's GroupMetadataManager: validateOnlineUpgrade, convertToConsumerGroup,
validateOnlineDowngradeWithFencedMembers / WithReplacedMember, convertToClassicGroup;
ConsumerGroup.fromClassicGroup, ClassicGroup.fromConsumerGroup; Kafka 4.x):

1. **Upgrade.** A consumer-protocol member joining (ConsumerGroupHeartbeat, epoch 0) a non-empty classic
   group converts it when ``group.consumer.migration.policy`` allows upgrades, the group uses the
   ``consumer`` embedded protocol, has at most ``group.consumer.max.size`` members and no assignment
   carries user data (a custom assignor's, which would be lost). Every member
   becomes a classic member of the consumer group, at member epoch = generation id, STABLE, holding
   (current and target) the partitions of its last assignment; group and assignment epochs are the
   generation. Records: the classic group's tombstone, then the consumer group's records (member
   subscriptions, group epoch, targets, assignment epoch, current assignments), then the joining
   member's. Parked JoinGroup/SyncGroup requests get REBALANCE_IN_PROGRESS. Otherwise the heartbeat
   gets GROUP_ID_NOT_FOUND, with Kafka's reason ("Cannot upgrade classic group g to consumer group
   because ...").
2. **Downgrade.** When members leave or are fenced (a ConsumerGroupHeartbeat leave, a LeaveGroup,
   a session, rebalance, join or sync timeout) and only members that use the classic protocol would
   remain, the policy allows downgrades, and they fit ``group.max.size``, the group becomes a classic
   group instead: generation = the group epoch, Stable, the protocol the members' votes choose, each
   member's assignment = its target assignment encoded in the version of its own subscription.
   Records: the consumer group's tombstones, then one GroupMetadata record; the classic group then
   rebalances at once (its members learn it from their next heartbeat). A classic member that
   replaces the last consumer-protocol static member (same ``group.instance.id``) downgrades the group
   too and takes over the replaced member's assignment: without a rebalance when it subscribes to the
   same topics, with one otherwise.
3. **Empty groups** change type whatever the policy says: the first member of the other protocol
   deletes the empty group (its tombstones) and starts a new one (its offsets stay).
4. Conversions write with ``replay=False`` when the in-memory switch is done by the caller after the
   append (a failed append changes nothing), and are replayed like any record at load.

Pure functions over the group models; loop-only callers.
"""

from __future__ import annotations

from typing import Protocol

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.classic.consumer_protocol import (
    assignment_with_user_data,
    decode_subscription,
    encode_assignment,
    protocol_version,
)
from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState, ClassicMember
from tidelog.coordinator.group.group import CONSUMER_PROTOCOL_TYPE
from tidelog.coordinator.group.modern.assignors import TopicPartitions
from tidelog.coordinator.group.modern.consumer.config import ConsumerGroupConfig
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup, ConsumerGroupMember
from tidelog.coordinator.group.modern.consumer.records import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from tidelog.coordinator.group.modern.member import MemberState
from tidelog.coordinator.group.modern.subscription import metadata_hash
from tidelog.coordinator.group.records import CoordinatorRecord, group_metadata_record
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.message import replace
from tidelog.protocol.messages import JoinGroupResponse, SyncGroupResponse


class ClassicGroupHost(Protocol):
    """The classic protocol's side of a downgrade (the group coordinator's classic manager)."""

    def adopt(self, group: ClassicGroup, rebalance_reason: str | None) -> None:
        """Make ``group`` the group of its id, arm its members' sessions, and rebalance when a reason
        is given."""


# ------------------------------------------------------------------------------------- upgrade


def check_upgrade(group: ClassicGroup, config: ConsumerGroupConfig) -> None:
    """Rule 1's conditions (Kafka's validateOnlineUpgrade): GROUP_ID_NOT_FOUND, with Kafka's message,
    when the group may not become a consumer group."""
    gid = group.group_id
    if not config.migration_policy.upgrade_enabled:
        reason = "online upgrade is disabled"
    elif not group.uses_consumer_protocol():
        reason = "the group does not use the consumer embedded protocol"
    elif len(group.members) > config.max_size:
        reason = "the group size exceeds the consumer group maximum size"
    else:
        return
    raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because "
                     f"{reason}.")


def consumer_group_from_classic(classic: ClassicGroup, image: MetadataImage) -> ConsumerGroup:
    """The consumer group that ``classic`` becomes (rule 1), not registered anywhere: its records
    (:func:`consumer_group_records`) materialise it when they are replayed."""
    group = ConsumerGroup(classic.group_id)
    generation = classic.generation_id
    group.group_epoch = group.assignment_epoch = generation
    by_name = {name: t.topic_id for name, t in image.topics.items()}
    try:
        for m in classic.members.values():
            metadata = m.metadata(classic.protocol_name) if classic.protocol_name else m.protocols[0][1]
            subscription = decode_subscription(metadata)
            partitions, user_data = assignment_with_user_data(m.assignment)
            if user_data:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic.group_id} to "
                                 "consumer group because an unsupported custom assignor is in use. Please refer to "
                                 "the documentation or switch to a default assignor before re-attempting the upgrade.")
            assigned: TopicPartitions = {by_name[t]: frozenset(ps) for t, ps in partitions.items()
                                         if t in by_name and ps}
            member = ConsumerGroupMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=generation,
                previous_member_epoch=generation, state=MemberState.STABLE, assigned_partitions=assigned,
                classic_member_metadata=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)))
            group.update_member(member)
            group.target_assignment[m.member_id] = assigned
    except (MalformedMessageError, ValueError, IndexError):
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic.group_id} to "
                         "consumer group because the embedded consumer protocol is malformed.") from None
    group.metadata_hash = metadata_hash(set().union(*(m.subscribed_topic_names for m in group.members.values())),
                                        image)
    return group


def consumer_group_records(group: ConsumerGroup) -> list[CoordinatorRecord]:
    """The records that create ``group`` as it is, in Kafka's order (createConsumerGroupRecords)."""
    gid = group.group_id
    records = [CoordinatorRecord(ConsumerGroupMemberMetadataKey(gid, m.member_id), m.subscription())
               for m in group.members.values()]
    records.append(CoordinatorRecord(ConsumerGroupMetadataKey(gid),
                                     ConsumerGroupMetadataValue(group.group_epoch, group.metadata_hash)))
    records += [CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, mid),
                                  ConsumerGroupTargetAssignmentMemberValue(group.target_assignment.get(mid, {})))
                for mid in group.members]
    records.append(CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(gid),
                                     ConsumerGroupTargetAssignmentMetadataValue(group.assignment_epoch)))
    records += [CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, m.member_id), m.current_assignment())
                for m in group.members.values()]
    return records


def stop_classic_group(group: ClassicGroup) -> None:
    """Parked JoinGroup and SyncGroup requests of an upgraded group: rejoin (REBALANCE_IN_PROGRESS)."""
    for member in list(group.members.values()):
        group.complete_join(member, JoinGroupResponse(error_code=int(ErrorCode.REBALANCE_IN_PROGRESS),
                                                      member_id=member.member_id))
        group.complete_sync(member, SyncGroupResponse(error_code=int(ErrorCode.REBALANCE_IN_PROGRESS)))


# ----------------------------------------------------------------------------------- downgrade


def can_downgrade_after_leaving(group: ConsumerGroup, member_ids: set[str], config: ConsumerGroupConfig) -> bool:
    """Rule 2 for members that leave or are fenced (Kafka's validateOnlineDowngradeWithFencedMembers):
    every member left uses the classic protocol, there is one, the policy allows downgrades and they
    fit a classic group."""
    remaining = len([m for m in group.members if m not in member_ids])
    return (group.all_members_use_classic_protocol_except(member_ids) and remaining > 0
            and config.migration_policy.downgrade_enabled and remaining <= config.classic_max_size)


def can_downgrade_after_replacing(group: ConsumerGroup, replaced: ConsumerGroupMember,
                                  config: ConsumerGroupConfig) -> bool:
    """Rule 2 for a static member replaced by a classic member (validateOnlineDowngradeWithReplacedMember):
    the replaced member was the last one using the consumer protocol."""
    return (not replaced.uses_classic_protocol
            and group.all_members_use_classic_protocol_except({replaced.member_id})
            and config.migration_policy.downgrade_enabled and len(group.members) <= config.classic_max_size)


def classic_group_from_consumer(group: ConsumerGroup, leaving: set[str], joining: ConsumerGroupMember | None,
                                image: MetadataImage, clock: Clock) -> ClassicGroup:
    """The classic group that ``group`` becomes without the ``leaving`` members, or with ``joining``
    in place of the static member of its instance (whose assignment it takes). Raises KafkaError
    (GROUP_ID_NOT_FOUND) when a member's embedded subscription does not decode."""
    classic = ClassicGroup(group.group_id, clock, state=ClassicGroupState.STABLE, protocol_type=CONSUMER_PROTOCOL_TYPE,
                           generation_id=group.group_epoch, current_state_timestamp=clock.wall_ms())
    replaced = group.static_member(joining.instance_id) if joining is not None else None
    gone = leaving | ({replaced.member_id} if replaced is not None else set())
    members = [m for m in group.members.values() if m.member_id not in gone]
    if joining is not None:
        members.append(joining)
    for m in members:
        assert m.classic_member_metadata is not None, f"{m.member_id} does not use the classic protocol"
        classic.add(ClassicMember(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                  m.classic_member_metadata.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                                  list(m.classic_protocols())))
    names = {t.topic_id: name for name, t in image.topics.items()}
    try:
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for member in classic.members.values():
            owner = replaced.member_id if replaced is not None and member.member_id == joining.member_id \
                else member.member_id
            target = group.target_assignment.get(owner, {})
            partitions = {names[t]: sorted(ps) for t, ps in sorted(target.items()) if t in names and ps}
            member.assignment = encode_assignment(partitions,
                                                  version=protocol_version(member.metadata(classic.protocol_name)))
    except (MalformedMessageError, ValueError) as e:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                         f"Cannot downgrade the consumer group {group.group_id}: {e}.") from None
    return classic


def downgrade_records(group: ConsumerGroup, classic: ClassicGroup,
                      replaced: tuple[str, str] | None = None) -> list[CoordinatorRecord]:
    """The consumer group's tombstones (with ``replaced`` = (leaving id, joining id): the joining member's
    records instead of the leaver's, as the replacement records come first), then the classic group."""
    tombstones = group.tombstones()
    if replaced is not None:
        leaving, joining = replaced
        tombstones = [CoordinatorRecord(replace(r.key, member_id=joining))
                      if getattr(r.key, "member_id", None) == leaving else r for r in tombstones]
    return [*tombstones, group_metadata_record(classic.group_id, classic.to_record_value(classic.group_assignment()))]


__all__ = [
    "ClassicGroupHost",
    "can_downgrade_after_leaving",
    "can_downgrade_after_replacing",
    "check_upgrade",
    "classic_group_from_consumer",
    "consumer_group_from_classic",
    "consumer_group_records",
    "downgrade_records",
    "stop_classic_group",
]
