"""The KIP-848 consumer group protocol with confluent-kafka 2.16 (``group.protocol=consumer``).

Consumers run as subprocesses so one can die by SIGKILL (tests/integration/consumer_process.py). They
report their assignment and every record as JSON lines and commit synchronously after each record. The broker's heartbeat interval and
session timeout are shortened so that a dead member's partitions move within seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration import kafka_io
from tests.integration.consumer_process import ConsumerProcess as Worker
from tests.integration.consumer_process import consumed
from tests.integration.kafka_io import create_topics, wait_for
from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration

SESSION_MS = 6000
BROKER_OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "500",
}

@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.stop()



def describe(b: BrokerProcess, group: str):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    return admin.describe_consumer_groups([group])[group].result(15)


def test_members_join_balance_leave_and_die_and_commits_survive(broker: BrokerProcess,
                                                               workers: list[Worker]) -> None:
    topic, n, group = "cp-uniform", 6, "cp-group"
    create_topics(broker, **{topic: n})
    expected = kafka_io.produce_numbered(broker, topic, n, 0, 300)
    workers += [Worker(broker, group, [topic]) for _ in range(3)]
    a, b, c = workers

    # Join: the uniform assignor gives each of the three members two partitions.
    def balanced(ws: list[Worker], sizes: list[int]) -> bool:
        owned = [w.assignment for w in ws]
        union = set().union(*owned)
        return sorted(len(o) for o in owned) == sizes and len(union) == n and sum(map(len, owned)) == n

    wait_for(lambda: balanced([a, b, c], [2, 2, 2]), 30, "three members with two partitions each")
    wait_for(lambda: set(consumed(workers)) >= expected, 30, "the first 300 records")
    description = describe(broker, group)
    assert description.state == ConsumerGroupState.STABLE
    assert len(description.members) == 3
    assert sorted(len(m.assignment.topic_partitions) for m in description.members) == [2, 2, 2]

    # A clean leave: a's partitions move to b and c, which go on from a's committed offsets.
    a.close()
    wait_for(lambda: balanced([b, c], [3, 3]), 30, "b and c with three partitions each")
    expected |= kafka_io.produce_numbered(broker, topic, n, 300, 300)
    wait_for(lambda: set(consumed(workers)) >= expected, 30, "records after the leave")
    counts = consumed(workers)
    assert all(counts[v] == 1 for v in expected), "a record was consumed twice after a clean commit"

    # A death (SIGKILL): after the session timeout c gets b's partitions too.
    b.kill()
    killed_at = time.monotonic()
    wait_for(lambda: len(c.assignment) == n, SESSION_MS / 1000 + 20, "c with every partition")
    assert time.monotonic() - killed_at >= SESSION_MS / 1000 - 1.5  # b's session had to expire first
    expected |= kafka_io.produce_numbered(broker, topic, n, 600, 300)
    wait_for(lambda: set(consumed(workers)) >= expected, 30, "records after the death")
    c.close()

    # Committed offsets survive a broker restart, and a new member resumes from them.
    broker.restart()
    probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    committed = probe.committed([TopicPartition(topic, p) for p in range(n)], timeout=15)
    probe.close()
    assert sorted(tp.offset for tp in committed) == [150] * n
    expected_new = kafka_io.produce_numbered(broker, topic, n, 900, 60)
    d = Worker(broker, group, [topic])
    workers.append(d)
    wait_for(lambda: set(consumed([d])) >= expected_new, 30, "the new member's records")
    time.sleep(1)
    assert set(consumed([d])) == expected_new, "the new member re-read records committed before the restart"


def test_range_assignor_co_partitions(broker: BrokerProcess, workers: list[Worker]) -> None:
    create_topics(broker, **{"cp-left": 3, "cp-right": 3})
    group = "cp-range"
    workers += [Worker(broker, group, ["cp-left", "cp-right"], **{"group.remote.assignor": "range"}) for _ in range(2)]

    def shape() -> list[set[tuple[str, int]]]:
        return sorted((w.assignment for w in workers), key=len)

    wait_for(lambda: [len(a) for a in shape()] == [2, 4], 30, "a 2/4 split")
    small, large = shape()
    # Each member holds the same partition numbers of both topics: p0-p1 and p2.
    assert small == {("cp-left", 2), ("cp-right", 2)}
    assert large == {("cp-left", 0), ("cp-left", 1), ("cp-right", 0), ("cp-right", 1)}
    description = describe(broker, group)
    assert description.partition_assignor == "range"
    kafka_io.produce_numbered(broker, "cp-left", 3, 0, 30)
    wait_for(lambda: len(consumed(workers)) == 30, 30, "every record")


def test_regex_subscription_picks_up_new_topics(broker: BrokerProcess, workers: list[Worker]) -> None:
    create_topics(broker, **{"rx-one": 2, "other-topic": 2})
    w = Worker(broker, "cp-regex", ["^rx-.*"])
    workers.append(w)
    wait_for(lambda: w.assignment == {("rx-one", 0), ("rx-one", 1)}, 30, "the regex's first topic")
    create_topics(broker, **{"rx-two": 2})
    kafka_io.produce_numbered(broker, "rx-two", 2, 0, 10)
    wait_for(lambda: ("rx-two", 0) in w.assignment and ("rx-two", 1) in w.assignment, 30, "the new topic")
    wait_for(lambda: len(consumed([w])) == 10, 30, "the new topic's records")
    assert not any(t == "other-topic" for t, _ in w.assignment)


def test_invalid_assignor_is_refused(broker: BrokerProcess) -> None:
    create_topics(broker, **{"cp-bad": 1})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cp-bad", "group.protocol": "consumer",
                  "group.remote.assignor": "sticky", "enable.auto.commit": False})
    c.subscribe(["cp-bad"])
    errors = []
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is not None and msg.error():
            errors.append(msg.error())
    c.close()
    # librdkafka treats UNSUPPORTED_ASSIGNOR as fatal, naming the broker's error.
    assert errors and errors[0].code() == KafkaError._FATAL and "assignor" in errors[0].str(), errors


def test_data_dir_has_consumer_group_records(broker: BrokerProcess) -> None:
    # A KIP-848 group's records go to __consumer_offsets (that is how they survive restarts).
    create_topics(broker, **{"cp-records": 2})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cp-records", "group.protocol": "consumer"})
    c.subscribe(["cp-records"])
    wait_for(lambda: (c.poll(0.2), len(c.assignment()))[1] == 2, 30, "an assignment")
    c.close()
    logs = list(Path(broker.data_dir).rglob("__consumer_offsets-*/*.log"))
    assert logs and sum(p.stat().st_size for p in logs) > 0


def test_members_carry_on_across_a_broker_restart(broker: BrokerProcess, workers: list[Worker]) -> None:
    # The group's records (members, epochs, assignments) are replayed at start-up: the member goes on
    # heartbeating with its epoch instead of being told its group is gone (fatal for librdkafka).
    create_topics(broker, **{"cp-restart": 2})
    w = Worker(broker, "cp-restart", ["cp-restart"])
    workers.append(w)
    wait_for(lambda: len(w.assignment) == 2, 30, "the assignment")
    before = describe(broker, "cp-restart").members[0].member_id
    broker.restart()
    values = kafka_io.produce_numbered(broker, "cp-restart", 2, 0, 20)
    wait_for(lambda: set(consumed([w])) >= values, 30, "records after the restart")
    after = describe(broker, "cp-restart")
    assert [m.member_id for m in after.members] == [before]
    assert not [e for e in w.events if e["event"] == "error" and "FATAL" in e["error"].upper()]
    assert not [line for line in broker.stderr_lines if "Traceback" in line or " ERROR " in line]


def test_many_subscription_changes_leaves_and_rejoins_keep_getting_assignments(broker: BrokerProcess) -> None:
    """Names and regexes changed many times, with leaves (unsubscribe: epoch -1) and rejoins in
    between: no heartbeat is ever refused (INVALID_REQUEST or otherwise), and the last subscription
    gets exactly its partitions. Regex matches arrive on a later heartbeat (resolved off the heartbeat)."""
    create_topics(broker, **{f"churn-{i}": 2 for i in range(4)})
    refused: list[str] = []

    class Refusals(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if "ConsumerGroupHeartbeat" in message and ("Broker:" in message or "failed" in message.lower()):
                refused.append(message)

    logger = logging.getLogger("tidelog.tests.churn")
    logger.addHandler(Refusals())
    logger.propagate = False
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cp-churn", "group.protocol": "consumer",
                         "debug": "cgrp", "error_cb": lambda e: refused.append(str(e))}, logger=logger)
    subscriptions = [["churn-0"], ["churn-0", "churn-1"], ["^churn-[0-2]$"], ["churn-3"], ["^churn-.*"], ["churn-1"]]
    for i, topics in enumerate(subscriptions * 2):
        consumer.subscribe(topics)
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            consumer.poll(0.1)
        if i % 4 == 3:
            consumer.unsubscribe()
            consumer.poll(0.3)
    consumer.subscribe(["^churn-[13]$"])
    wanted = {("churn-1", 0), ("churn-1", 1), ("churn-3", 0), ("churn-3", 1)}
    wait_for(lambda: (consumer.poll(0.1), {(p.topic, p.partition) for p in consumer.assignment()})[1] == wanted,
             20, "the last regex subscription's partitions")
    consumer.close()
    assert not refused, refused[:5]
