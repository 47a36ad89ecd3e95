"""Kafka's VerifiableProducer and VerifiableConsumer against `tidelog serve`: no record lost or duplicated.

These are the programs Apache Kafka's own system tests use to prove delivery guarantees. Two
VerifiableConsumers join one group (classic protocol, then KIP-848's ``consumer`` protocol) and
settle on an assignment; then VerifiableProducer sends records (30 repeating keys) with acks=all. From their JSON
events: every record the producer saw acknowledged was consumed exactly once, at the partition and
offset the producer was told, and the consumers' final commits cover everything. While both run,
kafka-consumer-groups --describe --members must list both. ~15 s per protocol on 2 cores.

With TIDELOG_ORACLE_SOAK=1 a longer run also restarts and kills the broker under load (~1 min).
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.oracle import jvm
from tests.oracle.jvm import JavaProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-verifiable")]

PARTITIONS = 3
MESSAGES = 3000
THROUGHPUT = 1500  # messages per second: the producer runs ~2 s while the consumers read


class Consumer:
    """One VerifiableConsumer: its events, the partitions it owns and the records it read."""

    def __init__(self, java_classpath: str, bootstrap: str, topic: str, group: str, protocol: str) -> None:
        self.process = JavaProcess.tool(java_classpath, "kafka-verifiable-consumer", "--bootstrap-server", bootstrap,
                                        "--topic", topic, "--group-id", group, "--group-protocol", protocol,
                                        "--reset-policy", "earliest", "--verbose")
        self.owned: set[int] = set()
        self.records: list[tuple[int, int, str]] = []  # (partition, offset, value)
        self.commits: list[dict] = []
        self.events: Counter[str] = Counter()

    def pump(self, timeout: float) -> None:
        """Take the events printed so far (waiting up to ``timeout`` for the first)."""
        line = self.process.next_line(timeout)
        while line is not None:
            if line.startswith("{"):
                self.on_event(jvm.json_lines(line)[0])
            line = self.process.next_line(0)

    def on_event(self, event: dict) -> None:
        name = event["name"]
        self.events[name] += 1
        if name == "partitions_assigned":
            self.owned |= {p["partition"] for p in event["partitions"]}
        elif name == "partitions_revoked":
            self.owned -= {p["partition"] for p in event["partitions"]}
        elif name == "record_data":
            self.records.append((event["partition"], event["offset"], event["value"]))
        elif name == "offsets_committed":
            self.commits.append(event)


def wait_until(consumers: list[Consumer], done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            states = [(sorted(c.owned), len(c.records), dict(c.events), c.process.stderr_tail(10))
                      for c in consumers]
            raise AssertionError(f"timed out waiting until {what}: {states}")
        for c in consumers:
            c.pump(0.1)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_every_acked_record_is_consumed_exactly_once(java_classpath, subject_broker, protocol: str) -> None:
    bootstrap = subject_broker.bootstrap
    topic, group = f"tl-verifiable-{protocol}", f"tl-verifiable-{protocol}-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)

    consumers = [Consumer(java_classpath, bootstrap, topic, group, protocol) for _ in range(2)]
    try:
        def settled() -> bool:
            a, b = consumers[0].owned, consumers[1].owned
            return bool(a) and bool(b) and not a & b and a | b == set(range(PARTITIONS))

        wait_until(consumers, settled, 60, "both consumers own partitions")
        members = jvm.run_tool(java_classpath, "kafka-consumer-groups", "--bootstrap-server", bootstrap,
                               "--describe", "--group", group, "--members")
        lines = [line.split() for line in members.stdout.splitlines() if line.strip()]
        header = next(line for line in lines if "#PARTITIONS" in line)
        rows = [line for line in lines if line[0] == group]
        assert len(rows) == 2, members.stdout
        assert sum(int(row[header.index("#PARTITIONS")]) for row in rows) == PARTITIONS, members.stdout

        producer = jvm.run_tool(java_classpath, "kafka-verifiable-producer", "--bootstrap-server", bootstrap,
                                "--topic", topic, "--max-messages", MESSAGES, "--throughput", THROUGHPUT,
                                "--acks", -1, "--repeating-keys", 30, timeout=120)
        events = jvm.json_lines(producer.stdout)
        errors = [e for e in events if e["name"] == "producer_send_error"]
        assert errors == [], errors[:5]
        acked = {(e["partition"], e["offset"]): e["value"] for e in events if e["name"] == "producer_send_success"}
        assert len(acked) == MESSAGES
        assert sorted(int(v) for v in acked.values()) == list(range(MESSAGES))

        wait_until(consumers, lambda: sum(len(c.records) for c in consumers) >= MESSAGES, 60,
                   "every acknowledged record is consumed")
        for c in consumers:
            c.process.stop()
            c.pump(0)
    finally:
        for c in consumers:
            c.process.kill()

    consumed = [(p, o) for c in consumers for p, o, _ in c.records]
    duplicates = [key for key, n in Counter(consumed).items() if n > 1]
    assert duplicates == [], f"{len(duplicates)} records consumed twice, e.g. {duplicates[:5]}"
    assert {(p, o): v for c in consumers for p, o, v in c.records} == acked
    for c in consumers:
        assert c.events["shutdown_complete"] == 1
        assert all(commit["success"] for commit in c.commits), [x for x in c.commits if not x["success"]][:3]
    committed = {}
    for c in consumers:
        for commit in c.commits:
            for o in commit["offsets"]:
                committed[o["partition"]] = max(committed.get(o["partition"], 0), o["offset"])
    ends = Counter(p for p, _ in acked)
    assert sorted(ends) == list(range(PARTITIONS)), "30 keys spread over every partition"
    assert committed == dict(ends), "the last commits cover every record"


SOAK_ENV = "TIDELOG_ORACLE_SOAK"


@pytest.mark.skipif(not os.environ.get(SOAK_ENV), reason=f"a ~1 min soak: set {SOAK_ENV}=1 to run it")
def test_broker_restart_and_crash_lose_no_acknowledged_record(java_classpath, subject_broker, tmp_path) -> None:
    """While VerifiableProducer sends 30,000 records (acks=all, idempotent) and two VerifiableConsumers
    read them, the broker is restarted cleanly and later killed (SIGKILL) and started again. Every
    acknowledged record must be in the log exactly once and reach a consumer (at least once: commits
    that failed while the broker was down mean some records are read again)."""
    bootstrap = subject_broker.bootstrap
    topic, group, messages = "tl-soak", "tl-soak-group", 30_000
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    consumers = [Consumer(java_classpath, bootstrap, topic, group, "classic") for _ in range(2)]
    # VerifiableProducer sets retries=0 unless told otherwise; Kafka's system tests give it retries to
    # survive broker bounces, and so does this test (idempotence keeps retried sends single).
    config = tmp_path / "producer.properties"
    config.write_text("retries=2147483647\nenable.idempotence=true\ndelivery.timeout.ms=120000\n")
    producer = JavaProcess.tool(java_classpath, "kafka-verifiable-producer", "--bootstrap-server", bootstrap,
                                "--topic", topic, "--max-messages", messages, "--throughput", 3000, "--acks", -1,
                                "--repeating-keys", 30, "--command-config", config)
    try:
        acked: dict[tuple[int, int], str] = {}
        errors: list[dict] = []

        def pump_producer(seconds: float) -> None:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                line = producer.next_line(0.1)
                if line and line.startswith("{"):
                    event = jvm.json_lines(line)[0]
                    if event["name"] == "producer_send_success":
                        acked[(event["partition"], event["offset"])] = event["value"]
                    elif event["name"] == "producer_send_error":
                        errors.append(event)
                for c in consumers:
                    c.pump(0)

        pump_producer(3)
        subject_broker.restart()
        pump_producer(3)
        subject_broker.kill()
        subject_broker.start()
        while producer.proc.poll() is None or not producer.lines.empty():
            pump_producer(1)
        wait_until(consumers, lambda: len({(p, o) for c in consumers for p, o, _ in c.records} & set(acked))
                   >= len(acked), 120, "every acknowledged record is consumed")
        for c in consumers:
            c.process.stop()
            c.pump(0)
    finally:
        producer.kill()
        for c in consumers:
            c.process.kill()
    assert [(e["exception"], e["message"]) for e in errors][:5] == []
    assert sorted(int(v) for v in acked.values()) == list(range(messages))
    consumed = {(p, o): v for c in consumers for p, o, v in c.records}
    assert {k: consumed.get(k) for k in acked} == acked, "an acknowledged record was not consumed"
    assert set(consumed) == set(acked), "a consumer read a record the producer never saw acknowledged"
    twice = [v for v, n in Counter(consumed.values()).items() if n > 1]
    assert twice == [], f"values written at two offsets (a retried send stored twice): {twice[:5]}"
