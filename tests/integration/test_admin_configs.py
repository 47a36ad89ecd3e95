"""Config admin APIs against a real broker: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on
topics, the broker and broker loggers, through confluent-kafka's AdminClient, kafka-python's
KafkaAdminClient and a wire client for the versions and fields the libraries do not expose.

One module-scoped broker, started with ``log.retention.hours=48`` and ``num.partitions=2`` so static
broker configs show; every test uses its own topic names.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from confluent_kafka.error import KafkaError as CKError
from kafka.admin import AlterConfigOp, ConfigResourceType, KafkaAdminClient
from kafka.admin import ConfigResource as KPConfigResource

from tests.integration.kafka_io import create_topics, describe_configs, error_code
from tidelog.protocol.messages import DescribeConfigsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("admin_configs")]

BROKER_OVERRIDES = {"log.retention.hours": "48", "num.partitions": "2"}
HOURS_48_MS = str(48 * 3_600_000)


def test_describe_topic_configs_sources_and_synonyms(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("dc-topic", 1, 1, config={"segment.bytes": "1048576"}))
    configs = describe_configs(admin, ResourceType.TOPIC, "dc-topic")
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
    assert error_code(next(iter(missing.values()))) == CKError.UNKNOWN_TOPIC_OR_PART


def test_describe_broker_configs(admin: AdminClient) -> None:
    configs = describe_configs(admin, ResourceType.BROKER, "0")
    assert configs["log.retention.hours"].value == "48"
    assert configs["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["num.partitions"].value == "2" and configs["num.partitions"].is_read_only
    assert configs["delete.topic.enable"].value == "true"
    assert configs["delete.topic.enable"].source == ConfigSource.DEFAULT_CONFIG.value


def test_describe_configs_v4_documentation_types_and_key_filter(wire: WireClient, admin: AdminClient) -> None:
    create_topics(admin, NewTopic("dc-v4", 1, 1))
    Resource = DescribeConfigsRequest.DescribeConfigsResource
    (synonyms,) = wire.request(DescribeConfigsRequest(
        resources=[Resource(resource_type=2, resource_name="dc-v4", configuration_keys=["retention.ms"])],
        include_synonyms=True), 1).results[0].configs
    assert [(s.name, s.value, s.source) for s in synonyms.synonyms] == [
        ("log.retention.hours", "48", 4), ("log.retention.hours", "168", 5)]  # STATIC_BROKER_CONFIG, DEFAULT_CONFIG
    other = wire.request(DescribeConfigsRequest(resources=[Resource(resource_type=4, resource_name="1")]), 4).results[0]
    assert other.error_code == 42 and other.configs == []  # INVALID_REQUEST: not this broker
    response = wire.request(DescribeConfigsRequest(
        resources=[Resource(resource_type=2, resource_name="dc-v4", configuration_keys=["cleanup.policy", "retention.ms"]),
                   Resource(resource_type=8, resource_name="0", configuration_keys=None)],
        include_synonyms=False, include_documentation=True), 4)
    topic, loggers = response.results
    assert topic.error_code == 0 and sorted(c.name for c in topic.configs) == ["cleanup.policy", "retention.ms"]
    types = {c.name: c.config_type for c in topic.configs}
    assert types == {"cleanup.policy": 7, "retention.ms": 5}  # LIST, LONG
    assert all(c.documentation and not c.synonyms for c in topic.configs)
    assert loggers.error_code == 0 and "root" in {c.name for c in loggers.configs}
    v0 = wire.request(DescribeConfigsRequest(resources=[Resource(resource_type=2, resource_name="dc-v4",
                                                                 configuration_keys=["segment.ms"])]), 0)
    assert v0.results[0].configs[0].is_default


# The legacy AlterConfigs API is what this test is about; confluent-kafka warns that it is deprecated.
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_replaces_the_override_set(admin: AdminClient) -> None:
    create_topics(admin, NewTopic("ac-topic", 1, 1, config={"segment.ms": "100000"}))
    resource = ConfigResource(ResourceType.TOPIC, "ac-topic", set_config={"retention.ms": "123456"})
    next(iter(admin.alter_configs([resource]).values())).result(10)
    configs = describe_configs(admin, ResourceType.TOPIC, "ac-topic")
    assert configs["retention.ms"].value == "123456"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value  # the old override is gone
    bad = ConfigResource(ResourceType.TOPIC, "ac-topic", set_config={"retention.ms": "-5"})
    assert error_code(next(iter(admin.alter_configs([bad]).values()))) == CKError.INVALID_CONFIG
    only = ConfigResource(ResourceType.TOPIC, "ac-topic", set_config={"retention.ms": "1"})
    next(iter(admin.alter_configs([only], validate_only=True).values())).result(10)
    assert describe_configs(admin, ResourceType.TOPIC, "ac-topic")["retention.ms"].value == "123456"


def _incremental(admin: AdminClient, rtype: ResourceType, name: str, *ops: tuple[str, str | None, AlterConfigOpType],
                 **kw):
    entries = [ConfigEntry(n, v, incremental_operation=op) for n, v, op in ops]
    (future,) = admin.incremental_alter_configs([ConfigResource(rtype, name, incremental_configs=entries)], **kw).values()
    return future


def test_incremental_alter_topic_configs(admin: AdminClient, broker: BrokerProcess) -> None:
    create_topics(admin, NewTopic("iac-topic", 1, 1))
    T = ResourceType.TOPIC
    _incremental(admin, T, "iac-topic", ("retention.ms", "600000", AlterConfigOpType.SET),
                 ("cleanup.policy", "compact", AlterConfigOpType.APPEND)).result(10)
    configs = describe_configs(admin, T, "iac-topic")
    assert configs["retention.ms"].value == "600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert set(configs["cleanup.policy"].value.split(",")) == {"compact", "delete"}
    _incremental(admin, T, "iac-topic", ("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT),
                 ("retention.ms", None, AlterConfigOpType.DELETE)).result(10)
    configs = describe_configs(admin, T, "iac-topic")
    assert configs["cleanup.policy"].value == "delete"
    assert configs["retention.ms"].value == HOURS_48_MS
    assert configs["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    bad = _incremental(admin, T, "iac-topic", ("retention.ms", "1", AlterConfigOpType.APPEND))
    assert error_code(bad) == CKError.INVALID_CONFIG
    assert error_code(_incremental(admin, T, "iac-topic", ("no.such", "1", AlterConfigOpType.SET))) == CKError.INVALID_CONFIG
    missing = _incremental(admin, T, "iac-missing", ("retention.ms", "1", AlterConfigOpType.SET))
    assert error_code(missing) == CKError.UNKNOWN_TOPIC_OR_PART
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


def test_incremental_alter_broker_configs(admin: AdminClient, broker: BrokerProcess, wire: WireClient) -> None:
    B = ResourceType.BROKER
    create_topics(admin, NewTopic("iac-broker", 1, 1))
    try:
        _incremental(admin, B, "0", ("log.retention.ms", "777000", AlterConfigOpType.SET)).result(10)
        broker_configs = describe_configs(admin, B, "0")
        assert broker_configs["log.retention.ms"].value == "777000"
        assert broker_configs["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        topic = describe_configs(admin, ResourceType.TOPIC, "iac-broker")["retention.ms"]
        assert topic.value == "777000" and topic.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        # A broker-level topic default applies live to topics that do not override it.
        _incremental(admin, B, "0", ("message.max.bytes", "1000", AlterConfigOpType.SET)).result(10)
        assert _send_big(broker, "iac-broker") == CKError.MSG_SIZE_TOO_LARGE
        _incremental(admin, B, "0", ("message.max.bytes", None, AlterConfigOpType.DELETE)).result(10)
        assert _send_big(broker, "iac-broker") is None
        static = _incremental(admin, B, "0", ("num.partitions", "5", AlterConfigOpType.SET))
        assert error_code(static) == CKError.INVALID_REQUEST
        bad = _incremental(admin, B, "0", ("log.retention.ms", "forever", AlterConfigOpType.SET))
        assert error_code(bad) == CKError.INVALID_REQUEST
        # Keys Tidelog does not know are kept and reported, as Kafka keeps custom broker configs.
        _incremental(admin, B, "0", ("custom.plugin.key", "on", AlterConfigOpType.SET)).result(10)
        assert describe_configs(admin, B, "0")["custom.plugin.key"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        Resource = DescribeConfigsRequest.DescribeConfigsResource
        (cluster_default,) = wire.request(
            DescribeConfigsRequest(resources=[Resource(resource_type=4, resource_name="")]), 4).results
        assert {(c.name, c.value, c.config_source) for c in cluster_default.configs} == {
            ("log.retention.ms", "777000", 3), ("custom.plugin.key", "on", 3)}  # DYNAMIC_DEFAULT_BROKER_CONFIG
    finally:
        _incremental(admin, B, "0", ("log.retention.ms", None, AlterConfigOpType.DELETE),
                     ("custom.plugin.key", None, AlterConfigOpType.DELETE)).result(10)
    assert "custom.plugin.key" not in describe_configs(admin, B, "0")
    topic = describe_configs(admin, ResourceType.TOPIC, "iac-broker")["retention.ms"]
    assert topic.value == HOURS_48_MS and topic.source == ConfigSource.STATIC_BROKER_CONFIG.value


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


def test_configs_survive_a_restart(fresh_broker: BrokerProcess) -> None:
    b = fresh_broker
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    create_topics(a, NewTopic("rs-topic", 1, 1, config={"cleanup.policy": "compact"}))
    _incremental(a, ResourceType.BROKER, "0", ("log.segment.bytes", "2097152", AlterConfigOpType.SET)).result(10)
    b.restart()
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    configs = describe_configs(a, ResourceType.TOPIC, "rs-topic")
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.bytes"].value == "2097152"
    assert configs["segment.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
