"""Share groups' dead-letter queues (KIP-1191) against a real ``tidelog serve`` at ``share.version=2``:
confluent-kafka's ShareConsumer rejects one record and releases another until its delivery limit; a
plain Consumer reads both from the group's DLQ topic with Kafka 4.4's ``__dlq.errors.*`` headers and
(``errors.deadletterqueue.copy.record.enable``) the original keys and values."""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer

from tidelog.protocol.messages import IncrementalAlterConfigsRequest
from tidelog.testing.client import WireClient

BROKER_OVERRIDES = {"share.version": "2"}
GROUP_CONFIG = 32


def group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=GROUP_CONFIG, resource_name=group, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=0, value=v)
                for k, v in configs.items()])]), 1)
        assert r.responses[0].error_code == 0, r


def read_all(bootstrap: str, topic: str, n: int, timeout_s: float = 90) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got: list = []
        deadline = time.monotonic() + timeout_s
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m)
        return got
    finally:
        c.close()


def test_rejected_and_over_the_limit_records_reach_the_dlq(broker, admin) -> None:
    from confluent_kafka.admin import NewTopic

    topic, dlq, group = "work", "dlq.work", "dlq-g"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    admin.create_topics([NewTopic(dlq, 1, 1, config={"errors.deadletterqueue.group.enable": "true"})])[dlq].result(30)
    group_configs(broker.bootstrap, group, {
        "share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2",
        "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.copy.record.enable": "true"})
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert p.flush(30) == 0

    accepted: list[int] = []
    deliveries: dict[int, int] = {}
    with ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                        "share.acknowledgement.mode": "explicit"}) as c:
        c.subscribe([topic])
        deadline = time.monotonic() + 120
        # done once 2 and 3 are accepted and 1 has been released twice (its second release is at the limit)
        while (len(accepted) < 2 or deliveries.get(1, 0) < 2) and time.monotonic() < deadline:
            for m in c.poll(1.0):
                if m.error() is not None:
                    continue
                deliveries[m.offset()] = deliveries.get(m.offset(), 0) + 1
                if m.offset() == 0:
                    c.acknowledge(m, AcknowledgeType.REJECT)
                elif m.offset() == 1:
                    c.acknowledge(m, AcknowledgeType.RELEASE)
                else:
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
                    accepted.append(m.offset())
            c.commit_sync()
        assert deliveries == {0: 1, 1: 2, 2: 1, 3: 1}

    got = read_all(broker.bootstrap, dlq, 2)
    assert [(m.key(), m.value()) for m in got] == [(b"k0", b"v0"), (b"k1", b"v1")]
    assert [dict(m.headers()) for m in got] == [
        {"__dlq.errors.topic": topic.encode(), "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"0",
         "__dlq.errors.group": group.encode(), "__dlq.errors.delivery.count": b"1",
         "__dlq.errors.message": b"Offset rejected by client."},
        {"__dlq.errors.topic": topic.encode(), "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"1",
         "__dlq.errors.group": group.encode(), "__dlq.errors.delivery.count": b"2",
         "__dlq.errors.message": b"Offset delivery count exceeded the threshold."}]
    # nothing more is written there, and the records are not offered again
    assert len(read_all(broker.bootstrap, dlq, 3, timeout_s=5)) == 2
    from tests.integration.test_metrics import scrape, value

    labels = {"group": group, "topic": topic, "partition": "0"}
    samples = scrape(broker)
    assert value(samples, "tidelog_share_dead_letter_records_total", **labels) == 2
    assert value(samples, "tidelog_share_dead_letter_failed_writes_total", **labels) == 0
