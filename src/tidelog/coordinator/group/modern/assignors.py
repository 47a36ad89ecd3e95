"""Server-side partition assignors of the consumer group protocol (KIP-848): ``uniform`` and ``range``.

Pure functions, no I/O, no clock: ``assign(members, partition_counts) -> GroupAssignment``.

Input
  ``members``           member id -> :class:`MemberSpec`: the topic ids the member is subscribed to
                        (only topics that exist: the coordinator resolves names and regexes against the
                        metadata image first), its *current target* assignment (what the previous target
                        gave it; the assignors keep what they can of it) and its optional instance/rack id.
  ``partition_counts``  topic id -> number of partitions, for every subscribed topic.
Output
  member id -> {topic id: frozenset of partitions}, one entry for every member (possibly empty);
  every partition of every subscribed topic goes to exactly one member subscribed to its topic.

A member subscribed to a topic missing from ``partition_counts`` is an :class:`AssignorError`
(Kafka's PartitionAssignorException, which the coordinator answers with UNKNOWN_SERVER_ERROR).

``uniform`` (Kafka's UniformAssignor) - balance first, then stickiness:

* Homogeneous subscriptions (every member subscribed to the same topics): every member gets
  ``total // members`` partitions and ``total % members`` of them one more. A member keeps as many of
  its current partitions as its quota allows; the partitions freed that way, and the ones nobody held,
  fill the members below their quota in member-id order, in (topic id, partition) order. Kafka hands the
  extra partitions to the first members in hash-map order; here they go to the members that already
  hold the most (ties by member id), which moves fewer partitions and is deterministic.
* Heterogeneous subscriptions: every member keeps its current partitions of the topics it still
  subscribes to; the unheld partitions go, topic by topic (topics with the most partitions per
  subscriber first, then the fewest subscribers, then topic id), each to the least loaded subscriber of
  its topic (ties: member id); then, for at most 16 rounds over the topics, partitions of a topic move
  from its most loaded holder to its least loaded subscriber while their loads differ by more than one.
  As in Kafka, this is exactly balanced when all subscribers of a topic share their subscriptions and
  nearly balanced otherwise. Racks are accepted and ignored (Kafka 4.x does the same; one broker is one rack).

``range`` (Kafka 4.x's RangeAssignor): members are ordered static members first (by instance id), then
the others (by member id); each member in turn takes, of every topic it subscribes to, the next
contiguous range of ``partitions // subscribers`` partitions, plus one while ``partitions % subscribers``
extras remain. With identical subscriptions to topics of equal partition counts this is co-partitioned:
a member gets the same partition numbers of every topic. Kafka's first server-side range assignor (up to
3.8) also tried to keep members' previous partitions; KAFKA-16944 (3.9, so 4.x) dropped that, because
stickiness and co-partitioning could not both be kept, and recomputes the ranges every time. The
assignment is thus stable exactly while the members (or their instance ids), the subscriptions and the
partition counts are; static members (instance ids) keep their ranges across restarts. As Kafka 4.x.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

#: Topic id -> partitions. Assignments are never mutated once built.
TopicPartitions = Mapping[uuid.UUID, frozenset[int]]
GroupAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]

UNIFORM_ASSIGNOR_NAME = "uniform"
RANGE_ASSIGNOR_NAME = "range"

#: Rounds of the heterogeneous balancing pass (Kafka's MAX_ITERATION_COUNT).
MAX_BALANCE_ROUNDS = 16


class AssignorError(Exception):
    """The assignment cannot be computed (a member subscribes to a topic without metadata)."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of one member. Immutable."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    #: The member's current target assignment.
    assignment: TopicPartitions = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


AssignFn = Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, int]], GroupAssignment]

_TP = tuple[uuid.UUID, int]


def _check_topics(members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]) -> None:
    for member_id, spec in members.items():
        for topic_id in spec.subscribed_topic_ids:
            if topic_id not in partition_counts:
                raise AssignorError(f"member {member_id} is subscribed to topic {topic_id}, "
                                    "which does not exist in the topic metadata")


