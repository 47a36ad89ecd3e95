"""Replication with a real ZooKeeper and three real ``tidelog serve`` processes: RF=3,
min.insync.replicas=2, acks=all with idempotence from confluent-kafka and kafka-python; followers'
logs byte-identical to the leader's; a SIGSTOPped follower leaves the ISR after
replica.lag.time.max.ms and comes back; too few in-sync replicas refuse acks=all; kill -9 of a
leader: a new leader from the ISR, no acknowledged record lost or duplicated; a returning old leader
drops exactly its divergent suffix (KIP-101). About 60 s.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer

from tests.integration.kafka_io import produce_batch
from tidelog.coordinator.runtime import java_abs, java_string_hash
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ProduceRequest
from tidelog.records.builder import build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for
from tidelog.testing.cluster import log_batches as data_dir_batches

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

CHROOT = "/tidelog-repl"
SESSION_MS = 4000
LAG_MS = 1500
OFFSETS_PARTITIONS = 3


CLUSTER = {"chroot": CHROOT, "session_ms": SESSION_MS,  # the module's cluster (conftest.py)
           "overrides": {"replica.lag.time.max.ms": str(LAG_MS), "min.insync.replicas": "2",
                         "default.replication.factor": "3", "offsets.topic.replication.factor": "3",
                         "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "replica.fetch.backoff.ms": "200"}}


class Cluster(LocalCluster):

    def create(self, topic: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
        wait_for(lambda: len(self.live_ids()) == 3, what="three registered brokers")
        self.create_topic(topic, partitions, 3, config)


CLUSTER_CLASS = Cluster


def log_batches(broker: BrokerProcess, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """(base offset, bytes) of every batch in the partition's segment files, as on disk."""
    return data_dir_batches(broker.data_dir, topic, partition)


def assert_replicas_identical(cluster: Cluster, topic: str, partition: int = 0, ids=(1, 2, 3)) -> list:
    """Every replica's log holds the same batches, byte for byte (followers copy the leader's)."""
    return cluster.wait_replicas_identical(topic, partition, ids)


