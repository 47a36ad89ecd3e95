"""Broker-side schema id validation (``confluent.{key,value}.schema.validation``): which records a
validating topic refuses, with which record errors, against a registry state replayed from records."""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass, field

import pytest

from tidelog.config import TopicConfig, validate_topic_configs
from tidelog.config_def import RECORD_NAME_STRATEGY, TOPIC_NAME_STRATEGY, TOPIC_RECORD_NAME_STRATEGY
from tidelog.errors import ConfigError, ErrorCode, RecordValidationError
from tidelog.records import CompressionType, build_batch
from tidelog.schema_registry import records
from tidelog.schema_registry.records import SchemaValue
from tidelog.schema_registry.state import RegistryState
from tidelog.schema_registry.validation import SchemaIdValidation, record_name

USER = json.dumps({"type": "record", "name": "User", "namespace": "ex", "fields": [{"name": "n", "type": "string"}]})


@dataclass
class Registry:
    state: RegistryState = field(default_factory=RegistryState)

    def register(self, subject: str, version: int, schema_id: int, text: str = USER, schema_type: str = "AVRO",
                 deleted: bool = False) -> None:
        self.state.apply(records.schema_key(subject, version), records.schema_value(
            SchemaValue(subject, version, schema_id, schema_type, text, deleted=deleted)))


def framed(schema_id: int, payload: bytes = b"\x06ada") -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + payload


def batch(*pairs: tuple[bytes | None, bytes | None], compression: CompressionType = CompressionType.NONE) -> bytes:
    return build_batch([(1_700_000_000_000, k, v) for k, v in pairs], compression=compression)


def refusals(validation: SchemaIdValidation, topic: str, config: TopicConfig, data: bytes) -> list[tuple[int, str]]:
    try:
        validation.check(topic, config, data)
    except RecordValidationError as e:
        assert e.code == ErrorCode.INVALID_RECORD
        assert "record errors" in e.message and "batchIndex=" in e.message  # Kafka's summary, as error_message
        return e.record_errors
    return []


VALUES = TopicConfig.from_dict({"confluent.value.schema.validation": "true"})
KEYS = TopicConfig.from_dict({"confluent.key.schema.validation": "true"})


def test_the_configs_are_topic_configs_with_confluents_names_and_defaults() -> None:
    c = TopicConfig()
    assert (c.confluent_value_schema_validation, c.confluent_key_schema_validation) == (False, False)
    assert c.confluent_value_subject_name_strategy == TOPIC_NAME_STRATEGY
    assert TOPIC_NAME_STRATEGY == "io.confluent.kafka.serializers.subject.TopicNameStrategy"
    parsed = validate_topic_configs({"confluent.key.subject.name.strategy": "RecordNameStrategy",
                                     "confluent.value.subject.name.strategy": TOPIC_RECORD_NAME_STRATEGY})
    assert parsed == {"confluent.key.subject.name.strategy": RECORD_NAME_STRATEGY,
                      "confluent.value.subject.name.strategy": TOPIC_RECORD_NAME_STRATEGY}
    with pytest.raises(ConfigError, match="confluent.value.schema.validation"):
        validate_topic_configs({"confluent.value.schema.validation": "yes"})
    with pytest.raises(ConfigError, match="confluent.key.subject.name.strategy"):
        validate_topic_configs({"confluent.key.subject.name.strategy": "com.example.MyStrategy"})


def test_a_topic_without_validation_is_not_looked_at() -> None:
    # not even decoded: bytes that are no batch pass (the log refuses them)
    SchemaIdValidation(Registry()).check("t", TopicConfig(), b"not records at all, never decoded")


