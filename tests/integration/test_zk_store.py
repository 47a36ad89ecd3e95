"""The ZooKeeper metadata store against a real ZooKeeper: Kafka's layout, registration, controller
election with fencing epochs, conditional writes, deletions through the controller, session loss.

Two or three stores stand for brokers, each with its own event loop, the controller's event queue on
it and the partition controller (which carries out deletions), as in a broker; ZooKeeper's watch
callbacks are queued there, and the test runs the loop while it waits. About 15 s, most of it ZooKeeper's start
and two session expiries.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from kazoo.client import KazooClient

from tests.integration.zookeeper import start_zookeeper
from tidelog.cli.zookeeper import ZooKeeperProcess
from tidelog.cluster.controller import Controller
from tidelog.cluster.features import ClusterFeatures, FeatureUpdate, UpgradeType
from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.cluster.zk_store import ZooKeeperSettings, ZooKeeperStore
from tidelog.config import TopicConfig
from tidelog.coordinator.internal_topics import INTERNAL_TOPIC_NAMES
from tidelog.errors import ErrorCode, KafkaError
from tidelog.server.controller_events import ControllerEventManager
from tidelog.server.partition_controller import PartitionController
from tidelog.testing.clock import ManualClock
from tidelog.zookeeper_connect import parse_zookeeper_connect

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("zk_store")]


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperProcess]:
    zk = start_zookeeper(tmp_path_factory.mktemp("zk"))
    yield zk
    zk.stop()


class Node:
    """One store with its own event loop (run while the test waits) and controller queue."""

    def __init__(self, connect: str, broker_id: int, rack: str | None = None, session_ms: int = 4000) -> None:
        self.loop = asyncio.new_event_loop()
        self.events = ControllerEventManager()
        self.events.start(self.loop)
        settings = ZooKeeperSettings(parse_zookeeper_connect("zookeeper.connect", connect), session_ms, 5000,
                                     {"PLAINTEXT": "PLAINTEXT"}, INTERNAL_TOPIC_NAMES)
        self.store = ZooKeeperStore(settings, broker_id, self.loop.call_soon_threadsafe, self.events.put_threadsafe)
        self.clock = ManualClock()
        self.partitions = PartitionController(self.store, self.events, self.clock,
                                              alter=self.store.alter_partition_state,
                                              is_controller=lambda: self.store.is_controller, duties=self.store,
                                              unclean=self._unclean)
        self.store.subscribe(self.partitions.on_metadata_change)
        self.changes: list[tuple] = []
        self.store.subscribe(lambda old, new: self.changes.append((old, new)))
        self.broker = BrokerInfo(broker_id, "127.0.0.1", 9000 + broker_id, rack, (("PLAINTEXT", "127.0.0.1", 9000 + broker_id),))
        self.controller = Controller(self.store, broker_id, TopicConfigs(TopicConfig()),
                                     internal_topics=INTERNAL_TOPIC_NAMES)

    def _unclean(self, image, topic: str) -> bool:
        return self.controller.topic_configs.for_topic(image, topic).unclean_leader_election_enable

    def run(self, coroutine):
        """Run ``coroutine`` on this node's loop (its queue runs meanwhile)."""
        return self.loop.run_until_complete(coroutine)

    def open(self) -> Node:
        """Open the store and run the loop until its image names a controller (an election is an event
        of the queue: the first broker wins it here)."""
        self.store.open(self.broker)
        self.pump_until(lambda: self.store.image.controller_id >= 0)
        return self

    def pump_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async def wait() -> None:
            deadline = time.monotonic() + timeout
            while not predicate():
                assert time.monotonic() < deadline, "timed out waiting for the store"
                await asyncio.sleep(0.02)

        self.loop.run_until_complete(wait())

    def close(self) -> None:
        self.store.close()
        self.loop.run_until_complete(self.events.stop())
        self.loop.close()


def led(name: str, *nodes: Node, timeout: float = 20.0):
    """The topic once every node shows a leader for each of its partitions (the controller decides the first
    ones in its queue: each node's loop runs in turn, the controller's deciding, the others reading)."""
    def shown(node: Node) -> bool:
        t = node.store.image.topics.get(name)
        return t is not None and all(p.leader >= 0 for p in t.partitions)

    deadline = time.monotonic() + timeout
    while not all(shown(node) for node in nodes):
        assert time.monotonic() < deadline, f"timed out waiting for the leaders of {name}"
        for node in nodes:
            node.run(asyncio.sleep(0.02))
    return nodes[0].store.image.topics[name]


