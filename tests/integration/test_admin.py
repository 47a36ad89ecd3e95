"""Admin APIs against a real broker: confluent-kafka AdminClient, kafka-python KafkaAdminClient, and a
hand-rolled client for the versions and fields the libraries do not expose.

One module-scoped broker (started with ``log.retention.hours=48`` and ``num.partitions=2`` so static
broker configs and broker defaults show); every test uses its own topic names.
"""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from confluent_kafka.error import KafkaError as CKError
from kafka.admin import AlterConfigOp, ConfigResourceType, KafkaAdminClient
from kafka.admin import ConfigResource as KPConfigResource

from tidelog.errors import ErrorCode
from tidelog.protocol import decode_response, encode_request
from tidelog.protocol.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    MetadataRequest,
)
from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration

STATIC = {"log.retention.hours": "48", "num.partitions": "2"}
HOURS_48_MS = str(48 * 3_600_000)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("admin"), overrides=STATIC) as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def kp_admin(broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    yield client
    client.close()


def _create(admin: AdminClient, *topics: NewTopic, **kw) -> None:
    for f in admin.create_topics(list(topics), **kw).values():
        f.result(10)


def _error_code(future) -> int:
    with pytest.raises(KafkaException) as info:
        future.result(10)
    return info.value.args[0].code()


def _describe(admin: AdminClient, rtype: ResourceType, name: str) -> dict[str, ConfigEntry]:
    (future,) = admin.describe_configs([ConfigResource(rtype, name)]).values()
    return future.result(10)


def _partitions(admin: AdminClient, topic: str) -> int | None:
    t = admin.list_topics(timeout=10).topics.get(topic)  # all topics: asking for one may auto-create it
    return None if t is None or t.error is not None else len(t.partitions)


def _produce(broker: BrokerProcess, topic: str, values: list[bytes], partition: int = 0) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap})
    errors = []
    for v in values:
        p.produce(topic, v, partition=partition, on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(10) == 0
    assert not errors


def _consume_all(broker: BrokerProcess, topic: str, partition: int, expected: int) -> list:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, partition, -2)])  # OFFSET_BEGINNING
        out = []
        for _ in range(100):
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m)
            if len(out) >= expected:
                break
        return out
    finally:
        c.close()


