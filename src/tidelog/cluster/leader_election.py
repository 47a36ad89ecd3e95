"""ElectLeaders' rules (KIP-183 preferred, KIP-460 unclean), as Kafka's controller applies them
(``ReplicationControlManager.electLeader``). Pure: one partition's state in, its answer out.

* Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
* PREFERRED (0): the preferred replica is the first of the assignment. Already leading:
  ELECTION_NOT_NEEDED. Alive, in the ISR and not shutting down: it leads, the leader epoch goes up
  by one, the ISR stays. Otherwise PREFERRED_LEADER_NOT_AVAILABLE.
* UNCLEAN (1): only for a partition without a leader; one that has a leader: ELECTION_NOT_NEEDED.
  The first live ISR member in assignment order leads; with none, the first live replica (records
  only the old leader had are lost) with an ISR of itself; with none alive:
  ELIGIBLE_LEADERS_NOT_AVAILABLE.

Each new state is written by the caller at the partition epoch it was read at (a conditional write).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum

from tidelog.cluster.metadata import MetadataImage, PartitionMetadata
from tidelog.errors import ErrorCode


class ElectionType(IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    error: ErrorCode
    new: PartitionMetadata | None = None  # the state to write (error NONE)
    message: str | None = None


def elect(image: MetadataImage, topic: str, partition: int, election_type: ElectionType,
          excluded: frozenset[int] | set[int] = frozenset()) -> ElectionOutcome:
    """The outcome of electing ``topic``-``partition``; ``excluded``: brokers shutting down."""
    t = image.topics.get(topic)
    if t is None:
        return ElectionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message=f"No such topic as {topic}")
    p = next((q for q in t.partitions if q.partition == partition), None)
    if p is None or p.partition_epoch < 0:
        return ElectionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message=f"No such partition as {topic}-{partition}")
    eligible = set(image.brokers) - set(excluded)
    if election_type == ElectionType.PREFERRED:
        preferred = p.replicas[0] if p.replicas else -1
        if p.leader == preferred:
            return ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED)
        if preferred in eligible and preferred in p.isr:
            return ElectionOutcome(ErrorCode.NONE, replace(p, leader=preferred, leader_epoch=p.leader_epoch + 1))
        return ElectionOutcome(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                               message=f"Failed to elect leader for partition {topic}-{partition} under strategy "
                               "PreferredReplicaPartitionLeaderElectionStrategy")
    if p.leader >= 0:
        return ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED)
    clean = next((r for r in p.replicas if r in eligible and r in p.isr), None)
    if clean is not None:
        isr = tuple(r for r in p.isr if r in eligible)
        return ElectionOutcome(ErrorCode.NONE, replace(p, leader=clean, leader_epoch=p.leader_epoch + 1, isr=isr))
    unclean = next((r for r in p.replicas if r in eligible), None)
    if unclean is not None:
        return ElectionOutcome(ErrorCode.NONE, replace(p, leader=unclean, leader_epoch=p.leader_epoch + 1,
                                                       isr=(unclean,)))
    return ElectionOutcome(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                           message=f"Failed to elect leader for partition {topic}-{partition} under strategy "
                           "OfflinePartitionLeaderElectionStrategy")


def imbalanced_partitions(image: MetadataImage, percentage: int,
                          excluded: frozenset[int] | set[int] = frozenset()) -> list[tuple[str, int]]:
    """``auto.leader.rebalance.enable`` (Kafka's ``checkAndTriggerAutoLeaderRebalance``): for each live
    broker, the partitions whose preferred replica it is but which another broker leads; if they are
    more than ``percentage`` % of the partitions it is preferred for, those of them it could lead now
    (alive, not shutting down, in the ISR) are returned for a preferred election."""
    preferred_of: dict[int, list[tuple[str, PartitionMetadata]]] = {}
    for t in image.topics.values():
        for p in t.partitions:
            if p.replicas and p.partition_epoch >= 0:
                preferred_of.setdefault(p.replicas[0], []).append((t.name, p))
    chosen = []
    for broker, partitions in sorted(preferred_of.items()):
        if broker not in image.brokers or broker in excluded:
            continue
        elsewhere = [(name, p) for name, p in partitions if p.leader != broker]
        if len(elsewhere) * 100 > percentage * len(partitions):
            chosen += [(name, p.partition) for name, p in elsewhere if broker in p.isr]
    return chosen


def all_partitions(image: MetadataImage) -> list[tuple[str, int]]:
    return [(t.name, p.partition) for t in image.topics.values() for p in t.partitions]


__all__ = ["ElectionOutcome", "ElectionType", "all_partitions", "elect", "imbalanced_partitions"]
