"""Consumer groups of real TubeMQ Java clients, balanced by Tidelog's group coordinator (KIP-848).

* Several TubeMQ consumers on one topic: every join, clean leave and kill moves partitions so that
  members hold disjoint, balanced shares covering the topic; messages are consumed exactly once
  across the clean rebalances (a partition changes hands only after its last pack is committed) and
  at least once across a kill (the killed member's uncommitted pack is read again).
* One group holding a Kafka consumer (confluent-kafka, ``group.protocol=consumer``) and a TubeMQ
  consumer at once: they split the partitions without overlap, each record is consumed once,
  ``tidelog groups describe`` shows both members and the TubeMQ member's lag, and when the Kafka
  consumer leaves the TubeMQ one takes everything.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer

from tests.integration.kafka_io import create_topic
from tests.tubemq.driver import TUBE_BROKER_OVERRIDES, JavaTube, Member, wait_until
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("tubemq")]

BROKER_OVERRIDES = TUBE_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)


def check_split(members: list[Member], topic: str, partitions: int) -> None:
    """The members' partitions are disjoint, cover the topic and differ in size by at most one."""
    held = [m.partitions for m in members]
    assert set().union(*held) == {(topic, p) for p in range(partitions)}, held
    assert sum(len(h) for h in held) == partitions, f"a partition is held twice: {held}"
    sizes = [len(h) for h in held]
    assert max(sizes) - min(sizes) <= 1, held


def wait_split(members: list[Member], topic: str, partitions: int, timeout: float = 60) -> None:
    def settled() -> bool:
        held = [m.partitions for m in members]
        sizes = [len(h) for h in held]
        return (sum(sizes) == partitions and set().union(*held) == {(topic, p) for p in range(partitions)}
                and max(sizes) - min(sizes) <= 1)

    wait_until(settled, timeout, f"{len(members)} members to split {topic}: {[m.partitions for m in members]}")
    check_split(members, topic, partitions)


def consumed(members: list[Member]) -> Counter:
    return Counter(r["body"] for m in members for r in m.records)


def test_members_join_leave_and_die(tube: JavaTube, broker: BrokerProcess) -> None:
    topic, group, parts = "tube-balance", "tube-balance-group", 6
    create_topic(broker, topic, parts)
    batch = iter(range(1000))
    sent: list[str] = []

    def produce(n: int) -> None:
        bodies = [f"m{next(batch)}" for _ in range(n)]
        assert all(r["ok"] for r in tube.produce(topic, [{"body": b} for b in bodies]))
        sent.extend(bodies)

    a = tube.member(group, [topic], "A")
    b = c = None
    try:
        a.wait_for(lambda m: len(m.partitions) == parts, what="A to hold every partition")
        produce(60)
        wait_until(lambda: sum(consumed([a]).values()) >= 60, what="A to consume 60")

        b = tube.member(group, [topic], "B")  # a member joins: half of A's partitions move to B
        wait_split([a, b], topic, parts)
        produce(60)
        wait_until(lambda: sum(consumed([a, b]).values()) >= 120, what="A and B to consume 120")
        assert b.records, "B consumed nothing"

        c = tube.member(group, [topic], "C")  # another: two partitions each
        wait_split([a, b, c], topic, parts)
        produce(60)
        wait_until(lambda: sum(consumed([a, b, c]).values()) >= 180, what="180 consumed")

        b.close()  # a clean leave: B's partitions go to A and C
        wait_split([a, c], topic, parts)
        produce(60)
        wait_until(lambda: sum(consumed([a, b, c]).values()) >= 240, what="240 consumed")
        before_kill = consumed([a, b, c])
        assert before_kill == Counter(sent), "the clean rebalances lost or repeated messages"

        c.kill()  # killed: the coordinator fences it after its session timeout, A takes everything
        a.wait_for(lambda m: len(m.partitions) == parts, timeout=60, what="A to take C's partitions")
        produce(60)
        wait_until(lambda: set(consumed([a, b, c])) >= set(sent), what="every message consumed")
        assert set(consumed([a, b, c])) == set(sent)
    finally:
        for m in (a, b, c):
            if m is not None:
                m.kill()


