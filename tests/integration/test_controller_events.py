"""The controller's one event queue against a real ZooKeeper: every partition-state decision is made
there (elections after a broker loss, unclean or not, reassignment completion, controlled shutdown),
and what ZooKeeper's threads hand over is applied on the loop, in order, between the controller's
events, never during one.

Brokers are ZooKeeper stores with their partition controllers (``Node`` of test_zk_store: a loop, the
queue on it, a ManualClock); a broker is lost by closing its store (its registration goes at once).
About 10 s, most of it ZooKeeper's start.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import replace

import pytest

from tests.integration import test_zk_store
from tests.integration.test_zk_store import Node
from tidelog.cluster.controller import NewTopic
from tidelog.cluster.reassignment import ReassignmentRequest
from tidelog.errors import ErrorCode
from tidelog.server.partition_controller import DUTY_RETRY_MS

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("zk_store")]

# test_zk_store's fixtures: a ZooKeeper for the module, a chroot per test, the nodes made, a plain client
zookeeper, chroot, nodes, raw = test_zk_store.zookeeper, test_zk_store.chroot, test_zk_store.nodes, test_zk_store.raw


def _brokers(chroot_path: str, nodes_list: list[Node], ids=(1, 2, 3)) -> list[Node]:
    made = []
    for i in ids:
        node = Node(chroot_path, i).open()
        nodes_list.append(node)
        made.append(node)
    made[0].pump_until(lambda: len(made[0].store.image.brokers) == len(ids))
    assert made[0].store.is_controller
    return made


def _create(node: Node, name: str, *assignments: tuple[int, ...], configs=None):
    (topic,) = node.controller.create_topics([NewTopic(name, len(assignments), len(assignments[0]), configs,
                                                       assignments=assignments)])
    assert not isinstance(topic, Exception), topic
    return test_zk_store.led(name, node)  # once the controller's queue decided the first leaders


def _state(raw_client, topic: str, partition: int = 0) -> dict:
    return json.loads(raw_client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])


def _lose(node: Node, nodes_list: list[Node]) -> None:
    nodes_list.remove(node)
    node.close()


def test_a_lost_broker_s_partitions_are_elected_from_the_isr(chroot, nodes, raw):
    one, two, three = _brokers(chroot, nodes)
    _create(one, "lost", (2, 3, 1), (3, 2, 1), (2, 1, 3))
    _lose(two, nodes)
    one.pump_until(lambda: 2 not in one.store.image.brokers
                   and one.store.image.topics["lost"].partitions[2].leader == 1)
    parts = one.store.image.topics["lost"].partitions
    # the dead leader is replaced by the first live ISR member in assignment order, leader epoch + 1
    assert [(p.leader, p.leader_epoch, p.isr) for p in parts] == [(3, 1, (3, 1)), (3, 0, (3, 1)), (1, 1, (1, 3))]
    state = _state(raw, "lost", 0)
    assert (state["controller_epoch"], state["leader"], state["leader_epoch"], state["isr"]) == (1, 3, 1, [3, 1])
    three.pump_until(lambda: "lost" in three.store.image.topics
                     and three.store.image.topics["lost"].partitions[0].leader == 3)


def test_an_election_whose_write_failed_is_tried_again_without_a_new_image(chroot, nodes, raw):
    one, two, _ = _brokers(chroot, nodes)
    _create(one, "retried", (2, 1, 3))
    real_alter = one.partitions.alter
    failed = []

    def unreachable_once(topic, partition, new, on_done):
        if not failed:  # as with ZooKeeper unreachable for a moment: nothing written, and no new image comes
            failed.append(new)
            on_done(False)
            return
        real_alter(topic, partition, new, on_done)

    one.partitions.alter = unreachable_once
    _lose(two, nodes)
    # the retry is a timer of the broker's Clock: it comes due when the clock moves, not in real time
    one.pump_until(lambda: bool(failed) and one.events.idle and one.clock.pending_timers() == 1)
    one.clock.advance(DUTY_RETRY_MS)
    one.pump_until(lambda: one.store.image.topics["retried"].partitions[0].leader == 1, timeout=20)
    assert len(failed) == 1 and failed[0].leader == 1
    assert _state(raw, "retried")["leader_epoch"] == 1


def test_unclean_election_is_off_until_the_topic_allows_it(chroot, nodes, raw):
    one, two, _ = _brokers(chroot, nodes)
    topic = _create(one, "unclean", (2, 3))
    p = topic.partitions[0]
    one.store.publish(one.store.image.with_topic(replace(topic, partitions=(replace(p, isr=(2,)),))))  # 3 fell behind
    _lose(two, nodes)
    one.pump_until(lambda: one.store.image.topics["unclean"].partitions[0].leader == -1)
    offline = one.store.image.topics["unclean"].partitions[0]
    assert (offline.leader_epoch, offline.isr) == (1, (2,))  # offline: the ISR waits for 2 to come back
    one.controller.set_topic_configs("unclean", {"unclean.leader.election.enable": "true"})
    one.pump_until(lambda: one.store.image.topics["unclean"].partitions[0].leader == 3)
    elected = one.store.image.topics["unclean"].partitions[0]
    assert (elected.leader_epoch, elected.isr) == (2, (3,))
    assert _state(raw, "unclean")["isr"] == [3]


def test_a_reassignment_completes_once_its_targets_are_in_the_isr(chroot, nodes, raw):
    one, two, _ = _brokers(chroot, nodes)
    _create(one, "moving", (1, 2))
    two.pump_until(lambda: "moving" in two.store.image.topics)
    # started in two's queue (AlterPartitionReassignments may arrive at any broker)
    assert two.run(two.partitions.reassign([ReassignmentRequest("moving", 0, (2, 3))])) == [None]
    one.pump_until(lambda: one.store.image.topics["moving"].partitions[0].adding_replicas == (3,))
    started = one.store.image.topics["moving"].partitions[0]
    assert (started.replicas, started.removing_replicas, started.isr) == ((2, 3, 1), (1,), (1, 2))
    # the leader (1) adds the caught-up replica 3 to the ISR, as replication does
    written = []
    one.store.alter_partition_state("moving", 0, replace(started, isr=(1, 2, 3)), written.append)
    one.pump_until(lambda: written == [True])
    one.pump_until(lambda: not one.store.image.topics["moving"].partitions[0].reassigning)
    done = one.store.image.topics["moving"].partitions[0]
    # 1 was leading and leaves: the first target replica in the ISR leads, leader epoch + 1
    assert (done.replicas, done.isr, done.leader, done.leader_epoch) == ((2, 3), (2, 3), 2, 1)
    assignment = json.loads(raw.get("/brokers/topics/moving")[0])
    assert assignment["partitions"] == {"0": [2, 3]}
    assert not assignment.get("adding_replicas") and not assignment.get("removing_replicas")


def test_controlled_shutdown_moves_leadership_and_answers_once_visible(chroot, nodes, raw):
    one, two, _ = _brokers(chroot, nodes)
    _create(one, "drain", (2, 1, 3), (2, 3), (1, 2))
    two.pump_until(lambda: "drain" in two.store.image.topics)
    error, remaining = one.run(one.partitions.controlled_shutdown(2, timeout_ms=20_000))
    assert (error, remaining) == (ErrorCode.NONE, [])
    parts = one.store.image.topics["drain"].partitions  # already shown when the answer comes
    assert [(p.leader, p.leader_epoch, p.isr) for p in parts] == [(1, 1, (1, 3)), (3, 1, (3,)), (1, 0, (1,))]
    assert one.partitions.shutting_down == {2}
    # a broker that is not the controller refuses
    assert two.run(two.partitions.controlled_shutdown(3, timeout_ms=1000)) == (ErrorCode.NOT_CONTROLLER, [])
    assert _state(raw, "drain", 1)["leader"] == 3
    _lose(two, nodes)
    one.pump_until(lambda: 2 not in one.store.image.brokers)
    assert one.partitions.shutting_down == set()


def test_zookeeper_threads_only_enqueue_and_events_apply_on_the_loop_in_order(chroot, nodes, raw):
    (one,) = _brokers(chroot, nodes, ids=(1,))
    loop_thread = threading.get_ident()
    callback_threads: list[int] = []
    applied: list[tuple[int, int]] = []

    def from_kazoo(i: int):
        def callback(_result) -> None:  # kazoo's thread
            callback_threads.append(threading.get_ident())
            one.events.put_threadsafe(lambda: applied.append((i, threading.get_ident())))
        return callback

    for i in range(20):
        raw.get_async("/brokers/ids").rawlink(from_kazoo(i))
    one.pump_until(lambda: len(applied) == 20)
    assert [i for i, _ in applied] == list(range(20))
    assert {t for _, t in applied} == {loop_thread} and loop_thread not in callback_threads

    # An image read after a watch is an event too: it waits while the controller's event runs.
    gate = one.loop.create_future()

    async def long_event() -> None:
        await gate

    one.events.put(long_event)
    raw.create("/config/topics/watched", json.dumps({"version": 1, "config": {}}).encode())
    raw.create("/brokers/topics/watched", json.dumps({"version": 2, "partitions": {"0": [1]}}).encode())
    one.pump_until(lambda: not one.events.idle and len(one.events._queue) >= 1, timeout=20)
    assert "watched" not in one.store.image.topics  # read, queued, not applied during the event
    gate.set_result(None)
    one.pump_until(lambda: "watched" in one.store.image.topics)
    one.run(one.events.wait_idle())
    assert one.events.idle


def test_an_event_that_fails_does_not_stop_the_queue(chroot, nodes):
    (one,) = _brokers(chroot, nodes, ids=(1,))
    ran = []

    def broken() -> None:
        raise RuntimeError("a bug in one event")

    one.events.put(broken)
    one.events.put(lambda: ran.append(1))

    async def failing() -> None:
        raise ValueError("answered to the caller")

    async def call() -> None:
        with pytest.raises(ValueError):
            await one.events.call(failing)
        await one.events.wait_idle()

    one.run(call())
    assert ran == [1]
    assert asyncio.iscoroutinefunction(one.partitions.elect_leaders)


def test_the_controller_election_is_an_event_of_the_queue(chroot, nodes, raw):
    """A vacant /controller seen by the store's reader thread only queues the election: it runs on the
    loop, in turn, behind the events queued before it, and its outcome is applied there."""
    one = Node(chroot, 1)
    nodes.append(one)
    gate = one.loop.create_future()
    one.events.put(lambda: gate)  # an event that holds the queue until the gate opens
    one.store.open(one.broker)
    assert one.store.image.controller_id == -1 and not one.store.is_controller
    one.run(asyncio.sleep(0.5))  # the loop runs: the election waits behind the held event
    assert not one.store.is_controller and raw.exists("/controller") is None
    gate.set_result(None)
    one.pump_until(lambda: one.store.is_controller and one.store.image.controller_id == 1)
    assert one.store.controller_epoch == 1 and json.loads(raw.get("/controller")[0])["brokerid"] == 1
    # a broker that finds the seat taken queues nothing that changes it
    two = Node(chroot, 2).open()
    nodes.append(two)
    assert two.store.image.controller_id == 1 and not two.store.is_controller
    assert raw.get("/controller_epoch")[0] == b"1"
