"""The schema registry in a cluster (docs/schema-registry.md "Cluster mode"): ZooKeeper and three
``tidelog serve`` processes, each serving the registry. Changes sent to any broker are run by the leader
of ``_schemas`` (forwarded to it over HTTP), every broker answers reads from its own view, a write
through one broker is read back at once through every other, confluent-kafka's serializers work
across brokers, and a kill -9 of the leader's broker loses no schema and reuses no id.

Needs java and mvn for ZooKeeper (skips locally without them, fails in CI). About 60-90 s.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

SCHEMAS = "_schemas"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

#: The module's cluster (conftest.py), restored after each test (killed brokers started again).
CLUSTER = {"chroot": "/tidelog-registry", "session_ms": 4000,
           "overrides": {"replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                         "default.replication.factor": "3"}}
CLUSTER_RESTORED = True


def record(name: str, *fields: str) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "cluster",
                       "fields": [{"name": f, "type": "string"} for f in fields]})


def url(cluster: LocalCluster, broker_id: int) -> str:
    registry = cluster.brokers[broker_id].schema_registry_url
    assert registry is not None, f"broker {broker_id} printed no `tidelog schema registry:` line"
    return registry.rstrip("/")


def http(cluster: LocalCluster, broker_id: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url(cluster, broker_id) + path, data=data, method=method,
                                     headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.headers["Content-Type"] == CONTENT_TYPE
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def register(cluster: LocalCluster, broker_id: int, subject: str, schema: str) -> int:
    status, body = http(cluster, broker_id, "POST", f"/subjects/{subject}/versions", {"schema": schema})
    assert status == 200, (broker_id, subject, body)
    return body["id"]


def test_every_broker_prints_its_registry_url(cluster: LocalCluster) -> None:
    urls = {url(cluster, i) for i in cluster.brokers}
    assert len(urls) == 3  # one per broker, each on its own HTTP listener
    for i in cluster.brokers:
        assert http(cluster, i, "GET", "/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])


def test_registered_through_any_broker_read_back_through_every_broker(cluster: LocalCluster) -> None:
    ids = {}
    for i in cluster.brokers:
        subject = f"through-{i}-value"
        ids[subject] = register(cluster, i, subject, record(f"Through{i}", "a"))
        # read-your-write: at once, on every broker, without waiting for anything
        for j in cluster.brokers:
            status, body = http(cluster, j, "GET", f"/subjects/{subject}/versions/latest")
            assert status == 200, (i, j, body)
            assert body["id"] == ids[subject] and body["version"] == 1
            assert http(cluster, j, "GET", f"/schemas/ids/{ids[subject]}")[1]["schema"] == record(f"Through{i}", "a")
    assert len(set(ids.values())) == 3  # one leader allocates: no id twice
    # the same schema under another subject, through another broker: the same id
    assert register(cluster, 3, "again-value", record("Through1", "a")) == ids["through-1-value"]
    # a refusal made by the leader comes back through the forwarding broker unchanged
    follower = next(i for i in cluster.brokers if i != cluster.leader(SCHEMAS))
    status, body = http(cluster, follower, "POST", "/subjects/through-1-value/versions",
                        {"schema": json.dumps({"type": "record", "name": "Through1", "namespace": "cluster",
                                               "fields": [{"name": "b", "type": "int"}]})})
    assert status == 409 and body["error_code"] == 409
    status, body = http(cluster, follower, "PUT", "/config/through-2-value", {"compatibility": "NONE"})
    assert (status, body) == (200, {"compatibility": "NONE"})
    for j in cluster.brokers:
        assert http(cluster, j, "GET", "/config/through-2-value")[1] == {"compatibilityLevel": "NONE"}
    assert http(cluster, follower, "DELETE", "/subjects/again-value") == (200, [1])
    for j in cluster.brokers:
        assert "again-value" not in http(cluster, j, "GET", "/subjects")[1]


def test_avro_round_trip_with_a_registry_client_per_broker(cluster: LocalCluster) -> None:
    topic = "registry-users"
    cluster.create_topic(topic, 1, 3)
    schema = record("User", "name")
    writer = SchemaRegistryClient({"url": url(cluster, 2)})
    serialize = AvroSerializer(writer, schema)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    users = [{"name": f"user-{n}"} for n in range(10)]
    for user in users:
        producer.produce(topic, value=serialize(user, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0
    # another broker's registry, a client without a cache: the deserializer finds the writer's id there
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": url(cluster, 3)}))
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "registry-users",
                         "auto.offset.reset": "earliest"})
    got: list[dict] = []
    try:
        consumer.subscribe([topic])
        wait_for(lambda: _poll(consumer, got, deserialize, topic) >= len(users), 90, what="the users consumed")
    finally:
        consumer.close()
    assert got == users
    assert SchemaRegistryClient({"url": url(cluster, 1)}).get_latest_version(f"{topic}-value").version == 1


def _poll(consumer: Consumer, got: list, deserialize: AvroDeserializer, topic: str) -> int:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        got.append(deserialize(message.value(), SerializationContext(topic, MessageField.VALUE)))
    return len(got)


def test_kill_9_of_the_leader_loses_no_schema_and_reuses_no_id(cluster: LocalCluster) -> None:
    before = {f"kill-{n}-value": register(cluster, 1 + n % 3, f"kill-{n}-value", record(f"Kill{n}", "a"))
              for n in range(6)}
    leader = cluster.leader(SCHEMAS)
    cluster.kill(leader)
    survivors = [i for i in cluster.brokers if i != leader]
    # what is registered already is answered by the survivors at once, before any new leader: a
    # serializer (auto.register.schemas) keeps producing through the failover
    for subject, schema_id in before.items():
        n = subject.split("-")[1]
        assert register(cluster, survivors[0], subject, record(f"Kill{n}", "a")) == schema_id

    # writes go on once the controller has elected another leader (until then: Confluent's 50003/50004)
    answers: list[tuple[int, Any]] = []

    def registered() -> int | None:
        status, body = http(cluster, survivors[0], "POST", "/subjects/after-kill-value/versions",
                            {"schema": record("AfterKill", "a")})
        answers.append((status, body))
        assert status in (200, 500), body
        return body["id"] if status == 200 else None

    after = wait_for(registered, 90, what="a registration after the leader's kill -9", interval=0.5)
    # before the election (the dead broker's session lasts 4 s) the survivor could not reach the leader:
    # Confluent's answer for a registration it cannot forward (50004 once no leader at all is known)
    for _, body in answers[:-1]:
        assert body in ({"error_code": 50003, "message": "Error while forwarding register schema request to the leader"},
                        {"error_code": 50004, "message": "Leader not known."}), body
    assert cluster.wait_for_leader(SCHEMAS, not_in=[leader]) in survivors
    assert after > max(before.values())  # the new leader read every id before handing one out
    second = register(cluster, survivors[1], "after-kill-2-value", record("AfterKill2", "a"))
    assert second > after
    for i in survivors:
        for subject, schema_id in before.items():
            status, body = http(cluster, i, "GET", f"/subjects/{subject}/versions/1")
            assert status == 200 and body["id"] == schema_id, (i, subject, body)

    # the killed broker comes back, follows the new leader, and serves both reads and writes
    cluster.restart(leader)
    for subject, schema_id in {**before, "after-kill-value": after, "after-kill-2-value": second}.items():
        status, body = http(cluster, leader, "GET", f"/subjects/{subject}/versions/latest")
        assert status == 200 and body["id"] == schema_id, (subject, body)
    third = register(cluster, leader, "after-restart-value", record("AfterRestart", "a"))
    assert third > second
    assert http(cluster, survivors[0], "GET", f"/schemas/ids/{third}")[0] == 200
