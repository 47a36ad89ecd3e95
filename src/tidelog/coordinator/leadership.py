"""Which partitions of a coordinator's topic this broker must load or unload after a metadata change.

A coordinator serves the partitions of its internal topic (an entry of
:data:`~tidelog.coordinator.internal_topics.INTERNAL_TOPICS`) that this broker leads, and only while it leads them in the epoch it loaded
them in (Kafka's ``onElection`` / ``onResignation``, driven here by the ZooKeeper-era partition state):

1. **Load** a partition this broker leads now but did not lead before, or leads in a new leader epoch
   (it lost and regained the leadership between two images: its memory may be older than its log).
2. **Unload** a partition it led before and no longer leads (a leader change while alive, a
   controlled shutdown, a reassignment), or leads in a new leader epoch (unloaded, then loaded again).
3. A topic that appears (created on first use) has nothing to load: its partitions are empty. A
   coordinator that took every partition on before the topic existed (the transaction coordinator
   does) unloads those another broker leads (``assumed_all``).
4. A topic that goes (deleted, or re-created with a new id) unloads everything this broker led.

:func:`leadership_change` is pure; :func:`follow_leadership` applies the changes of one metadata
update to the coordinators. :class:`CoordinatedTopic` binds an internal topic to its coordinator, and
:class:`CoordinatorLeadership` drives every such binding: the first load at start-up, then the
following of leadership, and the hand-off of transaction markers written to an internal topic.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tidelog.cluster.metadata import MetadataImage, TopicMetadata
from tidelog.config import BrokerConfig
from tidelog.coordinator.internal_topics import InternalTopic
from tidelog.coordinator.runtime import MarkerFn

log = logging.getLogger(__name__)


class PartitionLoader(Protocol):
    """A coordinator as this module sees it: it loads and unloads partitions of its topic.
    ``load`` takes ``num_partitions`` (the topic's), ``background`` (a failover: load in a task) and,
    for a coordinator that loads before its topic exists, ``read=False`` (nothing to read yet)."""

    def load(self, partitions: Iterable[int], **options: Any) -> object: ...

    def unload(self, partitions: Iterable[int]) -> object: ...


@dataclass(frozen=True, slots=True)
class LeadershipChange:
    load: tuple[int, ...] = ()
    unload: tuple[int, ...] = ()


def leadership_change(broker_id: int, before: TopicMetadata | None, after: TopicMetadata | None, *,
                      assumed_all: bool = False) -> LeadershipChange:
    """The partitions to unload, then load, when the topic goes from ``before`` to ``after``."""
    if after is None or (before is not None and before.topic_id != after.topic_id):
        led = [] if before is None else [p.partition for p in before.partitions if p.leader == broker_id]
        return LeadershipChange(unload=tuple(led))
    if before is None:  # rule 3
        return LeadershipChange(unload=tuple(p.partition for p in after.partitions if p.leader != broker_id)
                                if assumed_all else ())
    load, unload = [], []
    for p in after.partitions:
        q = before.partitions[p.partition] if p.partition < len(before.partitions) else None
        led_before = q is not None and q.leader == broker_id
        leads_now = p.leader == broker_id
        if led_before and (not leads_now or q.leader_epoch != p.leader_epoch):
            unload.append(p.partition)
        if leads_now and (q is None or not led_before or q.leader_epoch != p.leader_epoch):
            load.append(p.partition)
    return LeadershipChange(tuple(load), tuple(unload))


@dataclass(frozen=True, slots=True)
class CoordinatedTopic:
    """An internal topic bound to the coordinator that serves it; ``on_marker`` (if any) is told of
    each transaction marker written to one of its partitions (transactional offset commits)."""

    topic: InternalTopic
    coordinator: PartitionLoader
    on_marker: MarkerFn | None = None


def marker_listeners(coordinated: Iterable[CoordinatedTopic]) -> dict[str, MarkerFn]:
    """Topic -> the coordinator told of markers there (a marker on an internal topic goes to its coordinator)."""
    return {c.topic.name: c.on_marker for c in coordinated if c.on_marker is not None}


class CoordinatorLeadership:
    """Every coordinator of this broker following the leadership of its internal topic's partitions."""

    def __init__(self, broker_id: int, config: BrokerConfig, coordinated: Sequence[CoordinatedTopic]) -> None:
        self.broker_id = broker_id
        self.config = config
        self.coordinated = tuple(coordinated)

    def load(self, image: MetadataImage) -> None:
        """At start-up: each coordinator loads the partitions of its topic this broker leads (a single
        node: all). A topic not created yet has nothing to read; a coordinator that loads before
        creation takes every partition on, empty."""
        for c in self.coordinated:
            topic = image.topics.get(c.topic.name)
            if topic is not None:
                led = [p.partition for p in topic.partitions if p.leader == self.broker_id]
                c.coordinator.load(led, num_partitions=len(topic.partitions))
            elif c.topic.loads_before_creation:
                count = c.topic.num_partitions(self.config)
                c.coordinator.load(range(count), num_partitions=count, read=False)
            else:
                c.coordinator.load((), num_partitions=c.topic.num_partitions(self.config))

    def follow(self, old: MetadataImage, new: MetadataImage) -> None:
        """A metadata change: coordinators follow the leadership of their partitions
        (:func:`follow_leadership`). A partition taken over loads in a background task on the loop, a
        chunk at a time; its requests answer COORDINATOR_LOAD_IN_PROGRESS until it is done."""
        follow_leadership(self.broker_id, old, new, [(c.topic.name, c.coordinator, c.topic.loads_before_creation)
                                                     for c in self.coordinated])


def follow_leadership(broker_id: int, old: MetadataImage, new: MetadataImage,
                      coordinators: Sequence[tuple[str, PartitionLoader, bool]]) -> None:
    """Unload, then load, each coordinator's partitions as ``old`` -> ``new`` says; ``coordinators``
    holds (internal topic, coordinator, assumed_all) triples. A broker that became leader of such a
    partition (a failover) loads it in the background (its log is already replicated here;
    COORDINATOR_LOAD_IN_PROGRESS until it is replayed, :mod:`tidelog.coordinator.loader`), so groups
    and transactions carry on; one that stopped leading it unloads it (NOT_COORDINATOR from then on,
    a load still running is cancelled)."""
    for name, coordinator, assumed_all in coordinators:
        topic, before = new.topics.get(name), old.topics.get(name)
        if topic is before:
            continue
        change = leadership_change(broker_id, before, topic, assumed_all=assumed_all)
        if change.unload:
            log.info("broker %d no longer leads %s partitions %s: unloading them", broker_id, name, list(change.unload))
            coordinator.unload(change.unload)
        if change.load and topic is not None:
            log.info("broker %d now leads %s partitions %s: loading them", broker_id, name, list(change.load))
            coordinator.load(change.load, num_partitions=len(topic.partitions), background=True)


__all__ = [
    "CoordinatedTopic",
    "CoordinatorLeadership",
    "LeadershipChange",
    "PartitionLoader",
    "follow_leadership",
    "leadership_change",
    "marker_listeners",
]
