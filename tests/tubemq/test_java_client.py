"""The real TubeMQ Java client (org.apache.inlong:tubemq-client 1.13.0) producing and consuming through
Tidelog, and the same records crossing between TubeMQ and Kafka clients both ways.

Producer: the client's round-robin router spreads messages over the partitions; every send answers
with the record's offset (messageId) and TubeMQ offset (offset x 28). Consumers (pull and push) get
every message once, with body, attribute, ``$msgType$`` and ``$msgTime$`` intact. Mixed traffic: a
Kafka producer's key, value and headers reach a TubeMQ consumer as ``$msgKey$`` (``$msgKeyBase64$``
for a key that is not text), body and attribute items; a TubeMQ producer's attribute reaches a Kafka
consumer as key and headers.
"""

from __future__ import annotations

import base64
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.kafka_io import create_topic
from tests.tubemq.driver import TUBE_BROKER_OVERRIDES, JavaTube
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("tubemq")]

BROKER_OVERRIDES = TUBE_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)


def kafka_records(broker: BrokerProcess, topic: str, count: int, timeout: float = 30) -> list:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"reader-{topic}-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                out.append(msg)
    finally:
        consumer.close()
    return out


def messages(n: int, tag: str) -> list[dict]:
    return [{"body": f"{tag}-{i}", "attributes": [["seq", str(i)], ["source", "java"]], "msgType": f"type{i % 2}",
             "msgTime": "202601021530"} for i in range(n)]


@pytest.mark.parametrize("kind", ["pull", "push"])
def test_java_producer_and_consumer_round_trip(tube: JavaTube, broker: BrokerProcess, kind: str) -> None:
    topic = f"java-round-trip-{kind}"
    create_topic(broker, topic, 3)
    sent = messages(30, kind)
    results = tube.produce(topic, sent)
    assert [r["ok"] for r in results] == [True] * 30, results
    by_partition: dict[int, list[dict]] = {}
    for result in results:
        by_partition.setdefault(result["partition"], []).append(result)
    assert sorted(by_partition) == [0, 1, 2]
    for rows in by_partition.values():  # offsets count up per partition; TubeMQ offsets are 28 bytes per message
        assert [r["messageId"] for r in rows] == list(range(len(rows)))
        assert [r["appendOffset"] for r in rows] == [28 * r["messageId"] for r in rows]

    with tube.member(f"group-{kind}", [topic], f"{kind}-consumer", kind=kind) as member:
        member.wait_for(lambda m: len(m.records) >= 30, what="30 records")
        member.close()
    got = member.records
    assert Counter(r["body"] for r in got) == Counter(m["body"] for m in sent)  # each exactly once
    sent_where = {m["body"]: (r["partition"], r["messageId"]) for m, r in zip(sent, results)}
    for record in got:
        i = int(record["body"].rsplit("-", 1)[1])
        assert (record["partition"], record["messageId"]) == sent_where[record["body"]]
        assert record["msgType"] == f"type{i % 2}" and record["msgTime"] == "202601021530"
        assert record["attribute"] == f"$msgType$=type{i % 2},$msgTime$=202601021530,seq={i},source=java"


def test_tubemq_producer_to_kafka_consumer(tube: JavaTube, broker: BrokerProcess) -> None:
    topic = "java-to-kafka"
    create_topic(broker, topic, 2)
    sent = [{"body": f"order-{i}", "attributes": [["$msgKey$", f"customer-{i % 3}"], ["region", "eu"]],
             "msgType": "order", "msgTime": "202601021530"} for i in range(10)]
    results = tube.produce(topic, sent)
    assert all(r["ok"] for r in results), results
    records = kafka_records(broker, topic, 10)
    assert len(records) == 10
    for msg in records:
        i = int(msg.value().decode().split("-")[1])
        assert msg.key() == f"customer-{i % 3}".encode()
        assert msg.headers() == [("$msgType$", b"order"), ("$msgTime$", b"202601021530"), ("region", b"eu")]
    placed = {(r["partition"], r["messageId"]) for r in results}
    assert {(m.partition(), m.offset()) for m in records} == placed


