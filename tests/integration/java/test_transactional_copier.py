"""Kafka's TransactionalMessageCopier copies a topic exactly once while the broker is killed (SIGKILL).

TransactionalMessageCopier (org.apache.kafka.tools, in kafka-tools) is the consume-transform-produce
program Apache Kafka's own system tests use to prove exactly-once: it reads one input partition
(read_committed), writes each record to an output topic and commits its input offsets in the same
transaction (sendOffsetsToTransaction), ``--transaction-size`` records at a time, and with
``--enable-random-aborts`` aborts some transactions on purpose and re-reads from its committed offsets.

Here two copiers (one per input partition, transactional ids copier-0/copier-1, one consumer group)
copy 6,000 records while the broker is killed with SIGKILL twice mid-copy and started again from its
data directory. A copier that gives up while the broker is down (the Java producer's blocking calls
time out) is started again with the same transactional id, as Kafka's system tests restart bounced
clients: InitProducerId fences its previous incarnation and aborts its open transaction. Then a
read_committed consumer of the output must see every input value exactly once, and a
read_uncommitted one must see the aborted copies as well.

About 40-60 s on 2 cores (two Tidelog restarts after SIGKILL, up to six copier JVMs).
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration import kafka_io
from tests.oracle import jvm
from tests.oracle.jvm import JavaProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-txn-copier")]

PARTITIONS = 2
RECORDS = 6000
KILLS = 2
GROUP = "copier-group"
COPY_DEADLINE_S = 150


def produce_input(bootstrap: str, topic: str) -> None:
    """``i`` keyed ``i``, over the partitions in turn, by an idempotent producer."""
    kafka_io.produce(bootstrap, topic, [str(i) for i in range(RECORDS)], key=[str(i) for i in range(RECORDS)],
                     partition=[i % PARTITIONS for i in range(RECORDS)], config={"enable.idempotence": True},
                     timeout=30)


def read_all(bootstrap: str, topic: str, isolation: str) -> list[str]:
    """Every value of ``topic`` a consumer with ``isolation`` reads up to its end offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{isolation}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        partitions = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        values, at_end = [], set()
        deadline = time.monotonic() + 60
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                at_end.add(msg.partition())  # _PARTITION_EOF: at the end (the LSO for read_committed)
                continue
            values.append(msg.value().decode())
        assert len(at_end) == PARTITIONS, f"{isolation} consumer did not reach the end of {topic}"
        return values
    finally:
        consumer.close()


class Copier:
    """One TransactionalMessageCopier for one input partition, restarted when it gives up."""

    def __init__(self, classpath: str, bootstrap: str, partition: int, source: str, target: str) -> None:
        self.args = (classpath, "org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list", bootstrap,
                     "--input-topic", source, "--input-partition", partition, "--output-topic", target,
                     "--transactional-id", f"copier-{partition}", "--consumer-group", GROUP,
                     "--transaction-size", 100, "--transaction-timeout", 10000, "--enable-random-aborts",
                     "--use-group-metadata")
        self.starts = 0
        self.failures: list[str] = []
        self.progress = 0  # records of this partition consumed and committed, as last reported
        self.process = self._start()

    def _start(self) -> JavaProcess:
        self.starts += 1
        return JavaProcess.program(*self.args)

    def pump(self) -> None:
        """Read its status lines; start it again if it exited with an error."""
        while (line := self.process.next_line(0)) is not None:
            if line.startswith("{"):
                status = jvm.json_lines(line)[0]
                if "consumed" in status:
                    self.progress = max(self.progress, int(status["consumed"]))
        if self.process.proc.poll() not in (None, 0):
            self.failures.append(self.process.stderr_tail(5))
            self.process = self._start()

    @property
    def done(self) -> bool:
        return self.process.proc.poll() == 0


def test_copier_copies_exactly_once_through_broker_kills(java_classpath, subject_broker) -> None:
    broker = subject_broker
    source, target = "copier-input", "copier-output"
    kafka_io.create_topics(broker, timeout=30, **{source: PARTITIONS, target: PARTITIONS})
    produce_input(broker.bootstrap, source)

    copiers = [Copier(java_classpath, broker.bootstrap, p, source, target) for p in range(PARTITIONS)]
    deadline = time.monotonic() + COPY_DEADLINE_S
    kills_at = [RECORDS * (k + 1) // (KILLS + 2) for k in range(KILLS)]  # after ~1/4 and ~1/2 of the copy
    killed_mid_copy = 0
    try:
        while not all(c.done for c in copiers):
            assert time.monotonic() < deadline, (
                f"copy unfinished after {COPY_DEADLINE_S} s: {[(c.progress, c.starts, c.failures) for c in copiers]}")
            for c in copiers:
                c.pump()
            copied = sum(c.progress for c in copiers)
            if kills_at and copied >= kills_at[0]:
                kills_at.pop(0)
                if not all(c.done for c in copiers):
                    killed_mid_copy += 1
                broker.kill()
                time.sleep(1)
                broker.start()
            time.sleep(0.1)
    finally:
        for c in copiers:
            c.process.kill()

    print(f"copier starts {[c.starts for c in copiers]}, failures {[len(c.failures) for c in copiers]}")
    assert killed_mid_copy == KILLS, "the copy ended before the broker was killed: make it longer"
    committed = read_all(broker.bootstrap, target, "read_committed")
    duplicates = [v for v, n in Counter(committed).items() if n > 1]
    assert duplicates == [], f"{len(duplicates)} values copied twice, e.g. {duplicates[:5]}"
    assert sorted(map(int, committed)) == list(range(RECORDS)), "every input value exactly once"
    uncommitted = read_all(broker.bootstrap, target, "read_uncommitted")
    assert Counter(uncommitted) - Counter(committed), "random aborts left aborted copies for read_uncommitted"
