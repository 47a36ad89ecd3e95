"""PartitionController: ControlledShutdown and ElectLeaders decided in the controller's event queue and
written as conditional partition-state writes (a conflicting writer wins; the election is decided again
from the new state)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from tests.unit.cluster.test_shutdown_plan import _image, _p
from tidelog.cluster.leader_election import ElectionType
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata
from tidelog.errors import ErrorCode
from tidelog.server.controller_events import ControllerEventManager
from tidelog.server.partition_controller import DUTY_RETRY_MS, WRITE_WAIT_MS, PartitionController
from tidelog.testing.clock import ManualClock


class _ConditionalStore:
    """The store's contract in memory: a state is written only at the version it was read at."""

    def __init__(self, image: MetadataImage, is_controller: bool = True) -> None:
        self.image = image
        self.controller = is_controller
        self.writes: list[PartitionMetadata] = []

    def alter(self, topic: str, partition: int, new: PartitionMetadata, on_done) -> None:
        t = self.image.topics[topic]
        current = t.partitions[partition]
        ok = current.partition_epoch == new.partition_epoch
        if ok:
            self.writes.append(new)
            self._set(topic, replace(new, partition_epoch=current.partition_epoch + 1))
        asyncio.get_running_loop().call_soon(on_done, ok)

    def _set(self, topic: str, p: PartitionMetadata) -> None:
        t = self.image.topics[topic]
        parts = list(t.partitions)
        parts[p.partition] = p
        self.image = self.image.with_topic(replace(t, partitions=tuple(parts)))


def _controller(store, alter, is_controller) -> PartitionController:
    return PartitionController(store, ControllerEventManager(), ManualClock(), alter=alter, is_controller=is_controller)


def _run(changes: PartitionController, call):
    """``call()``'s coroutine on a new loop, with the controller's queue running on it."""
    async def main():
        changes.events.start()
        try:
            return await call()
        finally:
            await changes.events.stop()

    return asyncio.run(main())


def test_controlled_shutdown_is_the_controllers_and_answers_what_remains() -> None:
    store = _ConditionalStore(_image([_p(0, 1, (1, 2, 3), (1, 2, 3)), _p(1, 1, (1, 2), (1,)),
                                      _p(2, 2, (2, 1), (2, 1))]))
    changes = _controller(store, store.alter, lambda: store.controller)  # type: ignore[arg-type]

    error, remaining = _run(changes, lambda: changes.controlled_shutdown(1, timeout_ms=1000))
    assert error == ErrorCode.NONE and remaining == [("t", 1)]
    parts = store.image.topics["t"].partitions
    assert (parts[0].leader, parts[0].isr) == (2, (2, 3)) and parts[2].isr == (2,)
    assert changes.shutting_down == {1}
    # a broker in controlled shutdown is not elected preferred leader
    assert _run(changes, lambda: changes.elect_leaders(ElectionType.PREFERRED, [("t", 0)], 100))[("t", 0)].error \
        == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    changes.on_metadata_change(store.image, replace(store.image, brokers={2: store.image.brokers[2]}))
    assert changes.shutting_down == set()
    store.controller = False
    assert _run(changes, lambda: changes.controlled_shutdown(2)) == (ErrorCode.NOT_CONTROLLER, [])
    store.controller = True
    assert _run(changes, lambda: changes.controlled_shutdown(7)) == (ErrorCode.BROKER_NOT_AVAILABLE, [])