def _to_assignment(owned: Mapping[str, list[_TP]], member_ids: list[str]) -> GroupAssignment:
    result: GroupAssignment = {}
    for member_id in member_ids:
        by_topic: dict[uuid.UUID, set[int]] = {}
        for topic_id, partition in owned.get(member_id, ()):
            by_topic.setdefault(topic_id, set()).add(partition)
        result[member_id] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return result


def _is_homogeneous(members: Mapping[str, MemberSpec]) -> bool:
    subscriptions = iter(members.values())
    first = next(subscriptions).subscribed_topic_ids
    return all(spec.subscribed_topic_ids == first for spec in subscriptions)


def _retained(member_ids: list[str], members: Mapping[str, MemberSpec],
              partition_counts: Mapping[uuid.UUID, int]) -> dict[str, list[_TP]]:
    """Each member's current partitions that it may keep: subscribed topic, existing partition, and
    not already kept by a member earlier in ``member_ids`` (a target never has duplicates; be safe)."""
    claimed: set[_TP] = set()
    retained: dict[str, list[_TP]] = {}
    for member_id in member_ids:
        spec = members[member_id]
        keep: list[_TP] = []
        for topic_id in sorted(spec.assignment):
            if topic_id not in spec.subscribed_topic_ids:
                continue
            count = partition_counts[topic_id]
            for partition in sorted(spec.assignment[topic_id]):
                tp = (topic_id, partition)
                if 0 <= partition < count and tp not in claimed:
                    claimed.add(tp)
                    keep.append(tp)
        retained[member_id] = keep
    return retained


# -- uniform ------------------------------------------------------------------------------------------


def uniform_assign(members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]) -> GroupAssignment:
    """Kafka's UniformAssignor: balanced (sizes differ by at most one where subscriptions allow) and sticky."""
    if not members:
        return {}
    _check_topics(members, partition_counts)
    if _is_homogeneous(members):
        return _uniform_homogeneous(members, partition_counts)
    return _uniform_heterogeneous(members, partition_counts)


def _uniform_homogeneous(members: Mapping[str, MemberSpec],
                         partition_counts: Mapping[uuid.UUID, int]) -> GroupAssignment:
    member_ids = sorted(members)
    topics = sorted(next(iter(members.values())).subscribed_topic_ids)
    total = sum(partition_counts[t] for t in topics)
    min_quota, extras = divmod(total, len(member_ids))
    retained = _retained(member_ids, members, partition_counts)

    # The extra partitions go to the members already holding the most, so the fewest move.
    by_holding = sorted(member_ids, key=lambda m: (-len(retained[m]), m))
    quota = {m: min_quota + (1 if i < extras else 0) for i, m in enumerate(by_holding)}

    owned: dict[str, list[_TP]] = {m: retained[m][: quota[m]] for m in member_ids}
    kept = {tp for tps in owned.values() for tp in tps}
    pool = [(t, p) for t in topics for p in range(partition_counts[t]) if (t, p) not in kept]
    next_free = 0
    for member_id in member_ids:
        missing = quota[member_id] - len(owned[member_id])
        owned[member_id].extend(pool[next_free : next_free + missing])
        next_free += missing
    assert next_free == len(pool), "uniform assignor left partitions unassigned"
    return _to_assignment(owned, member_ids)


def _uniform_heterogeneous(members: Mapping[str, MemberSpec],
                           partition_counts: Mapping[uuid.UUID, int]) -> GroupAssignment:
    member_ids = sorted(members)
    index = {m: i for i, m in enumerate(member_ids)}
    subscribers: dict[uuid.UUID, list[str]] = {}
    for member_id in member_ids:
        for topic_id in members[member_id].subscribed_topic_ids:
            subscribers.setdefault(topic_id, []).append(member_id)
    for subs in subscribers.values():
        subs.sort()

    def topic_order(topic_id: uuid.UUID) -> tuple[Fraction, int, uuid.UUID]:
        n = len(subscribers[topic_id])
        return (-Fraction(partition_counts[topic_id], n), n, topic_id)

    topics = sorted(subscribers, key=topic_order)
    retained = _retained(member_ids, members, partition_counts)
    # owner[topic][partition] -> member id; holdings[member][topic] -> set of partitions
    owner: dict[uuid.UUID, dict[int, str]] = {t: {} for t in topics}
    holdings: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in member_ids}
    load = {m: 0 for m in member_ids}

    def give(topic_id: uuid.UUID, partition: int, member_id: str) -> None:
        owner[topic_id][partition] = member_id
        holdings[member_id].setdefault(topic_id, set()).add(partition)
        load[member_id] += 1

    for member_id in member_ids:
        for topic_id, partition in retained[member_id]:
            give(topic_id, partition, member_id)

    for topic_id in topics:
        subs = subscribers[topic_id]
        for partition in range(partition_counts[topic_id]):
            if partition not in owner[topic_id]:
                give(topic_id, partition, min(subs, key=lambda m: (load[m], index[m])))

    movable = [t for t in topics if len(subscribers[t]) >= 2]
    for _ in range(MAX_BALANCE_ROUNDS):
        moved = False
        for topic_id in movable:
            moved |= _balance_topic(topic_id, subscribers[topic_id], holdings, load, index)
        if not moved:
            break

    owned = {m: [(t, p) for t in sorted(holdings[m]) for p in sorted(holdings[m][t])] for m in member_ids}
    return _to_assignment(owned, member_ids)


