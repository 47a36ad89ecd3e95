"""The controller's partition-state changes when brokers come and go (Kafka's ZooKeeper-era
``PartitionStateMachine`` / ``Election``). Pure: the image in, the partition states to write out.

For every partition, with ``live`` the registered brokers:

0. A new partition (its assignment written, no state yet: Kafka's ``NewPartition``) gets its first
   state (:func:`first_states`): the first live replica in assignment order leads, the ISR is the live
   replicas, leader epoch 0. Without a live replica it waits, without a state, for one to register.
1. A leader that is alive keeps leading; ISR members that are dead are removed from the ISR (never
   the leader itself), in the same leader epoch (acks=all stops waiting for them at once, rather than
   after ``replica.lag.time.max.ms``).
2. A dead leader (or none, -1) is replaced by the first replica, in assignment order (the preferred
   replica first), that is alive and in the ISR; the new ISR is the live members of the old one, and
   the leader epoch goes up by one.
3. No live ISR member: if ``unclean.leader.election.enable`` is set for the topic, the first live
   replica leads with an ISR of itself (records only the old leader had may be lost); otherwise the
   partition goes offline (leader -1, the leader epoch up by one, the ISR left as it was, so that the
   first of its members to come back leads again).

Each change is written by the caller at the partition epoch it was read at (a conditional write; a first
state is created, and only once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tidelog.cluster.metadata import MetadataImage, PartitionMetadata

NO_LEADER = -1


def elect_leader(p: PartitionMetadata, live: set[int], unclean: bool) -> PartitionMetadata | None:
    """The new state of one partition, or None if it stays as it is."""
    live_isr = tuple(r for r in p.isr if r in live)
    if p.leader >= 0 and p.leader in live:
        if live_isr == p.isr or not live_isr:
            return None
        return replace(p, isr=live_isr)  # rule 1
    candidate = next((r for r in p.replicas if r in live_isr), None)
    if candidate is not None:  # rule 2
        return replace(p, leader=candidate, leader_epoch=p.leader_epoch + 1, isr=live_isr)
    if unclean:  # rule 3
        candidate = next((r for r in p.replicas if r in live), None)
        if candidate is not None:
            return replace(p, leader=candidate, leader_epoch=p.leader_epoch + 1, isr=(candidate,))
    if p.leader == NO_LEADER:
        return None
    return replace(p, leader=NO_LEADER, leader_epoch=p.leader_epoch + 1)


def first_state(p: PartitionMetadata, live: set[int]) -> PartitionMetadata | None:
    """A new partition's first state (rule 0), or None: none of its replicas is live."""
    live_replicas = tuple(r for r in p.replicas if r in live)
    if not live_replicas:
        return None
    return replace(p, leader=live_replicas[0], leader_epoch=0, isr=live_replicas)


def first_states(image: MetadataImage) -> list[tuple[str, PartitionMetadata]]:
    """The first state of every partition of ``image`` that has none yet and a live replica (written at
    partition epoch -1: created)."""
    live = set(image.brokers)
    states = []
    for topic in image.topics.values():
        for p in topic.partitions:
            if p.partition_epoch < 0:
                first = first_state(p, live)
                if first is not None:
                    states.append((topic.name, first))
    return states


def elections(image: MetadataImage, unclean: Callable[[str], bool]) -> list[tuple[str, PartitionMetadata]]:
    """Every partition state the controller must change for the live brokers of ``image``."""
    live = set(image.brokers)
    changes = []
    for topic in image.topics.values():
        for p in topic.partitions:
            if p.partition_epoch < 0:  # no state znode yet
                continue
            new = elect_leader(p, live, unclean(topic.name))
            if new is not None:
                changes.append((topic.name, new))
    return changes


__all__ = ["NO_LEADER", "elect_leader", "elections", "first_state", "first_states"]
