"""Partition reassignment (KIP-455, as ZooKeeper-era Kafka 2.4+ carried it out). Pure but for
:class:`Reassigner`, which publishes through the metadata store.

A partition's replicas move in two steps, both recorded in ``/brokers/topics/<t>`` (``partitions``,
``adding_replicas``, ``removing_replicas``) and ``.../partitions/<p>/state``:

1. **Start** (:func:`reassign`, on whichever broker took the AlterPartitionReassignments request):
   with ORS the original replicas and TRS the target, the partition's replicas become RS = TRS
   followed by the rest of ORS, ``adding`` = TRS - ORS and ``removing`` = ORS - TRS. The new replicas
   see themselves in the assignment, create their logs and fetch from the leader like any follower;
   the leader adds each to the ISR once it has caught up. A new target for a partition already being
   reassigned is taken relative to its ORS; replicas an earlier target added that the new one does not
   want leave at once (out of the ISR; a leader among them hands over to the first remaining ISR
   member, leader epoch + 1). Cancelling (a null target) is the target ORS: the added replicas leave.
2. **Completion** (:func:`complete`, by the controller on every metadata change it reads, so a new
   controller resumes what the old one left): once every TRS member is in the ISR, the partition's
   replicas become TRS, the ISR keeps only TRS members, ``adding``/``removing`` are cleared, and the
   leader epoch goes up by one; a leader that is leaving (or dead) hands over to the first TRS member
   that is alive and in the ISR. Assignment and state are written in one ZooKeeper transaction.
   Brokers no longer among the replicas delete their logs (the replica manager, on the metadata).

Requests are checked as Kafka's controller checks them: the topic and partition must exist
(UNKNOWN_TOPIC_OR_PARTITION); a target must be non-empty, without duplicates or negative ids, of
registered brokers (INVALID_REPLICA_ASSIGNMENT); with AlterPartitionReassignments v1's
``allow_replication_factor_change`` false it must keep the number of replicas
(INVALID_REPLICATION_FACTOR); cancelling a partition not being reassigned is NO_REASSIGNMENT_IN_PROGRESS.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from tidelog.cluster import zk_data as zk
from tidelog.cluster.election import NO_LEADER
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReassignmentRequest:
    topic: str
    partition: int
    #: the target replicas; None cancels the partition's reassignment
    replicas: tuple[int, ...] | None


def origin_replicas(p: PartitionMetadata) -> tuple[int, ...]:
    """ORS: the replicas before the reassignment in progress (all of them if none is)."""
    return tuple(r for r in p.replicas if r not in p.adding_replicas)


def target_replicas(p: PartitionMetadata) -> tuple[int, ...]:
    """TRS: the replicas the reassignment in progress ends with (all of them if none is)."""
    return tuple(r for r in p.replicas if r not in p.removing_replicas)


def _distinct(replicas: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(replicas))


def validate_target(target: Sequence[int], live: Iterable[int]) -> None:
    """Kafka's checks of a target replica list; raises KafkaError(INVALID_REPLICA_ASSIGNMENT)."""
    if not target:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    if any(r < 0 for r in target):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {list(target)}")
    live = set(live)
    seen: set[int] = set()
    for r in sorted(target):
        if r not in live:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes broker {r}, but no such broker is "
                             "registered.")
        if r in seen:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes the broker {r} more than once.")
        seen.add(r)


def _with_replicas(p: PartitionMetadata, replicas: tuple[int, ...], adding: tuple[int, ...],
                   removing: tuple[int, ...], live: set[int], bump: bool) -> PartitionMetadata | None:
    """``p`` with a new assignment: the ISR keeps only the remaining replicas; a leader that no longer
    is one hands over to the first remaining, live ISR member (leader epoch + 1, as with ``bump``).
    None when no remaining replica is in the ISR or could lead (the caller waits or refuses)."""
    isr = tuple(r for r in p.isr if r in replicas)
    if not isr:
        return None
    leader = p.leader
    if leader not in replicas or leader not in live:
        leader = next((r for r in replicas if r in isr and r in live), NO_LEADER)
        if leader == NO_LEADER and p.leader != NO_LEADER:
            return None
    epoch = p.leader_epoch + 1 if bump or leader != p.leader else p.leader_epoch
    return replace(p, replicas=replicas, adding_replicas=adding, removing_replicas=removing, isr=isr,
                   leader=leader, leader_epoch=epoch)


def reassign(p: PartitionMetadata, target: tuple[int, ...] | None, live: Iterable[int],
             allow_replication_factor_change: bool = True) -> PartitionMetadata:
    """Step 1: the partition with ``target`` recorded (``p`` itself if nothing changes). Raises
    KafkaError for a refused request."""
    live = set(live)
    origin = origin_replicas(p)
    if target is None:
        if not p.reassigning:
            raise KafkaError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS.message)
        target = origin
    else:
        validate_target(target, live)
        if not allow_replication_factor_change and len(target) != len(origin):
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"The replication factor would change from {len(origin)} to {len(target)}, but "
                             "allowReplicationFactorChange is false.")
    replicas = _distinct(target + origin)
    adding = tuple(r for r in replicas if r not in origin)
    removing = tuple(r for r in replicas if r not in target)
    if (replicas, adding, removing) == (p.replicas, p.adding_replicas, p.removing_replicas):
        return p
    if not adding and not removing:  # a new order, or back to the original replicas: ends at once
        new = _with_replicas(p, replicas, (), (), live, bump=True)
    else:
        new = _with_replicas(p, replicas, adding, removing, live, bump=False)
    if new is None:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"None of the replicas {list(replicas)} is alive and in the ISR {list(p.isr)}: "
                         "no replica could lead.")
    return new


