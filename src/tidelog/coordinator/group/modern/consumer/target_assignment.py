"""The target assignment of a consumer group (rule 2 of :mod:`tidelog.coordinator.group.modern.consumer.manager`):
the group's assignor (the one most members ask for in ``ServerAssignor``, else the first of
``group.consumer.assignors``) over the members' subscriptions (names and resolved regexes), through the
shared :func:`~tidelog.coordinator.group.modern.target_assignment.build_target`. Pure functions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.modern.assignors import ASSIGNORS, MemberSpec, TopicPartitions
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup, ConsumerGroupMember
from tidelog.coordinator.group.modern.consumer.records import (
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from tidelog.coordinator.group.modern.member import EMPTY
from tidelog.coordinator.group.modern.subscription import ResolvedRegex, subscribed_names, topic_ids
from tidelog.coordinator.group.modern.target_assignment import TargetRecords, build_target
from tidelog.coordinator.group.records import CoordinatorRecord

CONSUMER_TARGET_RECORDS = TargetRecords(
    member=lambda gid, mid, tps: CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(gid, mid),
                                                   ConsumerGroupTargetAssignmentMemberValue(tps)),
    epoch=lambda gid, epoch: CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(gid),
                                               ConsumerGroupTargetAssignmentMetadataValue(epoch)))


def update_target(group: ConsumerGroup, group_epoch: int, members: Mapping[str, ConsumerGroupMember], member_id: str,
                  replaced: str | None, regexes: Mapping[str, ResolvedRegex], image: MetadataImage,
                  assignors: Sequence[str], records: list[CoordinatorRecord]) -> TopicPartitions:
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
    assign = ASSIGNORS[assignor_for(members.values(), assignors)]
    new_target = build_target(group.group_id, group_epoch, members, previous, lambda: assign(specs, counts),
                              CONSUMER_TARGET_RECORDS, records)
    return new_target.get(member_id, {})


def assignor_for(members: Iterable[ConsumerGroupMember], assignors: Sequence[str]) -> str:
    """The assignor most members ask for (ties: the first configured), else the default."""
    votes: dict[str, int] = {}
    for m in members:
        if m.server_assignor is not None:
            votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
    if not votes:
        return assignors[0]
    order = {n: i for i, n in enumerate(assignors)}
    return min(votes, key=lambda n: (-votes[n], order.get(n, len(order)), n))


__all__ = ["CONSUMER_TARGET_RECORDS", "assignor_for", "update_target"]
