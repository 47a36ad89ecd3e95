"""Authorization in cluster mode: two ``tidelog serve`` processes on one ZooKeeper share their ACLs.

The administrator's ACLs are written straight into ZooKeeper in Kafka's layout, as Kafka's
``kafka-acls.sh --authorizer-properties zookeeper.connect=...`` does (the way to bootstrap a cluster's
first administrator without ``super.users``); an ACL then created through one broker is enforced by
the other. About 15 s (ZooKeeper and two brokers start).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.acl_matrix import (
    ADMIN_HOST,
    ANONYMOUS,
    admin_connect,
    describe_acls,
    grant,
    revoke_all,
)
from tests.integration.zookeeper import start_zookeeper
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import CreateTopicsRequest, MetadataRequest
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster_acls")]

CHROOT = "/tidelog-acls"
SECURED = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
           "allow.everyone.if.no.acl.found": "false"}


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[BrokerProcess]]:
    root = Path(tmp_path_factory.mktemp("cluster-acls"))
    zookeeper = start_zookeeper(root / "zk")
    connect = zookeeper.connect + CHROOT
    zk = KazooClient(hosts=zookeeper.connect)
    zk.start(10)
    admin_entry = [{"principal": "User:ANONYMOUS", "permissionType": "Allow", "operation": "All", "host": ADMIN_HOST}]
    for path in ("Cluster/kafka-cluster", "Topic/*", "Group/*"):
        zk.create(f"{CHROOT}/kafka-acl/{path}", json.dumps({"version": 1, "acls": admin_entry}).encode(),
                  makepath=True)
    zk.stop()
    zk.close()
    started = []
    try:
        for broker_id in (1, 2):
            started.append(BrokerProcess(root / f"broker-{broker_id}", overrides={
                **SECURED, "zookeeper.connect": connect, "broker.id": str(broker_id)}).start())
        yield started
    finally:
        for broker in started:
            broker.stop()
        zookeeper.stop()


def _metadata_code(bootstrap: str, topic: str) -> int:
    with ANONYMOUS.connect(bootstrap) as client:
        response = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                                  allow_auto_topic_creation=False), 12)
    return response.topics[0].error_code


def test_an_acl_created_on_one_broker_is_enforced_by_the_other(brokers: list[BrokerProcess]) -> None:
    one, two = brokers
    with admin_connect(one.bootstrap) as admin:
        created = admin.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="shared", num_partitions=2, replication_factor=1)], timeout_ms=10_000), 7)
        assert created.topics[0].error_code == 0, created
        assert _metadata_code(two.bootstrap, "shared") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        grant(admin, "User:ANONYMOUS", [(ResourceType.TOPIC, "shared", AclOperation.DESCRIBE)])
        try:
            deadline = time.monotonic() + 10
            while _metadata_code(two.bootstrap, "shared") != 0:
                assert time.monotonic() < deadline, "broker 2 never applied the ACL created through broker 1"
                time.sleep(0.1)
            with admin_connect(two.bootstrap) as admin_two:
                assert ("TOPIC", "shared", "LITERAL", "User:ANONYMOUS", "*", "DESCRIBE", "ALLOW") in describe_acls(
                    admin_two)
        finally:
            revoke_all(admin, "User:ANONYMOUS")
        deadline = time.monotonic() + 10
        while _metadata_code(two.bootstrap, "shared") != ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            assert time.monotonic() < deadline, "broker 2 never applied the removal"
            time.sleep(0.1)
