"""Share groups at Kafka 4.4's newest versions, Apache Kafka 4.4 against Tidelog: one raw-request program
(ShareGroupHeartbeat, ShareFetch/ShareAcknowledge v2 with RENEW and ShareAcquireMode, DescribeShareGroupOffsets
v1's lag) run against each broker, the answers compared; and a confluent-kafka ShareConsumer program whose
rejected and over-the-limit records go to the group's dead-letter queue (KIP-1191), the DLQ topic's records
compared. Both brokers run at their default, share.version 2 (share groups with dead-letter queues), as
Kafka 4.4 formats a new cluster."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.oracle.fixtures import SHARED_OVERRIDES
from tidelog.protocol.messages import (
    DescribeConfigsRequest,
    DescribeShareGroupOffsetsRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupHeartbeatRequest,
)
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle-share")]

TOPIC, GROUP = "share-v2", "share-v2-group"
ACCEPT, RENEW = 1, 4


@pytest.fixture(scope="module")
def broker_overrides() -> dict[str, str]:
    return dict(SHARED_OVERRIDES)


def _until(what: str, attempt, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        got = attempt()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} in {timeout} s")
        time.sleep(0.3)


def _group_config(wire: WireClient, configs: dict[str, str]) -> int:
    r = IncrementalAlterConfigsRequest
    answer = wire.request(r(resources=[r.AlterConfigsResource(resource_type=32, resource_name=GROUP, configs=[
        r.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])]), 1)
    if answer.responses[0].error_code == 0:
        # Kafka's broker takes a group config on when it replays the metadata record, a moment after the answer:
        # the steps after this one wait until DescribeConfigs shows it (on both brokers alike)
        d = DescribeConfigsRequest

        def shown():
            (res,) = wire.request(d(resources=[d.DescribeConfigsResource(resource_type=32, resource_name=GROUP,
                                                                          configuration_keys=list(configs))]), 4).results
            got = {c.name: c.value for c in res.configs}
            return True if all(got.get(k) == v for k, v in configs.items()) else None

        _until("group config shown", shown, 30)
    return answer.responses[0].error_code


def _acks(tid: uuid.UUID, batches: list[tuple[int, int, int]]):
    a = ShareAcknowledgeRequest
    return [a.AcknowledgeTopic(topic_id=tid, partitions=[a.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
        a.AcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t]) for f, la, t in batches])])]


def program(bootstrap: str) -> dict[str, object]:
    """The steps; what each answered, as comparable values."""
    out: dict[str, object] = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    for i in range(5):
        producer.produce(TOPIC, value=b"%d" % i)
    assert producer.flush(30) == 0
    member = str(uuid.uuid4())
    with WireClient.connect(bootstrap, timeout=30) as wire:
        tid = wire.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)]), 12).topics[0].topic_id
        _until("group coordinator", lambda: True if wire.request(FindCoordinatorRequest(
            key_type=0, coordinator_keys=[GROUP]), 4).coordinators[0].error_code == 0 else None)
        out["earliest"] = _group_config(wire, {"share.auto.offset.reset": "earliest"})
        epoch = {"member": 0}

        def assigned():
            hb = ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=epoch["member"],
                                            subscribed_topic_names=[TOPIC] if epoch["member"] == 0 else None)
            r = wire.request(hb, 1)
            if r.error_code in (14, 15, 16):  # the coordinator loading or not found yet: retriable
                return None
            assert r.error_code == 0, r
            epoch["member"] = r.member_epoch
            held = r.assignment is not None and any(tp.partitions for tp in r.assignment.topic_partitions)
            return True if held else None

        _until("assignment", assigned)
        d = DescribeShareGroupOffsetsRequest
        describe = d(groups=[d.DescribeShareGroupOffsetsRequestGroup(group_id=GROUP, topics=None)])

        def offsets():
            (g,) = wire.request(describe, 1).groups
            return [(p.partition_index, p.start_offset, p.lag, p.error_code) for t in g.topics for p in t.partitions]

        out["offsets before the first fetch"] = offsets()
        session = {"epoch": 0}

        def fetch(**fields) -> ShareFetchRequest:
            f = ShareFetchRequest
            request = f(group_id=GROUP, member_id=member, share_session_epoch=session["epoch"], max_wait_ms=1000,
                        min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                        topics=[f.FetchTopic(topic_id=tid, partitions=[f.FetchPartition(partition_index=0)])])
            for k, v in fields.items():
                setattr(request, k, v)
            return request

        def sent(request, version: int = 2):
            r = wire.request(request, version)
            if r.error_code == 0:
                session["epoch"] += 1
            return r

        def acquire():
            r = sent(fetch())
            got = [(a.first_offset, a.last_offset, a.delivery_count)
                   for t in r.responses for p in t.partitions for a in p.acquired_records]
            return (r.acquisition_lock_timeout_ms, got) if got else None

        out["fetch"] = _until("acquired records", acquire)

        def ack(batches, renew: bool, version: int = 2):
            request = ShareAcknowledgeRequest(group_id=GROUP, member_id=member, share_session_epoch=session["epoch"],
                                              topics=_acks(tid, batches))
            request.is_renew_ack = renew
            r = sent(request, version)
            return (r.error_code, [(p.error_code, p.error_message) for t in r.responses for p in t.partitions],
                    r.acquisition_lock_timeout_ms if version >= 2 and r.error_code == 0 else None)

        def renewing_fetch(**fields):
            f = ShareFetchRequest
            r = sent(fetch(is_renew_ack=True, **fields, topics=[f.FetchTopic(topic_id=tid, partitions=[
                f.FetchPartition(partition_index=0, acknowledgement_batches=[f.AcknowledgementBatch(
                    first_offset=0, last_offset=0, acknowledge_types=[RENEW])])])]))
            return r.error_code, [(p.acknowledge_error_code, p.acknowledge_error_message, len(p.acquired_records))
                                  for t in r.responses for p in t.partitions]

        out["renew (the default config)"] = ack([(0, 0, RENEW)], True)
        out["renew disabled"] = _group_config(wire, {"share.renew.acknowledge.enable": "false"})
        out["renew, not enabled"] = ack([(0, 0, RENEW)], True)
        out["renew enabled"] = _group_config(wire, {"share.renew.acknowledge.enable": "true"})
        out["renew without IsRenewAck"] = ack([(0, 0, RENEW)], False)
        out["renew at v1"] = ack([(0, 0, RENEW)], False, 1)
        out["renew"] = ack([(0, 0, RENEW)], True)
        out["renewing fetch asking for records"] = renewing_fetch(max_wait_ms=5000)
        nothing = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
        out["renewing fetch"] = renewing_fetch(**nothing)
        out["renewing fetch with a batch size"] = renewing_fetch(**nothing, batch_size=7)
        out["accept 1 and 3"] = ack([(1, 1, ACCEPT), (3, 3, ACCEPT)], False)
        out["unknown acquire mode"] = wire.request(fetch(share_acquire_mode=2), 2).error_code

        def lag():
            parts = offsets()
            return parts if parts and parts[0][2] == 3 else None

        try:
            out["lag"] = _until("lag 3", lag, 20)
        except AssertionError:
            out["lag"] = offsets()
        producer.produce(TOPIC, value=b"5")
        assert producer.flush(30) == 0
        out["lag after one more record"] = offsets()
    return out


def test_share_v2_and_lag_answer_as_kafka(kafka_broker, tidelog_broker) -> None:
    kafka = program(kafka_broker.bootstrap)
    tidelog = program(tidelog_broker.bootstrap)
    print("kafka  ", kafka)
    print("tidelog", tidelog)
    assert tidelog == kafka


DLQ_TOPIC, DLQ, DLQ_GROUP = "share-dlq", "dlq.share-dlq", "share-dlq-group"


def _records(bootstrap: str, topic: str, n: int, timeout_s: float) -> list[tuple]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4()}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got: list[tuple] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                got.append((m.partition(), m.key(), m.value(), m.headers()))
        return got
    finally:
        c.close()


def dlq_program(bootstrap: str) -> dict[str, object]:
    """A ShareConsumer rejects offset 0, releases offset 1 up to the delivery limit (2) and accepts the rest
    (and the next group, without copying records, rejects everything); what the DLQ topics hold."""
    out: dict[str, object] = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(DLQ_TOPIC, 1, 1)])[DLQ_TOPIC].result(60)
    for name in (DLQ, DLQ + "-2"):
        admin.create_topics([NewTopic(name, 2, 1, config={"errors.deadletterqueue.group.enable": "true"})])[
            name].result(60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(4):
        producer.produce(DLQ_TOPIC, key=b"k%d" % i, value=b"v%d" % i, headers=[("original", b"h%d" % i)])
    assert producer.flush(30) == 0
    with WireClient.connect(bootstrap, timeout=30) as wire:
        _until("group coordinator", lambda: True if wire.request(FindCoordinatorRequest(
            key_type=0, coordinator_keys=[DLQ_GROUP]), 4).coordinators[0].error_code == 0 else None)
        r = IncrementalAlterConfigsRequest

        def configure(group: str, configs: dict[str, str]) -> int:
            answer = wire.request(r(resources=[r.AlterConfigsResource(resource_type=32, resource_name=group, configs=[
                r.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])]), 1)
            return answer.responses[0].error_code

        out["a DLQ name starting with __"] = configure(DLQ_GROUP, {"errors.deadletterqueue.topic.name": "__dlq"})
        out["configs"] = configure(DLQ_GROUP, {
            "share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2",
            "errors.deadletterqueue.topic.name": DLQ, "errors.deadletterqueue.copy.record.enable": "true"})
        out["configs of the second group"] = configure(DLQ_GROUP + "-2", {
            "share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": DLQ + "-2"})

    def consume(group: str, decide) -> dict[int, int]:
        deliveries: dict[int, int] = {}
        with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "share.acknowledgement.mode": "explicit"}) as c:
            c.subscribe([DLQ_TOPIC])
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not decide(None, deliveries):
                for m in c.poll(1.0):
                    if m.error() is None:
                        deliveries[m.offset()] = deliveries.get(m.offset(), 0) + 1
                        c.acknowledge(m, decide(m.offset(), deliveries))
                c.commit_sync()
        return deliveries

    def first(offset, deliveries):
        if offset is None:  # done?
            return deliveries.get(1, 0) >= 2 and 2 in deliveries and 3 in deliveries
        return {0: AcknowledgeType.REJECT, 1: AcknowledgeType.RELEASE}.get(offset, AcknowledgeType.ACCEPT)

    def second(offset, deliveries):
        return len(deliveries) >= 4 if offset is None else AcknowledgeType.REJECT

    out["deliveries"] = consume(DLQ_GROUP, first)
    out["deliveries of the second group"] = consume(DLQ_GROUP + "-2", second)
    out["dlq"] = _records(bootstrap, DLQ, 2, 60)
    out["dlq of the second group"] = _records(bootstrap, DLQ + "-2", 4, 60)
    # nothing else arrives
    out["dlq record count"] = len(_records(bootstrap, DLQ, 3, 5))
    return out


def test_dead_letter_queues_hold_what_kafkas_hold(kafka_broker, tidelog_broker) -> None:
    kafka = dlq_program(kafka_broker.bootstrap)
    tidelog = dlq_program(tidelog_broker.bootstrap)
    print("kafka  ", kafka)
    print("tidelog", tidelog)
    assert kafka["dlq record count"] == 2  # the program does what it means to on Kafka
    assert tidelog == kafka
