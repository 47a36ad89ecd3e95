"""Cluster mode with a real ZooKeeper and three real ``tidelog serve`` processes: every broker is
listed, replicas of a new topic spread over the brokers, each broker hosts what it is assigned, and
the controller moves when its broker dies. About 20 s (ZooKeeper and three brokers start once; the
controller failover waits out a 2 s ZooKeeper session).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewPartitions, NewTopic

from tidelog.testing import BrokerProcess
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

CHROOT = "/tidelog-test"
SESSION_MS = 6000  # ZooKeeper sessions: 2 s expired under load (a busy broker missing its heartbeats)


# The module's cluster (conftest.py), restored after each test (a failing test fails alone: cluster_guard.py).
CLUSTER = {"chroot": CHROOT, "session_ms": SESSION_MS, "per_broker": {i: {"broker.rack": f"rack-{i}"} for i in (1, 2, 3)}}
CLUSTER_RESTORED = True


def topic_on(cluster: LocalCluster, broker_id: int, name: str, partitions: int):
    """The topic as ``broker_id`` describes it, once it knows all its partitions."""
    admin = cluster.admin(broker_id)

    def described():
        topic = admin.list_topics(name, timeout=10).topics[name]
        return topic if topic.error is None and len(topic.partitions) == partitions else None

    return wait_for(described, what=f"{name} on broker {broker_id}")


def partition_dirs(broker: BrokerProcess, topic: str) -> set[int]:
    return {int(p.name.rpartition("-")[2]) for p in broker.data_dir.glob(f"{topic}-*") if p.is_dir()}


def test_every_broker_lists_every_broker_and_the_same_controller(cluster):
    controller = cluster.controller()
    for broker_id in (1, 2, 3):
        admin = cluster.admin(broker_id)
        # the first broker hears of the last one through a ZooKeeper watch, a moment after it registered
        metadata = wait_for(lambda a=admin: (m := a.list_topics(timeout=10)) and len(m.brokers) == 3 and m,
                            what="three brokers")
        assert metadata.controller_id == controller
        assert {b.port for b in metadata.brokers.values()} == {b.port for b in cluster.brokers.values()}
        described = admin.describe_cluster().result(10)
        assert sorted(n.id for n in described.nodes) == [1, 2, 3]
        assert described.controller.id == controller
        assert {n.rack for n in described.nodes} == {"rack-1", "rack-2", "rack-3"}
    assert sorted(cluster.zk.get_children("/brokers/ids")) == ["1", "2", "3"]


def test_a_topic_with_three_replicas_spreads_them_and_writes_kafkas_layout(cluster):
    admin = cluster.admin(2)
    admin.create_topics([NewTopic("spread", 6, 3)])["spread"].result(10)
    topic = topic_on(cluster, 3, "spread", 6)
    for p in topic.partitions.values():
        assert sorted(p.replicas) == [1, 2, 3] and p.leader == p.replicas[0] and sorted(p.isrs) == [1, 2, 3]
    assert Counter(p.leader for p in topic.partitions.values()) == {1: 2, 2: 2, 3: 2}
    for broker in cluster.brokers.values():  # every broker hosts every partition it is a replica of
        assert wait_for(lambda b=broker: partition_dirs(b, "spread") == set(range(6)), what="logs")
    assignment = json.loads(cluster.zk.get("/brokers/topics/spread")[0])["partitions"]
    assert {int(k): v for k, v in assignment.items()} == {i: p.replicas for i, p in topic.partitions.items()}


def test_manual_replica_assignments_are_kept_on_create_and_on_adding_partitions(cluster):
    admin = cluster.admin(1)
    admin.create_topics([NewTopic("manual", num_partitions=2, replica_assignment=[[3, 1], [2, 3]])])["manual"].result(10)
    assert cluster.assignment("manual") == {0: [3, 1], 1: [2, 3]}
    assert cluster.state("manual", 0)["leader"] == 3 and cluster.state("manual", 1)["leader"] == 2
    admin.create_partitions([NewPartitions("manual", 3, replica_assignment=[[1, 2]])])["manual"].result(10)
    wait_for(lambda: cluster.assignment("manual") == {0: [3, 1], 1: [2, 3], 2: [1, 2]}, what="partition 2")
    assert wait_for(lambda: partition_dirs(cluster.brokers[3], "manual") == {0, 1}, what="logs on broker 3")


def test_each_broker_hosts_and_leads_only_its_partitions(cluster):
    admin = cluster.admin(1)  # kept: a destroyed client fails its pending futures
    admin.create_topics([NewTopic("single", 3, 1)])["single"].result(10)
    topic = topic_on(cluster, 2, "single", 3)
    leaders = {i: p.leader for i, p in topic.partitions.items()}
    assert sorted(leaders.values()) == [1, 2, 3]
    for broker_id, broker in cluster.brokers.items():
        expected = {i for i, leader in leaders.items() if leader == broker_id}
        assert wait_for(lambda b=broker, e=expected: partition_dirs(b, "single") == e, what="logs")
    # a producer and a consumer find each partition's leader by themselves
    producer = Producer({"bootstrap.servers": cluster.bootstrap(1), "acks": 1})
    for i in range(30):
        producer.produce("single", f"v{i}".encode(), partition=i % 3)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(3), "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition("single", p, 0) for p in range(3)])
    seen = []
    deadline = time.monotonic() + 15
    while len(seen) < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append((message.partition(), message.value()))
    consumer.close()
    assert sorted(seen) == sorted((i % 3, f"v{i}".encode()) for i in range(30))


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_group_commits_through_the_leader_of_its_offsets_partition(cluster, protocol):
    """FindCoordinator sends the group to the leader of its __consumer_offsets partition, which may be
    any broker; that broker's coordinator writes there (leadership does not move in this slice)."""
    admin = cluster.admin()
    admin.create_topics([NewTopic(f"grouped-{protocol}", 3, 3)])[f"grouped-{protocol}"].result(10)
    topic_on(cluster, 1, f"grouped-{protocol}", 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True})
    for i in range(30):
        producer.produce(f"grouped-{protocol}", f"v{i}".encode(), partition=i % 3)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(2), "group.id": f"group-{protocol}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "group.protocol": protocol})
    consumer.subscribe([f"grouped-{protocol}"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    assert seen == 30
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(f"grouped-{protocol}", p) for p in range(3)], timeout=10)
    consumer.close()
    assert [tp.offset for tp in committed] == [10, 10, 10]
    offsets = cluster.admin(3).list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
    assert {p.leader for p in offsets.partitions.values()} == {1, 2, 3}
    assert all(len(p.replicas) == 3 for p in offsets.partitions.values())


