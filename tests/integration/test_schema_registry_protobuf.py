"""Protobuf compatibility through the registry (docs/schema-registry.md) with confluent-kafka's own
ProtobufSerializer/ProtobufDeserializer and SchemaRegistryClient against a real ``tidelog serve``:
an allowed evolution registers at BACKWARD and its records are read back, a refused one answers 409
with Confluent's difference named, ``.proto`` texts with references are compiled and compared, and
an invalid text is refused with 42201."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tidelog.testing import BrokerProcess

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
F = descriptor_pb2.FieldDescriptorProto


def user_class(*fields: tuple[str, int, int]) -> Any:
    """A message class tidelog.it.User with ``fields`` (name, number, type), in a pool of its own (so
    that versions of one message live side by side, as in two applications)."""
    file = descriptor_pb2.FileDescriptorProto(name="tidelog/it/user.proto", package="tidelog.it", syntax="proto3")
    message = file.message_type.add(name="User")
    for name, number, kind in fields:
        message.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tidelog.it.User"))


def http(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_protobuf_serializer_evolution_allowed_and_refused(broker: BrokerProcess) -> None:
    assert broker.schema_registry_url is not None
    registry = SchemaRegistryClient({"url": broker.schema_registry_url})
    topic, subject = "sr-proto-evolve", "sr-proto-evolve-value"
    conf = {"use.deprecated.format": False}
    v1 = user_class(("name", 1, F.TYPE_STRING))
    v2 = user_class(("name", 1, F.TYPE_STRING), ("age", 2, F.TYPE_INT32))  # a field added: BACKWARD allows it
    broken = user_class(("name", 1, F.TYPE_INT64))  # string -> int64: FIELD_SCALAR_KIND_CHANGED
    ctx = SerializationContext(topic, MessageField.VALUE)

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=ProtobufSerializer(v1, registry, conf)(v1(name="ada"), ctx))
    registry.set_compatibility(subject, "BACKWARD")
    producer.produce(topic, value=ProtobufSerializer(v2, registry, conf)(v2(name="grace", age=36), ctx))
    assert producer.flush(30) == 0
    assert registry.get_versions(subject) == [1, 2]
    assert registry.get_compatibility(subject) == "BACKWARD"

    # the refused version: the serializer's registration and the compatibility endpoint
    text = base64.standard_b64encode(broken.DESCRIPTOR.file.serialized_pb).decode()
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema(subject, Schema(text, "PROTOBUF"))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert "FIELD_SCALAR_KIND_CHANGED" in refused.value.error_message
    with pytest.raises(Exception, match="FIELD_SCALAR_KIND_CHANGED"):
        ProtobufSerializer(broken, SchemaRegistryClient({"url": broker.schema_registry_url}), conf)(
            broken(name=7), ctx)
    status, body = http(broker.schema_registry_url, "POST",
                        f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                        {"schema": text, "schemaType": "PROTOBUF"})
    assert status == 200 and body["is_compatible"] is False
    assert body["messages"][0] == (
        "{errorType:\"FIELD_SCALAR_KIND_CHANGED\", description:\"The scalar field at path '#/User/1' has a type in "
        "the new schema that does not read the wire values of its type in the old schema\"}")
    assert body["messages"][-1] == "{compatibility: 'BACKWARD'}"
    assert registry.test_compatibility(subject, Schema(
        base64.standard_b64encode(user_class(("name", 1, F.TYPE_BYTES)).DESCRIPTOR.file.serialized_pb).decode(),
        "PROTOBUF")) is True  # string -> bytes reads the same
    assert registry.get_versions(subject) == [1, 2]

    # both records read back with the newer class
    read = ProtobufDeserializer(v2, conf)
    got = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sr-proto-evolve",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(240):
            if len(got) == 2:
                break
            m = consumer.poll(0.5)
            if m is None or m.error() is not None:
                continue
            got.append(read(m.value(), ctx))
    finally:
        consumer.close()
    assert [(u.name, u.age) for u in got] == [("ada", 0), ("grace", 36)]


MONEY = 'syntax = "proto3";\npackage common;\nmessage Money {\n  int64 units = 1;\n  string currency = 2;\n}\n'
MONEY_V2 = 'syntax = "proto3";\npackage common;\nmessage Money {\n  double units = 1;\n  string currency = 2;\n}\n'
ORDER = ('syntax = "proto3";\npackage shop;\nimport "common/money.proto";\n'
         'message Order {\n  string id = 1;\n  common.Money total = 2;\n}\n')


def test_proto_texts_with_references_are_compiled_and_compared(broker: BrokerProcess) -> None:
    assert broker.schema_registry_url is not None
    registry = SchemaRegistryClient({"url": broker.schema_registry_url})
    registry.register_schema("sr-money", Schema(MONEY, "PROTOBUF"))
    registry.set_compatibility("sr-money", "NONE")
    registry.register_schema("sr-money", Schema(MONEY_V2, "PROTOBUF"))  # NONE: anything goes
    registry.set_compatibility("sr-order-value", "FULL_TRANSITIVE")
    v1 = Schema(ORDER, "PROTOBUF", [SchemaReference("common/money.proto", "sr-money", 1)])
    registry.register_schema("sr-order-value", v1)
    # the same text with a field added: compatible both ways
    v2 = Schema(ORDER.replace("}\n", "  string note = 3;\n}\n"), "PROTOBUF",
                [SchemaReference("common/money.proto", "sr-money", 1)])
    registry.register_schema("sr-order-value", v2)
    # the same text over Money version 2: the referenced type's field changed its kind
    over_v2 = Schema(v2.schema_str, "PROTOBUF", [SchemaReference("common/money.proto", "sr-money", 2)])
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema("sr-order-value", over_v2)
    assert refused.value.http_status_code == 409
    assert "FIELD_NAMED_TYPE_CHANGED" in refused.value.error_message
    assert "#/Order/2/1" in refused.value.error_message  # Money's field 1, reached through Order's field 2

    # an invalid text (an unknown type) and an unresolved import are refused as invalid
    for bad, refs in (('syntax = "proto3";\nmessage Bad {\n  Unknown u = 1;\n}\n', []), (ORDER, [])):
        with pytest.raises(SchemaRegistryError) as invalid:
            registry.register_schema("sr-bad-value", Schema(bad, "PROTOBUF", refs))
        assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)