def _balance_topic(topic_id: uuid.UUID, subs: list[str], holdings: dict[str, dict[uuid.UUID, set[int]]],
                   load: dict[str, int], index: dict[str, int]) -> bool:
    """Move partitions of one topic from its most loaded holder to its least loaded subscriber while
    their loads differ by more than one. Every move lowers the sum of squared loads, so this ends."""
    moved = False
    while True:
        holders = [m for m in subs if holdings[m].get(topic_id)]
        if not holders:
            return moved
        donor = max(holders, key=lambda m: (load[m], index[m]))
        receiver = min(subs, key=lambda m: (load[m], index[m]))
        if load[donor] - load[receiver] <= 1:
            return moved
        partition = max(holdings[donor][topic_id])
        holdings[donor][topic_id].discard(partition)
        if not holdings[donor][topic_id]:
            del holdings[donor][topic_id]
        holdings[receiver].setdefault(topic_id, set()).add(partition)
        load[donor] -= 1
        load[receiver] += 1
        moved = True


# -- range --------------------------------------------------------------------------------------------


def range_assign(members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]) -> GroupAssignment:
    """Kafka 4.x's RangeAssignor: contiguous per-topic ranges in (static by instance id, then member id) order."""
    if not members:
        return {}
    _check_topics(members, partition_counts)
    order = sorted(members, key=lambda m: (0, members[m].instance_id, m) if members[m].instance_id is not None
                   else (1, "", m))
    subscriber_count: dict[uuid.UUID, int] = {}
    for spec in members.values():
        for topic_id in spec.subscribed_topic_ids:
            subscriber_count[topic_id] = subscriber_count.get(topic_id, 0) + 1
    quotas = {t: list(divmod(partition_counts[t], n)) for t, n in subscriber_count.items()}
    next_start = dict.fromkeys(subscriber_count, 0)
    owned: dict[str, list[_TP]] = {}
    for member_id in order:
        tps: list[_TP] = []
        for topic_id in sorted(members[member_id].subscribed_topic_ids):
            min_quota, extras_left = quotas[topic_id]
            size = min_quota + (1 if extras_left > 0 else 0)
            if extras_left > 0:
                quotas[topic_id][1] -= 1
            start = next_start[topic_id]
            end = min(start + size, partition_counts[topic_id])
            next_start[topic_id] = end
            tps.extend((topic_id, p) for p in range(start, end))
        owned[member_id] = tps
    return _to_assignment(owned, sorted(members))


#: Assignor name (as in ``group.consumer.assignors`` and the heartbeat's ServerAssignor) -> function.
ASSIGNORS: dict[str, AssignFn] = {UNIFORM_ASSIGNOR_NAME: uniform_assign, RANGE_ASSIGNOR_NAME: range_assign}


__all__ = [
    "ASSIGNORS",
    "MAX_BALANCE_ROUNDS",
    "RANGE_ASSIGNOR_NAME",
    "UNIFORM_ASSIGNOR_NAME",
    "AssignFn",
    "AssignorError",
    "GroupAssignment",
    "MemberSpec",
    "TopicPartitions",
    "range_assign",
    "uniform_assign",
]