def complete(p: PartitionMetadata, live: Iterable[int]) -> PartitionMetadata | None:
    """Step 2: the partition's final state once every target replica is in the ISR, else None."""
    if not p.reassigning or p.partition_epoch < 0:
        return None
    target = target_replicas(p)
    if not all(r in p.isr for r in target):
        return None
    return _with_replicas(p, target, (), (), set(live), bump=True)


def completions(image: MetadataImage,
                ) -> list[tuple[TopicMetadata, list[tuple[PartitionMetadata, PartitionMetadata]]]]:
    """Every topic with reassignments that can complete now: the topic as it becomes, and each
    completed partition (before, after)."""
    live = set(image.brokers)
    out = []
    for topic in image.topics.values():
        done = [(p, new) for p in topic.partitions if (new := complete(p, live)) is not None]
        if done:
            finished = {after.partition: after for _, after in done}
            out.append((replace(topic, partitions=tuple(finished.get(p.partition, p) for p in topic.partitions)),
                        done))
    return out


def ongoing(image: MetadataImage, wanted: Iterable[tuple[str, int]] | None = None,
            ) -> list[tuple[str, PartitionMetadata]]:
    """The partitions being reassigned (of ``wanted`` only, if given; unknown ones are skipped)."""
    if wanted is None:
        return [(t.name, p) for t in image.topics.values() for p in t.partitions if p.reassigning]
    out = []
    for name, index in wanted:
        topic = image.topics.get(name)
        if topic is not None and 0 <= index < len(topic.partitions) and topic.partitions[index].reassigning:
            out.append((name, topic.partitions[index]))
    return out


# ----------------------------------------------------------------------------------- ZooKeeper

def assignment_changed(before: TopicMetadata, after: TopicMetadata) -> bool:
    """True if the topic znode must be rewritten for ``after`` (replicas or reassignments differ)."""
    return any((a.replicas, a.adding_replicas, a.removing_replicas) != (b.replicas, b.adding_replicas,
                                                                           b.removing_replicas)
               for a, b in zip(after.partitions, before.partitions))


def encode_assignment(topic: TopicMetadata) -> bytes:
    """The topic znode of ``topic``, with its reassignments in progress."""
    return zk.encode_topic(topic.topic_id, {p.partition: p.replicas for p in topic.partitions},
                           {p.partition: p.adding_replicas for p in topic.partitions if p.adding_replicas},
                           {p.partition: p.removing_replicas for p in topic.partitions if p.removing_replicas})


# --------------------------------------------------------------------------------- the requests

class Reassigner:
    """AlterPartitionReassignments on any broker: check every partition against the current image,
    then publish the accepted ones in one metadata write (a conditional ZooKeeper transaction; the
    controller completes them). ``store`` is the broker's metadata store."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    #: how many times a write that lost to a concurrent change (a leader's ISR change, the controller)
    #: is decided again on the re-read image before NOT_CONTROLLER reaches the client
    ATTEMPTS = 3

    def alter(self, requests: Sequence[ReassignmentRequest], allow_replication_factor_change: bool = True,
              ) -> list[KafkaError | None]:
        refreshed = False
        for attempt in range(1, self.ATTEMPTS + 1):
            results = self._alter_once(requests, allow_replication_factor_change)
            refused = any(e is not None and e.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT for e in results)
            if refused and not refreshed:
                # This broker's image follows ZooKeeper a moment behind: a broker that just registered,
                # or a partition whose move just ended, can look wrong here. Refuse only on fresh data.
                refreshed = True
                self.store.refresh()
                results = self._alter_once(requests, allow_replication_factor_change)
            conflict = any(e is not None and e.code == ErrorCode.NOT_CONTROLLER for e in results)
            if not conflict or attempt == self.ATTEMPTS:
                return results
            log.info("reassignment lost to a concurrent metadata change; deciding again (attempt %d)", attempt + 1)
        raise AssertionError("unreachable")

    def _alter_once(self, requests: Sequence[ReassignmentRequest], allow_replication_factor_change: bool,
                    ) -> list[KafkaError | None]:
        image = self.store.image
        live = set(image.brokers)
        changed: dict[str, dict[int, PartitionMetadata]] = {}
        results: list[KafkaError | None] = []
        for req in requests:
            topic = image.topics.get(req.topic)
            if topic is None:
                results.append(KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"Unable to find a topic named {req.topic}."))
                continue
            if not 0 <= req.partition < len(topic.partitions):
                results.append(KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"Unable to find partition {req.topic}:{req.partition}."))
                continue
            current = changed.get(req.topic, {}).get(req.partition, topic.partitions[req.partition])
            try:
                new = reassign(current, req.replicas, live, allow_replication_factor_change)
            except KafkaError as e:
                results.append(e)
                continue
            if new is not current:
                changed.setdefault(req.topic, {})[req.partition] = new
            results.append(None)
        if changed:
            for name, parts in changed.items():
                topic = image.topics[name]
                image = image.with_topic(replace(topic, partitions=tuple(parts.get(p.partition, p)
                                                                         for p in topic.partitions)))
            try:
                self.store.publish(image)
            except KafkaError as e:
                return [e if r is None else r for r in results]
            for name, parts in changed.items():
                for p in parts.values():
                    log.info("reassignment of %s-%d: replicas %s (adding %s, removing %s)", name, p.partition,
                             list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
        return results


__all__ = [
    "Reassigner",
    "ReassignmentRequest",
    "assignment_changed",
    "complete",
    "completions",
    "encode_assignment",
    "ongoing",
    "origin_replicas",
    "reassign",
    "target_replicas",
    "validate_target",
]