def test_a_conflicting_write_wins_and_the_election_is_decided_again() -> None:
    store = _ConditionalStore(_image([_p(0, 2, (1, 2), (1, 2)), _p(1, 1, (1, 2), (1, 2))]))
    real_alter = store.alter
    raced = []

    def racing_alter(topic, partition, new, on_done):
        if not raced:  # the leader changes the ISR just before the election's write lands
            raced.append(True)
            store._set(topic, replace(store.image.topics[topic].partitions[partition], isr=(2, 1),
                                      partition_epoch=new.partition_epoch + 1))
        real_alter(topic, partition, new, on_done)

    changes = _controller(store, racing_alter, lambda: True)  # type: ignore[arg-type]
    results = _run(changes, lambda: changes.elect_leaders(ElectionType.PREFERRED, [("t", 0), ("t", 1), ("x", 0)], 1000))
    assert {k: o.error for k, o in results.items()} == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED, ("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert len(store.writes) == 1 and store.writes[0].isr == (2, 1)  # decided again from the new state
    assert store.image.topics["t"].partitions[0].leader == 1
    # every partition (a null topic list): those needing no election are left out
    assert _run(changes, lambda: changes.elect_leaders(ElectionType.PREFERRED, None, 1000)) == {}


def test_a_single_node_needs_no_writes() -> None:
    store = _ConditionalStore(_image([_p(0, 1, (1,), (1,))], live=(1,)))
    changes = _controller(store, None, lambda: True)  # type: ignore[arg-type]
    for kind in ElectionType:
        results = _run(changes, lambda kind=kind: changes.elect_leaders(kind, [("t", 0)], 1000))
        assert results[("t", 0)].error == ErrorCode.ELECTION_NOT_NEEDED


def test_rebalance_runs_on_the_controller_only() -> None:
    store = _ConditionalStore(_image([_p(0, 2, (1, 2), (1, 2)), _p(1, 2, (2, 1), (1, 2))], live=(1, 2)))
    changes = _controller(store, store.alter, lambda: store.controller)  # type: ignore[arg-type]
    store.controller = False
    assert _run(changes, lambda: changes.rebalance(10)) == 0 and not store.writes
    store.controller = True
    assert _run(changes, lambda: changes.rebalance(10)) == 1
    assert [p.leader for p in store.image.topics["t"].partitions] == [1, 2]
    assert _run(changes, lambda: changes.rebalance(10)) == 0


class _Duties:
    """The controller's duties of a store that has nothing to delete or complete (elections only)."""

    is_controller = True
    pending_deletions: tuple[str, ...] = ()

    def delete_topics(self, names, on_done) -> None:
        raise AssertionError("nothing to delete")

    def complete_reassignment(self, topic, done, on_done) -> None:
        raise AssertionError("nothing to complete")


def test_a_failed_duty_is_tried_again_when_the_clock_says() -> None:
    """An election whose write failed (ZooKeeper unreachable for a moment: no new image comes) is tried
    again after DUTY_RETRY_MS of the broker's Clock, not of real time."""
    store = _ConditionalStore(_image([_p(0, 2, (2, 1), (2, 1))], live=(1, 3)))  # the leader 2 is gone
    failed: list[PartitionMetadata] = []

    def unreachable_once(topic, partition, new, on_done) -> None:
        if not failed:
            failed.append(new)
            asyncio.get_running_loop().call_soon(on_done, False)
            return
        store.alter(topic, partition, new, on_done)

    clock = ManualClock()
    changes = PartitionController(store, ControllerEventManager(), clock, alter=unreachable_once,  # type: ignore[arg-type]
                                  is_controller=lambda: True, duties=_Duties())

    async def scenario() -> None:
        changes.on_metadata_change(store.image, store.image)
        await changes.events.wait_idle()
        assert len(failed) == 1 and not store.writes
        await asyncio.sleep(0.05)  # real time passes: nothing is tried again
        await changes.events.wait_idle()
        assert not store.writes and clock.pending_timers() == 1
        clock.advance(DUTY_RETRY_MS - 1)
        await asyncio.sleep(0.01)
        await changes.events.wait_idle()
        assert not store.writes
        clock.advance(1)
        for _ in range(100):
            await asyncio.sleep(0.01)
            await changes.events.wait_idle()
            if store.writes:
                break
        assert [(w.leader, w.leader_epoch, w.isr) for w in store.writes] == [(1, 4, (1,))]
        assert store.image.topics["t"].partitions[0].leader == 1

    _run(changes, scenario)


def test_a_write_zookeeper_never_answers_holds_the_queue_until_the_clock_ends_the_wait() -> None:
    store = _ConditionalStore(_image([_p(0, 2, (1, 2), (1, 2))], live=(1, 2)))
    unanswered: list[PartitionMetadata] = []
    clock = ManualClock()
    changes = PartitionController(store, ControllerEventManager(), clock,
                                  alter=lambda topic, partition, new, on_done: unanswered.append(new),
                                  is_controller=lambda: True)

    async def scenario() -> None:
        election = asyncio.ensure_future(changes.elect_leaders(ElectionType.PREFERRED, [("t", 0)], 5_000))
        for _ in range(50):
            await asyncio.sleep(0.01)
            if unanswered:
                break
        await asyncio.sleep(0.05)
        assert len(unanswered) == 1 and not election.done() and not changes.events.idle
        clock.advance(WRITE_WAIT_MS)  # the event gives up on the answer: not written; past the request's
        # timeout too, so the next attempt is at once (there is no new image to wait for)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if len(unanswered) == 2:
                break
        assert len(unanswered) == 2 and not election.done()
        election.cancel()

    _run(changes, scenario)
