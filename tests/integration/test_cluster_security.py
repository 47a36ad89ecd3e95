"""Inter-broker security: three brokers whose inter-broker listener is SASL_SSL (SCRAM-SHA-512, PEM
certificates from trustme) with an authorizer on, clients on a PLAINTEXT listener as ``User:ANONYMOUS``
(who may produce and consume, but not CLUSTER_ACTION). Followers authenticate as ``User:broker`` (a
super user), so replication works and acks=all completes; broker 3, restarted with a wrong password,
does not replicate, and it logs why. About 40 s (ZooKeeper and three brokers start once).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Producer
from kazoo.client import KazooClient

from tests.integration.zookeeper import ZooKeeperProcess, add_scram_user
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import FetchRequest
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster_security")]

CHROOT = "/tidelog-ibsec"
BROKER_USER, BROKER_PASSWORD = "broker", "broker-secret-never-logged"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _jaas(password: str) -> str:
    return f'{SCRAM} required username="{BROKER_USER}" password="{password}";'


# The module's cluster (conftest.py): brokers that replicate over SASL_SSL as their own SCRAM user.
CLUSTER = {"chroot": CHROOT, "overrides": {
    "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "listener.name.internal.scram-sha-512.sasl.jaas.config": _jaas(BROKER_PASSWORD),
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "false",
    "super.users": f"User:{BROKER_USER}",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.backoff.ms": "200",
    "offsets.topic.replication.factor": "2",
}}


def prepare_cluster(root: Path, zookeeper: ZooKeeperProcess) -> dict[str, str]:
    """Before the brokers start: their certificate, their SCRAM user, and ACLs letting clients
    (User:ANONYMOUS) use topics and groups and create topics, but not act as a replica (no CLUSTER_ACTION)."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(root / "broker.pem"))
    add_scram_user(zookeeper, CHROOT, BROKER_USER, BROKER_PASSWORD, "SCRAM-SHA-512")
    zk = KazooClient(hosts=zookeeper.connect)
    zk.start(10)

    def allow(*operations: str) -> bytes:
        return json.dumps({"version": 1, "acls": [
            {"principal": "User:ANONYMOUS", "permissionType": "Allow", "operation": op, "host": "*"}
            for op in operations]}).encode()

    zk.create(f"{CHROOT}/kafka-acl/Cluster/kafka-cluster", allow("Create", "IdempotentWrite", "Describe"),
              makepath=True)
    zk.create(f"{CHROOT}/kafka-acl/Topic/*", allow("All"), makepath=True)
    zk.create(f"{CHROOT}/kafka-acl/Group/*", allow("All"), makepath=True)
    zk.stop()
    zk.close()
    return {"ssl.keystore.location": str(root / "broker.pem"), "ssl.truststore.location": str(root / "ca.pem")}


def test_followers_replicate_over_sasl_ssl_and_acks_all_completes(cluster: LocalCluster) -> None:
    cluster.create_topic("secured", replication_factor=3, config={"min.insync.replicas": "2"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    errors: list = []
    for i in range(500):
        producer.produce("secured", value=b"v%d" % i, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert producer.flush(30) == 0
    assert errors == []
    cluster.wait_replicas_identical("secured")
    assert sum(1 for _ in cluster.log_batches(3, "secured")) > 0
    assert sorted(cluster.state("secured")["isr"]) == [1, 2, 3]
    log = cluster.brokers[2].stderr_text()
    assert "connections to other brokers: inter-broker listener INTERNAL (SASL_SSL, SASL SCRAM-SHA-512 as broker)" in log
    assert BROKER_PASSWORD not in "".join(b.stderr_text() for b in cluster.brokers.values())


def test_a_follower_with_wrong_credentials_does_not_replicate_and_says_why(cluster: LocalCluster) -> None:
    cluster.create_topic("refused", replication_factor=3)
    broker = cluster.brokers[3]
    broker.stop()
    broker.overrides["listener.name.internal.scram-sha-512.sasl.jaas.config"] = _jaas("not-the-password")
    broker.start()
    leader = cluster.wait_for_leader("refused", not_in=[3])
    producer = Producer({"bootstrap.servers": cluster.bootstrap(1, 2), "acks": "all"})
    for i in range(20):
        producer.produce("refused", value=b"r%d" % i)
    assert producer.flush(30) == 0  # acks=all completes once broker 3 is out of the ISR
    wait_for(lambda: 3 not in cluster.state("refused")["isr"], timeout=20, what="broker 3 out of the ISR")
    cluster.wait_replicas_identical("refused", ids=[1, 2])
    assert cluster.log_batches(leader, "refused")
    assert cluster.log_batches(3, "refused") == []
    text = broker.stderr_text(until="refused this broker's connection")
    assert (f"leader {leader} refused this broker's connection: SASL SCRAM-SHA-512 authentication as broker on "
            "listener INTERNAL failed: SASL_AUTHENTICATION_FAILED") in text
    assert "not-the-password" not in text
    assert text.count(f"leader {leader} refused this broker's connection") <= 3  # once per fetcher, not every 0.2 s


def test_a_replica_fetch_as_anonymous_is_refused(cluster: LocalCluster) -> None:
    """The PLAINTEXT listener's principal lacks CLUSTER_ACTION: only the brokers' principal may fetch as a replica."""
    wait_for(lambda: cluster.state_or_none("secured"), what="topic secured")
    leader = cluster.leader("secured")
    with WireClient.connect(cluster.brokers[leader].bootstrap) as client:
        request = FetchRequest(replica_id=2, max_wait_ms=0, min_bytes=0, topics=[FetchRequest.FetchTopic(
            topic="secured", partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1024)])])
        response = client.request(request, 12)
    codes = [p.error_code for t in response.responses for p in t.partitions]
    assert codes == [ErrorCode.TOPIC_AUTHORIZATION_FAILED], codes
