"""Controlled shutdown (Kafka's ZooKeeper-era ``KafkaController.doControlledShutdown``): before a broker
stops cleanly it asks the controller to move its work away, so that clients fail over at once instead
of after its ZooKeeper session expires. Pure: the image in, the partition states to write out.

For every partition with more than one replica and a state, with ``shutting_down`` the brokers in a
controlled shutdown (the one asking among them):

1. Led by the broker: the first replica in assignment order (the preferred replica first) that is
   alive, in the ISR and not shutting down becomes leader, the leader epoch goes up by one and the
   shutting-down brokers leave the ISR. Without such a replica the partition stays as it is (Kafka's
   ``ControlledShutdownPartitionLeaderElectionStrategy`` finds no leader) and is reported remaining.
2. Followed by the broker while it is in the ISR: it leaves the ISR, in the same leader epoch (as the
   controller's other ISR removals here, :mod:`tidelog.cluster.election`), unless it is the last member.

The answer's remaining partitions are those the broker still leads afterwards; the broker asks again
(``controlled.shutdown.max.retries``, ``controlled.shutdown.retry.backoff.ms``) while there are some.
Partitions with one replica are left out, as in Kafka: there is nowhere to move them; so are those
whose other replicas are all unregistered or shutting down too (Kafka retries these, so its last
broker's shutdown waits out every retry).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tidelog.cluster.metadata import MetadataImage, PartitionMetadata

Key = tuple[str, int]


@dataclass(slots=True)
class ShutdownPlan:
    """What the controller writes for one controlled-shutdown request."""

    moves: list[tuple[str, PartitionMetadata]] = field(default_factory=list)  # leadership moved away
    isr_removals: list[tuple[str, PartitionMetadata]] = field(default_factory=list)  # left a follower's ISR
    stuck: list[Key] = field(default_factory=list)  # led by the broker, no other eligible leader

    @property
    def changes(self) -> list[tuple[str, PartitionMetadata]]:
        return self.moves + self.isr_removals


def plan_controlled_shutdown(image: MetadataImage, broker_id: int, shutting_down: set[int]) -> ShutdownPlan:
    """The partition states to write so that ``broker_id`` leads nothing and is in no ISR."""
    live = set(image.brokers)
    leaving = shutting_down | {broker_id}
    plan = ShutdownPlan()
    for topic in image.topics.values():
        for p in topic.partitions:
            if broker_id not in p.replicas or len(p.replicas) < 2 or p.partition_epoch < 0:
                continue
            isr = tuple(r for r in p.isr if r not in leaving)
            if p.leader == broker_id:
                candidate = next((r for r in p.replicas if r in isr and r in live), None)
                if candidate is None:
                    plan.stuck.append((topic.name, p.partition))
                else:
                    plan.moves.append((topic.name, replace(p, leader=candidate, leader_epoch=p.leader_epoch + 1,
                                                           isr=isr)))
            elif broker_id in p.isr and isr:
                plan.isr_removals.append((topic.name, replace(p, isr=tuple(r for r in p.isr if r != broker_id))))
    return plan


def remaining_partitions(image: MetadataImage, broker_id: int,
                         shutting_down: frozenset[int] | set[int] = frozenset()) -> list[Key]:
    """Partitions with more than one replica that ``broker_id`` leads in ``image``, leaving out those
    none of whose other replicas is registered and staying (nothing to wait for: the last broker of a
    cluster, or brokers stopped all at once, stop without retries; Kafka would retry them too)."""
    live = set(image.brokers) - set(shutting_down)
    return [(t.name, p.partition) for t in image.topics.values() for p in t.partitions
            if p.leader == broker_id and len(p.replicas) > 1
            and any(r != broker_id and r in live for r in p.replicas)]


__all__ = ["ShutdownPlan", "plan_controlled_shutdown", "remaining_partitions"]
