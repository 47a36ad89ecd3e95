"""The share groups' server-side assignor, ``simple`` (Kafka 4.4's ``SimpleAssignor``). Pure functions.

Share groups may give one partition to several members (its records are still delivered to one consumer at a
time, by the share partition's locks), so the rules differ from the consumer groups' assignors:

* Only *assignable* partitions are assigned: those whose share state the coordinator has initialized
  (Kafka 4.1+, rule 4 of :mod:`~tidelog.coordinator.group.modern.share.manager`).
* **Homogeneous** subscriptions (Kafka's ``SimpleHomogeneousAssignmentBuilder``), M members and N assignable
  partitions: every partition is shared by ``desired_sharing = ceil(M / N)`` members, and member ``i`` (in
  member-id order) should hold ``ceil(p * (i + 1)) - ceil(p * i)`` partitions, ``p = desired_sharing * N / M``
  (so with N >= M every partition goes to one member and the counts differ by at most one; with M > N
  every member holds one partition and each partition is held by about M / N members). Balance first,
  then stickiness: a member keeps its current partitions of subscribed topics up to its count; a partition
  shared by more members than desired loses the extra ones; then the partitions short of members go, in
  (topic id, partition) order, round-robin to the members short of partitions that do not hold them yet.
* **Heterogeneous** subscriptions (Kafka's ``SimpleHeterogeneousAssignmentBuilder``): each topic's
  assignable partitions are shared, by the same rules, among the members subscribed to it, and the
  per-topic assignments are combined (balance is per topic, as in Kafka).

A member subscribed to a topic with no metadata is an :class:`~tidelog.coordinator.group.modern.assignors.AssignorError`.
Kafka iterates hash maps where Tidelog sorts (member ids, topic ids, partitions): the same rules, deterministic.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from fractions import Fraction

from tidelog.coordinator.group.modern.assignors import AssignorError, GroupAssignment, MemberSpec

SIMPLE_ASSIGNOR_NAME = "simple"

_TP = tuple[uuid.UUID, int]


def simple_assign(members: Mapping[str, MemberSpec], assignable: Mapping[uuid.UUID, Sequence[int]]
                  ) -> GroupAssignment:
    """``assignable``: topic id -> the partitions that may be assigned, for every subscribed topic that
    exists. Returns every member's target (possibly empty)."""
    if not members:
        return {}
    for member_id, spec in members.items():
        for topic_id in spec.subscribed_topic_ids:
            if topic_id not in assignable:
                raise AssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist in the "
                                    f"topic metadata (member {member_id}).")
    member_ids = sorted(members)
    first = members[member_ids[0]].subscribed_topic_ids
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in member_ids}
    if all(members[m].subscribed_topic_ids == first for m in member_ids):
        groups = [(member_ids, first)]
    else:
        topics = sorted({t for m in member_ids for t in members[m].subscribed_topic_ids})
        groups = [([m for m in member_ids if t in members[m].subscribed_topic_ids], frozenset({t})) for t in topics]
    for subscribers, topic_ids in groups:
        targets = [(t, p) for t in sorted(topic_ids) for p in sorted(set(assignable[t]))]
        for member_id, tps in _share(subscribers, targets, members, topic_ids).items():
            for t, p in tps:
                result[member_id].setdefault(t, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in by_topic.items()} for m, by_topic in result.items()}


def _share(member_ids: list[str], targets: list[_TP], members: Mapping[str, MemberSpec],
           topic_ids: frozenset[uuid.UUID]) -> dict[str, list[_TP]]:
    """The homogeneous rules over ``targets`` for ``member_ids`` (module docstring)."""
    m, n = len(member_ids), len(targets)
    if n == 0:
        return {}
    sharing = (m + n - 1) // n
    precise = Fraction(sharing * n, m)
    desired = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(m)]
    target_set = set(targets)
    by_member: list[list[_TP]] = []
    by_partition: dict[_TP, list[int]] = {tp: [] for tp in targets}
    for i, member_id in enumerate(member_ids):
        current = members[member_id].assignment
        kept = sorted((t, p) for t in topic_ids for p in current.get(t, ()) if (t, p) in target_set)
        kept = kept[:desired[i]]  # an overfilled member gives up its extra partitions
        by_member.append(kept)
        for tp in kept:
            by_partition[tp].append(i)
    for tp, holders in by_partition.items():  # over-shared partitions lose their extra members
        while len(holders) > sharing:
            i = holders.pop(0)
            by_member[i].remove(tp)
    unfilled = [i for i in range(m) if len(by_member[i]) < desired[i]]
    cursor = 0
    assigned_this_pass = False
    for tp in targets:
        holders = by_partition[tp]
        to_make = sharing - len(holders)
        while to_make > 0 and unfilled:
            if cursor >= len(unfilled):
                if not assigned_this_pass:
                    break
                cursor, assigned_this_pass = 0, False
            i = unfilled[cursor]
            if i in holders:
                cursor += 1
                continue
            holders.append(i)
            by_member[i].append(tp)
            to_make -= 1
            assigned_this_pass = True
            if len(by_member[i]) >= desired[i]:
                unfilled.pop(cursor)
            else:
                cursor += 1
        if not unfilled:
            break
    return {member_ids[i]: tps for i, tps in enumerate(by_member)}


__all__ = ["SIMPLE_ASSIGNOR_NAME", "simple_assign"]