class KafkaMember:
    """A confluent-kafka consumer of the KIP-848 protocol, polling in a thread; commits after each record."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.partitions: set[tuple[str, int]] = set()
        self.records: list[str] = []
        self._stop = threading.Event()
        self.consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, consumer, partitions) -> None:
        self.partitions |= {(p.topic, p.partition) for p in partitions}

    def _revoke(self, consumer, partitions) -> None:
        self.partitions -= {(p.topic, p.partition) for p in partitions}

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self.consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            self.records.append(msg.value().decode())
            self.consumer.commit(message=msg, asynchronous=False)
        self.consumer.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(30)


def tidelog_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args], capture_output=True, text=True, timeout=60)


def test_one_group_of_a_kafka_and_a_tubemq_consumer(tube: JavaTube, broker: BrokerProcess) -> None:
    topic, group, parts = "mixed-group", "mixed-group-g", 4
    create_topic(broker, topic, parts)
    tubemq = tube.member(group, [topic], "tubemq")
    kafka = None
    try:
        tubemq.wait_for(lambda m: len(m.partitions) == parts, what="the TubeMQ member to hold every partition")
        kafka = KafkaMember(broker.bootstrap, group, topic)
        wait_until(lambda: len(kafka.partitions) == 2 and len(tubemq.partitions) == 2,
                   what=f"an even split (kafka {kafka.partitions}, tubemq {tubemq.partitions})")
        assert kafka.partitions.isdisjoint(tubemq.partitions)

        producer = Producer({"bootstrap.servers": broker.bootstrap})
        sent = [f"r{i}" for i in range(40)]
        for i, value in enumerate(sent):
            producer.produce(topic, value=value.encode(), partition=i % parts)
        assert producer.flush(30) == 0
        wait_until(lambda: len(kafka.records) + len(tubemq.records) >= 40, what="40 records consumed")
        time.sleep(1)  # nothing more arrives: each record went to exactly one member
        got = Counter(kafka.records) + Counter(r["body"] for r in tubemq.records)
        assert got == Counter(sent)
        assert {r["partition"] for r in tubemq.records} == {p for _, p in tubemq.partitions}

        # The broker's view: one consumer group, both members, disjoint assignments, the lag of each partition.
        out = tidelog_cli("groups", "describe", group, "--members", "--bootstrap-server", broker.bootstrap)
        assert out.returncode == 0, out.stderr
        members = [line for line in out.stdout.splitlines()[1:] if line.strip()]
        assert len(members) == 2 and any("-Pull-" in line for line in members), out.stdout

        def lag_rows() -> dict[int, list[str]]:
            out = tidelog_cli("groups", "describe", group, "--bootstrap-server", broker.bootstrap)
            assert out.returncode == 0, out.stderr
            return {int(cols[2]): cols for cols in (line.split() for line in out.stdout.splitlines()[1:]) if cols}

        wait_until(lambda: all(cols[5] == "0" for cols in lag_rows().values()), what="lag 0 on every partition")
        rows = lag_rows()
        assert sorted(rows) == list(range(parts))
        assert all(rows[p][3] == "10" and rows[p][4] == "10" for p in rows), rows  # committed = log end = 10
        tubemq_rows = [p for p, cols in rows.items() if re.search(r"-Pull-", cols[6])]
        assert {(topic, p) for p in tubemq_rows} == tubemq.partitions

        kafka.close()  # the Kafka member leaves: the TubeMQ member takes its partitions
        kafka = None
        tubemq.wait_for(lambda m: len(m.partitions) == parts, what="the TubeMQ member to take every partition")
        more = [f"s{i}" for i in range(20)]
        for i, value in enumerate(more):
            producer.produce(topic, value=value.encode(), partition=i % parts)
        assert producer.flush(30) == 0
        tubemq.wait_for(lambda m: {r["body"] for r in m.records} >= set(more), what="the 20 new records")
        tubemq.close()
    finally:
        if kafka is not None:
            kafka.close()
        tubemq.kill()
