"""Fetching against a real ``tidelog serve``: seeking (confluent-kafka and kafka-python), long polls
woken by a produce, idle fetches that wait without spinning, and kafka-python's incremental fetch
sessions over many polls.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import kafka
import pytest
from confluent_kafka import TopicPartition

from tests.integration.kafka_io import ck_consumer, ensure_topic, next_message, produce_all, producer
from tidelog.protocol.messages import FetchRequest
from tidelog.records import iter_batches
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = pytest.mark.xdist_group("fetch")


def test_seek(broker: BrokerProcess) -> None:
    topic = "seekable"
    produce_all(producer(broker), topic, [{"value": b"%d" % i} for i in range(100)])
    c = ck_consumer(broker)
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        first = next_message(c, 10)
        assert first is not None and first.offset() == 0
        c.seek(TopicPartition(topic, 0, 73))
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 27 and time.monotonic() < deadline:
            m = next_message(c, 0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m)
        assert [m.offset() for m in got] == list(range(73, 100))
        assert [m.value() for m in got] == [b"%d" % i for i in range(73, 100)]
    finally:
        c.close()
    kc = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = kafka.TopicPartition(topic, 0)
        kc.assign([tp])
        kc.seek(tp, 42)
        out: list = []
        deadline = time.monotonic() + 10
        while len(out) < 58 and time.monotonic() < deadline:
            out.extend(kc.poll(timeout_ms=500).get(tp, []))
        assert [r.offset for r in out] == list(range(42, 100))
    finally:
        kc.close()


# --------------------------------------------------------------------------------- fetch long polls


def _fetch_request(topic: str, offset: int, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])


def test_long_poll_is_woken_by_a_produce(broker: BrokerProcess) -> None:
    topic = "long-poll"
    ensure_topic(broker, topic)
    p = producer(broker)
    threading.Timer(0.5, lambda: (p.produce(topic, b"late"), p.flush(5))).start()
    with WireClient.connect(broker.bootstrap, timeout=20) as client:
        start = time.monotonic()
        r = client.request(_fetch_request(topic, 0, 10_000), 11)
        elapsed = time.monotonic() - start
    pd = r.responses[0].partitions[0]
    assert pd.error_code == 0 and pd.high_watermark == 1
    [batch] = list(iter_batches(bytes(pd.records)))
    assert [rec.value for rec in batch.records()] == [b"late"]
    assert 0.4 <= elapsed < 5, elapsed

    # the same through librdkafka: a consumer parked in a 5 s fetch gets a record produced later
    # well before that fetch would have timed out
    c = ck_consumer(broker, **{"fetch.wait.max.ms": 5000})
    try:
        c.assign([TopicPartition(topic, 0, 1)])
        assert next_message(c, 1.5) is None  # the consumer is now waiting in a long poll
        sent = time.monotonic()
        p.produce(topic, b"wake")
        p.flush(5)
        m = next_message(c, 10)
        latency = time.monotonic() - sent
        assert m is not None and m.value() == b"wake"
        assert latency < 3, latency
    finally:
        c.close()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_fetch_waits_for_max_wait_without_spinning(broker: BrokerProcess) -> None:
    topic = "idle"
    ensure_topic(broker, topic)
    with WireClient.connect(broker.bootstrap) as client:
        for wait_ms in (300, 1000):
            start = time.monotonic()
            r = client.request(_fetch_request(topic, 0, wait_ms), 11)
            elapsed = time.monotonic() - start
            pd = r.responses[0].partitions[0]
            assert pd.error_code == 0 and not pd.records
            assert wait_ms / 1000 * 0.9 <= elapsed < wait_ms / 1000 + 1.5, (wait_ms, elapsed)
    assert broker.proc is not None
    c = ck_consumer(broker, **{"fetch.wait.max.ms": 200})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        next_message(c, 1.0)
        cpu_before, wall_before = _cpu_seconds(broker.proc.pid), time.monotonic()
        assert next_message(c, 3.0) is None
        cpu = _cpu_seconds(broker.proc.pid) - cpu_before
        wall = time.monotonic() - wall_before
    finally:
        c.close()
    assert cpu < 0.5 * wall, f"broker used {cpu:.2f}s of CPU in {wall:.2f}s serving idle fetches"


# ------------------------------------------------------------------------------------ fetch sessions


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_kafka_python_fetch_sessions_over_many_polls(broker: BrokerProcess) -> None:
    topics = ["sessions-a", "sessions-b"]
    capture = _Capture()
    fetcher_log = logging.getLogger("kafka.consumer.fetcher")
    fetcher_log.addHandler(capture)
    old_level = fetcher_log.level
    fetcher_log.setLevel(logging.INFO)
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2)
    for t in topics:
        p.send(t, b"seed", partition=0).get(10)
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tps = [kafka.TopicPartition(t, 0) for t in topics]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got: dict[str, list[bytes]] = {t: [] for t in topics}
        expected: dict[str, list[bytes]] = {t: [b"seed"] for t in topics}
        for round_ in range(15):
            # only one topic gets news in most rounds: incremental responses omit the other
            for t in topics[: 1 + round_ % 2]:
                for i in range(5):
                    value = b"%s-%d-%d" % (t.encode(), round_, i)
                    expected[t].append(value)
                    p.send(t, value, partition=0)
            p.flush(10)
            deadline = time.monotonic() + 10
            while any(len(got[t]) < len(expected[t]) for t in topics) and time.monotonic() < deadline:
                for tp, records in c.poll(timeout_ms=200).items():
                    got[tp.topic].extend(r.value for r in records)
            assert got == expected
        handler = c._fetcher._session_handlers[0]  # kafka-python internals: the session state
        assert handler.next_metadata.session_id != 0, "the broker never opened a fetch session"
        assert handler.next_metadata.epoch > 10, "fetches did not go incremental"
        session_id = handler.next_metadata.session_id
        # drop one partition from the session (forgotten topics), keep fetching the other
        c.assign([tps[0]])
        c.seek(tps[0], len(expected[topics[0]]))
        for round_ in range(5):
            for t in topics:
                p.send(t, b"late-%d" % round_, partition=0)
            p.flush(10)
            late: list[bytes] = []
            deadline = time.monotonic() + 10
            while not late and time.monotonic() < deadline:
                for tp, records in c.poll(timeout_ms=200).items():
                    assert tp.topic == topics[0], "a forgotten partition was still fetched"
                    late.extend(r.value for r in records)
            assert late == [b"late-%d" % round_]
        assert handler.next_metadata.session_id == session_id, "the session was not kept"
        problems = [m for m in capture.messages if "invalid" in m or "unable to process" in m]
        assert problems == []
    finally:
        c.close()
        p.close()
        fetcher_log.removeHandler(capture)
        fetcher_log.setLevel(old_level)