@pytest.fixture
def chroot(request: pytest.FixtureRequest, zookeeper: ZooKeeperProcess) -> str:
    return f"{zookeeper.connect}/t/{request.node.name}"


@pytest.fixture
def nodes() -> Iterator[list[Node]]:
    made: list[Node] = []
    yield made
    for node in made:
        node.close()


@pytest.fixture
def raw(zookeeper: ZooKeeperProcess, chroot: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper.connect)
    client.start(10)
    client.chroot = chroot[len(zookeeper.connect):]
    yield client
    client.stop()
    client.close()


def test_registration_election_and_image_in_kafkas_layout(chroot, nodes, raw):
    one = Node(chroot, 1, "r1").open()
    nodes.append(one)
    two = Node(chroot, 2, "r2").open()
    nodes.append(two)
    assert one.store.is_controller and one.store.controller_epoch == 1
    assert not two.store.is_controller
    one.pump_until(lambda: set(one.store.image.brokers) == {1, 2})
    assert two.store.image.controller_id == 1 and set(two.store.image.brokers) == {1, 2}
    assert one.store.image.cluster_id == two.store.image.cluster_id
    assert two.store.image.brokers[1].rack == "r1"
    # Kafka's znodes, read with a plain client under the chroot
    data, stat = raw.get("/brokers/ids/2")
    assert stat.ephemeralOwner != 0
    assert json.loads(data)["endpoints"] == ["PLAINTEXT://127.0.0.1:9002"] and json.loads(data)["rack"] == "r2"
    assert json.loads(raw.get("/controller")[0])["brokerid"] == 1
    assert raw.get("/controller_epoch")[0] == b"1"
    assert json.loads(raw.get("/cluster/id")[0])["id"] == one.store.image.cluster_id


def test_created_topic_reaches_every_broker_with_its_assignment(chroot, nodes, raw):
    one, two, three = (Node(chroot, i).open() for i in (1, 2, 3))
    nodes.extend([one, two, three])
    two.pump_until(lambda: len(two.store.image.brokers) == 3)
    two.controller.create_topic("orders", 6, 3, {"retention.ms": "1000"})  # the assignment; leaders: the controller's
    topic = led("orders", two, one, three)
    for node in (one, three):
        node.pump_until(lambda n=node: "orders" in n.store.image.topics)
        assert node.store.image.topics["orders"] == topic
    assert {p.leader for p in topic.partitions} == {1, 2, 3}
    assert all(sorted(p.replicas) == [1, 2, 3] and p.isr == p.replicas for p in topic.partitions)
    assignment = json.loads(raw.get("/brokers/topics/orders")[0])
    assert assignment["partitions"] == {str(p.partition): list(p.replicas) for p in topic.partitions}
    state = json.loads(raw.get("/brokers/topics/orders/partitions/0/state")[0])
    assert state["leader"] == topic.partitions[0].leader and state["leader_epoch"] == 0
    assert state["controller_epoch"] == 1  # written by the controller (1) in its queue, at its epoch
    assert json.loads(raw.get("/config/topics/orders")[0]) == {"version": 1, "config": {"retention.ms": "1000"}}
    # the subscribers heard of it (this is how replica managers create their logs)
    assert any("orders" in new.topics and "orders" not in old.topics for old, new in three.changes)


def test_two_brokers_creating_one_topic_only_one_wins(chroot, nodes):
    one, two = Node(chroot, 1).open(), Node(chroot, 2).open()
    nodes.extend([one, two])
    one.controller.create_topic("race", 1, 1)
    with pytest.raises(KafkaError) as e:  # two has not heard yet: its check passes, ZooKeeper refuses
        two.controller.create_topic("race", 1, 1)
    assert e.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert two.store.image.topics["race"] == one.store.image.topics["race"]  # the loser knows the winner's topic


