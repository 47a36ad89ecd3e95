"""Cluster mode and ZooKeeper: producer-id blocks stay disjoint when brokers claim them at once (Kafka's
conditional write of ``/latest_producer_id_block``, retried on a conflict), and with ZooKeeper itself
paused (SIGSTOP) leaders already elected keep answering produce, fetch and SCRAM authentications
without delay (no ZooKeeper call runs on a broker's event loop while requests wait). ZooKeeper and
three brokers start once; about 45 s.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient

from tests.integration.zookeeper import ZooKeeperProcess, add_scram_user
from tidelog.cluster import zk_data as zk
from tidelog.cluster.zk_producer_id import allocate_producer_id_block
from tidelog.coordinator.txn.producer_ids import PRODUCER_ID_BLOCK_SIZE
from tidelog.protocol.messages import (
    FetchRequest,
    InitProducerIdRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from tidelog.security.sasl_client import ScramClient
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster_zookeeper")]

CHROOT = "/tidelog-zk"
USER, PASSWORD = "alice", "alice-secret"
PAUSE_S = 5.0
BOUND_S = 2.0


# The module's cluster (conftest.py). A session longer than the pause: ZooKeeper paused is not a broker's
# session lost (that is tested in test_replication.py); here nothing may change, and elected leaders must
# keep serving.
CLUSTER = {"chroot": CHROOT, "session_ms": 15_000,
           "overrides": {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "sasl.enabled.mechanisms": "SCRAM-SHA-256", "min.insync.replicas": "2"}}


def prepare_cluster(root: Path, zookeeper: ZooKeeperProcess) -> None:
    add_scram_user(zookeeper, CHROOT, USER, PASSWORD, "SCRAM-SHA-256")


def _run_together(*targets) -> None:
    start = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def run(target) -> None:
        start.wait()
        try:
            target()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


def test_brokers_claiming_blocks_at_once_get_disjoint_blocks(cluster: LocalCluster) -> None:
    """Four "brokers" (each its own ZooKeeper session) claim 40 blocks each at the same moment: conflicts
    happen, are retried, and no two blocks overlap."""
    cluster.zk.ensure_path("/pid-blocks")  # (the cluster's client is chrooted: this is under its chroot)
    clients = [KazooClient(hosts=cluster.connect + "/pid-blocks") for _ in range(4)]
    for c in clients:
        c.start(10)
    claimed: dict[int, list[int]] = {i: [] for i in range(4)}
    try:
        _run_together(*[
            (lambda i=i: claimed[i].extend(allocate_producer_id_block(lambda: clients[i], i, 10) for _ in range(40)))
            for i in range(4)])
        raw, _ = clients[0].get(zk.PRODUCER_ID_BLOCK)
    finally:
        for c in clients:
            c.stop()
            c.close()
    starts = sorted(s for blocks in claimed.values() for s in blocks)
    assert len(starts) == 160
    assert starts == list(range(0, 1600, 10))  # disjoint, and none skipped
    assert zk.decode_producer_id_block(raw) == 1600


def test_producer_ids_are_unique_across_the_cluster(cluster: LocalCluster) -> None:
    """Idempotent producers' InitProducerId on all three brokers at once, more than a block's worth on
    each: every producer id is distinct."""
    per_broker = PRODUCER_ID_BLOCK_SIZE + 200
    got: dict[int, list[int]] = {i: [] for i in cluster.brokers}

    def init_many(broker_id: int) -> None:
        with WireClient.connect(cluster.brokers[broker_id].bootstrap) as client:
            for _ in range(per_broker):
                response = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000,
                                                                producer_id=-1, producer_epoch=-1), 4)
                assert response.error_code == 0, response
                got[broker_id].append(response.producer_id)

    _run_together(*[(lambda b=b: init_many(b)) for b in cluster.brokers])
    everything = [pid for ids in got.values() for pid in ids]
    assert len(everything) == 3 * per_broker
    assert len(set(everything)) == len(everything)
    for ids in got.values():  # each broker went through two blocks of its own
        assert len({pid // PRODUCER_ID_BLOCK_SIZE for pid in ids}) == 2
    block_end = zk.decode_producer_id_block(cluster.zk.get(zk.PRODUCER_ID_BLOCK)[0])
    assert max(everything) < block_end


def _scram_login(host: str, port: int) -> float:
    """One SCRAM-SHA-256 authentication on a new connection; its duration (AssertionError if refused)."""
    began = time.monotonic()
    with WireClient.connect(f"{host}:{port}", timeout=30) as client:
        handshake = client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        assert handshake.error_code == 0, handshake
        scram, reply = ScramClient("SCRAM-SHA-256", USER, PASSWORD), b""
        while (token := scram.step(reply)) is not None:
            response = client.request(SaslAuthenticateRequest(auth_bytes=token), 2)
            assert response.error_code == 0, response
            reply = response.auth_bytes
    return time.monotonic() - began


def test_with_zookeeper_paused_elected_leaders_keep_serving(cluster: LocalCluster) -> None:
    cluster.create_topic("steady", replication_factor=3)
    leader = cluster.leader("steady")
    broker = cluster.brokers[leader]
    sasl_port = broker.listener_port("SASL_PLAINTEXT")
    _scram_login("127.0.0.1", sasl_port)  # before the pause: the user is known
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "linger.ms": 0,
                         "enable.idempotence": True})
    producer.produce("steady", b"before")
    assert producer.flush(20) == 0
    fetch = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
        topic="steady", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                                 partition_max_bytes=1 << 20)])])
    produce_s: list[float] = []
    fetch_s: list[float] = []
    login_s: list[float] = []
    delivered: list = []
    stop = threading.Event()

    def logins() -> None:  # SCRAM reads the user's credentials: never from ZooKeeper on the loop
        while not stop.is_set():
            login_s.append(_scram_login("127.0.0.1", sasl_port))

    zookeeper = cluster.zookeeper.proc
    assert zookeeper is not None
    zookeeper.send_signal(signal.SIGSTOP)
    try:
        paused_at = time.monotonic()
        logger = threading.Thread(target=logins)
        logger.start()
        with WireClient.connect(broker.bootstrap, timeout=30) as client:
            i = 0
            while time.monotonic() - paused_at < PAUSE_S:
                began = time.monotonic()
                producer.produce("steady", b"during-%d" % i, on_delivery=lambda err, m: delivered.append(err))
                assert producer.flush(30) == 0
                produce_s.append(time.monotonic() - began)
                began = time.monotonic()
                response = client.request(fetch, 12)
                fetch_s.append(time.monotonic() - began)
                assert response.responses[0].partitions[0].error_code == 0
                i += 1
                time.sleep(0.05)
        stop.set()
        logger.join(30)
        assert time.monotonic() - paused_at < PAUSE_S + BOUND_S + 1
    finally:
        zookeeper.send_signal(signal.SIGCONT)
    assert all(err is None for err in delivered), delivered
    assert len(produce_s) >= 10 and login_s, (produce_s, login_s)
    worst = {"produce": max(produce_s), "fetch": max(fetch_s), "SCRAM login": max(login_s)}
    print(f"ZooKeeper paused {PAUSE_S:g} s: {len(produce_s)} acks=all produces, {len(login_s)} SCRAM logins; "
          f"worst seconds {worst}")
    assert all(v < BOUND_S for v in worst.values()), worst
    # And after the pause the cluster goes on: the ISR is whole, the replicas identical.
    cluster.wait_replicas_identical("steady")
    assert sorted(cluster.state("steady")["isr"]) == [1, 2, 3]