def test_replication_factor_above_the_live_brokers_is_refused(cluster):
    admin = cluster.admin()
    future = admin.create_topics([NewTopic("too-many", 1, 4)])["too-many"]
    with pytest.raises(KafkaException) as e:
        future.result(10)
    assert e.value.args[0].name() == "INVALID_REPLICATION_FACTOR"


def test_a_broker_whose_session_expires_registers_again(cluster):
    """SIGSTOP a broker that is not the controller past its ZooKeeper session: its registration goes;
    after SIGCONT it finds its session expired and registers again under a new session."""
    victim = next(i for i in (1, 2, 3) if i != cluster.controller())
    path = f"/brokers/ids/{victim}"
    owner = cluster.zk.exists(path).ephemeralOwner
    process = cluster.brokers[victim].proc
    process.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: cluster.zk.exists(path) is None, timeout=SESSION_MS / 1000 + 30, what="the session to expire")
    finally:
        process.send_signal(signal.SIGCONT)
    stat = wait_for(lambda: cluster.zk.exists(path), timeout=60, what="the broker to register again")
    assert stat.ephemeralOwner != owner
    wait_for(lambda: sorted(cluster.admin(victim).list_topics(timeout=10).brokers) == [1, 2, 3],
             what="the broker to see the whole cluster again")


def test_killing_the_controller_moves_it_to_another_broker(cluster):
    """Last in the module: it kills a broker (and brings it back)."""
    old = cluster.controller()
    epoch = int(cluster.zk.get("/controller_epoch")[0])
    cluster.brokers[old].kill()
    started = time.monotonic()
    new = wait_for(lambda: (c := cluster.controller()) is not None and c != old and c,
                   timeout=SESSION_MS / 1000 + 30, what="a new controller")
    moved_after = time.monotonic() - started
    assert new in {1, 2, 3} - {old}
    assert int(cluster.zk.get("/controller_epoch")[0]) == epoch + 1
    survivor = next(i for i in (1, 2, 3) if i != old)
    metadata = wait_for(lambda: (m := cluster.admin(survivor).list_topics(timeout=10)) and old not in m.brokers and m,
                        what="the dead broker to leave the metadata")
    assert metadata.controller_id == new and sorted(metadata.brokers) == sorted({1, 2, 3} - {old})
    assert moved_after < SESSION_MS / 1000 + 15  # the session's expiry, not some later event (slack for a loaded machine)
    # the broker comes back under its id and the cluster has three brokers again; the controller stays
    cluster.brokers[old].start()
    wait_for(lambda: sorted(cluster.admin(survivor).list_topics(timeout=10).brokers) == [1, 2, 3],
             what="the broker to rejoin")
    assert cluster.controller() == new


def _serve(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "tidelog", "serve", "--port", "0", "--data-dir", str(tmp_path),
            "--override", "metrics.listener=http://127.0.0.1:0"]
    for item in overrides:
        args += ["--override", item]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_serve_without_a_reachable_zookeeper_fails_with_one_line(tmp_path):
    from tidelog.cli.zookeeper import free_port

    done = _serve(tmp_path, f"zookeeper.connect=127.0.0.1:{free_port()}/x", "broker.id=1",
                  "zookeeper.connection.timeout.ms=1500")
    assert done.returncode == 1
    assert "tidelog serve: cannot start: cannot connect to ZooKeeper at 127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_in_cluster_mode_needs_a_broker_id(tmp_path):
    done = _serve(tmp_path, "zookeeper.connect=127.0.0.1:2181")
    assert done.returncode == 2
    assert "tidelog serve: broker.id (or node.id) must be set when zookeeper.connect is" in done.stderr