class RawClient:
    """Just enough of a Kafka client to send one request in an exact version."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def send(self, body, version: int):
        self.correlation_id += 1
        frame = encode_request(body, version, self.correlation_id)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        corr, response = decode_response(self._read(size), body.API_KEY, version)
        assert corr == self.correlation_id
        return response

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "broker closed the connection"
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(broker: BrokerProcess) -> Iterator[RawClient]:
    client = RawClient(broker.bootstrap)
    yield client
    client.close()


# ------------------------------------------------------------------------------ CreateTopics


def test_create_topics_uses_broker_defaults_and_keeps_configs(admin: AdminClient) -> None:
    _create(admin, NewTopic("ct-defaults", config={"cleanup.policy": "compact", "retention.ms": "5000"}))
    assert _partitions(admin, "ct-defaults") == 2  # num.partitions=2, asked for -1
    configs = _describe(admin, ResourceType.TOPIC, "ct-defaults")
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "5000"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_create_topics_validate_only_changes_nothing(admin: AdminClient) -> None:
    _create(admin, NewTopic("ct-validate", 3, 1), validate_only=True)
    assert _partitions(admin, "ct-validate") is None
    fs = admin.create_topics([NewTopic("ct-validate", 1, 1, config={"retention.ms": "soon"})], validate_only=True)
    assert _error_code(fs["ct-validate"]) == CKError.INVALID_CONFIG


def test_create_topics_errors(admin: AdminClient) -> None:
    _create(admin, NewTopic("ct-exists", 1, 1))
    fs = admin.create_topics([
        NewTopic("ct-exists", 1, 1),
        NewTopic("bad/name", 1, 1),
        NewTopic("ct-unknown-key", 1, 1, config={"no.such.config": "1"}),
        NewTopic("ct-bad-value", 1, 1, config={"cleanup.policy": "shred"}),
        NewTopic("ct-rf", 1, 3),
        NewTopic("ct.exists", 1, 1),  # collides with ct-exists? no: '-' is not a collision character
    ])
    assert _error_code(fs["ct-exists"]) == CKError.TOPIC_ALREADY_EXISTS
    assert _error_code(fs["bad/name"]) == CKError.TOPIC_EXCEPTION
    assert _error_code(fs["ct-unknown-key"]) == CKError.INVALID_CONFIG
    assert _error_code(fs["ct-bad-value"]) == CKError.INVALID_CONFIG
    assert _error_code(fs["ct-rf"]) == CKError.INVALID_REPLICATION_FACTOR
    fs["ct.exists"].result(10)
    collide = admin.create_topics([NewTopic("ct_exists", 1, 1)])
    assert _error_code(collide["ct_exists"]) == CKError.TOPIC_EXCEPTION
    for name in ("ct-unknown-key", "ct-bad-value", "ct-rf", "bad/name"):
        assert _partitions(admin, name) is None


def test_create_topics_manual_assignment_on_this_broker(admin: AdminClient) -> None:
    _create(admin, NewTopic("ct-assigned", 3, replica_assignment=[[0], [0], [0]]))
    assert _partitions(admin, "ct-assigned") == 3
    fs = admin.create_topics([NewTopic("ct-assigned-elsewhere", 2, replica_assignment=[[0], [7]])])
    assert _error_code(fs["ct-assigned-elsewhere"]) == CKError.INVALID_REPLICA_ASSIGNMENT


def test_create_topics_v7_answers_layout_configs_and_id(raw: RawClient) -> None:
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
    response = raw.send(request, 7)
    by_name = {t.name: t for t in response.topics}
    ok = by_name["ct-v7"]
    assert ok.error_code == 0 and ok.num_partitions == 2 and ok.replication_factor == 1
    configs = {c.name: c for c in ok.configs}
    assert configs["retention.ms"].value == "7000" and configs["retention.ms"].config_source == 1
    assert configs["segment.ms"].config_source == 5 and not configs["segment.ms"].read_only
    metadata = raw.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ct-v7")]), 12)
    assert metadata.topics[0].topic_id == ok.topic_id != uuid.UUID(int=0)
    assert by_name["ct-v7-zero"].error_code == 37  # INVALID_PARTITIONS
    assert by_name["ct-v7-dup"].error_code == 42 and "Duplicate" in by_name["ct-v7-dup"].error_message
    assert by_name["ct-v7-null"].error_code == 40  # INVALID_CONFIG
    assert by_name["ct-v7-both"].error_code == 42  # assignment with a partition count: INVALID_REQUEST
    v0 = raw.send(CreateTopicsRequest(topics=[Topic(name="ct-v0", num_partitions=1, replication_factor=1)]), 0)
    assert isinstance(v0, CreateTopicsResponse) and v0.topics[0].error_code == 0


# ------------------------------------------------------------------------------ DeleteTopics


def test_delete_topics_by_name_and_recreate_empty(admin: AdminClient, broker: BrokerProcess) -> None:
    _create(admin, NewTopic("dt-name", 1, 1))
    _produce(broker, "dt-name", [b"a", b"b"])
    admin.delete_topics(["dt-name"])["dt-name"].result(10)
    assert _partitions(admin, "dt-name") is None
    assert _error_code(admin.delete_topics(["dt-name"])["dt-name"]) == CKError.UNKNOWN_TOPIC_OR_PART
    _create(admin, NewTopic("dt-name", 1, 1))
    lo, hi = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"}).get_watermark_offsets(
        TopicPartition("dt-name", 0), timeout=10)
    assert (lo, hi) == (0, 0)


def test_delete_topics_by_id_v6(raw: RawClient, admin: AdminClient) -> None:
    _create(admin, NewTopic("dt-id", 1, 1))
    metadata = raw.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="dt-id")]), 12)
    topic_id = metadata.topics[0].topic_id
    State = DeleteTopicsRequest.DeleteTopicState
    unknown = uuid.uuid4()
    response = raw.send(DeleteTopicsRequest(topics=[State(name=None, topic_id=topic_id),
                                                    State(name=None, topic_id=unknown)], timeout_ms=5000), 6)
    results = {r.topic_id: r for r in response.responses}
    assert results[topic_id].error_code == 0 and results[topic_id].name == "dt-id"
    assert results[unknown].error_code == 100  # UNKNOWN_TOPIC_ID
    assert _partitions(admin, "dt-id") is None


def test_delete_topics_disabled(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "nodelete", overrides={"delete.topic.enable": "false"}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        _create(a, NewTopic("keep-me", 1, 1))
        assert _error_code(a.delete_topics(["keep-me"])["keep-me"]) == CKError.TOPIC_DELETION_DISABLED
        assert _partitions(a, "keep-me") == 1


# -------------------------------------------------------------------------- CreatePartitions


def test_create_partitions_grows_and_new_partition_is_writable(admin: AdminClient, broker: BrokerProcess) -> None:
    _create(admin, NewTopic("cp-grow", 1, 1))
    admin.create_partitions([NewPartitions("cp-grow", 3)], validate_only=True)["cp-grow"].result(10)
    assert _partitions(admin, "cp-grow") == 1
    admin.create_partitions([NewPartitions("cp-grow", 3)])["cp-grow"].result(10)
    assert _partitions(admin, "cp-grow") == 3
    _produce(broker, "cp-grow", [b"in-partition-2"], partition=2)
    (msg,) = _consume_all(broker, "cp-grow", 2, 1)
    assert msg.value() == b"in-partition-2" and msg.partition() == 2
    assert _error_code(admin.create_partitions([NewPartitions("cp-grow", 2)])["cp-grow"]) == CKError.INVALID_PARTITIONS
    assert _error_code(admin.create_partitions([NewPartitions("cp-grow", 3)])["cp-grow"]) == CKError.INVALID_PARTITIONS
    missing = admin.create_partitions([NewPartitions("cp-missing", 3)])["cp-missing"]
    assert _error_code(missing) == CKError.UNKNOWN_TOPIC_OR_PART


# ----------------------------------------------------------------------------- Configs


def test_describe_topic_configs_sources_and_synonyms(admin: AdminClient) -> None:
    _create(admin, NewTopic("dc-topic", 1, 1, config={"segment.bytes": "1048576"}))
    configs = _describe(admin, ResourceType.TOPIC, "dc-topic")
    retention = configs["retention.ms"]
    assert retention.value == HOURS_48_MS  # from log.retention.hours=48 in server.properties
    assert retention.source == ConfigSource.STATIC_BROKER_CONFIG.value
    # librdkafka keys synonyms by name, so of (log.retention.hours=48 static, =168 default) the last stays.
    assert list(retention.synonyms) == ["log.retention.hours"]
    segment = configs["segment.bytes"]
    assert segment.value == "1048576" and segment.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert "segment.bytes" in segment.synonyms and "log.segment.bytes" in segment.synonyms
    assert configs["preallocate"].value == "false"
    missing = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "dc-missing")])
    assert _error_code(next(iter(missing.values()))) == CKError.UNKNOWN_TOPIC_OR_PART


def test_describe_broker_configs(admin: AdminClient) -> None:
    configs = _describe(admin, ResourceType.BROKER, "0")
    assert configs["log.retention.hours"].value == "48"
    assert configs["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["num.partitions"].value == "2" and configs["num.partitions"].is_read_only
    assert configs["delete.topic.enable"].value == "true"
    assert configs["delete.topic.enable"].source == ConfigSource.DEFAULT_CONFIG.value


def test_describe_configs_v4_documentation_types_and_key_filter(raw: RawClient, admin: AdminClient) -> None:
    _create(admin, NewTopic("dc-v4", 1, 1))
    Resource = DescribeConfigsRequest.DescribeConfigsResource
    (synonyms,) = raw.send(DescribeConfigsRequest(
        resources=[Resource(resource_type=2, resource_name="dc-v4", configuration_keys=["retention.ms"])],
        include_synonyms=True), 1).results[0].configs
    assert [(s.name, s.value, s.source) for s in synonyms.synonyms] == [
        ("log.retention.hours", "48", 4), ("log.retention.hours", "168", 5)]  # STATIC_BROKER_CONFIG, DEFAULT_CONFIG
    other = raw.send(DescribeConfigsRequest(resources=[Resource(resource_type=4, resource_name="1")]), 4).results[0]
    assert other.error_code == 42 and other.configs == []  # INVALID_REQUEST: not this broker
    response = raw.send(DescribeConfigsRequest(
        resources=[Resource(resource_type=2, resource_name="dc-v4", configuration_keys=["cleanup.policy", "retention.ms"]),
                   Resource(resource_type=8, resource_name="0", configuration_keys=None)],
        include_synonyms=False, include_documentation=True), 4)
    topic, loggers = response.results
    assert topic.error_code == 0 and sorted(c.name for c in topic.configs) == ["cleanup.policy", "retention.ms"]
    types = {c.name: c.config_type for c in topic.configs}
    assert types == {"cleanup.policy": 7, "retention.ms": 5}  # LIST, LONG
    assert all(c.documentation and not c.synonyms for c in topic.configs)
    assert loggers.error_code == 0 and "root" in {c.name for c in loggers.configs}
    v0 = raw.send(DescribeConfigsRequest(resources=[Resource(resource_type=2, resource_name="dc-v4",
                                                             configuration_keys=["segment.ms"])]), 0)
    assert v0.results[0].configs[0].is_default


# The legacy AlterConfigs API is what this test is about; confluent-kafka warns that it is deprecated.
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_replaces_the_override_set(admin: AdminClient) -> None:
    _create(admin, NewTopic("ac-topic", 1, 1, config={"segment.ms": "100000"}))
    resource = ConfigResource(ResourceType.TOPIC, "ac-topic", set_config={"retention.ms": "123456"})
    next(iter(admin.alter_configs([resource]).values())).result(10)
    configs = _describe(admin, ResourceType.TOPIC, "ac-topic")
    assert configs["retention.ms"].value == "123456"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value  # the old override is gone
    bad = ConfigResource(ResourceType.TOPIC, "ac-topic", set_config={"retention.ms": "-5"})
    assert _error_code(next(iter(admin.alter_configs([bad]).values()))) == CKError.INVALID_CONFIG
    only = ConfigResource(ResourceType.TOPIC, "ac-topic", set_config={"retention.ms": "1"})
    next(iter(admin.alter_configs([only], validate_only=True).values())).result(10)
    assert _describe(admin, ResourceType.TOPIC, "ac-topic")["retention.ms"].value == "123456"


def _incremental(admin: AdminClient, rtype: ResourceType, name: str, *ops: tuple[str, str | None, AlterConfigOpType],
                 **kw):
    entries = [ConfigEntry(n, v, incremental_operation=op) for n, v, op in ops]
    (future,) = admin.incremental_alter_configs([ConfigResource(rtype, name, incremental_configs=entries)], **kw).values()
    return future


def test_incremental_alter_topic_configs(admin: AdminClient, broker: BrokerProcess) -> None:
    _create(admin, NewTopic("iac-topic", 1, 1))
    T = ResourceType.TOPIC
    _incremental(admin, T, "iac-topic", ("retention.ms", "600000", AlterConfigOpType.SET),
                 ("cleanup.policy", "compact", AlterConfigOpType.APPEND)).result(10)
    configs = _describe(admin, T, "iac-topic")
    assert configs["retention.ms"].value == "600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert set(configs["cleanup.policy"].value.split(",")) == {"compact", "delete"}
    _incremental(admin, T, "iac-topic", ("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT),
                 ("retention.ms", None, AlterConfigOpType.DELETE)).result(10)
    configs = _describe(admin, T, "iac-topic")
    assert configs["cleanup.policy"].value == "delete"
    assert configs["retention.ms"].value == HOURS_48_MS
    assert configs["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    bad = _incremental(admin, T, "iac-topic", ("retention.ms", "1", AlterConfigOpType.APPEND))
    assert _error_code(bad) == CKError.INVALID_CONFIG
    assert _error_code(_incremental(admin, T, "iac-topic", ("no.such", "1", AlterConfigOpType.SET))) == CKError.INVALID_CONFIG
    missing = _incremental(admin, T, "iac-missing", ("retention.ms", "1", AlterConfigOpType.SET))
    assert _error_code(missing) == CKError.UNKNOWN_TOPIC_OR_PART
    # The change applies to the live log: a batch above max.message.bytes is refused.
    assert _send_big(broker, "iac-topic") is None
    _incremental(admin, T, "iac-topic", ("max.message.bytes", "1000", AlterConfigOpType.SET)).result(10)
    assert _send_big(broker, "iac-topic") == CKError.MSG_SIZE_TOO_LARGE


def _send_big(broker: BrokerProcess, topic: str) -> int | None:
    """Produce one 5000-byte record; the error code, or None when it was written."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 100_000})
    outcome = []
    p.produce(topic, b"x" * 5000, partition=0, on_delivery=lambda err, msg: outcome.append(err))
    p.flush(10)
    assert len(outcome) == 1
    return None if outcome[0] is None else outcome[0].code()


