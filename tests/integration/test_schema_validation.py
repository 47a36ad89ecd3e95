"""Broker-side schema id validation (``confluent.value.schema.validation`` / ``.key.``, as Confluent
Server names them; docs/schema-registry.md) against a real ``tidelog serve``: the topic configs
through CreateTopics, DescribeConfigs and IncrementalAlterConfigs; confluent-kafka's plain produce
refused (INVALID_RECORD; kafka-python shows the reason), its AvroSerializer's records
accepted and consumed back; an id registered for another subject refused; and, on the wire, one
Produce request whose refused partition gets INVALID_RECORD with its record errors while its other
partition is written."""

from __future__ import annotations

import json
import time

import kafka
import kafka.errors
import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.integration.kafka_io import create_topic, describe_configs, raw_batches, read_partition
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ProduceRequest
from tidelog.records import build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

USER = json.dumps({"type": "record", "name": "User", "namespace": "example",
                   "fields": [{"name": "name", "type": "string"}]})
VALIDATE_VALUES = {"confluent.value.schema.validation": "true"}


def registry(broker: BrokerProcess) -> SchemaRegistryClient:
    assert broker.schema_registry_url is not None
    return SchemaRegistryClient({"url": broker.schema_registry_url})


def deliver(broker: BrokerProcess, topic: str, values: list[bytes], key: bytes | None = None) -> list:
    """Produce ``values`` one at a time (one batch each); the error of each delivery report (None: written)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    reports: list = []
    for value in values:
        producer.produce(topic, value=value, key=key, on_delivery=lambda err, msg: reports.append(err))
        assert producer.flush(30) == 0
    assert len(reports) == len(values)
    return reports


def test_topic_configs_are_created_described_and_altered(broker: BrokerProcess) -> None:
    topic = "sv-configs"
    create_topic(broker, topic, config=VALIDATE_VALUES)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    entries = describe_configs(admin, ResourceType.TOPIC, topic)
    assert entries["confluent.value.schema.validation"].value == "true"
    assert entries["confluent.value.schema.validation"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["confluent.key.schema.validation"].value == "false"
    assert entries["confluent.value.subject.name.strategy"].value == (
        "io.confluent.kafka.serializers.subject.TopicNameStrategy")
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("confluent.key.schema.validation", "true", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("confluent.key.subject.name.strategy", "TopicRecordNameStrategy",
                    incremental_operation=AlterConfigOpType.SET)])
    (future,) = admin.incremental_alter_configs([resource]).values()
    future.result(15)
    entries = describe_configs(admin, ResourceType.TOPIC, topic)
    assert entries["confluent.key.schema.validation"].value == "true"
    assert entries["confluent.key.subject.name.strategy"].value == (
        "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy")
    bad = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("confluent.value.subject.name.strategy", "MyStrategy", incremental_operation=AlterConfigOpType.SET)])
    (future,) = admin.incremental_alter_configs([bad]).values()
    try:
        future.result(15)
        raise AssertionError("an unknown subject name strategy was accepted")
    except Exception as e:
        assert e.args[0].code() == KafkaError.INVALID_CONFIG


def test_plain_records_are_refused_and_serialized_ones_accepted(broker: BrokerProcess) -> None:
    topic = "sv-users"
    create_topic(broker, topic, config=VALIDATE_VALUES)
    client = registry(broker)
    serialize = AvroSerializer(client, USER)
    framed = serialize({"name": "ada"}, SerializationContext(topic, MessageField.VALUE))
    # the other topic's subject: the same schema text, registered there under its own subject
    other = AvroSerializer(client, USER.replace('"User"', '"Other"'))(
        {"name": "x"}, SerializationContext("sv-elsewhere", MessageField.VALUE))
    plain, accepted, elsewhere, none = deliver(broker, topic, [b'{"name": "ada"}', framed, other, None])
    # librdkafka reports the code only ("Broker failed to validate record"); the reason is in the
    # response's record errors, which kafka-python (below) and the Java client show
    assert plain is not None and plain.code() == KafkaError.INVALID_RECORD
    assert accepted is None
    assert elsewhere is not None and elsewhere.code() == KafkaError.INVALID_RECORD
    assert none is None, "a tombstone (null value) passes, as in Confluent Server"
    # only what was accepted is in the log: the framed record, then the tombstone
    messages = read_partition(broker, topic, 0, 2)
    assert [(m.offset(), m.value()) for m in messages] == [(0, framed), (1, None)]
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": broker.schema_registry_url}))
    assert deserialize(messages[0].value(), SerializationContext(topic, MessageField.VALUE)) == {"name": "ada"}


def test_the_reason_reaches_a_client_that_shows_record_errors(broker: BrokerProcess) -> None:
    topic = "sv-reason"
    create_topic(broker, topic, config=VALIDATE_VALUES)
    other_id = registry(broker).register_schema("sv-reason-elsewhere-value", Schema(USER, "AVRO"))
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0)
    try:
        with pytest.raises(kafka.errors.InvalidRecordError) as plain:
            producer.send(topic, b'{"name": "ada"}').get(30)
        with pytest.raises(kafka.errors.InvalidRecordError) as elsewhere:
            producer.send(topic, b"\x00" + other_id.to_bytes(4, "big") + b"\x02x").get(30)
    finally:
        producer.close(10)
    assert ("The record's value starts with byte 123: it is not in the schema registry's wire format (the magic "
            f"byte 0 and a 4-byte schema id), which topic {topic} requires") in str(plain.value)
    assert (f"The record's value names schema id {other_id}, which is not registered under subject "
            f"'{topic}-value'") in str(elsewhere.value)


def test_one_request_refuses_only_the_partition_with_bad_records(broker: BrokerProcess) -> None:
    topic = "sv-wire"
    create_topic(broker, topic, partitions=2, config=VALIDATE_VALUES)
    schema_id = registry(broker).register_schema(f"{topic}-value", Schema(USER, "AVRO"))
    good = b"\x00" + schema_id.to_bytes(4, "big") + b"\x06ada"
    now = int(time.time() * 1000)
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=build_batch([(now, None, good), (now, None, good)])),
            ProduceRequest.PartitionProduceData(index=1, records=build_batch([(now, None, good), (now, None, b"bad")])),
        ])])
    with WireClient.connect(broker.bootstrap) as client:
        (response,) = client.request(request, 9).responses
    written, refused = sorted(response.partition_responses, key=lambda p: p.index)
    assert (written.error_code, written.base_offset) == (0, 0)
    assert refused.error_code == ErrorCode.INVALID_RECORD and refused.base_offset == -1
    assert [(e.batch_index, "starts with byte 98" in (e.batch_index_error_message or ""))
            for e in refused.record_errors] == [(1, True)]
    assert "One or more records have been rejected" in (refused.error_message or "")
    assert len(raw_batches(broker, topic, 0)) == 1
    assert raw_batches(broker, topic, 1) == [], "nothing of the refused batch is written"