def test_values_need_the_wire_format_and_an_id_registered_for_the_topics_subject() -> None:
    registry = Registry()
    registry.register("t-value", 1, 1)
    registry.register("other-value", 1, 2, text=USER.replace("User", "Other"))
    validation = SchemaIdValidation(registry)
    assert refusals(validation, "t", VALUES, batch((None, framed(1)), (b"k", framed(1)))) == []
    errors = refusals(validation, "t", VALUES, batch(
        (None, framed(1)), (None, b'{"n": "plain json"}'), (None, framed(2)), (None, framed(99)), (None, b"\x00\x00"),
        (None, None)))
    assert [i for i, _ in errors] == [1, 2, 3, 4], "the tombstone (null value) passes, as in Confluent Server"
    reasons = dict(errors)
    assert "starts with byte 123" in reasons[1] and "magic byte 0 and a 4-byte schema id" in reasons[1]
    assert "schema id 2, which is not registered under subject 't-value'" in reasons[2]
    assert "schema id 99, which the schema registry does not have" in reasons[3]
    assert "has 2 bytes" in reasons[4]


def test_keys_are_checked_against_the_key_subject_and_null_keys_pass() -> None:
    registry = Registry()
    registry.register("t-key", 1, 1)
    registry.register("t-value", 1, 2, text=USER.replace("User", "V"))
    validation = SchemaIdValidation(registry)
    assert refusals(validation, "t", KEYS, batch((framed(1), b"plain value"), (None, b"plain"))) == []
    errors = refusals(validation, "t", KEYS, batch((framed(2), framed(2)), (b"plain key", None)))
    assert [i for i, _ in errors] == [0, 1]
    assert "record's key names schema id 2, which is not registered under subject 't-key'" in errors[0][1]


def test_compressed_batches_are_decoded() -> None:
    registry = Registry()
    registry.register("t-value", 1, 1)
    data = batch((None, framed(1)), (None, b"plain"), compression=CompressionType.GZIP)
    assert [i for i, _ in refusals(SchemaIdValidation(registry), "t", VALUES, data)] == [1]


def test_deleted_versions_do_not_count() -> None:
    registry = Registry()
    registry.register("t-value", 1, 1, deleted=True)
    assert len(refusals(SchemaIdValidation(registry), "t", VALUES, batch((None, framed(1))))) == 1


def test_without_a_registry_every_record_to_check_is_refused() -> None:
    errors = refusals(SchemaIdValidation(None), "t", VALUES, batch((None, framed(1))))
    assert "serves no schema registry" in errors[0][1]


def test_record_name_strategies() -> None:
    registry = Registry()
    registry.register("ex.User", 1, 1)
    registry.register("t-ex.User", 1, 2, text=USER.replace('"n"', '"m"'))
    validation = SchemaIdValidation(registry)
    by_record = TopicConfig.from_dict({"confluent.value.schema.validation": "true",
                                       "confluent.value.subject.name.strategy": "RecordNameStrategy"})
    by_topic_record = by_record.replace(confluent_value_subject_name_strategy=TOPIC_RECORD_NAME_STRATEGY)
    assert refusals(validation, "t", by_record, batch((None, framed(1)))) == []
    assert "not registered under subject 'ex.User'" in refusals(validation, "t", by_record, batch((None, framed(2))))[0][1]
    assert refusals(validation, "t", by_topic_record, batch((None, framed(2)))) == []
    assert len(refusals(validation, "u", by_topic_record, batch((None, framed(2))))) == 1


def test_record_names_of_each_type() -> None:
    from google.protobuf import descriptor_pb2

    assert record_name("AVRO", USER) == "ex.User"
    assert record_name("AVRO", json.dumps({"type": "record", "name": "a.b.C", "namespace": "x", "fields": []})) == "a.b.C"
    assert record_name("AVRO", '"string"') is None
    assert record_name("JSON", '{"title": "Order", "type": "object"}') == "Order"
    assert record_name("JSON", '{"type": "object"}') is None
    proto = "syntax = \"proto3\";\n// message Comment {}\npackage shop.v1;\nmessage Order {\n int32 id = 1;\n}\n"
    assert record_name("PROTOBUF", proto) == "shop.v1.Order"
    descriptor = descriptor_pb2.FileDescriptorProto(name="o.proto", package="shop")
    descriptor.message_type.add(name="Order")
    assert record_name("PROTOBUF", base64.standard_b64encode(descriptor.SerializeToString()).decode()) == "shop.Order"
