"""The schema registry (docs/schema-registry.md) with confluent-kafka's own SchemaRegistryClient and
Avro serializers against real ``tidelog serve`` processes: Avro records produced and consumed through
Tidelog's registry, registration, evolution allowed and refused, deletes, settings, modes, error
bodies and content types, and every schema found again with its id after a kill -9."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from tidelog.testing import BrokerProcess

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def record(*fields: dict[str, Any], name: str = "User") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "example", "fields": list(fields)})


NAME = {"name": "name", "type": "string"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
EMAIL = {"name": "email", "type": "string"}


def client(broker: BrokerProcess) -> SchemaRegistryClient:
    assert broker.schema_registry_url is not None, "tidelog serve printed no `tidelog schema registry:` line"
    return SchemaRegistryClient({"url": broker.schema_registry_url})


def http(broker: BrokerProcess, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
    """One request as the clients send it: (status, content type, JSON body)."""
    assert broker.schema_registry_url is not None
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(broker.schema_registry_url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], json.loads(e.read())


def refused(call) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return e.value.http_status_code, e.value.error_code


def test_avro_records_round_trip_through_the_broker(broker: BrokerProcess) -> None:
    registry = client(broker)
    topic = "sr-users"
    serializer = AvroSerializer(registry, record(NAME, AGE_DEFAULT))
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    users = [{"name": f"user-{i}", "age": i} for i in range(20)]
    for user in users:
        producer.produce(topic, value=serializer(user, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0
    latest = registry.get_latest_version(f"{topic}-value")
    assert latest.version == 1 and json.loads(latest.schema.schema_str)["name"] == "User"

    # a fresh client (no cache): the consumer's deserializer fetches the writer's schema by id
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": broker.schema_registry_url}))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sr-users", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got = []
        for _ in range(240):
            if len(got) == len(users):
                break
            m = consumer.poll(0.5)
            if m is None or m.error() is not None:
                continue
            assert m.value()[0] == 0 and int.from_bytes(m.value()[1:5], "big") == latest.schema_id
            got.append(deserializer(m.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    assert got == users


def test_registering_is_idempotent_and_ids_are_global(broker: BrokerProcess) -> None:
    registry = client(broker)
    v1 = Schema(record(NAME, name="Idem"), "AVRO")
    first = registry.register_schema("idem-a", v1)
    # the same schema again, laid out differently, and under another subject: the same id, no new version
    spaced = Schema(json.dumps(json.loads(v1.schema_str), indent=4), "AVRO")
    assert SchemaRegistryClient({"url": broker.schema_registry_url}).register_schema("idem-a", spaced) == first
    assert registry.register_schema("idem-b", v1) == first
    assert registry.get_versions("idem-a") == [1]
    other = registry.register_schema("idem-a", Schema(record(NAME, AGE_DEFAULT, name="Idem"), "AVRO"))
    assert other > first
    assert sorted(registry.get_subjects_by_schema_id(first)) == ["idem-a", "idem-b"]
    assert registry.get_schema(other).schema_str == record(NAME, AGE_DEFAULT, name="Idem")
    found = registry.lookup_schema("idem-b", v1)
    assert (found.schema_id, found.version, found.subject) == (first, 1, "idem-b")
    assert refused(lambda: registry.lookup_schema("idem-b", Schema(record(EMAIL, name="Idem"), "AVRO"))) == (
        404, 40403)
    assert "AVRO" in registry.get_schema_types()


def test_compatible_evolution_is_registered_and_incompatible_refused_409(broker: BrokerProcess) -> None:
    registry = client(broker)
    subject = "evolve-value"
    registry.register_schema(subject, Schema(record(NAME, name="Evolve"), "AVRO"))
    assert registry.get_compatibility() == "BACKWARD"
    registry.register_schema(subject, Schema(record(NAME, AGE_DEFAULT, name="Evolve"), "AVRO"))  # a default: fine
    breaking = Schema(record(NAME, AGE_DEFAULT, EMAIL, name="Evolve"), "AVRO")
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema(subject, breaking)
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert "incompatible" in e.value.error_message and "email" in e.value.error_message
    assert registry.get_versions(subject) == [1, 2]

    assert registry.test_compatibility(subject, breaking) is False
    status, content_type, body = http(broker, "POST", f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                                      {"schema": breaking.schema_str})
    assert (status, content_type, body["is_compatible"]) == (200, CONTENT_TYPE, False)
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m and "email" in m for m in body["messages"])

    # the subject's own level: NONE lets it in; deleting the setting brings back the global level
    assert registry.set_compatibility(subject, "none") == {"compatibility": "NONE"}  # the body, as Confluent answers
    assert registry.get_compatibility(subject) == "NONE"
    registry.register_schema(subject, breaking)
    assert registry.get_versions(subject) == [1, 2, 3]
    assert http(broker, "DELETE", f"/config/{subject}")[2] == {"compatibilityLevel": "NONE"}
    assert http(broker, "GET", f"/config/{subject}")[2]["error_code"] == 40408
    assert http(broker, "GET", f"/config/{subject}?defaultToGlobal=true")[2] == {"compatibilityLevel": "BACKWARD"}


def test_transitive_levels_check_every_version(broker: BrokerProcess) -> None:
    registry = client(broker)
    subject = "transitive-value"
    registry.set_compatibility(subject, "BACKWARD_TRANSITIVE")
    registry.register_schema(subject, Schema(record(NAME, name="T"), "AVRO"))
    registry.register_schema(subject, Schema(record(NAME, AGE_DEFAULT, name="T"), "AVRO"))
    no_default = Schema(record(NAME, {"name": "age", "type": "int"}, name="T"), "AVRO")
    assert registry.test_compatibility(subject, no_default, version=2) is True  # v2 alone: age is written
    assert refused(lambda: registry.register_schema(subject, no_default)) == (409, 409)  # v1 has no age
    registry.set_compatibility(subject, "BACKWARD")
    registry.register_schema(subject, no_default)
    assert registry.get_versions(subject) == [1, 2, 3]


def test_soft_and_hard_deletes_and_deleted_listings(broker: BrokerProcess) -> None:
    registry = client(broker)
    subject = "deletes-value"
    ids = [registry.register_schema(subject, Schema(record(NAME, *extra, name="D"), "AVRO"))
           for extra in ([], [AGE_DEFAULT])]
    assert registry.delete_version(subject, 2) == 2
    assert registry.get_versions(subject) == [1]
    assert http(broker, "GET", f"/subjects/{subject}/versions?deleted=true")[2] == [1, 2]
    assert http(broker, "GET", f"/subjects/{subject}/versions/2")[2]["error_code"] == 40402
    assert http(broker, "GET", f"/subjects/{subject}/versions/2?deleted=true")[2]["id"] == ids[1]
    assert registry.get_schema(ids[1]).schema_str  # a soft-deleted version's schema is still found by id
    assert refused(lambda: registry.delete_version(subject, 2)) == (404, 40406)
    assert refused(lambda: registry.delete_version(subject, 1, permanent=True)) == (404, 40407)
    assert refused(lambda: registry.delete_subject(subject, permanent=True)) == (404, 40405)

    assert registry.delete_subject(subject) == [1]
    assert subject not in registry.get_subjects()
    assert subject in http(broker, "GET", "/subjects?deleted=true")[2]
    assert refused(lambda: registry.get_versions(subject)) == (404, 40401)
    assert refused(lambda: registry.delete_subject(subject)) == (404, 40404)
    assert http(broker, "GET", f"/subjects/{subject}/versions/latest")[2]["error_code"] == 40401
    assert http(broker, "POST", f"/subjects/{subject}", {"schema": record(NAME, name="D")})[2]["error_code"] == 40401
    looked_up = http(broker, "POST", f"/subjects/{subject}?deleted=true", {"schema": record(NAME, name="D")})[2]
    assert looked_up["id"] == ids[0]

    assert registry.delete_subject(subject, permanent=True) == [1, 2]
    assert subject not in http(broker, "GET", "/subjects?deleted=true")[2]
    assert refused(lambda: SchemaRegistryClient({"url": broker.schema_registry_url}).get_schema(ids[1])) == (
        404, 40403)
    # registered again: version 1 again, with the same id as before (the same schema)
    assert registry.register_schema(subject, Schema(record(NAME, name="D"), "AVRO")) == ids[0]
    assert registry.get_versions(subject) == [1]


def test_error_bodies_codes_and_content_types(broker: BrokerProcess) -> None:
    cases = [
        ("GET", "/subjects/no-such-subject/versions", None, 404, 40401),
        ("GET", "/schemas/ids/987654", None, 404, 40403),
        ("GET", "/subjects/no-such-subject/versions/0", None, 422, 42202),
        ("GET", "/subjects/no-such-subject/versions/two", None, 422, 42202),
        ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
        ("PUT", "/mode", {"mode": "SOMETIMES"}, 422, 42204),
        ("POST", "/subjects/bad-value/versions", {"schema": '{"type": "record", "name": "R"}'}, 422, 42201),
        ("POST", "/subjects/bad-value/versions", {"schema": "{not json"}, 422, 42201),
        ("POST", "/subjects/bad-value/versions", {"schema": '"int"', "schemaType": "XML"}, 422, 422),
        ("POST", "/subjects/bad-value/versions", {"schema": '"int"', "references": [
            {"name": "x", "subject": "nowhere", "version": 1}]}, 422, 42201),
        ("POST", "/subjects/bad-value/versions", {"schema": '"int"', "references": [{"name": "x"}]}, 422, 422),
        ("POST", "/subjects/bad-value/versions", {"schema": 5}, 422, 422),
        ("POST", "/subjects/bad-value/versions", {"nothing": "here"}, 422, 422),
        ("POST", "/subjects/bad-value/versions", [1, 2], 422, 422),
        ("GET", "/schemas/ids/not-a-number", None, 404, 40403),
        ("POST", "/compatibility/subjects/no-such-subject/versions/1", {"schema": '"int"'}, 404, 40401),
        ("DELETE", "/config/no-config-here", None, 404, 40408),
        ("DELETE", "/mode/no-mode-here", None, 404, 40409),
    ]
    for method, path, body, status, code in cases:
        got_status, content_type, answer = http(broker, method, path, body)
        assert (got_status, answer.get("error_code")) == (status, code), (method, path, answer)
        assert content_type == CONTENT_TYPE and isinstance(answer.get("message"), str) and answer["message"]
    assert http(broker, "GET", "/schemas/types")[1:] == (CONTENT_TYPE, ["JSON", "PROTOBUF", "AVRO"])
    # a body that is not JSON at all
    assert broker.schema_registry_url is not None
    request = urllib.request.Request(broker.schema_registry_url.rstrip("/") + "/subjects/bad-value/versions",
                                     data=b"{not json", method="POST", headers={"Content-Type": CONTENT_TYPE})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=30)
    assert e.value.code == 400 and json.loads(e.value.read())["error_code"] == 400
    assert "bad-value" not in client(broker).get_subjects()


def test_modes_read_only_and_import(broker: BrokerProcess) -> None:
    registry = client(broker)
    assert registry.get_global_mode() == "READWRITE"
    registry.register_schema("mode-value", Schema(record(NAME, name="M"), "AVRO"))
    assert registry.update_mode("mode-value", "READONLY") == "READONLY"
    assert registry.get_mode("mode-value") == "READONLY"
    assert refused(lambda: registry.register_schema("mode-value", Schema(record(NAME, AGE_DEFAULT, name="M"),
                                                                         "AVRO"))) == (422, 42205)
    assert refused(lambda: registry.delete_subject("mode-value")) == (422, 42205)
    assert registry.delete_mode("mode-value") == "READONLY"
    assert http(broker, "GET", "/mode/mode-value")[2]["error_code"] == 40409

    # IMPORT: ids and versions chosen by the caller (a migration); refused on a subject that has versions
    assert refused(lambda: registry.update_mode("mode-value", "IMPORT")) == (422, 42205)
    assert registry.update_mode("imported-value", "IMPORT") == "IMPORT"
    status, _, body = http(broker, "POST", "/subjects/imported-value/versions",
                           {"schema": record(NAME, name="Imported"), "id": 5000, "version": 7})
    assert (status, body) == (200, {"id": 5000})
    assert http(broker, "GET", "/subjects/imported-value/versions/7")[2]["id"] == 5000
    status, _, body = http(broker, "POST", "/subjects/other-value/versions", {"schema": '"string"', "id": 5001})
    assert (status, body["error_code"]) == (422, 42205), "ids are chosen only in IMPORT mode"
    registry.update_mode("imported-value", "READWRITE")
    assert registry.register_schema("next-value", Schema(record(NAME, name="AfterImport"), "AVRO")) > 5000


def test_references_json_and_protobuf_schemas(broker: BrokerProcess) -> None:
    registry = client(broker)
    address = record({"name": "street", "type": "string"}, name="Address")
    registry.register_schema("address", Schema(address, "AVRO"))
    user = record(NAME, {"name": "address", "type": "example.Address"}, name="Customer")
    ref = SchemaReference("example.Address", "address", 1)
    user_id = registry.register_schema("customer-value", Schema(user, "AVRO", [ref]))
    got = registry.get_schema(user_id)
    assert [(r.name, r.subject, r.version) for r in got.references] == [("example.Address", "address", 1)]
    assert http(broker, "GET", "/subjects/address/versions/1/referencedby")[2] == [user_id]
    assert refused(lambda: registry.delete_subject("address")) == (422, 42206)

    json_id = registry.register_schema("json-value", Schema('{"type": "object"}', "JSON"))
    assert registry.register_schema("json-value", Schema('{ "type" : "object" }', "JSON")) == json_id
    assert registry.get_schema(json_id).schema_type == "JSON"
    proto = 'syntax = "proto3";\npackage example;\nmessage Ping { string id = 1; }\n'
    proto_id = registry.register_schema("proto-value", Schema(proto, "PROTOBUF"))
    assert registry.get_latest_version("proto-value").schema.schema_type == "PROTOBUF"
    assert registry.lookup_schema("proto-value", Schema(proto, "PROTOBUF")).schema_id == proto_id


def test_every_schema_is_found_again_with_its_id_after_kill_9(fresh_broker: BrokerProcess) -> None:
    broker = fresh_broker
    registry = client(broker)
    ids = {}
    for i in range(5):
        ids[f"s{i}-value"] = registry.register_schema(f"s{i}-value", Schema(record(NAME, name=f"K{i}"), "AVRO"))
    ids["s0-value#2"] = registry.register_schema("s0-value", Schema(record(NAME, AGE_DEFAULT, name="K0"), "AVRO"))
    registry.set_compatibility("s1-value", "FULL")
    registry.delete_subject("s2-value")
    registry.delete_subject("s3-value")
    registry.delete_subject("s3-value", permanent=True)
    highest = max(ids.values())
    broker.kill()  # SIGKILL: no clean shutdown
    broker.start()
    registry = client(broker)  # the HTTP port may be another one now
    assert sorted(registry.get_subjects()) == ["s0-value", "s1-value", "s4-value"]
    assert http(broker, "GET", "/subjects?deleted=true")[2] == ["s0-value", "s1-value", "s2-value", "s4-value"]
    for subject in ("s0-value", "s1-value", "s4-value"):
        assert registry.get_version(subject, 1).schema_id == ids[subject]
    assert registry.get_latest_version("s0-value").schema_id == ids["s0-value#2"]
    assert registry.get_compatibility("s1-value") == "FULL"
    assert registry.get_schema(ids["s2-value"]).schema_str == record(NAME, name="K2")
    fresh = registry.register_schema("s5-value", Schema(record(NAME, name="K5"), "AVRO"))
    assert fresh == highest + 1, "a new schema gets a new id, never one handed out before the crash"
    assert registry.register_schema("s4-value", Schema(record(NAME, name="K4"), "AVRO")) == ids["s4-value"]


def test_the_registry_can_be_turned_off_and_moved(tmp_path) -> None:
    with BrokerProcess(tmp_path / "off", overrides={"schema.registry.enable": "false"}) as off:
        assert off.schema_registry_url is None and off.http_url is not None
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(off.http_url.rstrip("/") + "/subjects", timeout=30)
        assert e.value.code == 404
    with BrokerProcess(tmp_path / "moved", overrides={"schema.registry.path": "/schema-registry"}) as moved:
        assert moved.http_url is not None
        assert moved.schema_registry_url == moved.http_url.rstrip("/") + "/schema-registry"
        registry = client(moved)
        assert registry.register_schema("moved-value", Schema('"string"', "AVRO")) == 1
        assert http(moved, "GET", "/")[2] == {}


def test_the_state_is_the_compacted_topic_schemas_in_confluents_layout(broker: BrokerProcess) -> None:
    registry = client(broker)
    schema_id = registry.register_schema("layout-value", Schema(record(NAME, name="Layout"), "AVRO"))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = admin.list_topics(timeout=15).topics["_schemas"]
    assert len(topic.partitions) == 1
    resource = ConfigResource(ConfigResource.Type.TOPIC, "_schemas")
    assert admin.describe_configs([resource])[resource].result(15)["cleanup.policy"].value == "compact"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "layout", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    found = None
    try:
        consumer.assign([TopicPartition("_schemas", 0, 0)])
        _, end = consumer.get_watermark_offsets(TopicPartition("_schemas", 0), timeout=15)
        for _ in range(240):
            m = consumer.poll(0.5)
            if m is None or m.error() is not None:
                continue
            key = json.loads(m.key())
            if key == {"keytype": "SCHEMA", "subject": "layout-value", "version": 1, "magic": 1}:
                found = json.loads(m.value())
            if m.offset() + 1 >= end:
                break
    finally:
        consumer.close()
    assert found == {"subject": "layout-value", "version": 1, "id": schema_id, "schema": record(NAME, name="Layout"),
                     "deleted": False}


def test_json_schema_and_protobuf_records_round_trip_through_the_broker(broker: BrokerProcess) -> None:
    """confluent-kafka's JSONSerializer and ProtobufSerializer register their schemas here (Protobuf as
    the base64 descriptor the Python serializer sends) and their deserializers read them back by id."""
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from google.protobuf.timestamp_pb2 import Timestamp

    registry = client(broker)
    order_schema = json.dumps({"type": "object", "title": "Order", "properties": {
        "id": {"type": "integer"}, "item": {"type": "string"}}, "required": ["id"]})
    to_json = JSONSerializer(order_schema, registry)
    to_proto = ProtobufSerializer(Timestamp, registry, {"use.deprecated.format": False})
    orders = [{"id": i, "item": f"item-{i}"} for i in range(5)]
    stamps = [Timestamp(seconds=1_700_000_000 + i, nanos=i) for i in range(5)]
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for order, stamp in zip(orders, stamps, strict=True):
        producer.produce("sr-orders", value=to_json(order, SerializationContext("sr-orders", MessageField.VALUE)))
        producer.produce("sr-stamps", value=to_proto(stamp, SerializationContext("sr-stamps", MessageField.VALUE)))
    assert producer.flush(30) == 0
    assert registry.get_latest_version("sr-orders-value").schema.schema_type == "JSON"
    assert registry.get_latest_version("sr-stamps-value").schema.schema_type == "PROTOBUF"

    fresh = SchemaRegistryClient({"url": broker.schema_registry_url})
    from_json = JSONDeserializer(None, schema_registry_client=fresh)
    from_proto = ProtobufDeserializer(Timestamp, {"use.deprecated.format": False})
    got = {"sr-orders": [], "sr-stamps": []}
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sr-json-proto",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["sr-orders", "sr-stamps"])
        for _ in range(240):
            if len(got["sr-orders"]) == len(orders) and len(got["sr-stamps"]) == len(stamps):
                break
            m = consumer.poll(0.5)
            if m is None or m.error() is not None:
                continue
            decode = from_json if m.topic() == "sr-orders" else from_proto
            got[m.topic()].append(decode(m.value(), SerializationContext(m.topic(), MessageField.VALUE)))
    finally:
        consumer.close()
    assert got == {"sr-orders": orders, "sr-stamps": stamps}
    # the same descriptor registered again is the same id
    again = ProtobufSerializer(Timestamp, SchemaRegistryClient({"url": broker.schema_registry_url}),
                               {"use.deprecated.format": False})
    framed = again(stamps[0], SerializationContext("sr-stamps", MessageField.VALUE))
    assert registry.get_versions("sr-stamps-value") == [1]
    assert framed[1:5] == to_proto(stamps[0], SerializationContext("sr-stamps", MessageField.VALUE))[1:5]


def test_concurrent_registrations_get_distinct_ids_and_versions(broker: BrokerProcess) -> None:
    """Changes are made one at a time: eight clients registering at once into one subject (NONE) and
    into subjects of their own never share an id or a version."""
    from concurrent.futures import ThreadPoolExecutor

    client(broker).set_compatibility("race-value", "NONE")

    def register(i: int) -> tuple[int, int]:
        registry = SchemaRegistryClient({"url": broker.schema_registry_url})
        shared = registry.register_schema("race-value", Schema(record(NAME, name=f"Race{i}"), "AVRO"))
        own = registry.register_schema(f"race-{i}-value", Schema(record(NAME, AGE_DEFAULT, name=f"Race{i}"), "AVRO"))
        return shared, own

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(register, range(8)))
    ids = [i for pair in results for i in pair]
    assert len(set(ids)) == 16
    registry = client(broker)
    assert registry.get_versions("race-value") == list(range(1, 9))
    assert sorted(registry.get_version("race-value", v).schema_id for v in range(1, 9)) == sorted(
        shared for shared, _ in results)


def test_json_schema_evolution_allowed_and_refused(broker: BrokerProcess) -> None:
    registry = client(broker)
    subject = "json-evolve-value"
    closed = {"type": "object", "additionalProperties": False}
    v1 = {**closed, "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    v2 = {**closed, "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}, "required": ["id"]}
    v3 = {**v2, "required": ["id", "note"]}
    registry.register_schema(subject, Schema(json.dumps(v1), "JSON"))
    registry.register_schema(subject, Schema(json.dumps(v2), "JSON"))  # an optional property: BACKWARD
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema(subject, Schema(json.dumps(v3), "JSON"))
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert "REQUIRED_ATTRIBUTE_ADDED" in e.value.error_message
    registry.set_compatibility(subject, "FORWARD")
    registry.register_schema(subject, Schema(json.dumps(v3), "JSON"))  # old readers accept it
    assert registry.get_versions(subject) == [1, 2, 3]


def test_subject_names_with_slashes_spaces_and_non_ascii(broker: BrokerProcess) -> None:
    registry = client(broker)
    for subject in ("team/orders-value", "with space", "ünïcode", "per%cent"):
        schema_id = registry.register_schema(subject, Schema('"string"', "AVRO"))
        assert registry.get_latest_version(subject).subject == subject
        assert subject in registry.get_subjects_by_schema_id(schema_id)
        assert registry.delete_subject(subject) == [1]
