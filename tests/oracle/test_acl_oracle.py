"""The authorization denial matrix against Apache Kafka and Tidelog, with the same ACLs.

Kafka runs KRaft with ``StandardAuthorizer`` and ``allow.everyone.if.no.acl.found=false``. Its
controller listener authenticates with SASL/PLAIN as ``User:admin`` (a super user), so that the
broker's own requests to the controller are not those of ``User:ANONYMOUS``, the principal every
client on the PLAINTEXT listener has. Both brokers start once with ``User:ANONYMOUS`` a super user to
create the administrator's ACLs (tests/integration/acl_matrix.py), then again without it.

Each case of the matrix gives (code when refused, code once granted) on each broker; they must be
equal, and equal to the matrix's expectations. Then what a client sees (all-topics Metadata, authorized operations) under three sets of ACLs.
About 80 s, a third of it Kafka starting twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.integration.acl_matrix import (
    ANONYMOUS,
    CASES,
    GROUP,
    TOPIC,
    Case,
    admin_acls,
    admin_connect,
    commit_group_offset,
    create_acls,
    grant,
    prepare,
    revoke_all,
    run_case,
)
from tests.oracle.kafka import KafkaProcess
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import DescribeClusterRequest, DescribeGroupsRequest, MetadataRequest
from tidelog.security.acl import CLUSTER_NAME
from tidelog.security.acl import AclOperation as Op
from tidelog.security.acl import ResourceType as Res
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle-acls")]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD, "allow.everyone.if.no.acl.found": "false"}
_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
         'password="admin-secret" user_admin="admin-secret";')
#: The controller listener speaks SASL/PLAIN as User:admin.
KAFKA_CONTROLLER_SASL = {
    "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": _JAAS,
    "group.initial.rebalance.delay.ms": "0",
}


def _bootstrap_admin_acls(bootstrap: str) -> None:
    with WireClient.connect(bootstrap) as client:
        assert create_acls(client, admin_acls()) == [0] * 4


@pytest.fixture(scope="module")
def kafka(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaProcess]:
    overrides = {**SECURED, **KAFKA_CONTROLLER_SASL, "super.users": "User:admin;User:ANONYMOUS"}
    with KafkaProcess(tmp_path_factory.mktemp("kafka-acls"), classpath=java_classpath, overrides=overrides) as k:
        _bootstrap_admin_acls(k.bootstrap)
        k.stop()
        k.overrides["super.users"] = "User:admin"
        k.start()
        prepare(k.bootstrap)
        yield k


@pytest.fixture(scope="module")
def tidelog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("tidelog-acls")
    with BrokerProcess(data, overrides={**SECURED, "super.users": "User:ANONYMOUS"}) as first:
        _bootstrap_admin_acls(first.bootstrap)
    with BrokerProcess(data, overrides={**SECURED, "group.initial.rebalance.delay.ms": "0"}) as broker:
        prepare(broker.bootstrap)
        yield broker


def _names(pair: tuple[int, int]) -> tuple[str, str]:
    return ErrorCode(pair[0]).name, ErrorCode(pair[1]).name


@pytest.mark.parametrize("case", CASES, ids=str)
def test_same_codes_as_kafka(kafka: KafkaProcess, tidelog: BrokerProcess, case: Case) -> None:
    expected = _names(run_case(ANONYMOUS, kafka.bootstrap, case, settle_s=0.5))
    assert _names(run_case(ANONYMOUS, tidelog.bootstrap, case)) == expected
    assert expected == (case.denied.name, case.allowed.name)  # the matrix's expectations are Kafka's


def _visible_topics_and_operations(bootstrap: str) -> dict[str, object]:
    """What User:ANONYMOUS sees: its topics (all-topics Metadata, internal topics aside), a topic's and the
    cluster's authorized operations, and a group's."""
    with ANONYMOUS.connect(bootstrap) as client:
        every = client.request(MetadataRequest(topics=None, include_topic_authorized_operations=True), 12)
        named = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                               include_topic_authorized_operations=True), 12)
        cluster = client.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
        old_metadata = client.request(MetadataRequest(topics=[], include_cluster_authorized_operations=True), 10)
        groups = client.request(DescribeGroupsRequest(groups=[GROUP], include_authorized_operations=True), 5)
    return {
        "all-topics": sorted((t.name, t.topic_authorized_operations) for t in every.topics if not t.is_internal),
        "topic": [(t.name, t.error_code, t.topic_authorized_operations) for t in named.topics],
        "cluster": cluster.cluster_authorized_operations,
        "metadata-v10-cluster": old_metadata.cluster_authorized_operations,
        "group": [(g.error_code, g.authorized_operations) for g in groups.groups],
    }


@pytest.mark.parametrize("grants", [
    [],
    [(Res.TOPIC, TOPIC, Op.READ), (Res.TOPIC, TOPIC, Op.ALTER_CONFIGS), (Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
    [(Res.TOPIC, "*", Op.ALL), (Res.CLUSTER, CLUSTER_NAME, Op.ALTER), (Res.GROUP, GROUP, Op.DELETE)],
], ids=["nothing", "read-topic-describe-cluster", "all-topics-alter-cluster-delete-group"])
def test_what_a_client_sees_is_what_kafka_shows(kafka: KafkaProcess, tidelog: BrokerProcess, grants) -> None:
    seen = {}
    for name, broker in (("kafka", kafka), ("tidelog", tidelog)):
        with admin_connect(broker.bootstrap) as admin:
            commit_group_offset(GROUP)(admin)
            if grants:
                grant(admin, ANONYMOUS.principal, grants)
            try:
                time.sleep(1.0 if name == "kafka" else 0)  # Kafka applies the new ACLs asynchronously
                seen[name] = _visible_topics_and_operations(broker.bootstrap)
            finally:
                revoke_all(admin, ANONYMOUS.principal)
                time.sleep(1.0 if name == "kafka" else 0)
    assert seen["tidelog"] == seen["kafka"]
