"""Kafka Streams (4.x) word count end to end against `tidelog serve`.

tests/java's ``tidelog.oracle.WordCount`` (split lines into words, group by word, count, write the
counts) needs from the broker what any Streams application does: CreateTopics for its repartition and
changelog topics (with their configs), a classic consumer group with the Streams assignor,
transaction-free produce and fetch, offset commits and DeleteRecords on the repartition topic. The
app runs, is stopped (SIGTERM: a clean close), then runs again on more input with a fresh state
directory, so its counts must come back from the changelog topic. ~20 s on 2 cores.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration import kafka_io
from tests.oracle.jvm import JavaProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-streams")]

FIRST = ["the quick brown fox", "jumps over the lazy dog", "The Dog barks!", "fox, and dog; and fox"] * 25
SECOND = ["a lazy fox sleeps", "the dog sleeps too"] * 10


def produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    kafka_io.produce(bootstrap, topic, lines, key=[str(i) for i in range(len(lines))], timeout=30)


def words(lines: list[str]) -> Counter[str]:
    return Counter(w for line in lines for w in line.lower().replace(",", " ").replace(";", " ").replace("!", " ")
                   .split())


def start(java_classpath: str, bootstrap: str, app: str, topics: tuple[str, str], state_dir) -> JavaProcess:
    streams = JavaProcess.program(java_classpath, "tidelog.oracle.WordCount", bootstrap, app, *topics, state_dir)
    running = streams.wait_for(lambda e: e.get("state") == "RUNNING" or "error" in e, timeout=60)
    assert running == {"state": "RUNNING"}, f"{running}\n{streams.stderr_tail()}"
    return streams


def read_counts(counts: Consumer, latest: dict[str, int], expected: Counter[str], streams: JavaProcess) -> None:
    """Read the counts topic into ``latest`` (word -> last count) until it equals ``expected``."""
    deadline = time.monotonic() + 60
    while latest != dict(expected) and time.monotonic() < deadline:
        for m in counts.consume(500, 0.5):
            if m.error() is None:
                latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
        error = streams.wait_for(lambda e: "error" in e, timeout=0.01)
        assert error is None, f"{error}\n{streams.stderr_tail()}"
    assert latest == dict(expected)


def test_word_count(java_classpath, subject_broker, tmp_path) -> None:
    bootstrap = subject_broker.bootstrap
    app, source, sink = "tl-wordcount", "tl-wordcount-lines", "tl-wordcount-counts"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    kafka_io.create_topics(admin, NewTopic(source, 2, 1), NewTopic(sink, 2, 1), timeout=30)
    produce(bootstrap, source, FIRST)
    counts = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    counts.subscribe([sink])
    latest: dict[str, int] = {}
    try:
        streams = start(java_classpath, bootstrap, app, (source, sink), tmp_path / "state-1")
        try:
            read_counts(counts, latest, words(FIRST), streams)
        finally:
            assert streams.stop() == 143  # SIGTERM; the shutdown hook closed Streams
        assert '{"closed":true}\n' in streams.drain()

        # Streams' internal topics exist, with the configs Streams asked for
        topics = set(admin.list_topics(timeout=30).topics)
        repartition = f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition"
        changelog = f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"
        assert {repartition, changelog} <= topics
        # the repartition topic was purged up to what was consumed (DeleteRecords)
        low, high = counts_watermarks(bootstrap, repartition)
        assert high == sum(words(FIRST).values()) and 0 < low <= high

        # a second run with an empty state directory restores the counts from the changelog
        produce(bootstrap, source, SECOND)
        streams = start(java_classpath, bootstrap, app, (source, sink), tmp_path / "state-2")
        try:
            read_counts(counts, latest, words(FIRST) + words(SECOND), streams)
        finally:
            streams.stop()
    finally:
        counts.close()


def counts_watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    """(sum of low watermarks, sum of high watermarks) over the topic's partitions."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4()}"})
    try:
        partitions = c.list_topics(topic, timeout=30).topics[topic].partitions
        marks = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in partitions]
    finally:
        c.close()
    return sum(lo for lo, _ in marks), sum(hi for _, hi in marks)