def read_values(cluster: Cluster, topic: str, partition: int, timeout: float = 30) -> list[bytes]:
    """Every record of the partition up to its high watermark, from its leader."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "repl-tests",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    last = -1
    deadline = time.monotonic() + timeout
    try:
        while last < end - 1 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                values.append(m.value())
                last = m.offset()
    finally:
        consumer.close()
    return values


def produce_request(topic: str, records: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])


def leader_client(cluster: Cluster, topic: str) -> tuple[int, WireClient]:
    leader = cluster.state(topic)["leader"]
    return leader, WireClient.connect(cluster.brokers[leader].bootstrap)


def test_acks_all_with_idempotence_replicates_every_record_identically(cluster):
    cluster.create("repl-a", 2)
    state = cluster.state("repl-a")
    assert sorted(state["isr"]) == [1, 2, 3]
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    errors = []
    for i in range(300):
        producer.produce("repl-a", f"ck-{i}".encode(), partition=i % 2,
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
    assert producer.flush(30) == 0 and not errors
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks="all", enable_idempotence=True)
    for i in range(100):
        kp.send("repl-a", f"kp-{i}".encode(), partition=0).get(10)
    kp.close()
    for p in (0, 1):
        batches = assert_replicas_identical(cluster, "repl-a", p)
        assert batches[0][0] == 0
    values = read_values(cluster, "repl-a", 0)
    assert values == [f"ck-{i}".encode() for i in range(0, 300, 2)] + [f"kp-{i}".encode() for i in range(100)]


def test_a_stopped_follower_leaves_the_isr_and_rejoins_after_catching_up(cluster):
    cluster.create("repl-lag")
    state = cluster.state("repl-lag")
    leader = state["leader"]
    follower = next(b for b in state["isr"] if b != leader)
    proc = cluster.brokers[follower].proc
    assert proc is not None
    proc.send_signal(signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        _, client = leader_client(cluster, "repl-lag")
        with client:
            # acks=all waits for every ISR member: it completes once the leader has dropped the stopped
            # follower for lagging (min.insync.replicas=2 still holds), before ZooKeeper notices anything
            response = produce_batch(client, "repl-lag", build_batch([(0, None, b"while-stopped")]))
            assert response.error_code == 0
        shrunk_after = time.monotonic() - stopped
        assert follower not in cluster.state("repl-lag")["isr"]
        assert LAG_MS / 1000 <= shrunk_after < SESSION_MS / 1000, shrunk_after
        assert str(follower) in cluster.zk.get_children("/brokers/ids")
        assert cluster.state("repl-lag")["leader"] == leader
    finally:
        proc.send_signal(signal.SIGCONT)
    wait_for(lambda: sorted(cluster.state("repl-lag")["isr"]) == [1, 2, 3], timeout=60, what="ISR expand")
    assert_replicas_identical(cluster, "repl-lag")
    wait_for(lambda: len(cluster.zk.get_children("/brokers/ids")) == 3, what="every broker registered")


def test_too_few_in_sync_replicas_refuse_acks_all(cluster):
    cluster.create("repl-few")
    state = cluster.state("repl-few")
    leader = state["leader"]
    followers = [b for b in (1, 2, 3) if b != leader]
    procs = [cluster.brokers[f].proc for f in followers]
    for proc in procs:
        proc.send_signal(signal.SIGSTOP)
    try:
        _, client = leader_client(cluster, "repl-few")
        with client:
            # appended while the ISR is still whole, then the ISR shrinks below min.insync.replicas
            first = produce_batch(client, "repl-few", build_batch([(0, None, b"after-append")]))
            assert ErrorCode(first.error_code) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            wait_for(lambda: cluster.state("repl-few")["isr"] == [leader], what="ISR of the leader alone")
            second = produce_batch(client, "repl-few", build_batch([(0, None, b"refused")]))
            assert ErrorCode(second.error_code) == ErrorCode.NOT_ENOUGH_REPLICAS
            one = produce_batch(client, "repl-few", build_batch([(0, None, b"acks-1")]), acks=1)
            assert one.error_code == 0
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGCONT)
    wait_for(lambda: sorted(cluster.state("repl-few")["isr"]) == [1, 2, 3], what="ISR back")
    batches = assert_replicas_identical(cluster, "repl-few")
    assert b"refused" not in b"".join(raw for _, raw in batches)


def test_a_returning_old_leader_truncates_its_divergent_suffix(cluster):
    """KIP-101: the leader takes acks=1 records its followers never fetched, then dies; a follower
    from the ISR leads in a new epoch and takes other records at the same offsets; the old leader,
    back, must drop its suffix and copy the new leader's, not keep a fork."""
    cluster.create("repl-div", config={"min.insync.replicas": "1"})
    _, client = leader_client(cluster, "repl-div")
    with client:
        assert produce_batch(client, "repl-div", build_batch([(0, None, b"common-%d" % i) for i in range(5)])).error_code == 0
    assert_replicas_identical(cluster, "repl-div")
    state = cluster.state("repl-div")
    old_leader = state["leader"]
    followers = [b for b in (1, 2, 3) if b != old_leader]
    for f in followers:
        cluster.brokers[f].proc.send_signal(signal.SIGSTOP)
    try:
        _, client = leader_client(cluster, "repl-div")
        with client:
            # the followers' fetches parked at the leader take this one into their (stopped) sockets...
            assert produce_batch(client, "repl-div", build_batch([(0, None, b"flush")]), acks=1).error_code == 0
            # ... and nothing after it: these are only in the leader's log
            for i in range(3):
                assert produce_batch(client, "repl-div", build_batch([(0, None, b"lost-%d" % i)]), acks=1).error_code == 0
        cluster.brokers[old_leader].kill()
    finally:
        for f in followers:
            cluster.brokers[f].proc.send_signal(signal.SIGCONT)
    new_state = wait_for(lambda: (s := cluster.state("repl-div"))["leader"] in followers and s, timeout=60,
                         what="a new leader")
    assert new_state["leader_epoch"] > state["leader_epoch"]
    new_leader = new_state["leader"]
    with WireClient.connect(cluster.brokers[new_leader].bootstrap) as client:
        wait_for(lambda: produce_batch(client, "repl-div", build_batch([(0, None, b"new-0")])).error_code == 0,
                 what="the new leader to take writes")
        assert produce_batch(client, "repl-div", build_batch([(0, None, b"new-1")])).error_code == 0
    diverged = b"".join(raw for _, raw in log_batches(cluster.brokers[old_leader], "repl-div"))
    assert b"lost-2" in diverged and b"new-0" not in diverged
    cluster.brokers[old_leader].start()
    batches = assert_replicas_identical(cluster, "repl-div")
    data = b"".join(raw for _, raw in batches)
    assert b"lost-" not in data and b"new-0" in data and b"new-1" in data and b"common-4" in data
    assert [base for base, _ in batches] == sorted({base for base, _ in batches})  # no offset twice
    wait_for(lambda: sorted(cluster.state("repl-div")["isr"]) == [1, 2, 3], what="old leader back in the ISR")


