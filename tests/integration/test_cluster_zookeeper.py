"""Cluster mode and ZooKeeper: producer-id blocks stay disjoint when brokers claim them at once (Kafka's
conditional write of ``/latest_producer_id_block``, retried on a conflict). ZooKeeper and three
brokers start once; about 30 s.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.zookeeper import start_zookeeper
from tidelog.cluster import zk_data as zk
from tidelog.cluster.zk_producer_id import allocate_producer_id_block
from tidelog.coordinator.txn.producer_ids import PRODUCER_ID_BLOCK_SIZE
from tidelog.protocol.messages import InitProducerIdRequest
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster_zookeeper")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    root = Path(tmp_path_factory.mktemp("cluster-zookeeper"))
    with LocalCluster(root, chroot="/tidelog-zk", zookeeper=start_zookeeper(root / "zk")) as c:
        yield c


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
