"""ACLs in the metadata stores' formats: the embedded store's JSON survives a reopen, and Kafka's
ZooKeeper encoding (tidelog.cluster.zk_acl) reads what Kafka's AclAuthorizer writes."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tidelog.cluster import zk_acl
from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.store import EmbeddedStore
from tidelog.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

BROKER = BrokerInfo(0, "localhost", 9092)
ACLS = frozenset({
    AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
               AclPermissionType.ALLOW),
    AclBinding(ResourceType.GROUP, "etl-", PatternType.PREFIXED, "User:*", "10.0.0.7", AclOperation.ALL,
               AclPermissionType.DENY),
    AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:ops", "*",
               AclOperation.IDEMPOTENT_WRITE, AclPermissionType.ALLOW),
})


def test_the_embedded_store_keeps_acls_across_a_reopen(tmp_path) -> None:
    store = EmbeddedStore(tmp_path)
    image = store.open(BROKER)
    store.publish(replace(image, acls=ACLS, version=image.version + 1))
    assert EmbeddedStore(tmp_path).open(BROKER).acls == ACLS
    store.publish(replace(store.image, acls=frozenset(), version=store.image.version + 1))
    assert EmbeddedStore(tmp_path).open(BROKER).acls == frozenset()


def test_kafkas_zookeeper_acl_json_is_read() -> None:
    raw = json.dumps({"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:bob", "permissionType": "Deny", "operation": "DescribeConfigs", "host": "10.0.0.7"},
        {"principal": "User:eve", "permissionType": "Allow", "operation": "SomethingNew", "host": "*"},
    ]}).encode()
    assert zk_acl.decode_acls(raw, ResourceType.TOPIC, "orders", PatternType.LITERAL) == [
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:bob", "10.0.0.7",
                   AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY),
    ]
    assert zk_acl.resource_path(PatternType.PREFIXED, ResourceType.TRANSACTIONAL_ID, "tx-") == \
        "/kafka-acl-extended/prefixed/TransactionalId/tx-"
    assert zk_acl.change_notification(PatternType.LITERAL, ResourceType.GROUP, "g") == (
        "/kafka-acl-changes/acl_changes_", b"GROUP:g")


_operations = st.sampled_from([op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)])
_entries = st.builds(lambda p, h, o, perm: AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, p, h, o, perm),
                     st.sampled_from(["User:a", "User:*", "Group:x"]), st.sampled_from(["*", "10.0.0.1"]),
                     _operations, st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]))


@given(st.frozensets(_entries, max_size=8))
def test_zookeeper_encoding_round_trips(acls) -> None:
    decoded = zk_acl.decode_acls(zk_acl.encode_acls(acls), ResourceType.TOPIC, "t", PatternType.LITERAL)
    assert frozenset(decoded) == acls and len(decoded) == len(acls)
