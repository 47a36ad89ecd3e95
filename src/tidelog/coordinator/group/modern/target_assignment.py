"""The target assignment of a modern group, whatever its type (Kafka's ``TargetAssignmentBuilder``): when
the group epoch moves past the assignment epoch, the group type's assignor computes every member's target
from :class:`~tidelog.coordinator.group.modern.assignors.MemberSpec` s; a record goes for each member whose
target changes, then one for the new assignment epoch. The group type supplies the assignor and its record
builders (consumer groups: ``ConsumerGroupTargetAssignment*``, share groups: ``ShareGroupTargetAssignment*``).
Pure functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tidelog.coordinator.group.modern.assignors import AssignorError, GroupAssignment, TopicPartitions
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class TargetRecords:
    """A group type's target-assignment records: ``member(group id, member id, partitions)`` and
    ``epoch(group id, assignment epoch)``."""

    member: Callable[[str, str, TopicPartitions], CoordinatorRecord]
    epoch: Callable[[str, int], CoordinatorRecord]


def build_target(group_id: str, group_epoch: int, member_ids: Iterable[str],
                 previous: Callable[[str], TopicPartitions | None], assign: Callable[[], GroupAssignment],
                 target_records: TargetRecords, records: list[CoordinatorRecord]) -> GroupAssignment:
    """Run ``assign()`` (an assignor over the members' specs); append a member record for every member
    whose target differs from ``previous(member id)`` (None: it had none), then the assignment epoch
    record. An assignor failure is UNKNOWN_SERVER_ERROR, as Kafka answers a PartitionAssignorException."""
    try:
        new_target = assign()
    except AssignorError as e:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                         f"epoch {group_epoch}: {e}") from None
    for member_id in sorted(member_ids):
        new = new_target.get(member_id, {})
        old = previous(member_id)
        if old is None or dict(old) != new:
            records.append(target_records.member(group_id, member_id, new))
    records.append(target_records.epoch(group_id, group_epoch))
    return new_target


__all__ = ["TargetRecords", "build_target"]