def test_two_brokers_ensuring_one_internal_topic_both_get_it(chroot, nodes):
    """An internal topic created on first use by two brokers at once (the first OffsetCommit or
    FindCoordinator on each): the loser answers with the winner's topic, not TOPIC_ALREADY_EXISTS
    (a CI run's first commit failed so)."""
    from tidelog.cluster.controller import NewTopic

    one, two = Node(chroot, 1).open(), Node(chroot, 2).open()
    nodes.extend([one, two])
    new = NewTopic("__consumer_offsets", 2, 1, {"cleanup.policy": "compact"}, internal=True)
    won = one.controller.ensure_topic(new)
    assert "__consumer_offsets" not in two.store.image.topics  # two has not heard yet
    assert two.controller.ensure_topic(new) == won


def test_partition_state_changes_only_at_the_version_read(chroot, nodes, raw):
    one, two = Node(chroot, 1).open(), Node(chroot, 2).open()
    nodes.extend([one, two])
    one.pump_until(lambda: len(one.store.image.brokers) == 2)
    one.controller.create_topic("fenced", 1, 2)
    two.pump_until(lambda: "fenced" in two.store.image.topics)
    topic = led("fenced", one, two)
    p = topic.partitions[0]
    moved = replace(p, leader=p.replicas[1], leader_epoch=1, isr=(p.replicas[1],))
    one.store.publish(one.store.image.with_topic(replace(topic, partitions=(moved,))))
    assert json.loads(raw.get("/brokers/topics/fenced/partitions/0/state")[0])["leader_epoch"] == 1
    # two still holds the image at partition epoch 0: its write must fail, not overwrite epoch 1
    stale = two.store.image.topics["fenced"]
    other = replace(stale.partitions[0], leader=stale.partitions[0].replicas[0], leader_epoch=1)
    with pytest.raises(KafkaError) as e:
        two.store.publish(two.store.image.with_topic(replace(stale, partitions=(other,))))
    assert e.value.code == ErrorCode.NOT_CONTROLLER
    state = json.loads(raw.get("/brokers/topics/fenced/partitions/0/state")[0])
    assert state["leader"] == p.replicas[1]
    two.pump_until(lambda: two.store.image.topics["fenced"].partitions[0].partition_epoch == 1)


def test_deleted_topic_goes_through_the_controller(chroot, nodes, raw):
    one, two = Node(chroot, 1).open(), Node(chroot, 2).open()
    nodes.extend([one, two])
    two.controller.create_topic("doomed", 2, 1, {"cleanup.policy": "compact"})
    one.pump_until(lambda: "doomed" in one.store.image.topics)
    two.controller.delete_topic("doomed")
    assert "doomed" not in two.store.image.topics  # at once for the requester
    one.pump_until(lambda: not raw.exists("/brokers/topics/doomed")  # the controller (1) carries it out
                   and not raw.exists("/config/topics/doomed") and raw.get_children("/admin/delete_topics") == [])
    two.pump_until(lambda: "doomed" not in two.store.image.topics and two.events.idle)
    # the name can be used again
    two.controller.create_topic("doomed", 1, 1)


def test_controller_moves_when_its_broker_goes_and_the_epoch_grows(chroot, nodes, raw):
    one, two, three = (Node(chroot, i).open() for i in (1, 2, 3))
    nodes.extend([two, three])
    assert one.store.is_controller
    one.close()
    two.pump_until(lambda: two.store.image.controller_id in (2, 3) and 1 not in two.store.image.brokers)
    three.pump_until(lambda: three.store.image.controller_id == two.store.image.controller_id)
    winner = two if two.store.is_controller else three
    assert winner.store.controller_epoch == 2 and raw.get("/controller_epoch")[0] == b"2"
    assert [n.store.is_controller for n in (two, three)].count(True) == 1


def test_a_live_broker_id_is_refused(chroot, nodes):
    nodes.append(Node(chroot, 1).open())
    started = time.monotonic()
    refused = Node(chroot, 1, session_ms=1000)
    with pytest.raises(ValueError, match="broker.id 1 is already registered"):
        refused.open()
    refused.close()
    assert time.monotonic() - started < 10


