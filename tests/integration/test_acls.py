"""Authorization with a real broker and real clients: ``authorizer.class.name`` set,
``allow.everyone.if.no.acl.found=false``. Every API of the denial matrix (tests/integration/acl_matrix.py)
refuses User:ANONYMOUS with Kafka's code, then lets it through once an ACL (created with CreateAcls)
grants it; host ACLs, DENY over ALLOW, super.users, Metadata hiding topics, authorized-operations,
ACLs surviving a restart, and librdkafka / kafka-python clients refused and then served.

The broker starts once with ``super.users=User:ANONYMOUS`` to create the administrator's ACLs (ALLOW
ALL from 127.0.0.2), then again without super users: the test clients connect from 127.0.0.3.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka import KafkaConsumer, TopicPartition

from tests.integration.acl_matrix import (
    ADMIN_HOST,
    ANONYMOUS,
    CALLER_HOST,
    CASES,
    TOPIC,
    Caller,
    Case,
    admin_acls,
    admin_connect,
    create_acls,
    describe_acls,
    grant,
    prepare,
    revoke_all,
    run_case,
)
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import DescribeAclsRequest, FetchRequest, MetadataRequest
from tidelog.security.acl import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    authorized_operations,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.xdist_group("acls")

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD, "allow.everyone.if.no.acl.found": "false"}
Op, Res = AclOperation, ResourceType
CALLERS = [ANONYMOUS]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("acls")
    with (BrokerProcess(data, overrides={**SECURED, "super.users": "User:ANONYMOUS"}) as first,
          WireClient.connect(first.bootstrap) as client):
        assert create_acls(client, admin_acls()) == [0] * 4
    with BrokerProcess(data, overrides=SECURED) as broker:
        prepare(broker.bootstrap)
        yield broker


@pytest.mark.parametrize("caller", CALLERS, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_denial_matrix(secured: BrokerProcess, caller: Caller, case: Case) -> None:
    denied, allowed = run_case(caller, secured.bootstrap, case)
    assert (ErrorCode(denied).name, ErrorCode(allowed).name) == (case.denied.name, case.allowed.name)


def test_the_acls_created_before_a_restart_are_still_there(secured: BrokerProcess) -> None:
    with admin_connect(secured.bootstrap) as admin:
        listed = describe_acls(admin)
    assert listed == sorted((r.name, n, "LITERAL", "User:ANONYMOUS", ADMIN_HOST, "ALL", "ALLOW")
                            for r, n, *_ in admin_acls())


def _fetch_code(client: WireClient) -> int:
    response = client.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                           isolation_level=0, topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                                               FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                                           partition_max_bytes=1 << 20)])]), 12)
    return response.responses[0].partitions[0].error_code


def test_host_acls_apply_to_that_client_address_only(secured: BrokerProcess) -> None:
    with admin_connect(secured.bootstrap) as admin:
        grant(admin, "User:ANONYMOUS", [(Res.TOPIC, TOPIC, Op.READ)], host="127.0.0.9")
        try:
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            grant(admin, "User:ANONYMOUS", [(Res.TOPIC, TOPIC, Op.READ)], host=CALLER_HOST)
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == 0
        finally:
            assert revoke_all(admin, "User:ANONYMOUS", "127.0.0.9") == 1
            assert revoke_all(admin, "User:ANONYMOUS", CALLER_HOST) == 1


def test_deny_beats_allow_and_prefixes_and_wildcards_match(secured: BrokerProcess) -> None:
    with admin_connect(secured.bootstrap) as admin:
        assert create_acls(admin, [
            (Res.TOPIC, "acl-", PatternType.PREFIXED, "User:*", "*", Op.READ, AclPermissionType.ALLOW)]) == [0]
        try:
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == 0
            assert create_acls(admin, [
                (Res.TOPIC, TOPIC, PatternType.LITERAL, "User:ANONYMOUS", "*", Op.READ, AclPermissionType.DENY)]) == [0]
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        finally:
            revoke_all(admin, "User:ANONYMOUS")
            revoke_all(admin, "User:*")


def test_metadata_hides_topics_the_client_may_not_describe(secured: BrokerProcess) -> None:
    def listed() -> list[str]:
        with ANONYMOUS.connect(secured.bootstrap) as client:
            return sorted(t.name for t in client.request(MetadataRequest(topics=None), 12).topics)

    with admin_connect(secured.bootstrap) as admin:
        assert TOPIC in sorted(t.name for t in admin.request(MetadataRequest(topics=None), 12).topics)
        assert listed() == []
        grant(admin, "User:ANONYMOUS", [(Res.TOPIC, TOPIC, Op.WRITE)])
        try:
            assert listed() == [TOPIC]
            with ANONYMOUS.connect(secured.bootstrap) as client:
                response = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                                          include_topic_authorized_operations=True), 12)
            assert response.topics[0].topic_authorized_operations == authorized_operations([Op.WRITE, Op.DESCRIBE])
        finally:
            revoke_all(admin, "User:ANONYMOUS")


def test_an_unknown_topic_the_client_may_not_describe_looks_like_a_known_one(secured: BrokerProcess) -> None:
    with ANONYMOUS.connect(secured.bootstrap) as client:
        response = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n)
                                                          for n in (TOPIC, "no-such-topic")],
                                                  allow_auto_topic_creation=False), 12)
    assert {t.name: t.error_code for t in response.topics} == {
        TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED, "no-such-topic": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert all(not t.partitions for t in response.topics)


def test_create_acls_validates_each_binding(secured: BrokerProcess) -> None:
    with admin_connect(secured.bootstrap) as admin:
        codes = create_acls(admin, [
            (Res.CLUSTER, "not-the-cluster", PatternType.LITERAL, "User:a", "*", Op.ALTER, AclPermissionType.ALLOW),
            (Res.TOPIC, "", PatternType.LITERAL, "User:a", "*", Op.READ, AclPermissionType.ALLOW),
            (Res.TOPIC, "t", PatternType.LITERAL, "no-colon", "*", Op.READ, AclPermissionType.ALLOW),
            (Res.TOPIC, "t", PatternType.MATCH, "User:a", "*", Op.READ, AclPermissionType.ALLOW),
            (Res.TOPIC, "t", PatternType.LITERAL, "User:a", "*", Op.ANY, AclPermissionType.ALLOW),
            (Res.TOPIC, "acl-valid", PatternType.LITERAL, "User:a", "*", Op.READ, AclPermissionType.ALLOW),
        ])
        assert codes == [ErrorCode.INVALID_REQUEST] * 5 + [0]
        assert [a[1] for a in describe_acls(admin, "User:a")] == ["acl-valid"]
        assert revoke_all(admin, "User:a") == 1


def test_super_users_bypass_acls(tmp_path) -> None:
    with (BrokerProcess(tmp_path, overrides={**SECURED, "super.users": "User:someone-else;User:ANONYMOUS"}) as broker,
          WireClient.connect(broker.bootstrap) as client):
        response = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                                                  allow_auto_topic_creation=True), 12)
        assert response.topics[0].error_code in (0, ErrorCode.LEADER_NOT_AVAILABLE)
        assert _describe_acls_code(client) == 0


def _describe_acls_code(client: WireClient) -> int:
    return client.request(DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                              permission_type=1, resource_name_filter=None, principal_filter=None,
                                              host_filter=None), 3).error_code


def test_without_an_authorizer_the_acl_apis_are_disabled(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        assert _describe_acls_code(client) == ErrorCode.SECURITY_DISABLED


# ---------------------------------------------------------------------------------- real clients


def test_librdkafka_producer_is_refused_then_served(secured: BrokerProcess) -> None:
    def produce() -> KafkaError | None:
        p = Producer({"bootstrap.servers": secured.bootstrap, "message.timeout.ms": 5000})
        errors: list[KafkaError | None] = []
        p.produce(TOPIC, b"v", on_delivery=lambda err, msg: errors.append(err))
        p.flush(10)
        return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)

    error = produce()
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with admin_connect(secured.bootstrap) as admin:
        grant(admin, "User:ANONYMOUS", [(Res.TOPIC, TOPIC, Op.WRITE)])
        try:
            assert produce() is None
        finally:
            revoke_all(admin, "User:ANONYMOUS")


def test_kafka_python_consumer_reads_nothing_then_everything(secured: BrokerProcess) -> None:
    def consume() -> list:
        consumer = KafkaConsumer(bootstrap_servers=secured.bootstrap, group_id=None, auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=5000, request_timeout_ms=10_000)
        try:
            consumer.assign([TopicPartition(TOPIC, 0)])
            consumer.seek(TopicPartition(TOPIC, 0), 0)
            records: list = []
            for _ in range(8):  # ~2.4 s: what it may read comes long before
                records += [r for batch in consumer.poll(timeout_ms=300).values() for r in batch]
                if records:
                    break
            return records
        finally:
            consumer.close()

    assert consume() == []  # kafka-python logs "Topic acl-topic is not authorized" and fetches nothing
    with admin_connect(secured.bootstrap) as admin:
        grant(admin, "User:ANONYMOUS", [(Res.TOPIC, TOPIC, Op.READ)])
        try:
            assert len(consume()) >= 1
        finally:
            revoke_all(admin, "User:ANONYMOUS")


def test_librdkafka_admin_sees_the_authorization_error(secured: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    (future,) = admin.create_topics([NewTopic("acl-admin-made", 1, 1)]).values()
    with pytest.raises(KafkaException) as e:
        future.result(timeout=10)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_an_acl_added_with_the_cli_lets_the_client_through(secured: BrokerProcess) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tidelog", "acls", *args, "--bootstrap-server", secured.bootstrap],
                              capture_output=True, text=True, timeout=60)

    add = ("add", "--allow-principal", "User:ANONYMOUS", "--operation", "Read", "--topic", TOPIC)
    refused = cli(*add)  # the CLI connects from 127.0.0.1, which may not change ACLs
    assert refused.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr
    with admin_connect(secured.bootstrap) as admin:
        grant(admin, "User:ANONYMOUS", [(Res.CLUSTER, "kafka-cluster", Op.ALTER)], host="127.0.0.1")
        try:
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            done = cli(*add)
            assert done.returncode == 0, done.stderr
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == 0
            removed = cli("remove", "--allow-principal", "User:ANONYMOUS", "--topic", TOPIC)
            assert removed.returncode == 0 and removed.stdout.splitlines()[-1] == "1 ACL(s) removed"
            with ANONYMOUS.connect(secured.bootstrap) as client:
                assert _fetch_code(client) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        finally:
            revoke_all(admin, "User:ANONYMOUS", "127.0.0.1")
            revoke_all(admin, "User:ANONYMOUS")
