"""Data survives broker restarts: clean (SIGTERM) and crash (SIGKILL), with live producers.

Each test runs its own broker; restarts keep the port and the data directory.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition

from tests.integration.kafka_io import ck_consumer, is_client_event, produce_batch
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import InitProducerIdRequest, MetadataRequest
from tidelog.records import build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

PARTITIONS = 4
FRESH_BROKER_OVERRIDES = {"num.partitions": str(PARTITIONS)}


def read_partitions(b: BrokerProcess, topic: str, partitions: int = PARTITIONS,
                    timeout: float = 30) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    """Everything up to the high watermark of each partition: {partition: [(offset, key, value)]}."""
    c = ck_consumer(b, **{"auto.offset.reset": "earliest"})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, list] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any(len(out[p]) < ends[p] for p in out) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or is_client_event(m):
                continue  # an event about the client (reconnects, group coordinator), not a partition
            assert m.error() is None, m.error()
            out[m.partition()].append((m.offset(), m.key(), m.value()))
        for p, records in out.items():
            assert [r[0] for r in records] == list(range(ends[p])), f"partition {p} is not dense up to {ends[p]}"
        return out
    finally:
        c.close()


def test_clean_restart_keeps_everything(fresh_broker: BrokerProcess) -> None:
    broker = fresh_broker
    topic = "restart"
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "compression.type": "gzip"})
    base_ts = int(time.time() * 1000) - 100_000
    for i in range(5000):
        p.produce(topic, key=b"key-%d" % (i % 97), value=b"value-%d" % i, timestamp=base_ts + i)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(20) == 0
    before = read_partitions(broker, topic)
    assert sum(len(v) for v in before.values()) == 5000

    assert broker.stop() == 0, "clean shutdown must exit 0"
    broker.start()

    after = read_partitions(broker, topic)
    assert after == before
    # the time index came back too
    c = ck_consumer(broker)
    try:
        for tp in c.offsets_for_times([TopicPartition(topic, part, base_ts + 2500) for part in range(PARTITIONS)],
                                      timeout=10):
            first_at_or_after = next(off for off, _, value in before[tp.partition]
                                     if int(value.split(b"-")[1]) >= 2500)
            assert tp.offset == first_at_or_after
    finally:
        c.close()
    # appends continue where the log ended
    reports = []
    p2 = Producer({"bootstrap.servers": broker.bootstrap})
    p2.produce(topic, value=b"after restart", partition=0, on_delivery=lambda e, m: reports.append((e, m)))
    assert p2.flush(10) == 0
    [(err, msg)] = reports
    assert err is None and msg.offset() == len(before[0])


def test_idempotent_producer_across_a_restart(fresh_broker: BrokerProcess) -> None:
    """Stop and start the broker under a live idempotent producer: every record lands exactly once."""
    broker = fresh_broker
    topic = "idempotent-restart"
    total = 6000
    p = Producer({
        "bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 2,
        "message.timeout.ms": 60_000, "retry.backoff.ms": 50, "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 200, "batch.num.messages": 100,
    })
    errors: list = []
    acked = [0]

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[0] += 1

    def produce() -> None:
        for i in range(total):
            while True:
                try:
                    p.produce(topic, key=b"%d" % (i % 16), value=b"%d" % i, on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
            if i % 50 == 0:
                time.sleep(0.01)

    thread = threading.Thread(target=produce)
    thread.start()
    deadline = time.monotonic() + 20
    while acked[0] < total // 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert acked[0] >= total // 4, "the producer did not get going"
    broker.restart()
    thread.join(60)
    assert p.flush(60) == 0
    assert errors == []
    assert acked[0] == total

    data = read_partitions(broker, topic)
    values = [int(v) for records in data.values() for _, _, v in records]
    assert sorted(values) == list(range(total)), (
        f"{len(values) - len(set(values))} duplicates, {len(set(range(total)) - set(values))} missing"
    )
    for records in data.values():  # idempotence also keeps the order within a partition
        in_partition = [int(v) for _, _, v in records]
        assert in_partition == sorted(in_partition)


def test_kill_9_under_load_loses_no_acknowledged_record(fresh_broker: BrokerProcess) -> None:
    broker = fresh_broker
    topic = "crash"
    # Warm up: the topic exists and the producer knows the leader before the crash.
    p = Producer({
        "bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 2, "enable.idempotence": False,
        "max.in.flight.requests.per.connection": 1, "message.timeout.ms": 30_000, "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
    })
    acked: dict[int, list[tuple[int, int]]] = defaultdict(list)  # partition -> [(offset, seq)]
    failed: list = []
    lock = threading.Lock()

    def on_delivery(err, msg) -> None:
        with lock:
            if err is None:
                acked[msg.partition()].append((msg.offset(), int(msg.value())))
            else:
                failed.append(err)

    stop = threading.Event()
    produced = [0]

    def produce() -> None:
        seq = 0
        while not stop.is_set():
            try:
                p.produce(topic, key=b"%d" % (seq % 64), value=b"%d" % seq, on_delivery=on_delivery)
                seq += 1
            except BufferError:
                p.poll(0.05)
            p.poll(0)
        produced[0] = seq

    thread = threading.Thread(target=produce)
    thread.start()
    deadline = time.monotonic() + 20
    while sum(len(v) for v in acked.values()) < 3000 and time.monotonic() < deadline:
        time.sleep(0.01)
    broker.kill()  # SIGKILL in the middle of the load
    with lock:
        acked_at_crash = sum(len(v) for v in acked.values())
    assert acked_at_crash >= 3000
    time.sleep(0.5)
    broker.start()
    time.sleep(0.5)
    stop.set()
    thread.join(30)
    assert p.flush(40) == 0
    assert all(e.code() != KafkaError.MSG_SIZE_TOO_LARGE for e in failed)

    data = read_partitions(broker, topic)
    for partition, records in acked.items():
        log = data[partition]
        for offset, seq in records:
            assert offset < len(log), f"acknowledged offset {offset} of partition {partition} is gone"
            assert log[offset][2] == b"%d" % seq, f"partition {partition} offset {offset} holds other data"
        # one request in flight: what was acknowledged is in the log in the order it was produced
        seqs_by_offset = [seq for _, seq in sorted(records)]
        assert seqs_by_offset == sorted(seqs_by_offset)
    total_acked = sum(len(v) for v in acked.values())
    assert total_acked > acked_at_crash, "the producer made no progress after the restart"


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_producer_state_survives_a_restart(fresh_broker: BrokerProcess, how: str) -> None:
    """A retried batch (same producer id, epoch and sequence) sent after a restart is recognised as a
    duplicate, and the next sequence is still the one expected: the producer state came back from
    the snapshot (clean stop) or from the log (crash)."""
    broker = fresh_broker
    topic = "pid-state"
    now = int(time.time() * 1000)

    def batch(first_seq: int, n: int) -> bytes:
        return build_batch([(now, None, b"seq-%d" % (first_seq + i)) for i in range(n)],
                           producer_id=pid, producer_epoch=0, base_sequence=first_seq)

    with WireClient.connect(broker.bootstrap) as client:
        client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 4)
        init = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4)
        assert init.error_code == 0 and init.producer_id >= 0
        pid = init.producer_id
        assert (produce_batch(client, topic, batch(0, 10)).error_code,
                produce_batch(client, topic, batch(10, 5)).base_offset) == (0, 10)
    if how == "clean":
        broker.restart()
    else:
        broker.kill()
        broker.start()
    with WireClient.connect(broker.bootstrap) as client:
        retried = produce_batch(client, topic, batch(10, 5))
        assert (retried.error_code, retried.base_offset) == (0, 10), "the retry must be answered as a duplicate"
        gap = produce_batch(client, topic, batch(16, 1))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        following = produce_batch(client, topic, batch(15, 3))
        assert (following.error_code, following.base_offset) == (0, 15)
        fresh = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4)
        assert fresh.producer_id != pid, "producer ids are never reused, even after a restart"
    data = read_partitions(broker, topic, partitions=PARTITIONS)
    assert [v for _, _, v in data[0]] == [b"seq-%d" % i for i in range(18)]
