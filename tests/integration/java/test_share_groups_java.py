"""Share groups (KIP-932) with Apache Kafka's own Java software (kafka-clients and kafka-tools 4.4) against
``tidelog serve`` at its default, share.version 2 (as Kafka 4.4 formats a new cluster): two
KafkaShareConsumers of one group take a topic as a queue (each record accepted once; a RELEASEd record comes
back with delivery count 2); a KafkaShareConsumer's REJECTed records and those released up to the delivery
limit go to the group's dead-letter queue (KIP-1191), read back here with their ``__dlq.errors.*`` headers;
``kafka-share-groups.sh`` lists, describes, resets, deletes offsets and deletes the group, and
``kafka-console-share-consumer.sh`` reads records. Runs against Apache Kafka 4.4 too
(TIDELOG_ORACLE_SUBJECT=kafka): the same expectations hold. About 11 JVM runs: 40-70 s on 2 cores.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer

from tests.oracle import jvm
from tests.oracle.fixtures import subject

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-tools")]

RECORDS = 100  # ShareQueue.RECORDS, half to each of two partitions
PREFIX = "jsq"
GROUP, TOPIC = f"{PREFIX}-share-queue-group", f"{PREFIX}-share-queue-topic"


@pytest.fixture(scope="module")
def tool(java_classpath, subject_broker):
    def run(name: str, *args: object, stdin: str | None = None, check: bool = True):
        done = jvm.run_tool(java_classpath, name, "--bootstrap-server", subject_broker.bootstrap, *args,
                            stdin=stdin)
        if check:
            assert done.returncode == 0, (f"{name} {' '.join(map(str, args))} exited {done.returncode}:\n"
                                          f"{done.stdout}\n{done.stderr[-3000:]}")
        return done

    return run


@pytest.fixture(scope="module")
def share_queue(java_classpath, subject_broker) -> dict:
    done = jvm.run_java(java_classpath, "tidelog.oracle.Clients", subject_broker.bootstrap, PREFIX, "share-queue",
                        timeout=400)
    (line,) = [line for line in jvm.json_lines(done.stdout) if line.get("scenario") == "share-queue"]
    assert "error" not in line, f"{line['error']}\n{line.get('trace', '')}\n{done.stderr[-3000:]}"
    return line["result"]


def rows(stdout: str, first: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.split()[:1] == [first]]


def test_two_kafka_share_consumers_take_each_record_once_and_a_release_comes_back(share_queue) -> None:
    accepted = [tuple(r) for r in share_queue["a"] + share_queue["b"]]
    offsets = sorted((p, o) for p, o, _ in accepted)
    assert offsets == sorted((p, o) for p in (0, 1) for o in range(RECORDS // 2)), "each record accepted once"
    (released,) = [tuple(r) for r in share_queue["released"]]
    counts = {(p, o): n for p, o, n in accepted}
    assert counts.pop(released) == 2, "the released record is delivered again, its delivery count raised"
    assert set(counts.values()) == {1}


def test_kafka_share_groups_tool(tool, share_queue) -> None:
    assert GROUP in tool("kafka-share-groups", "--list").stdout.split()
    assert [GROUP, "Empty"] in rows(tool("kafka-share-groups", "--list", "--state").stdout, GROUP)

    def start_offsets() -> dict[int, str]:
        out = tool("kafka-share-groups", "--describe", "--group", GROUP, "--offsets").stdout
        return {int(r[2]): r[3] for r in rows(out, GROUP) if r[1] == TOPIC}

    # Every record was accepted. Tidelog moves (and persists) the start offset past them; Kafka 4.4 keeps
    # its persisted start offset at 0 and answers LAG 0 (docs/share-groups.md, differences).
    start = "50" if subject() == "tidelog" else "0"
    deadline = time.monotonic() + 60
    while start_offsets() != {0: start, 1: start} and time.monotonic() < deadline:
        time.sleep(1)
    assert start_offsets() == {0: start, 1: start}
    (state,) = rows(tool("kafka-share-groups", "--describe", "--group", GROUP, "--state").stdout, GROUP)
    assert state[-2:] == ["Empty", "0"]

    dry = tool("kafka-share-groups", "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
               "--dry-run").stdout
    assert rows(dry, GROUP) == [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]
    assert start_offsets() == {0: start, 1: start}
    done = tool("kafka-share-groups", "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:0", "--to-offset",
                40, "--execute").stdout
    assert rows(done, GROUP) == [[GROUP, TOPIC, "0", "40"]]
    assert start_offsets() == {0: "40", 1: start}

    deleted = tool("kafka-share-groups", "--delete-offsets", "--group", GROUP, "--topic", TOPIC).stdout
    assert rows(deleted, TOPIC) == [[TOPIC, "Successful"]]
    assert start_offsets() == {}
    out = tool("kafka-share-groups", "--delete", "--group", GROUP).stdout
    assert f"Deletion of requested share groups ('{GROUP}') was successful." in out
    assert GROUP not in tool("kafka-share-groups", "--list").stdout.split()
    missing = tool("kafka-share-groups", "--delete", "--group", f"{PREFIX}-no-such-group").stdout
    assert f"Group '{PREFIX}-no-such-group' could not be deleted" in missing


def test_kafka_console_share_consumer(tool) -> None:
    topic, group = f"{PREFIX}-console", f"{PREFIX}-console-group"
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", 1)
    tool("kafka-console-producer", "--topic", topic, stdin="one\ntwo\nthree\n")
    tool("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
         "--add-config", "share.auto.offset.reset=earliest")
    done = tool("kafka-console-share-consumer", "--topic", topic, "--group", group, "--max-messages", 3,
                "--timeout-ms", 60000)
    assert done.stdout.splitlines() == ["one", "two", "three"]
    assert "Processed a total of 3 messages" in done.stderr


DLQ_RECORDS = 30  # ShareDeadLetter.RECORDS: record i to partition i % 3; i % 10 == 0 REJECTed, 1 RELEASEd


@pytest.fixture(scope="module")
def share_dlq(java_classpath, subject_broker) -> dict:
    done = jvm.run_java(java_classpath, "tidelog.oracle.Clients", subject_broker.bootstrap, PREFIX, "share-dlq",
                        timeout=300)
    (line,) = [line for line in jvm.json_lines(done.stdout) if line.get("scenario") == "share-dlq"]
    assert "error" not in line, f"{line['error']}\n{line.get('trace', '')}\n{done.stderr[-3000:]}"
    return line["result"]


def read_topic(bootstrap: str, topic: str, at_least: int, timeout_s: float) -> list:
    """The topic's records from the start, once ``at_least`` arrived or ``timeout_s`` passed."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{PREFIX}-read-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got = []
        deadline = time.monotonic() + timeout_s
        while len(got) < at_least and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
        return got
    finally:
        c.close()


