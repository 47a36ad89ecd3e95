"""Kafka Streams 4.4 with ``group.protocol=streams`` (KIP-1071 streams groups) against ``tidelog serve``, which
serves streams groups by default as Kafka 4.4 does: tests/java's ``tidelog.oracle.WordCount`` (a
repartition topic and a state store with its changelog) as two instances of one application; the broker
creates the internal topics, assigns the tasks to both, and after one instance is killed (SIGKILL: no
leave) gives its tasks to the other once its session ends. Kafka's ``kafka-streams-groups.sh`` lists and
describes the group. Runs against Apache Kafka 4.4 too (TIDELOG_ORACLE_SUBJECT=kafka): the same
expectations hold there. ~60 s on 2 cores.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration import kafka_io
from tests.integration.java.test_streams import FIRST, SECOND, produce, words
from tests.oracle import jvm
from tests.oracle.fixtures import SHARED_OVERRIDES
from tests.oracle.jvm import JavaProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-streams")]

APP, SOURCE, SINK = "tl-sg-wordcount", "tl-sg-lines", "tl-sg-counts"
REPARTITION = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition"
CHANGELOG = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"


@pytest.fixture(scope="module")
def broker_overrides() -> dict[str, str]:
    # Streams groups are served by default (Kafka 4.4 and Tidelog). A killed instance's tasks move once its
    # session (6 s here) ends. The first assignment waits the default 3 s
    # (group.streams.initial.rebalance.delay.ms) for more members.
    return {**SHARED_OVERRIDES, "group.streams.session.timeout.ms": "6000", "group.streams.min.session.timeout.ms": "6000",
            "group.streams.heartbeat.interval.ms": "1000", "group.streams.min.heartbeat.interval.ms": "1000"}


def start(java_classpath: str, bootstrap: str, state_dir) -> JavaProcess:
    return JavaProcess.program(java_classpath, "tidelog.oracle.WordCount", bootstrap, APP, SOURCE, SINK, state_dir,
                               "streams")


def running(streams: JavaProcess) -> None:
    state = streams.wait_for(lambda e: e.get("state") == "RUNNING" or "error" in e, timeout=90)
    assert state == {"state": "RUNNING"}, f"{state}\n{streams.stderr_tail()}"


def read_counts(counts: Consumer, latest: dict[str, int], expected: Counter[str], apps: list[JavaProcess]) -> None:
    deadline = time.monotonic() + 90
    while latest != dict(expected) and time.monotonic() < deadline:
        for m in counts.consume(500, 0.5):
            if m.error() is None:
                latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
        for app in apps:
            error = app.wait_for(lambda e: "error" in e, timeout=0.01)
            assert error is None, f"{error}\n{app.stderr_tail()}"
    assert latest == dict(expected)


def test_word_count_as_a_streams_group_two_instances_one_killed(java_classpath, subject_broker, tmp_path) -> None:
    bootstrap = subject_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    kafka_io.create_topics(admin, NewTopic(SOURCE, 4, 1), NewTopic(SINK, 2, 1), timeout=30)
    produce(bootstrap, SOURCE, FIRST)
    counts = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    counts.subscribe([SINK])
    latest: dict[str, int] = {}
    a = start(java_classpath, bootstrap, tmp_path / "state-a")
    b = start(java_classpath, bootstrap, tmp_path / "state-b")
    try:
        running(a)
        running(b)
        read_counts(counts, latest, words(FIRST), [a, b])
        # the broker created Streams' internal topics with the source topic's partition count
        topics = admin.list_topics(timeout=30).topics
        assert len(topics[REPARTITION].partitions) == 4 and len(topics[CHANGELOG].partitions) == 4

        listed = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap, "--list")
        assert listed.returncode == 0 and APP in listed.stdout.split(), listed.stdout + listed.stderr[-2000:]
        described = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap,
                                 "--describe", "--group", APP, "--members")
        assert described.returncode == 0, described.stdout + described.stderr[-3000:]
        members = [line.split() for line in described.stdout.splitlines() if line.split()[:1] == [APP]]
        assert len(members) == 2, described.stdout

        a.kill()  # no leave: b takes a's tasks once a's session ends
        produce(bootstrap, SOURCE, SECOND)
        read_counts(counts, latest, words(FIRST) + words(SECOND), [b])
        state = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap,
                             "--describe", "--group", APP, "--state")
        assert state.returncode == 0 and "Stable" in state.stdout, state.stdout + state.stderr[-2000:]
        offsets = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap,
                               "--describe", "--group", APP, "--offsets")
        assert offsets.returncode == 0 and SOURCE in offsets.stdout, offsets.stdout + offsets.stderr[-2000:]

        assert b.stop() == 143  # SIGTERM: Streams closes and leaves the group, which is then empty
        deleted = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap,
                               "--delete", "--group", APP)
        assert deleted.returncode == 0, deleted.stdout + deleted.stderr[-2000:]
        listed = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap, "--list")
        assert APP not in listed.stdout.split(), listed.stdout
    finally:
        a.kill()
        b.stop()
        counts.close()


LEFT, RIGHT, JOINED, JOIN_APP = "tl-sg-customers", "tl-sg-orders", "tl-sg-joined", "tl-sg-join"
CUSTOMERS = {f"c{i}": f"name-{i}" for i in range(20)}
ORDERS = {f"c{i}": f"order-{i * 7}" for i in range(0, 20, 2)}


def test_table_join_as_a_streams_group(java_classpath, subject_broker, tmp_path) -> None:
    """Two copartitioned tables joined by key: every key in both comes out once joined, by two instances."""
    bootstrap = subject_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    kafka_io.create_topics(admin, NewTopic(LEFT, 3, 1), NewTopic(RIGHT, 3, 1), NewTopic(JOINED, 1, 1), timeout=30)
    kafka_io.produce(bootstrap, LEFT, list(CUSTOMERS.values()), key=list(CUSTOMERS), timeout=30)
    kafka_io.produce(bootstrap, RIGHT, list(ORDERS.values()), key=list(ORDERS), timeout=30)
    out = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}",
                    "auto.offset.reset": "earliest", "enable.auto.commit": False})
    out.subscribe([JOINED])
    apps = [JavaProcess.program(java_classpath, "tidelog.oracle.StreamsJoin", bootstrap, JOIN_APP, LEFT, RIGHT,
                                JOINED, tmp_path / f"state-{n}", "streams") for n in (1, 2)]
    joined: dict[str, str] = {}
    expected = {k: f"{CUSTOMERS[k]}|{v}" for k, v in ORDERS.items()}
    try:
        for app in apps:
            running(app)
        deadline = time.monotonic() + 90
        while joined != expected and time.monotonic() < deadline:
            for m in out.consume(500, 0.5):
                if m.error() is None:
                    joined[m.key().decode()] = m.value().decode()
            for app in apps:
                error = app.wait_for(lambda e: "error" in e, timeout=0.01)
                assert error is None, f"{error}\n{app.stderr_tail()}"
        assert joined == expected
        described = jvm.run_tool(java_classpath, "kafka-streams-groups", "--bootstrap-server", bootstrap,
                                 "--describe", "--group", JOIN_APP, "--members")
        assert described.returncode == 0, described.stdout + described.stderr[-3000:]
        assert len([line for line in described.stdout.splitlines() if line.split()[:1] == [JOIN_APP]]) == 2
    finally:
        for app in apps:
            app.stop()
        out.close()