def test_a_broker_whose_session_expires_registers_again(zookeeper, chroot, nodes, raw):
    one, two = Node(chroot, 1).open(), Node(chroot, 2, session_ms=2000).open()
    nodes.extend([one, two])
    _, before = raw.get("/brokers/ids/2")
    # expire two's session the classic way: another client takes the session over and closes it
    session_id, password = two.store.client.client_id
    thief = KazooClient(hosts=zookeeper.connect, client_id=(session_id, password))
    thief.start(10)
    thief.stop()
    thief.close()
    two.pump_until(lambda: raw.exists("/brokers/ids/2") is not None
                   and raw.exists("/brokers/ids/2").ephemeralOwner != before.ephemeralOwner, timeout=20)
    one.pump_until(lambda: set(one.store.image.brokers) == {1, 2}, timeout=10)
    assert one.store.is_controller and not two.store.is_controller


def test_without_zookeeper_metadata_cannot_change_and_nothing_waits(tmp_path, nodes):
    own = start_zookeeper(tmp_path / "own-zk")  # this test stops its ZooKeeper: not the shared one
    try:
        node = Node(own.connect, 1, session_ms=10_000).open()
        nodes.append(node)
        own.stop()
        node.pump_until(lambda: not node.store.client.connected)
        started = time.monotonic()
        with pytest.raises(KafkaError) as e:
            node.controller.create_topic("later", 1, 1)
        # refused at once, not after the 10 s session timeout (5 s of slack for a loaded 2-core machine)
        assert e.value.code == ErrorCode.REQUEST_TIMED_OUT and time.monotonic() - started < 5
        assert "later" not in node.store.image.topics
        own.start()  # same port and data: the session survives a short outage
        node.pump_until(lambda: node.store.client.connected, timeout=20)
        node.controller.create_topic("later", 1, 1)
        assert "later" in node.store.image.topics
        # the controller seat is decided again as an event of the controller's queue
        node.pump_until(lambda: node.store.is_controller, timeout=20)
    finally:
        own.stop()


def test_client_quotas_in_kafkas_layout_reach_every_broker_and_keep_scram_keys(chroot, nodes, raw):
    from tidelog.cluster.client_quota import QuotaOp, entity

    one = Node(chroot, 1).open()
    nodes.append(one)
    two = Node(chroot, 2).open()
    nodes.append(two)
    # the SASL side's credentials share the user's znode
    raw.create("/config/users/CN%3Dsvc", json.dumps({"version": 1, "config": {"SCRAM-SHA-256": "salt=..."}}).encode(),
               makepath=True)
    results = one.controller.alter_client_quotas([
        ([("user", "CN=svc")], [QuotaOp("producer_byte_rate", 1024.0), QuotaOp("request_percentage", 12.5)]),
        ([("user", "CN=svc"), ("client-id", None)], [QuotaOp("consumer_byte_rate", 2048.0)]),
        ([("client-id", None)], [QuotaOp("producer_byte_rate", 100.0)]),
    ])
    assert all(r.error is None for r in results)
    expected = {entity(user="CN=svc"): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
                entity(user="CN=svc", client_id=None): {"consumer_byte_rate": 2048.0},
                entity(client_id=None): {"producer_byte_rate": 100.0}}
    two.pump_until(lambda: two.store.image.client_quotas == expected)
    assert json.loads(raw.get("/config/users/CN%3Dsvc")[0])["config"] == {
        "SCRAM-SHA-256": "salt=...", "producer_byte_rate": "1024", "request_percentage": "12.5"}
    assert json.loads(raw.get("/config/users/CN%3Dsvc/clients/<default>")[0])["config"] == {
        "consumer_byte_rate": "2048"}
    assert json.loads(raw.get("/config/clients/<default>")[0])["config"] == {"producer_byte_rate": "100"}
    changes = sorted(raw.get_children("/config/changes"))
    assert all(c.startswith("config_change_") for c in changes)
    assert {json.loads(raw.get(f"/config/changes/{c}")[0])["entity_path"] for c in changes} == {
        "users/CN%3Dsvc", "users/CN%3Dsvc/clients/<default>", "clients/<default>"}
    # removal keeps the credentials; a change written by another tool reaches the brokers too
    two.controller.alter_client_quotas([([("user", "CN=svc")], [QuotaOp("producer_byte_rate", None),
                                                                QuotaOp("request_percentage", None)])])
    assert json.loads(raw.get("/config/users/CN%3Dsvc")[0])["config"] == {"SCRAM-SHA-256": "salt=..."}
    raw.create("/config/clients/app", json.dumps({"version": 1, "config": {"consumer_byte_rate": "5"}}).encode())
    one.pump_until(lambda: one.store.image.client_quotas.get(entity(client_id="app")) == {"consumer_byte_rate": 5.0})
    assert entity(user="CN=svc") not in one.store.image.client_quotas


