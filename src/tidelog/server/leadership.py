"""Leadership changes asked for by requests: ControlledShutdown (:mod:`tidelog.cluster.controlled_shutdown`) and
ElectLeaders (:mod:`tidelog.cluster.leader_election`), carried out with conditional partition-state writes.

* ControlledShutdown is the controller's (NOT_CONTROLLER elsewhere; BROKER_NOT_AVAILABLE for a
  broker that is not registered). The broker is remembered as shutting down until it leaves the
  cluster: no election here picks it.
* ElectLeaders may arrive at any broker; each broker acts as the controller would, which is safe
  because every state is written at the partition epoch it was read at (ZooKeeper's version): a
  concurrent writer (the controller, a leader changing its ISR) wins and the election is decided
  again from the new state, a few times, before the request gives up on that partition.

A written change is answered once this broker's metadata shows it (or at the request's timeout),
so a client that asks for metadata next sees the new leader. Loop-only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from tidelog.cluster.controlled_shutdown import plan_controlled_shutdown, remaining_partitions
from tidelog.cluster.leader_election import (
    ElectionOutcome,
    ElectionType,
    all_partitions,
    elect,
    imbalanced_partitions,
)
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata
from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode

log = logging.getLogger(__name__)

Key = tuple[str, int]
#: (topic, partition, new state at the partition epoch it replaces, on_done(written)): ZooKeeperStore.alter_partition_state
AlterPartitionState = Callable[[str, int, PartitionMetadata, Callable[[bool], None]], None]
#: conflicting writes are decided again this many times
ATTEMPTS = 5
_POLL_S = 0.02


class LeadershipChanges:
    def __init__(self, store: MetadataStore, alter: AlterPartitionState | None,
                 is_controller: Callable[[], bool]) -> None:
        self.store = store
        self.alter = alter
        self.is_controller = is_controller
        self.shutting_down: set[int] = set()

    def forget_departed(self, _old: MetadataImage, new: MetadataImage) -> None:
        """A store subscriber: a broker that left the cluster is no longer shutting down."""
        self.shutting_down &= set(new.brokers)

    # ------------------------------------------------------------------------ ControlledShutdown

    async def controlled_shutdown(self, broker_id: int, timeout_ms: int = 30_000) -> tuple[ErrorCode, list[Key]]:
        """(error, partitions ``broker_id`` still leads)."""
        if not self.is_controller():
            return ErrorCode.NOT_CONTROLLER, []
        if broker_id not in self.store.image.brokers:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        self.shutting_down.add(broker_id)
        deadline = time.monotonic() + timeout_ms / 1000
        moved: list[tuple[str, PartitionMetadata]] = []
        for attempt in range(ATTEMPTS):
            plan = plan_controlled_shutdown(self.store.image, broker_id, self.shutting_down)
            written = await self._write(plan.changes)
            moved += [(t, p) for t, p in plan.moves if written[(t, p.partition)]]
            if all(written.values()):
                break
            await asyncio.sleep(_POLL_S * (attempt + 1))  # a conflicting write: its state arrives by the watch
        await self._visible(moved, deadline)
        done = {(t, p.partition) for t, p in moved}
        remaining = [k for k in remaining_partitions(self.store.image, broker_id, self.shutting_down - {broker_id})
                     if k not in done]
        log.info("controlled shutdown of broker %d: %d leaderships moved, %d remaining %s", broker_id, len(moved),
                 len(remaining), remaining[:10])
        return ErrorCode.NONE, remaining

    # ------------------------------------------------------------------------------ ElectLeaders

    async def elect_leaders(self, election_type: ElectionType, partitions: Sequence[Key] | None,
                            timeout_ms: int) -> dict[Key, ElectionOutcome]:
        """Every asked partition's outcome (None: every partition, and those that need no election are
        left out, as Kafka does)."""
        deadline = time.monotonic() + timeout_ms / 1000
        keys = list(dict.fromkeys(all_partitions(self.store.image) if partitions is None else partitions))
        results: dict[Key, ElectionOutcome] = {}
        pending = keys
        elected: list[tuple[str, PartitionMetadata]] = []
        for attempt in range(ATTEMPTS):
            image = self.store.image
            changes = []
            for key in pending:
                outcome = elect(image, *key, election_type, self.shutting_down)
                results[key] = outcome
                if outcome.error == ErrorCode.NONE:
                    assert outcome.new is not None
                    changes.append((key[0], outcome.new))
            written = await self._write(changes)
            elected += [(t, p) for t, p in changes if written[(t, p.partition)]]
            pending = [k for k, ok in written.items() if not ok]
            if not pending:
                break
            await asyncio.sleep(_POLL_S * (attempt + 1))
        for key in pending:
            results[key] = ElectionOutcome(ErrorCode.UNKNOWN_SERVER_ERROR,
                                           message="the partition state kept changing during the election")
        await self._visible(elected, deadline)
        for topic, p in elected:
            log.info("%s election: %s-%d leader %d, leader epoch %d", election_type.name.lower(), topic,
                     p.partition, p.leader, p.leader_epoch)
        if partitions is None:
            return {k: o for k, o in results.items() if o.error != ErrorCode.ELECTION_NOT_NEEDED}
        return {k: results[k] for k in keys}

    # ------------------------------------------------------------------------ auto rebalance

    async def rebalance(self, percentage: int, timeout_ms: int = 30_000) -> int:
        """``auto.leader.rebalance.enable``: on the controller, a preferred election of the partitions of
        every broker whose imbalance is above ``percentage`` (:func:`imbalanced_partitions`). Returns how
        many partitions moved."""
        if not self.is_controller():
            return 0
        keys = imbalanced_partitions(self.store.image, percentage, self.shutting_down)
        if not keys:
            return 0
        outcomes = await self.elect_leaders(ElectionType.PREFERRED, keys, timeout_ms)
        moved = sum(1 for o in outcomes.values() if o.error == ErrorCode.NONE)
        log.info("auto leader rebalance: %d of %d partitions back on their preferred replica", moved, len(keys))
        return moved

    # ---------------------------------------------------------------------------------- writing

    async def _write(self, changes: Sequence[tuple[str, PartitionMetadata]]) -> dict[Key, bool]:
        """Write each state conditionally; which were written."""
        if not changes:
            return {}
        loop = asyncio.get_running_loop()
        futures: dict[Key, asyncio.Future] = {}
        for topic, p in changes:
            future = futures[(topic, p.partition)] = loop.create_future()
            if self.alter is None:  # a single node never needs one (every partition led by its only replica)
                future.set_result(False)
                continue
            try:
                self.alter(topic, p.partition, p, lambda ok, f=future: f.done() or f.set_result(ok))
            except Exception as e:  # ZooKeeper unreachable
                log.warning("partition state of %s-%d not written: %r", topic, p.partition, e)
                if not future.done():
                    future.set_result(False)
        return {key: bool(await future) for key, future in futures.items()}

    async def _visible(self, changes: Sequence[tuple[str, PartitionMetadata]], deadline: float) -> None:
        """Wait until this broker's metadata shows the written leaders (at most until ``deadline``)."""
        def shown() -> bool:
            topics = self.store.image.topics
            for topic, p in changes:
                t = topics.get(topic)
                if t is None or p.partition >= len(t.partitions):
                    continue
                if t.partitions[p.partition].leader_epoch < p.leader_epoch:
                    return False
            return True

        while not shown() and time.monotonic() < deadline:
            await asyncio.sleep(_POLL_S)


__all__ = ["AlterPartitionState", "LeadershipChanges"]