def test_kafka_share_consumer_rejected_and_over_the_limit_records_go_to_the_dead_letter_queue(
        share_dlq, subject_broker) -> None:
    result = share_dlq
    by_index = {}  # index -> (partition, offset)
    for decision in ("accepted", "rejected", "released"):
        for p, o, _, i in result[decision]:
            assert by_index.setdefault(i, (p, o)) == (p, o)
            assert p == i % 3
    assert sorted(by_index) == list(range(DLQ_RECORDS))
    rejected = {i for _, _, n, i in result["rejected"]}
    assert rejected == {i for i in range(DLQ_RECORDS) if i % 10 == 0}
    assert {n for _, _, n, _ in result["rejected"]} == {1}
    limited = {i for i in range(DLQ_RECORDS) if i % 10 == 1}
    # each released record came back once, delivery count 2, and was not offered a third time (limit 2)
    assert sorted((i, n) for _, _, n, i in result["released"]) == sorted((i, n) for i in limited for n in (1, 2))
    assert sorted(i for *_, i in result["accepted"]) == sorted(set(range(DLQ_RECORDS)) - rejected - limited)

    dead = read_topic(subject_broker.bootstrap, result["dlq"], len(rejected) + len(limited), 60)
    # nothing else arrives
    dead += read_topic(subject_broker.bootstrap, result["dlq"], len(dead) + 1, 3)[len(dead):]
    got = {}
    for m in dead:
        headers = {k: v.decode() for k, v in m.headers() or []}
        assert set(headers) == {"__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
                                "__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.message"}, headers
        index = int(m.value().decode()[1:])
        assert m.key() == f"k{index}".encode()  # errors.deadletterqueue.copy.record.enable=true: key and value
        source = by_index[index]
        assert m.partition() == source[0] % 2, "the DLQ partition is the source partition modulo its partitions"
        got[index] = headers
        assert (headers["__dlq.errors.topic"], headers["__dlq.errors.group"], int(headers["__dlq.errors.partition"]),
                int(headers["__dlq.errors.offset"])) == (result["topic"], result["group"], *source)
    assert sorted(got) == sorted(rejected | limited) and len(dead) == len(got), "one DLQ record per record"
    for i, headers in got.items():
        assert (headers["__dlq.errors.delivery.count"], headers["__dlq.errors.message"]) == (
            ("1", "Offset rejected by client.") if i in rejected
            else ("2", "Offset delivery count exceeded the threshold.")), (i, headers)
