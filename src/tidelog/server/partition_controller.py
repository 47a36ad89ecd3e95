"""The partition controller: every partition-state decision of this broker, made in the controller's one
event queue (:mod:`tidelog.server.controller_events`) over the pure rules of :mod:`tidelog.cluster`.

Duties (the active controller only; Kafka's ZooKeeper-era ``KafkaController``), after every metadata
image the store applies (:meth:`PartitionController.on_metadata_change` queues them, coalesced), and
once at start (:meth:`PartitionController.start`):

* new partitions (Kafka's topic-change event: a broker that handled CreateTopics or CreatePartitions
  wrote only their assignment) get their first leader and ISR (:func:`~tidelog.cluster.election.first_states`),
  a single node's as a cluster's; whoever waits for them (:meth:`PartitionController.await_leaders`:
  the CreateTopics answer, FindCoordinator's first use of an internal topic) sees them once this
  broker's metadata shows them;
* topics marked for deletion (``/admin/delete_topics``) are deleted;
* elections (:mod:`tidelog.cluster.election`): a dead leader is replaced from the ISR, dead ISR members
  leave it, and without a live ISR member the partition goes offline, or, with
  ``unclean.leader.election.enable`` for its topic, the first live replica leads;
* reassignments whose target replicas are all in the ISR complete (:mod:`tidelog.cluster.reassignment`).

Requests, each decided as one event and answered outside the queue:

* ControlledShutdown (:mod:`tidelog.cluster.shutdown_plan`) is the controller's (NOT_CONTROLLER
  elsewhere; BROKER_NOT_AVAILABLE for a broker that is not registered). The broker is remembered as
  shutting down until it leaves the cluster: no election here picks it.
* ElectLeaders (:mod:`tidelog.cluster.leader_election`) may arrive at any broker; each decides in its
  own queue, which is safe because every state is written at the partition epoch it was read at
  (ZooKeeper's version): a concurrent writer (the controller, a leader changing its ISR) wins, and the
  election is decided again, in a new event, once the metadata shows the new state, a few times,
  before the request gives up on that partition.
* ``auto.leader.rebalance.enable``: a preferred election of the imbalanced partitions, on the controller.
* AlterPartitionReassignments (any broker, as ElectLeaders): the start of each reassignment
  (:class:`~tidelog.cluster.reassignment.Reassigner`); the controller completes it (above).

A written change is answered once this broker's metadata shows it (or at the request's timeout, read
from the injected :class:`~tidelog.clock.Clock`), so a client that asks for metadata next sees the
new leader; the wait is for the store's next image, never a sleep. A leader's own ISR changes are
written by the leader (Kafka's ZooKeeper-era leaders did so), conditionally, and reach the
controller as any change does. Loop-only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from tidelog.clock import Clock, TimerHandle, clock_timeout
from tidelog.cluster import reassignment
from tidelog.cluster.election import elections, first_states
from tidelog.cluster.leader_election import (
    ElectionOutcome,
    ElectionType,
    all_partitions,
    elect,
    imbalanced_partitions,
)
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.reassignment import Reassigner, ReassignmentRequest
from tidelog.cluster.shutdown_plan import plan_controlled_shutdown, remaining_partitions
from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode, KafkaError
from tidelog.server.controller_events import ControllerEventManager

log = logging.getLogger(__name__)

Key = tuple[str, int]
Done = Callable[[bool], None]
#: (topic, partition, new state at the partition epoch it replaces, on_done(written)): ZooKeeperStore.alter_partition_state
AlterPartitionState = Callable[[str, int, PartitionMetadata, Done], None]
#: (image, topic) -> whether unclean leader election is enabled for the topic
UncleanElection = Callable[[MetadataImage, str], bool]
#: conflicting writes are decided again this many times
ATTEMPTS = 5
#: a duty whose write failed (a lost race, ZooKeeper unreachable) is tried again after this long (of the
#: broker's Clock), in case no new image comes to queue it (a race lost brings one; a connection lost and
#: regained may not)
DUTY_RETRY_MS = 1_000
#: how long (of the broker's Clock) an event waits for ZooKeeper's answer to its writes (kazoo answers every
#: request, if only with an error; this bounds a stalled one so that the queue goes on)
WRITE_WAIT_MS = 10_000


class ControllerDuties(Protocol):
    """What a cluster's store carries out for the controller (:class:`~tidelog.cluster.zk_store.ZooKeeperStore`).
    Each ``on_done`` runs on the loop, outside the event queue."""

    @property
    def is_controller(self) -> bool: ...

    @property
    def pending_deletions(self) -> tuple[str, ...]: ...

    def delete_topics(self, names: Sequence[str], on_done: Done) -> None: ...

    def complete_reassignment(self, topic: TopicMetadata,
                              done: Sequence[tuple[PartitionMetadata, PartitionMetadata]], on_done: Done) -> None: ...


class PartitionController:
    def __init__(self, store: MetadataStore, events: ControllerEventManager, clock: Clock, *,
                 alter: AlterPartitionState | None, is_controller: Callable[[], bool],
                 duties: ControllerDuties | None = None,
                 unclean: UncleanElection = lambda image, topic: False) -> None:
        self.store = store
        self.events = events
        self.clock = clock
        self.alter = alter  # None: a single node (every partition led by its only replica) never writes one
        self.is_controller = is_controller
        self.duties = duties
        self.unclean = unclean
        self.reassigner = Reassigner(store)
        self.shutting_down: set[int] = set()
        self._duties_queued = False
        self._duty_retry: TimerHandle | None = None
        self._changed: asyncio.Future | None = None

    # ------------------------------------------------------------------------------ metadata

    def on_metadata_change(self, _old: MetadataImage, new: MetadataImage) -> None:
        """A store subscriber (the loop): a broker that left the cluster is no longer shutting down;
        whoever waits for the metadata wakes up; the controller's duties are queued."""
        self.shutting_down &= set(new.brokers)
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)
        self._queue_duties()

    def start(self) -> None:
        """Once the store is open: the duties of the image it opened with (a new partition whose first
        state was not written before a restart)."""
        self._queue_duties()

    def _queue_duties(self) -> None:
        self._duty_retry = None
        if self.is_controller() and not self._duties_queued:
            self._duties_queued = True
            self.events.put(self._run_duties)

    async def _run_duties(self) -> None:
        """The event: what the controller does with the current image."""
        self._duties_queued = False
        if not self.is_controller():
            return
        ok = await self._start_new_partitions()
        duties = self.duties
        if duties is not None and duties.is_controller:
            ok = await self._carry_out_duties(duties) and ok
        if not ok and self._duty_retry is None:
            self._duty_retry = self.clock.call_later(DUTY_RETRY_MS, self._queue_duties)

    async def _start_new_partitions(self) -> bool:
        """New partitions' first states (leader, ISR, leader epoch 0), each created only once; False if a
        write failed."""
        changes = first_states(self.store.image)
        written = await self._write(changes)
        for topic, p in changes:
            if written[(topic, p.partition)]:
                log.info("controller: new partition %s-%d: leader %d, ISR %s", topic, p.partition, p.leader,
                         list(p.isr))
        return all(written.values())

    async def _carry_out_duties(self, duties: ControllerDuties) -> bool:
        """Deletions, elections, reassignment completions; False if a write failed."""
        ok = True
        deleting = duties.pending_deletions
        if deleting:
            ok = await self._await_done(lambda on_done: duties.delete_topics(deleting, on_done))
        image = self.store.image
        changes = elections(image, lambda topic: self.unclean(image, topic))
        written = await self._write(changes)
        for topic, p in changes:
            if written[(topic, p.partition)]:
                log.info("controller: %s-%d leader %d, leader epoch %d, ISR %s", topic, p.partition, p.leader,
                         p.leader_epoch, list(p.isr))
        ok = ok and all(written.values())
        if any(written.values()):
            return ok  # the next image (the watch brings these states) completes what can complete then
        for topic, done in reassignment.completions(image):
            completed = await self._await_done(
                lambda on_done, t=topic, d=done: duties.complete_reassignment(t, d, on_done))
            ok = ok and completed
            if completed:
                for _, after in done:
                    log.info("controller: reassignment of %s-%d complete: replicas %s, leader %d, leader epoch %d",
                             topic.name, after.partition, list(after.replicas), after.leader, after.leader_epoch)
        return ok

    # ------------------------------------------------------------------------ ControlledShutdown

    async def controlled_shutdown(self, broker_id: int, timeout_ms: int = 30_000) -> tuple[ErrorCode, list[Key]]:
        """(error, partitions ``broker_id`` still leads)."""
        deadline = self.clock.monotonic_ms() + timeout_ms
        moved: list[tuple[str, PartitionMetadata]] = []
        for _ in range(ATTEMPTS):
            code, image, written_moves, all_written = await self.events.call(lambda: self._shutdown_step(broker_id))
            if code != ErrorCode.NONE:
                return code, []
            moved += written_moves
            if all_written:
                break
            await self._next_image(image, deadline)  # a conflicting write: its state arrives by the watch
        await self._visible(moved, deadline)
        done = {(t, p.partition) for t, p in moved}
        remaining = [k for k in remaining_partitions(self.store.image, broker_id, self.shutting_down - {broker_id})
                     if k not in done]
        log.info("controlled shutdown of broker %d: %d leaderships moved, %d remaining %s", broker_id, len(moved),
                 len(remaining), remaining[:10])
        return ErrorCode.NONE, remaining

    async def _shutdown_step(self, broker_id: int,
                             ) -> tuple[ErrorCode, MetadataImage, list[tuple[str, PartitionMetadata]], bool]:
        """The event: plan and write the moves; (error, the image decided on, moves written, whether
        every change was)."""
        image = self.store.image
        if not self.is_controller():
            return ErrorCode.NOT_CONTROLLER, image, [], True
        if broker_id not in image.brokers:
            return ErrorCode.BROKER_NOT_AVAILABLE, image, [], True
        self.shutting_down.add(broker_id)
        plan = plan_controlled_shutdown(image, broker_id, self.shutting_down)
        written = await self._write(plan.changes)
        return (ErrorCode.NONE, image, [(t, p) for t, p in plan.moves if written[(t, p.partition)]],
                all(written.values()))

    # ------------------------------------------------------------------------------ ElectLeaders

    async def elect_leaders(self, election_type: ElectionType, partitions: Sequence[Key] | None,
                            timeout_ms: int) -> dict[Key, ElectionOutcome]:
        """Every asked partition's outcome (None: every partition, and those that need no election are
        left out, as Kafka does)."""
        deadline = self.clock.monotonic_ms() + timeout_ms
        keys = list(dict.fromkeys(all_partitions(self.store.image) if partitions is None else partitions))
        results: dict[Key, ElectionOutcome] = {}
        pending = keys
        elected: list[tuple[str, PartitionMetadata]] = []
        for _ in range(ATTEMPTS):
            image, outcomes, changes, written = await self.events.call(
                lambda pending=pending: self._election_step(election_type, pending))
            results.update(outcomes)
            elected += [(t, p) for t, p in changes if written[(t, p.partition)]]
            pending = [k for k, ok in written.items() if not ok]
            if not pending:
                break
            await self._next_image(image, deadline)
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

    async def _election_step(self, election_type: ElectionType, keys: Sequence[Key]) -> tuple[
            MetadataImage, dict[Key, ElectionOutcome], list[tuple[str, PartitionMetadata]], dict[Key, bool]]:
        """The event: decide every partition of ``keys`` on the current image and write the changes;
        (the image decided on, outcomes, changes, which were written)."""
        image = self.store.image
        outcomes: dict[Key, ElectionOutcome] = {}
        changes = []
        for key in keys:
            outcome = outcomes[key] = elect(image, *key, election_type, self.shutting_down)
            if outcome.error == ErrorCode.NONE:
                assert outcome.new is not None
                changes.append((key[0], outcome.new))
        return image, outcomes, changes, await self._write(changes)

    # ------------------------------------------------------------------------ auto rebalance

    async def rebalance(self, percentage: int, timeout_ms: int = 30_000) -> int:
        """``auto.leader.rebalance.enable``: on the controller, a preferred election of the partitions of
        every broker whose imbalance is above ``percentage`` (:func:`imbalanced_partitions`). Returns how
        many partitions moved."""
        async def imbalanced() -> list[Key]:
            if not self.is_controller():
                return []
            return imbalanced_partitions(self.store.image, percentage, self.shutting_down)

        keys = await self.events.call(imbalanced)
        if not keys:
            return 0
        outcomes = await self.elect_leaders(ElectionType.PREFERRED, keys, timeout_ms)
        moved = sum(1 for o in outcomes.values() if o.error == ErrorCode.NONE)
        log.info("auto leader rebalance: %d of %d partitions back on their preferred replica", moved, len(keys))
        return moved

    # ------------------------------------------------------------------------------ reassignment

    async def reassign(self, requests: Sequence[ReassignmentRequest],
                       allow_replication_factor_change: bool = True) -> list[KafkaError | None]:
        """AlterPartitionReassignments: every request's outcome (None: accepted and written)."""
        async def step() -> list[KafkaError | None]:
            return self.reassigner.alter(requests, allow_replication_factor_change)

        return await self.events.call(step)

    # ---------------------------------------------------------------------------------- writing

    async def _write(self, changes: Sequence[tuple[str, PartitionMetadata]]) -> dict[Key, bool]:
        """Write each state conditionally; which were written."""
        if not changes:
            return {}
        loop = asyncio.get_running_loop()
        futures: dict[Key, asyncio.Future] = {}
        for topic, p in changes:
            future = futures[(topic, p.partition)] = loop.create_future()
            if self.alter is None:
                future.set_result(False)
                continue
            try:
                self.alter(topic, p.partition, p, lambda ok, f=future: f.done() or f.set_result(ok))
            except Exception as e:  # ZooKeeper unreachable
                log.warning("partition state of %s-%d not written: %r", topic, p.partition, e)
                if not future.done():
                    future.set_result(False)
        try:
            async with clock_timeout(self.clock, WRITE_WAIT_MS):
                await asyncio.wait(futures.values())
        except TimeoutError:
            pass  # those not answered count as not written
        return {key: future.done() and bool(future.result()) for key, future in futures.items()}

    async def _await_done(self, start: Callable[[Done], None]) -> bool:
        """Start a store operation with an ``on_done(ok)`` callback and wait for it (at most
        :data:`WRITE_WAIT_MS` of the clock)."""
        future = asyncio.get_running_loop().create_future()
        start(lambda ok: future.done() or future.set_result(ok))
        try:
            async with clock_timeout(self.clock, WRITE_WAIT_MS):
                return bool(await future)
        except TimeoutError:
            return False

    # ---------------------------------------------------------------------------------- waiting

    async def await_leaders(self, topics: Collection[str], timeout_ms: int) -> set[str]:
        """Until every partition of ``topics`` has a leader in this broker's metadata (new ones: once the
        controller decided their first state and the store shows it), at most ``timeout_ms`` of the
        clock; returns the topics that still lack one (a topic that is gone lacks nothing)."""
        deadline = self.clock.monotonic_ms() + timeout_ms

        def leaderless() -> set[str]:
            image = self.store.image
            return {name for name in topics if (t := image.topics.get(name)) is not None
                    and any(p.leader < 0 for p in t.partitions)}

        waiting = leaderless()
        while waiting and self.clock.monotonic_ms() < deadline:
            before = self.store.image
            await self._next_image(before, deadline)
            if self.store.image is before:  # timed out
                break
            waiting = leaderless()
        return waiting

    async def _next_image(self, seen: MetadataImage, deadline_ms: int) -> None:
        """Until the store's image is no longer ``seen`` (or the deadline)."""
        if self.store.image is seen:
            await self._wait_change(deadline_ms)

    async def _wait_change(self, deadline_ms: int) -> None:
        remaining = deadline_ms - self.clock.monotonic_ms()
        if remaining <= 0:
            return
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        try:
            async with clock_timeout(self.clock, remaining):
                await asyncio.shield(self._changed)
        except TimeoutError:
            pass

    async def _visible(self, changes: Sequence[tuple[str, PartitionMetadata]], deadline_ms: int) -> None:
        """Until this broker's metadata shows the written leaders (at most until the deadline)."""
        def shown() -> bool:
            topics = self.store.image.topics
            for topic, p in changes:
                t = topics.get(topic)
                if t is None or p.partition >= len(t.partitions):
                    continue
                if t.partitions[p.partition].leader_epoch < p.leader_epoch:
                    return False
            return True

        while not shown() and self.clock.monotonic_ms() < deadline_ms:
            before = self.store.image
            await self._next_image(before, deadline_ms)
            if self.store.image is before:  # timed out (the clock has passed the deadline, or will not move)
                return


__all__ = ["AlterPartitionState", "ControllerDuties", "PartitionController", "UncleanElection"]
