"""Which partitions of a coordinator's topic this broker must load or unload after a metadata change.

A coordinator serves the partitions of its internal topic (``__consumer_offsets``,
``__transaction_state``) that this broker leads, and only while it leads them in the epoch it loaded
them in (Kafka's ``onElection`` / ``onResignation``, driven here by the ZooKeeper-era partition state):

1. **Load** a partition this broker leads now but did not lead before, or leads in a new leader epoch
   (it lost and regained the leadership between two images: its memory may be older than its log).
2. **Unload** a partition it led before and no longer leads (a leader change while alive, a
   controlled shutdown, a reassignment), or leads in a new leader epoch (unloaded, then loaded again).
3. A topic that appears (created on first use) has nothing to load: its partitions are empty. A
   coordinator that took every partition on before the topic existed (the transaction coordinator
   does) unloads those another broker leads (``assumed_all``).
4. A topic that goes (deleted, or re-created with a new id) unloads everything this broker led.

Pure: no I/O, no state.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidelog.cluster.metadata import TopicMetadata


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


__all__ = ["LeadershipChange", "leadership_change"]