def test_kafka_producer_to_tubemq_consumer(tube: JavaTube, broker: BrokerProcess) -> None:
    topic = "kafka-to-java"
    create_topic(broker, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    placed = {}

    def on_delivery(err, msg) -> None:
        assert err is None, err
        placed[(msg.value() or b"").decode()] = (msg.partition(), msg.offset())

    binary_key = b"\x00\xffkey,with=odd bytes"
    for i in range(8):
        headers = [("$msgType$", b"click"), ("trace", f"t{i}".encode()), ("unicode", "é".encode())]
        producer.produce(topic, key=f"user-{i}".encode(), value=f"click-{i}".encode(), partition=i % 2,
                         headers=headers, on_delivery=on_delivery)
    producer.produce(topic, key=binary_key, value=b"binary-key", partition=0, on_delivery=on_delivery,
                     headers=[("bad,name", b"x"), ("null", None), ("list", b"a,b")])
    producer.produce(topic, key=None, value=None, partition=1, on_delivery=on_delivery)  # a tombstone: empty body
    assert producer.flush(30) == 0

    with tube.member("kafka-to-java-group", [topic], "pull-consumer") as member:
        member.wait_for(lambda m: len(m.records) >= 10, what="10 records")
        member.close()
    got = {r["body"]: r for r in member.records}
    assert len(member.records) == 10
    for i in range(8):
        record = got[f"click-{i}"]
        assert (record["partition"], record["messageId"]) == placed[f"click-{i}"]
        assert record["msgType"] == "click"
        assert record["attribute"] == f"$msgType$=click,$msgKey$=user-{i},trace=t{i},unicode=é"
    binary = got["binary-key"]
    # The key is not text without ',': base64. "bad,name" and "a,b" cannot be attribute items; a null value
    # is a bare item.
    assert binary["attribute"] == f"$msgKeyBase64$={base64.b64encode(binary_key).decode()},null"
    tombstone = got[""]
    assert tombstone.get("attribute") is None and tombstone["partition"] == 1  # gson leaves nulls out


def test_committed_offsets_are_the_groups_kafka_offsets(tube: JavaTube, broker: BrokerProcess) -> None:
    """A TubeMQ group's offsets are in the one offset store: Kafka's OffsetFetch reads them."""
    topic = "java-committed"
    create_topic(broker, topic, 2)
    results = tube.produce(topic, messages(12, "c"))
    ends = Counter(r["partition"] for r in results)
    with tube.member("committing-group", [topic], "pull-consumer") as member:
        member.wait_for(lambda m: len(m.records) >= 12, what="12 records")
        member.close()  # a clean close commits the last pack
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committing-group"})
    try:
        committed = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    finally:
        consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == {0: ends[0], 1: ends[1]}


def test_a_producer_publishing_a_missing_topic_is_told_so(tube: JavaTube) -> None:
    proc = tube.run_producer("no-such-topic", [{"body": "x"}])
    assert proc.returncode == 1
    assert "Publish topic failure, make sure the topic no-such-topic exist" in proc.stderr


def test_a_message_type_filter_selects_at_the_broker(tube: JavaTube, broker: BrokerProcess) -> None:
    topic = "java-filtered"
    create_topic(broker, topic, 1)
    sent = [{"body": f"{kind}-{i}", "msgType": kind} for i in range(6) for kind in ("click", "view")]
    assert all(r["ok"] for r in tube.produce(topic, sent))
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"kafka-untyped", partition=0)
    producer.produce(topic, value=b"kafka-click", partition=0, headers=[("$msgType$", b"click")])
    assert producer.flush(30) == 0
    with tube.member("filter-group", [topic], "filtered", msg_types=["click"]) as member:
        member.wait_for(lambda m: any(r["body"] == "kafka-click" for r in m.records), what="the Kafka click")
        member.close()
    assert [r["body"] for r in member.records] == [f"click-{i}" for i in range(6)] + ["kafka-click"]