def test_incremental_alter_broker_configs(admin: AdminClient, broker: BrokerProcess, raw: RawClient) -> None:
    B = ResourceType.BROKER
    _create(admin, NewTopic("iac-broker", 1, 1))
    try:
        _incremental(admin, B, "0", ("log.retention.ms", "777000", AlterConfigOpType.SET)).result(10)
        broker_configs = _describe(admin, B, "0")
        assert broker_configs["log.retention.ms"].value == "777000"
        assert broker_configs["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        topic = _describe(admin, ResourceType.TOPIC, "iac-broker")["retention.ms"]
        assert topic.value == "777000" and topic.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        # A broker-level topic default applies live to topics that do not override it.
        _incremental(admin, B, "0", ("message.max.bytes", "1000", AlterConfigOpType.SET)).result(10)
        assert _send_big(broker, "iac-broker") == CKError.MSG_SIZE_TOO_LARGE
        _incremental(admin, B, "0", ("message.max.bytes", None, AlterConfigOpType.DELETE)).result(10)
        assert _send_big(broker, "iac-broker") is None
        static = _incremental(admin, B, "0", ("num.partitions", "5", AlterConfigOpType.SET))
        assert _error_code(static) == CKError.INVALID_REQUEST
        bad = _incremental(admin, B, "0", ("log.retention.ms", "forever", AlterConfigOpType.SET))
        assert _error_code(bad) == CKError.INVALID_REQUEST
        # Keys Tidelog does not know are kept and reported, as Kafka keeps custom broker configs.
        _incremental(admin, B, "0", ("custom.plugin.key", "on", AlterConfigOpType.SET)).result(10)
        assert _describe(admin, B, "0")["custom.plugin.key"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        Resource = DescribeConfigsRequest.DescribeConfigsResource
        (cluster_default,) = raw.send(DescribeConfigsRequest(resources=[Resource(resource_type=4, resource_name="")]),
                                      4).results
        assert {(c.name, c.value, c.config_source) for c in cluster_default.configs} == {
            ("log.retention.ms", "777000", 3), ("custom.plugin.key", "on", 3)}  # DYNAMIC_DEFAULT_BROKER_CONFIG
    finally:
        _incremental(admin, B, "0", ("log.retention.ms", None, AlterConfigOpType.DELETE),
                     ("custom.plugin.key", None, AlterConfigOpType.DELETE)).result(10)
    assert "custom.plugin.key" not in _describe(admin, B, "0")
    topic = _describe(admin, ResourceType.TOPIC, "iac-broker")["retention.ms"]
    assert topic.value == HOURS_48_MS and topic.source == ConfigSource.STATIC_BROKER_CONFIG.value


# ---------------------------------------------------------------------------- DeleteRecords


def test_delete_records_moves_the_low_watermark(admin: AdminClient, broker: BrokerProcess) -> None:
    _create(admin, NewTopic("dr-topic", 1, 1))
    _produce(broker, "dr-topic", [f"m{i}".encode() for i in range(10)])
    (future,) = admin.delete_records([TopicPartition("dr-topic", 0, 4)]).values()
    assert future.result(10).low_watermark == 4
    messages = _consume_all(broker, "dr-topic", 0, 6)
    assert [m.offset() for m in messages] == list(range(4, 10))
    assert messages[0].value() == b"m4"
    (above,) = admin.delete_records([TopicPartition("dr-topic", 0, 11)]).values()
    assert _error_code(above) == CKError.OFFSET_OUT_OF_RANGE
    (everything,) = admin.delete_records([TopicPartition("dr-topic", 0, -1)]).values()
    assert everything.result(10).low_watermark == 10


def test_delete_records_errors(admin: AdminClient, raw: RawClient) -> None:
    _create(admin, NewTopic("dr-compact", 1, 1, config={"cleanup.policy": "compact"}))
    (compact,) = admin.delete_records([TopicPartition("dr-compact", 0, 0)]).values()
    assert _error_code(compact) == CKError.POLICY_VIOLATION
    Topic, Partition = DeleteRecordsRequest.DeleteRecordsTopic, DeleteRecordsRequest.DeleteRecordsPartition
    response = raw.send(DeleteRecordsRequest(topics=[
        Topic(name="dr-compact", partitions=[Partition(partition_index=5, offset=0)]),
        Topic(name="dr-nowhere", partitions=[Partition(partition_index=0, offset=0)]),
    ], timeout_ms=5000), 2)
    codes = [(p.error_code, p.low_watermark) for t in response.topics for p in t.partitions]
    assert codes == [(3, -1), (3, -1)]  # UNKNOWN_TOPIC_OR_PARTITION


# ---------------------------------------------------------------------- cluster and topics


def test_describe_cluster(admin: AdminClient, raw: RawClient) -> None:
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    metadata = admin.list_topics(timeout=10)
    assert cluster.cluster_id == metadata.cluster_id
    assert cluster.controller.id == 0 and [n.id for n in cluster.nodes] == [0]
    asked = raw.send(DescribeClusterRequest(include_cluster_authorized_operations=True), 0)
    assert asked.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    plain = raw.send(DescribeClusterRequest(include_cluster_authorized_operations=False), 2)
    assert plain.error_code == 0 and plain.cluster_authorized_operations == -(2**31) and plain.endpoint_type == 1
    controller = raw.send(DescribeClusterRequest(endpoint_type=2), 1)
    assert controller.error_code == 114  # MISMATCHED_ENDPOINT_TYPE


def test_describe_topics_and_list_topics_see_changes_at_once(admin: AdminClient) -> None:
    from confluent_kafka import TopicCollection

    _create(admin, NewTopic("tp-seen", 4, 1))
    assert "tp-seen" in admin.list_topics(timeout=10).topics
    (future,) = admin.describe_topics(TopicCollection(["tp-seen"])).values()
    description = future.result(10)
    assert description.name == "tp-seen" and len(description.partitions) == 4
    assert all(p.leader.id == 0 for p in description.partitions)
    admin.delete_topics(["tp-seen"])["tp-seen"].result(10)
    assert "tp-seen" not in admin.list_topics(timeout=10).topics


# ---------------------------------------------------------------------------- kafka-python


def test_kafka_python_topics_and_partitions(kp_admin: KafkaAdminClient) -> None:
    result = kp_admin.create_topics({"kp-topic": {"num_partitions": 1, "replication_factor": 1,
                                                  "configs": {"retention.ms": "90000"}}})
    (created,) = result["topics"]
    assert created["error_code"] == 0 and created["num_partitions"] == 1
    assert created["configs"]["retention.ms"]["value"] == "90000"
    kp_admin.create_partitions({"kp-topic": 3})
    assert len(kp_admin.describe_topics(["kp-topic"])[0]["partitions"]) == 3
    from kafka.errors import InvalidPartitionsError, TopicAlreadyExistsError

    with pytest.raises(InvalidPartitionsError):
        kp_admin.create_partitions({"kp-topic": 2})
    with pytest.raises(TopicAlreadyExistsError):
        kp_admin.create_topics({"kp-topic": {"num_partitions": 1, "replication_factor": 1}})
    kp_admin.delete_topics(["kp-topic"])
    assert "kp-topic" not in kp_admin.list_topics()


def test_kafka_python_configs(kp_admin: KafkaAdminClient) -> None:
    kp_admin.create_topics({"kp-configs": {"num_partitions": 1, "replication_factor": 1}})
    kp_admin.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, "kp-configs", {"retention.ms": "42000"})])
    described = kp_admin.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, "kp-configs")],
                                          include_synonyms=True)
    retention = described["topic"]["kp-configs"]["retention.ms"]
    assert retention["value"] == "42000" and retention["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert retention["synonyms"][0] == {"name": "retention.ms", "value": "42000", "source": "DYNAMIC_TOPIC_CONFIG"}
    everything = kp_admin.describe_configs([KPConfigResource(ConfigResourceType.BROKER, "0")], config_filter="all")
    assert everything["broker"]["0"]["log.retention.hours"]["config_source"] == "STATIC_BROKER_CONFIG"
    loggers = KPConfigResource(ConfigResourceType.BROKER_LOGGER, "0", {"tidelog.cluster.controller": "DEBUG"})
    kp_admin.alter_configs([loggers])
    levels = kp_admin.describe_configs([KPConfigResource(ConfigResourceType.BROKER_LOGGER, "0")], config_filter="all")
    assert levels["broker_logger"]["0"]["tidelog.cluster.controller"]["value"] == "DEBUG"
    reset = KPConfigResource(ConfigResourceType.BROKER_LOGGER, "0", {"tidelog.cluster.controller": (AlterConfigOp.DELETE, None)})
    kp_admin.alter_configs([reset])
    levels = kp_admin.describe_configs([KPConfigResource(ConfigResourceType.BROKER_LOGGER, "0")], config_filter="all")
    assert levels["broker_logger"]["0"]["tidelog.cluster.controller"]["value"] == levels["broker_logger"]["0"]["root"]["value"]
    bad_level = KPConfigResource(ConfigResourceType.BROKER_LOGGER, "0", {"root": "LOUD"})
    assert "InvalidConfiguration" in str(kp_admin.alter_configs([bad_level], raise_on_unknown=False)["broker_logger"]["0"])


def test_kafka_python_cluster_and_log_dirs(kp_admin: KafkaAdminClient, broker: BrokerProcess) -> None:
    cluster = kp_admin.describe_cluster()
    assert cluster["controller_id"] == 0 and [b["broker_id"] for b in cluster["brokers"]] == [0]
    assert "DESCRIBE_CONFIGS" in cluster["authorized_operations"] and not cluster["brokers"][0]["is_fenced"]
    kp_admin.create_topics({"kp-dirs": {"num_partitions": 2, "replication_factor": 1}})
    _produce(broker, "kp-dirs", [b"x" * 100] * 5, partition=1)
    (answer,) = kp_admin.describe_log_dirs()
    (log_dir,) = answer["log_dirs"]
    assert log_dir["error_code"] == 0 and Path(log_dir["log_dir"]).is_absolute()
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    parts = {p["partition_index"]: p for t in log_dir["topics"] if t["name"] == "kp-dirs" for p in t["partitions"]}
    assert set(parts) == {0, 1} and parts[1]["partition_size"] > 500 and parts[0]["partition_size"] == 0
    (only,) = kp_admin.describe_log_dirs({"kp-dirs": [1]})
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in only["log_dirs"][0]["topics"]] == \
        [("kp-dirs", [1])]