def test_acls_in_kafkas_layout_reach_every_broker(chroot, nodes, raw):
    from tidelog.security.acl import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        PatternType,
    )
    from tidelog.security.acl import ResourceType as Res

    one, two = Node(chroot, 1).open(), Node(chroot, 2).open()
    nodes.extend([one, two])
    read = AclBinding(Res.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                      AclPermissionType.ALLOW)
    deny = AclBinding(Res.GROUP, "billing-", PatternType.PREFIXED, "User:bob", "10.0.0.7", AclOperation.ALL,
                      AclPermissionType.DENY)
    assert one.controller.create_acls([read, deny]) == [None, None]
    two.pump_until(lambda: two.store.image.acls == {read, deny})
    assert json.loads(raw.get("/kafka-acl/Topic/orders")[0]) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]}
    assert json.loads(raw.get("/kafka-acl-extended/prefixed/Group/billing-")[0])["acls"] == [
        {"principal": "User:bob", "permissionType": "Deny", "operation": "All", "host": "10.0.0.7"}]
    (literal_change,) = raw.get_children("/kafka-acl-changes")
    assert literal_change.startswith("acl_changes_") and raw.get(f"/kafka-acl-changes/{literal_change}")[0] == \
        b"TOPIC:orders"
    (extended_change,) = raw.get_children("/kafka-acl-extended-changes")
    assert json.loads(raw.get(f"/kafka-acl-extended-changes/{extended_change}")[0]) == {
        "version": 1, "resourceType": "GROUP", "name": "billing-", "patternType": "PREFIXED"}
    # what kafka-acls.sh --authorizer-properties zookeeper.connect=... writes is seen too
    raw.create("/kafka-acl/Cluster/kafka-cluster", json.dumps({"version": 1, "acls": [
        {"principal": "User:ops", "permissionType": "Allow", "operation": "IdempotentWrite", "host": "*"}]}).encode(),
        makepath=True)
    raw.create("/kafka-acl-changes/acl_changes_", b"Cluster:kafka-cluster", sequence=True)
    cluster = AclBinding(Res.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:ops", "*",
                         AclOperation.IDEMPOTENT_WRITE, AclPermissionType.ALLOW)
    one.pump_until(lambda: cluster in one.store.image.acls)
    (removed,) = two.controller.delete_acls([AclBindingFilter(principal="User:alice")])
    assert removed == [read]
    one.pump_until(lambda: one.store.image.acls == {deny, cluster})
    assert not raw.exists("/kafka-acl/Topic/orders")


def test_finalized_feature_levels_in_kafkas_feature_znode_reach_every_broker(chroot, nodes, raw):
    one = Node(chroot, 1).open()
    nodes.append(one)
    two = Node(chroot, 2).open()
    nodes.append(two)
    initial = {"metadata.version": 33, "share.version": 0}
    features_one, features_two = ClusterFeatures(one.store, initial, 1), ClusterFeatures(two.store, initial, 2)
    assert features_two.finalized().epoch == 1 and not features_two.share_groups_enabled()
    features_one.update([FeatureUpdate("share.version", 1)], validate_only=False)
    two.pump_until(lambda: features_two.share_groups_enabled())
    assert features_two.finalized().epoch == 2
    data = json.loads(raw.get("/feature")[0])
    assert data["features"]["share.version"]["max_version_level"] == 1 and data["epoch"] == 2
    # the other broker changes it back at the version it read: every broker sees level 0, epoch 3
    features_two.update([FeatureUpdate("share.version", 0, UpgradeType.SAFE_DOWNGRADE)], validate_only=False)
    one.pump_until(lambda: not features_one.share_groups_enabled())
    assert features_one.finalized().epoch == 3 and raw.get("/feature")[1].version == 1