def test_a_leader_stopped_past_its_session_acknowledges_nothing_when_it_resumes(cluster):
    """SIGSTOP the leader past its ZooKeeper session: the controller moves leadership; resumed, the old
    leader must not acknowledge an acks=all write (its followers left it), and ends a follower with
    the new leader's log."""
    cluster.create("repl-zombie")
    state = cluster.state("repl-zombie")
    old = state["leader"]
    proc = cluster.brokers[old].proc
    proc.send_signal(signal.SIGSTOP)
    try:
        new_state = wait_for(lambda: (s := cluster.state("repl-zombie"))["leader"] not in (old, -1) and s,
                             timeout=30, what="a new leader")
        with WireClient.connect(cluster.brokers[new_state["leader"]].bootstrap) as client:
            wait_for(lambda: produce_batch(client, "repl-zombie",  # once the new leader has read its state
                                           build_batch([(0, None, b"on-the-new-leader")])).error_code == 0,
                     timeout=60, what="a write on the new leader")
        client = WireClient.connect(cluster.brokers[old].bootstrap, timeout=15)
        client.send(produce_request("repl-zombie", build_batch([(0, None, b"zombie")])), 9)
    finally:
        proc.send_signal(signal.SIGCONT)
    with client:
        _, response = client.receive()
        (topic_response,) = response.responses
        code = ErrorCode(topic_response.partition_responses[0].error_code)
    assert code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT), code
    batches = assert_replicas_identical(cluster, "repl-zombie")
    data = b"".join(raw for _, raw in batches)
    assert b"on-the-new-leader" in data and b"zombie" not in data
    wait_for(lambda: len(cluster.zk.get_children("/brokers/ids")) == 3, what="the old leader registered again")


def test_committed_offsets_survive_the_death_of_the_group_coordinators_broker(cluster):
    cluster.create("repl-grp")
    group = "repl-group"
    partition = java_abs(java_string_hash(group)) % OFFSETS_PARTITIONS
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("repl-grp", 0, 7)], asynchronous=False)
    consumer.close()
    state = wait_for(lambda: (s := cluster.state("__consumer_offsets", partition)) and len(s["isr"]) == 3 and s,
                     what="__consumer_offsets replicated")
    coordinator = state["leader"]
    cluster.brokers[coordinator].kill()  # the commit was answered once the ISR had it
    try:
        wait_for(lambda: cluster.state("__consumer_offsets", partition)["leader"] not in (coordinator, -1),
                 timeout=30, what="a new leader of the group's partition")

        def committed():
            c = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False})
            try:
                return c.committed([TopicPartition("repl-grp", 0)], timeout=5)[0].offset == 7
            except Exception:
                return False
            finally:
                c.close()

        wait_for(committed, timeout=30, what="the committed offset from the new coordinator")
    finally:
        cluster.brokers[coordinator].start()
    wait_for(lambda: len(cluster.state("__consumer_offsets", partition)["isr"]) == 3, what="ISR back")


def test_killing_the_leader_loses_no_acknowledged_record(cluster):
    """Last: kill -9 the leader under a steady acks=all idempotent load; the ISR elects a new leader,
    the producer carries on, every acknowledged record is there exactly once."""
    cluster.create("repl-kill")
    leader = cluster.state("repl-kill")["leader"]
    acked: list[tuple[float, bytes]] = []
    produced_at: dict[bytes, float] = {}
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 2, "message.timeout.ms": 60000, "retry.backoff.ms": 50,
                         "topic.metadata.refresh.interval.ms": 500})

    def on_delivery(err, msg):
        if err is None:
            acked.append((time.monotonic(), msg.value()))

    def run():
        i = 0
        while not stop.is_set():
            value = f"v-{i}".encode()
            produced_at[value] = time.monotonic()
            producer.produce("repl-kill", value, partition=0, on_delivery=on_delivery)
            producer.poll(0.005)
            i += 1
        producer.flush(60)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: len(acked) > 200, what="records acknowledged before the kill")
        killed_at = time.monotonic()
        cluster.brokers[leader].kill()
        wait_for(lambda: cluster.state("repl-kill")["leader"] not in (leader, -1), timeout=30, what="new leader")
        def after_kill():  # acks of records produced after the kill (earlier ones may be acked late by the old leader)
            return [t for t, v in acked if produced_at[v] > killed_at]

        wait_for(after_kill, timeout=60, what="an ack after the kill")
        failover = min(after_kill()) - killed_at
        wait_for(lambda: len([1 for t, _ in acked if t > killed_at]) > 200, timeout=30, what="acks after the kill")
    finally:
        stop.set()
        thread.join(90)
    print(f"failover (kill -9 of the leader -> first acknowledged produce on the new leader): {failover:.2f} s")
    values = {v for _, v in acked}
    got = read_values(cluster, "repl-kill", 0)
    assert len(got) == len(set(got)), "duplicates"
    assert values <= set(got), f"{len(values - set(got))} acknowledged records lost"
    alive = [b for b in (1, 2, 3) if b != leader]
    assert_replicas_identical(cluster, "repl-kill", ids=alive)
    cluster.brokers[leader].start()
    assert_replicas_identical(cluster, "repl-kill")
