"""Topic admin APIs against a real broker: CreateTopics, DeleteTopics, CreatePartitions, DescribeTopics
and Metadata, through confluent-kafka's AdminClient, kafka-python's KafkaAdminClient and a wire client for
the versions and fields the libraries do not expose.

One module-scoped broker, started with ``num.partitions=2`` so broker defaults show; every test uses its
own topic names.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigSource, NewPartitions, NewTopic, ResourceType
from confluent_kafka.error import KafkaError as CKError
from kafka.admin import KafkaAdminClient
from kafka.errors import InvalidPartitionsError, TopicAlreadyExistsError

from tests.integration.kafka_io import (
    create_topics,
    describe_configs,
    error_code,
    partition_count,
    produce,
    read_partition,
)
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    FetchRequest,
    MetadataRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("admin_topics")]

BROKER_OVERRIDES = {"num.partitions": "2"}


# ------------------------------------------------------------------------------ CreateTopics


def test_create_topics_uses_broker_defaults_and_keeps_configs(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("ct-defaults", config={"cleanup.policy": "compact", "retention.ms": "5000"}))
    assert partition_count(admin, "ct-defaults") == 2  # num.partitions=2, asked for -1
    configs = describe_configs(admin, ResourceType.TOPIC, "ct-defaults")
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "5000"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_create_topics_validate_only_changes_nothing(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("ct-validate", 3, 1), validate_only=True)
    assert partition_count(admin, "ct-validate") is None
    fs = admin.create_topics([NewTopic("ct-validate", 1, 1, config={"retention.ms": "soon"})], validate_only=True)
    assert error_code(fs["ct-validate"]) == CKError.INVALID_CONFIG


def test_create_topics_errors(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("ct-exists", 1, 1))
    fs = admin.create_topics([
        NewTopic("ct-exists", 1, 1),
        NewTopic("bad/name", 1, 1),
        NewTopic("ct-unknown-key", 1, 1, config={"no.such.config": "1"}),
        NewTopic("ct-bad-value", 1, 1, config={"cleanup.policy": "shred"}),
        NewTopic("ct-rf", 1, 3),
        NewTopic("ct.exists", 1, 1),  # collides with ct-exists? no: '-' is not a collision character
    ])
    assert error_code(fs["ct-exists"]) == CKError.TOPIC_ALREADY_EXISTS
    assert error_code(fs["bad/name"]) == CKError.TOPIC_EXCEPTION
    assert error_code(fs["ct-unknown-key"]) == CKError.INVALID_CONFIG
    assert error_code(fs["ct-bad-value"]) == CKError.INVALID_CONFIG
    assert error_code(fs["ct-rf"]) == CKError.INVALID_REPLICATION_FACTOR
    fs["ct.exists"].result(10)
    collide = admin.create_topics([NewTopic("ct_exists", 1, 1)])
    assert error_code(collide["ct_exists"]) == CKError.TOPIC_EXCEPTION
    for name in ("ct-unknown-key", "ct-bad-value", "ct-rf", "bad/name"):
        assert partition_count(admin, name) is None


def test_create_topics_manual_assignment_on_this_broker(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("ct-assigned", 3, replica_assignment=[[0], [0], [0]]))
    assert partition_count(admin, "ct-assigned") == 3
    fs = admin.create_topics([NewTopic("ct-assigned-elsewhere", 2, replica_assignment=[[0], [7]])])
    assert error_code(fs["ct-assigned-elsewhere"]) == CKError.INVALID_REPLICA_ASSIGNMENT


def test_create_topics_v7_answers_layout_configs_and_id(wire: WireClient) -> None:
    Topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(
        topics=[
            Topic(name="ct-v7", num_partitions=-1, replication_factor=-1,
                  configs=[CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="7000")]),
            Topic(name="ct-v7-zero", num_partitions=0, replication_factor=1),
            Topic(name="ct-v7-dup", num_partitions=1, replication_factor=1),
            Topic(name="ct-v7-dup", num_partitions=1, replication_factor=1),
            Topic(name="ct-v7-null", num_partitions=1, replication_factor=1,
                  configs=[CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value=None)]),
            Topic(name="ct-v7-both", num_partitions=2, replication_factor=-1,
                  assignments=[CreateTopicsRequest.CreatableReplicaAssignment(partition_index=0, broker_ids=[0])]),
        ],
        timeout_ms=5000,
    )
    response = wire.request(request, 7)
    by_name = {t.name: t for t in response.topics}
    ok = by_name["ct-v7"]
    assert ok.error_code == 0 and ok.num_partitions == 2 and ok.replication_factor == 1
    configs = {c.name: c for c in ok.configs}
    assert configs["retention.ms"].value == "7000" and configs["retention.ms"].config_source == 1
    assert configs["segment.ms"].config_source == 5 and not configs["segment.ms"].read_only
    metadata = wire.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ct-v7")]), 12)
    assert metadata.topics[0].topic_id == ok.topic_id != uuid.UUID(int=0)
    assert by_name["ct-v7-zero"].error_code == 37  # INVALID_PARTITIONS
    assert by_name["ct-v7-dup"].error_code == 42 and "Duplicate" in by_name["ct-v7-dup"].error_message
    assert by_name["ct-v7-null"].error_code == 40  # INVALID_CONFIG
    assert by_name["ct-v7-both"].error_code == 42  # assignment with a partition count: INVALID_REQUEST
    v0 = wire.request(CreateTopicsRequest(topics=[Topic(name="ct-v0", num_partitions=1, replication_factor=1)]), 0)
    assert isinstance(v0, CreateTopicsResponse) and v0.topics[0].error_code == 0


# ------------------------------------------------------------------------------ DeleteTopics


def test_delete_topics_by_name_and_recreate_empty(admin: AdminClient, broker: BrokerProcess) -> None:
    create_topics(admin, NewTopic("dt-name", 1, 1))
    produce(broker, "dt-name", [b"a", b"b"], partition=0)
    admin.delete_topics(["dt-name"])["dt-name"].result(10)
    assert partition_count(admin, "dt-name") is None
    assert error_code(admin.delete_topics(["dt-name"])["dt-name"]) == CKError.UNKNOWN_TOPIC_OR_PART
    create_topics(admin, NewTopic("dt-name", 1, 1))
    lo, hi = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"}).get_watermark_offsets(
        TopicPartition("dt-name", 0), timeout=10)
    assert (lo, hi) == (0, 0)


def test_delete_topics_by_id_v6(wire: WireClient, admin: AdminClient) -> None:
    create_topics(admin, NewTopic("dt-id", 1, 1))
    metadata = wire.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="dt-id")]), 12)
    topic_id = metadata.topics[0].topic_id
    State = DeleteTopicsRequest.DeleteTopicState
    unknown = uuid.uuid4()
    response = wire.request(DeleteTopicsRequest(topics=[State(name=None, topic_id=topic_id),
                                                        State(name=None, topic_id=unknown)], timeout_ms=5000), 6)
    results = {r.topic_id: r for r in response.responses}
    assert results[topic_id].error_code == 0 and results[topic_id].name == "dt-id"
    assert results[unknown].error_code == 100  # UNKNOWN_TOPIC_ID
    assert partition_count(admin, "dt-id") is None


def test_delete_topics_disabled(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "nodelete", overrides={"delete.topic.enable": "false"}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        create_topics(a, NewTopic("keep-me", 1, 1))
        assert error_code(a.delete_topics(["keep-me"])["keep-me"]) == CKError.TOPIC_DELETION_DISABLED
        assert partition_count(a, "keep-me") == 1


# -------------------------------------------------------------------------- CreatePartitions


def test_create_partitions_grows_and_new_partition_is_writable(admin: AdminClient, broker: BrokerProcess) -> None:
    create_topics(admin, NewTopic("cp-grow", 1, 1))
    admin.create_partitions([NewPartitions("cp-grow", 3)], validate_only=True)["cp-grow"].result(10)
    assert partition_count(admin, "cp-grow") == 1
    admin.create_partitions([NewPartitions("cp-grow", 3)])["cp-grow"].result(10)
    assert partition_count(admin, "cp-grow") == 3
    produce(broker, "cp-grow", [b"in-partition-2"], partition=2)
    (msg,) = read_partition(broker, "cp-grow", 2, 1)
    assert msg.value() == b"in-partition-2" and msg.partition() == 2
    assert error_code(admin.create_partitions([NewPartitions("cp-grow", 2)])["cp-grow"]) == CKError.INVALID_PARTITIONS
    assert error_code(admin.create_partitions([NewPartitions("cp-grow", 3)])["cp-grow"]) == CKError.INVALID_PARTITIONS
    missing = admin.create_partitions([NewPartitions("cp-missing", 3)])["cp-missing"]
    assert error_code(missing) == CKError.UNKNOWN_TOPIC_OR_PART


# ------------------------------------------------------------------ DescribeTopics, Metadata


def test_describe_topics_and_list_topics_see_changes_at_once(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("tp-seen", 4, 1))
    assert "tp-seen" in admin.list_topics(timeout=10).topics
    (future,) = admin.describe_topics(TopicCollection(["tp-seen"])).values()
    description = future.result(10)
    assert description.name == "tp-seen" and len(description.partitions) == 4
    assert all(p.leader.id == 0 for p in description.partitions)
    admin.delete_topics(["tp-seen"])["tp-seen"].result(10)
    assert "tp-seen" not in admin.list_topics(timeout=10).topics


def test_kafka_python_topics_and_partitions(kp_admin: KafkaAdminClient) -> None:
    result = kp_admin.create_topics({"kp-topic": {"num_partitions": 1, "replication_factor": 1,
                                                  "configs": {"retention.ms": "90000"}}})
    (created,) = result["topics"]
    assert created["error_code"] == 0 and created["num_partitions"] == 1
    assert created["configs"]["retention.ms"]["value"] == "90000"
    kp_admin.create_partitions({"kp-topic": 3})
    assert len(kp_admin.describe_topics(["kp-topic"])[0]["partitions"]) == 3

    with pytest.raises(InvalidPartitionsError):
        kp_admin.create_partitions({"kp-topic": 2})
    with pytest.raises(TopicAlreadyExistsError):
        kp_admin.create_topics({"kp-topic": {"num_partitions": 1, "replication_factor": 1}})
    kp_admin.delete_topics(["kp-topic"])
    assert "kp-topic" not in kp_admin.list_topics()


def test_fetch_waiting_on_a_deleted_topic_answers_at_once(admin: AdminClient, broker: BrokerProcess) -> None:
    produce(broker, "doomed", [b"x"], partition=0)
    request = FetchRequest(
        replica_id=-1, max_wait_ms=20_000, min_bytes=1, max_bytes=1 << 20,
        topics=[FetchRequest.FetchTopic(topic="doomed", partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=1 << 20)])],
    )
    with WireClient.connect(broker.bootstrap) as client:
        client.send(request, 11)
        time.sleep(0.5)  # the fetch is parked in the purgatory
        started = time.monotonic()
        admin.delete_topics(["doomed"])["doomed"].result(10)
        _, response = client.receive()
        assert time.monotonic() - started < 5  # not the 20 s max wait
    assert response.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [10, 11, 12])
def test_metadata_for_an_unknown_topic_id(broker: BrokerProcess, version: int) -> None:
    """v10-11 requests may carry a null name and a topic id, but Kafka looks topics up by id only from
    v12 and refuses them before (INVALID_REQUEST, the name answered as "": it is only nullable from
    v12); at v12 an unknown id is UNKNOWN_TOPIC_ID. The connection stays open either way."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4())])
    expected = ErrorCode.INVALID_REQUEST if version < 12 else ErrorCode.UNKNOWN_TOPIC_ID
    with WireClient.connect(broker.bootstrap) as client:
        response = client.request(request, version)
        [topic] = response.topics
        assert topic.error_code == expected
        assert topic.name == ("" if version < 12 else None)
        assert client.request(request, version).topics[0].error_code == expected  # still open
