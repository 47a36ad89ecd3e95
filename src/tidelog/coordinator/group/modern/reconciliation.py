"""Reconciliation of a consumer group member towards its target assignment, revoke before assign, and
the member-epoch checks of a heartbeat (rules 3 and 4 of :mod:`tidelog.coordinator.group.modern.consumer.manager`;
Kafka's CurrentAssignmentBuilder). Pure functions."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from tidelog.coordinator.group.modern.assignors import TopicPartitions
from tidelog.coordinator.group.modern.member import MemberState, ModernGroupMember
from tidelog.errors import ErrorCode, KafkaError

M = TypeVar("M", bound=ModernGroupMember)


def check_member_epoch(member: M, epoch: int,
                        owned: Mapping[uuid.UUID, frozenset[int]] | None) -> None:
    """Rule 4 (Kafka's throwIfMEpochIsInvalid)."""
    if epoch > member.member_epoch:
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                         f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). "
                         "The member must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                        or not is_subset(owned, member.assigned_partitions)):
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                         f"({epoch}) than the one known by the group coordinator ({member.member_epoch}). "
                         "The member must abandon all its partitions and rejoin.")



def tp_map(items: Iterable[Any]) -> dict[uuid.UUID, frozenset[int]]:
    """Request ``TopicPartitions`` entries -> a mapping; a topic listed twice adds up (as in Kafka)."""
    out: dict[uuid.UUID, set[int]] = {}
    for tp in items:
        out.setdefault(tp.topic_id, set()).update(tp.partitions)
    return {t: frozenset(ps) for t, ps in out.items()}


def owns_any(owned: Mapping[uuid.UUID, frozenset[int]] | None, partitions: TopicPartitions) -> bool:
    """Whether the reported owned partitions include one of ``partitions``; not reported (None) = yes."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in partitions.items())


def is_subset(owned: Mapping[uuid.UUID, frozenset[int]] | None, target: TopicPartitions) -> bool:
    if owned is None:
        return False
    return all(ps <= target.get(t, frozenset()) for t, ps in owned.items() if ps)


def reconcile(member: M, assignment_epoch: int, target: TopicPartitions,
              partition_epoch: Callable[[uuid.UUID, int], int], owned: Mapping[uuid.UUID, frozenset[int]] | None,
              subscribed_topic_ids: frozenset[uuid.UUID]) -> M:
    """Kafka's CurrentAssignmentBuilder: the member's next step towards ``target`` (rule 3).

    ``partition_epoch(topic id, partition)`` is the owner's epoch, -1 when free; ``owned`` the
    partitions the heartbeat reports (None when it reports none)."""
    state = member.state
    if state is MemberState.STABLE and member.member_epoch == assignment_epoch:
        return member
    if state is MemberState.UNREVOKED_PARTITIONS and owns_any(owned, member.partitions_pending_revocation):
        return member
    epoch = member.member_epoch
    if state not in (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS):
        if owned is None or any(owned.values()):
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                             "The member must abandon all its partitions and rejoin.")
        epoch = assignment_epoch
    kept: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    newly: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned_partitions):
        want = target.get(topic_id, frozenset()) if topic_id in subscribed_topic_ids else frozenset()
        current = member.assigned_partitions.get(topic_id, frozenset())
        own_revoking = member.partitions_pending_revocation.get(topic_id, frozenset())
        keep = current & want
        missing = want - keep
        # A partition is free once no member owns it (or this member is the one still revoking it).
        free = frozenset(p for p in missing if partition_epoch(topic_id, p) == -1 or p in own_revoking)
        unreleased |= free != missing
        if keep:
            kept[topic_id] = keep
        if current - keep:
            revoking[topic_id] = current - keep
        if free:
            newly[topic_id] = free
    if revoking and owns_any(owned, revoking):
        # Revoke first: stay at the current epoch, holding only current ∩ target.
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, member_epoch=epoch,
                       previous_member_epoch=member.member_epoch, assigned_partitions=kept,
                       partitions_pending_revocation=revoking)
    assigned = {t: kept.get(t, frozenset()) | newly.get(t, frozenset()) for t in kept.keys() | newly.keys()}
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member, state=state, member_epoch=assignment_epoch, previous_member_epoch=member.member_epoch,
                   assigned_partitions=assigned, partitions_pending_revocation={})



__all__ = ["check_member_epoch", "is_subset", "owns_any", "reconcile", "tp_map"]