def test_describe_log_dirs_raw_versions(raw: RawClient) -> None:
    v0 = raw.send(DescribeLogDirsRequest(topics=None), 0)
    v4 = raw.send(DescribeLogDirsRequest(topics=[]), 4)
    assert len(v0.results) == len(v4.results) == 1
    assert v4.error_code == 0 and v4.results[0].topics == [] and v4.results[0].total_bytes > 0


def test_configs_survive_a_restart(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "restart") as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        _create(a, NewTopic("rs-topic", 1, 1, config={"cleanup.policy": "compact"}))
        _incremental(a, ResourceType.BROKER, "0", ("log.segment.bytes", "2097152", AlterConfigOpType.SET)).result(10)
        b.restart()
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        configs = _describe(a, ResourceType.TOPIC, "rs-topic")
        assert configs["cleanup.policy"].value == "compact"
        assert configs["segment.bytes"].value == "2097152"
        assert configs["segment.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value


def test_authorized_operations_through_metadata(admin: AdminClient, broker: BrokerProcess) -> None:
    """confluent-kafka asks Metadata v8-10 for authorized operations (no authorizer: all supported ones)."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation

    _produce(broker, "ops-topic", [b"x"])
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert AclOperation.ALTER_CONFIGS in cluster.authorized_operations
    assert AclOperation.READ not in cluster.authorized_operations  # not a cluster operation
    topic = admin.describe_topics(TopicCollection(["ops-topic"]), include_authorized_operations=True)
    ops = topic["ops-topic"].result(10).authorized_operations
    assert {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE} <= set(ops)
    assert AclOperation.CLUSTER_ACTION not in ops
    plain = admin.describe_cluster().result(10)
    assert not plain.authorized_operations  # not asked for: omitted


def test_fetch_waiting_on_a_deleted_topic_answers_at_once(admin: AdminClient, broker: BrokerProcess) -> None:
    import time

    from tidelog.protocol.messages import FetchRequest
    from tidelog.testing.client import WireClient

    _produce(broker, "doomed", [b"x"])
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
    """v10-11 requests may carry a null name (ids arrived in the request first); the response's name is
    only nullable from v12, so the broker must answer with an empty name rather than fail to encode."""
    from tidelog.protocol.messages import MetadataRequest
    from tidelog.testing.client import WireClient

    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4())])
    with WireClient.connect(broker.bootstrap) as client:
        response = client.request(request, version)
        [topic] = response.topics
        assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_ID
        assert topic.name == ("" if version < 12 else None)
        assert client.request(request, version).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID  # still open
