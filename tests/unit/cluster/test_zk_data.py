"""Kafka's ZooKeeper-era znode formats: what Tidelog writes is what Kafka's tools read, and back."""

import json
import uuid

from tidelog.cluster import zk_data as zk
from tidelog.cluster.metadata import BrokerInfo


def test_paths_are_kafkas():
    assert zk.broker_path(3) == "/brokers/ids/3"
    assert zk.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert zk.topic_config_path("t") == "/config/topics/t"
    assert zk.delete_topic_path("t") == "/admin/delete_topics/t"
    assert (zk.CONTROLLER, zk.CONTROLLER_EPOCH) == ("/controller", "/controller_epoch")


def test_broker_registration_round_trip_with_rack_and_listeners():
    broker = BrokerInfo(2, "h1", 9092, "r1", (("PLAINTEXT", "h1", 9092), ("INTERNAL", "h2", 9093)))
    raw = zk.encode_broker(broker, {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"})
    data = json.loads(raw)
    assert data["version"] == 5 and data["rack"] == "r1" and data["jmx_port"] == -1
    assert data["endpoints"] == ["PLAINTEXT://h1:9092", "INTERNAL://h2:9093"]
    assert data["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"}
    assert zk.decode_broker(2, raw) == broker


def test_broker_registration_carries_the_http_listener():
    """The HTTP listener's URL (where schema registry writes are forwarded to its leader) is a field of
    Tidelog's own; a registration without it (Kafka's) has none."""
    broker = BrokerInfo(1, "h1", 9092, None, (("PLAINTEXT", "h1", 9092),), "http://h1:9644")
    raw = zk.encode_broker(broker, {"PLAINTEXT": "PLAINTEXT"})
    assert json.loads(raw)["tidelog_http"] == "http://h1:9644"
    assert zk.decode_broker(1, raw) == broker
    assert "tidelog_http" not in json.loads(zk.encode_broker(BrokerInfo(1, "h1", 9092), {}))


def test_broker_registration_written_by_kafka():
    raw = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://k1:9092"],'
           b'"jmx_port":-1,"features":{},"host":"k1","timestamp":"1","port":9092,"version":5}')
    assert zk.decode_broker(1, raw) == BrokerInfo(1, "k1", 9092, None, (("PLAINTEXT", "k1", 9092),))
    assert zk.decode_broker(1, raw).http_url is None


def test_topic_assignment_round_trip_and_kafka_uuid_text():
    topic_id = uuid.uuid4()
    raw = zk.encode_topic(topic_id, {1: (2, 3), 0: (1, 2)})
    data = json.loads(raw)
    assert data["version"] == 3 and data["partitions"] == {"0": [1, 2], "1": [2, 3]}
    assert len(data["topic_id"]) == 22 and "=" not in data["topic_id"]
    assert zk.decode_topic(raw) == (topic_id, {0: (1, 2), 1: (2, 3)})
    assert zk.decode_topic(b'{"version":1,"partitions":{"0":[1]}}') == (None, {0: (1,)})


def test_partition_state_epoch_is_the_znode_version():
    raw = zk.encode_partition_state(2, 5, (2, 1), 7)
    assert json.loads(raw) == {"version": 1, "leader": 2, "leader_epoch": 5, "isr": [2, 1],
                               "controller_epoch": 7, "leader_recovery_state": 0}
    meta, controller_epoch = zk.decode_partition_state(0, (1, 2), raw, 4)
    assert (meta.leader, meta.leader_epoch, meta.isr, meta.replicas, meta.partition_epoch) == (2, 5, (2, 1), (1, 2), 4)
    assert controller_epoch == 7


def test_configs_controller_and_producer_id_block():
    assert json.loads(zk.encode_config({"b": "1", "a": "x"})) == {"version": 1, "config": {"a": "x", "b": "1"}}
    assert zk.decode_config(zk.encode_config({"retention.ms": "5"})) == {"retention.ms": "5"}
    assert zk.decode_config(None) == {}
    assert zk.decode_controller(zk.encode_controller(3)) == 3
    assert zk.decode_controller_epoch(zk.encode_controller_epoch(12)) == 12 and zk.encode_controller_epoch(12) == b"12"
    assert zk.decode_producer_id_block(zk.encode_producer_id_block(1, 0, 999)) == 1000
    assert zk.decode_cluster_id(zk.encode_cluster_id("abc")) == "abc"
