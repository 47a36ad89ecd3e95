"""``tidelog groups`` (list, describe, delete, reset-offsets) run as a user runs it: ``python -m tidelog``
subprocesses against a real broker, with real confluent-kafka consumers in this process creating the
groups and their commits (classic protocol, and one KIP-848 group)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration import kafka_io
from tests.integration.kafka_io import wait_for
from tidelog.testing import BrokerProcess

BASE_MS = int(datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC).timestamp() * 1000)  # record i: BASE_MS + i s
_QUIET = logging.getLogger("test_cli_groups.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0",
                    "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}


# ------------------------------------------------------------------------------------------ helpers


def groups(b: BrokerProcess | str, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = b if isinstance(b, str) else b.bootstrap
    return subprocess.run([sys.executable, "-m", "tidelog", "groups", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=60)


def table(text: str) -> list[dict[str, str]]:
    """Rows of a whitespace-separated table whose header has no spaces inside a column name."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    header = lines[0]
    return [dict(zip(header, row)) for row in lines[1:]]


def admin(b: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap, "logger": _QUIET})


def create_topic(b: BrokerProcess, name: str, partitions: int, records_per_partition: int) -> None:
    kafka_io.create_topic(admin(b), name, partitions)
    produce(b, name, partitions, 0, records_per_partition)


def produce(b: BrokerProcess, topic: str, partitions: int, first: int, count: int) -> None:
    """Records ``first .. first+count-1`` in every partition, record i stamped BASE_MS + i seconds."""
    records = [(partition, i) for partition in range(partitions) for i in range(first, first + count)]
    kafka_io.produce(b, topic, [f"{partition}-{i}" for partition, i in records],
                     partition=[partition for partition, _ in records],
                     timestamp_ms=[BASE_MS + i * 1000 for _, i in records], config={"logger": _QUIET})


def consumer(b: BrokerProcess, group: str, **conf: object) -> Consumer:
    return Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "latest", "logger": _QUIET, **conf})


def wait_assigned(c: Consumer, partitions: int, timeout: float = 20.0) -> None:
    wait_for(lambda: len(c.assignment()) >= partitions, timeout, f"{partitions} assigned partitions",
             poll=lambda: c.poll(0.1))


def commit_offsets(b: BrokerProcess, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit as a consumer that assigned the partitions itself (no member, the group stays Empty)."""
    c = consumer(b, group)
    try:
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def committed(b: BrokerProcess, group: str) -> dict[tuple[str, int], int]:
    client = admin(b)
    result = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def resume_positions(b: BrokerProcess, group: str, topic: str, partitions: int) -> dict[int, int]:
    """Subscribe as a member of ``group`` and return the offset of the first record read from each
    partition: where the group's committed offsets make it start."""
    c = consumer(b, group)
    first: dict[int, int] = {}
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 20
        while len(first) < partitions and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                first.setdefault(m.partition(), m.offset())
    finally:
        c.close()
    return first


# ------------------------------------------------------------------------------------------ list / describe


def test_list_and_describe_show_members_offsets_and_lag(broker: BrokerProcess) -> None:
    create_topic(broker, "lagged", 3, 0)
    for partition, count in enumerate((10, 20, 5)):
        kafka_io.produce(broker, "lagged", [b"x"] * count, partition=partition, config={"logger": _QUIET})
    c = consumer(broker, "lagging", **{"client.id": "lag-client"})
    try:
        c.subscribe(["lagged"])
        wait_assigned(c, 3)
        c.commit(offsets=[TopicPartition("lagged", 0, 4), TopicPartition("lagged", 1, 20)], asynchronous=False)
        member_id = c.memberid()

        out = groups(broker, "list")
        assert out.returncode == 0, out.stderr
        assert "lagging" in out.stdout.split()
        out = groups(broker, "list", "--state", "Stable", "--type", "classic")
        assert out.returncode == 0, out.stderr
        assert {"GROUP": "lagging", "TYPE": "Classic", "STATE": "Stable"} in table(out.stdout)
        out = groups(broker, "list", "--state", "empty")
        assert "lagging" not in out.stdout

        out = groups(broker, "describe", "lagging")
        assert out.returncode == 0, out.stderr
        rows = table(out.stdout)
        assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows] == [
            ("lagged", "0", "4", "10", "6"), ("lagged", "1", "20", "20", "0"), ("lagged", "2", "-", "5", "-")]
        assert {(r["GROUP"], r["CONSUMER-ID"], r["HOST"], r["CLIENT-ID"]) for r in rows} == {
            ("lagging", member_id, "/127.0.0.1", "lag-client")}

        out = groups(broker, "describe", "lagging", "--members")
        assert out.returncode == 0, out.stderr
        assert table(out.stdout) == [{"GROUP": "lagging", "CONSUMER-ID": member_id, "HOST": "/127.0.0.1",
                                      "CLIENT-ID": "lag-client", "#PARTITIONS": "3", "ASSIGNMENT": "lagged:0,1,2"}]

        out = groups(broker, "describe", "lagging", "--state")
        assert out.returncode == 0, out.stderr
        header, row = out.stdout.splitlines()
        assert header.split() == ["GROUP", "TYPE", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert row.split() == ["lagging", "Classic", broker.bootstrap, "(0)", "range", "Stable", "1"]
    finally:
        c.close()

    # Without members: the committed offsets stay, with no owner; the group is Empty.
    out = groups(broker, "describe", "lagging")
    assert out.returncode == 0, out.stderr
    assert "group 'lagging' has no active members" in out.stderr
    rows = table(out.stdout)
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"], r["CONSUMER-ID"]) for r in rows] == [
        ("0", "4", "6", "-"), ("1", "20", "0", "-")]
    out = groups(broker, "list", "--state", "Empty")
    assert {"GROUP": "lagging", "STATE": "Empty"} in table(out.stdout)
    out = groups(broker, "describe", "lagging", "--members")
    assert out.returncode == 0 and out.stdout == ""


def test_kip848_group_is_listed_and_described_as_consumer_type(broker: BrokerProcess) -> None:
    create_topic(broker, "modern", 2, 0)
    c = consumer(broker, "modern-group", **{"group.protocol": "consumer"})
    try:
        c.subscribe(["modern"])
        wait_assigned(c, 2)
        out = groups(broker, "list", "--type", "consumer")
        assert out.returncode == 0, out.stderr
        assert {"GROUP": "modern-group", "TYPE": "Consumer"} in table(out.stdout)
        assert "modern-group" not in groups(broker, "list", "--type", "classic").stdout
        out = groups(broker, "describe", "modern-group", "--state")
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[1].split()[:2] == ["modern-group", "Consumer"]
        out = groups(broker, "describe", "modern-group", "--members")
        [member] = table(out.stdout)
        assert member["CONSUMER-ID"] == c.memberid()
        assert member["ASSIGNMENT"] == member["TARGET-ASSIGNMENT"] == "modern:0,1"
    finally:
        c.close()


# ------------------------------------------------------------------------------------------ reset-offsets

# Each topic has two partitions of records 0..9 (record i stamped BASE_MS + i s); the group committed
# 6 on partition 0 and 4 on partition 1 before the reset.
RESETS = {
    "earliest": (["--to-earliest"], {0: 0, 1: 0}),
    "latest": (["--to-latest"], {0: 10, 1: 10}),
    "offset": (["--to-offset", "3"], {0: 3, 1: 3}),
    "offset-past-end": (["--to-offset", "99"], {0: 10, 1: 10}),
    "datetime-iso": (["--to-datetime", "2024-05-01T12:00:07Z"], {0: 7, 1: 7}),
    "datetime-ms": (["--to-datetime", str(BASE_MS + 2500)], {0: 3, 1: 3}),
    "datetime-after-end": (["--to-datetime", "2030-01-01T00:00:00+00:00"], {0: 10, 1: 10}),
    "shift-back": (["--shift-by", "-2"], {0: 4, 1: 2}),
    "shift-forward-clamped": (["--shift-by", "5"], {0: 10, 1: 9}),
    "shift-before-start": (["--shift-by", "-5"], {0: 1, 1: 0}),
}


@pytest.mark.parametrize("name", list(RESETS))
def test_reset_offsets_dry_run_then_execute(broker: BrokerProcess, name: str) -> None:
    topic, group = f"reset-{name}", f"resetter-{name}"
    mode, expected = RESETS[name]
    create_topic(broker, topic, 2, 10)
    commit_offsets(broker, group, topic, {0: 6, 1: 4})

    out = groups(broker, "reset-offsets", group, "--topic", topic, *mode)
    assert out.returncode == 0, out.stderr
    plan = table(out.stdout)
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["NEW-OFFSET"]) for r in plan] == [
        ("0", "6", str(expected[0])), ("1", "4", str(expected[1]))]
    assert "Dry run" in out.stderr
    assert committed(broker, group) == {(topic, 0): 6, (topic, 1): 4}  # nothing changed

    out = groups(broker, "reset-offsets", group, "--topic", topic, *mode, "--execute")
    assert out.returncode == 0, out.stderr
    assert [r["NEW-OFFSET"] for r in table(out.stdout)] == [str(expected[0]), str(expected[1])]
    assert "Committed new offsets for 2 partition(s)" in out.stderr
    out = groups(broker, "describe", group)
    assert [(r["PARTITION"], r["CURRENT-OFFSET"]) for r in table(out.stdout)] == [
        ("0", str(expected[0])), ("1", str(expected[1]))]

    # A member of the group resumes at the new offsets (records 10.. make "latest" readable too).
    produce(broker, topic, 2, 10, 2)
    assert resume_positions(broker, group, topic, 2) == expected


def test_reset_selected_partitions_and_all_topics(broker: BrokerProcess) -> None:
    create_topic(broker, "reset-some", 3, 10)
    create_topic(broker, "reset-other", 1, 10)
    commit_offsets(broker, "resetter-some", "reset-some", {0: 5, 1: 5, 2: 5})
    commit_offsets(broker, "resetter-some", "reset-other", {0: 8})

    out = groups(broker, "reset-offsets", "resetter-some", "--topic", "reset-some:0,2", "--to-earliest", "--execute")
    assert out.returncode == 0, out.stderr
    assert [(r["TOPIC"], r["PARTITION"]) for r in table(out.stdout)] == [("reset-some", "0"), ("reset-some", "2")]
    assert committed(broker, "resetter-some") == {("reset-some", 0): 0, ("reset-some", 1): 5,
                                                  ("reset-some", 2): 0, ("reset-other", 0): 8}

    out = groups(broker, "reset-offsets", "resetter-some", "--all-topics", "--to-latest", "--execute")
    assert out.returncode == 0, out.stderr
    assert len(table(out.stdout)) == 4
    assert set(committed(broker, "resetter-some").values()) == {10}


def test_reset_is_refused_while_the_group_has_members(broker: BrokerProcess) -> None:
    create_topic(broker, "reset-busy", 1, 10)
    c = consumer(broker, "busy")
    try:
        c.subscribe(["reset-busy"])
        wait_assigned(c, 1)
        c.commit(offsets=[TopicPartition("reset-busy", 0, 7)], asynchronous=False)
        out = groups(broker, "reset-offsets", "busy", "--topic", "reset-busy", "--to-earliest", "--execute")
        assert out.returncode == 1
        assert "cannot reset the offsets of group 'busy': it has 1 active member(s) (state Stable)" in out.stderr
        assert out.stdout == ""
        out = groups(broker, "reset-offsets", "busy", "--topic", "reset-busy", "--to-earliest")  # dry run: allowed
        assert out.returncode == 0, out.stderr
        assert "--execute is refused" in out.stderr
        assert committed(broker, "busy") == {("reset-busy", 0): 7}
    finally:
        c.close()
    out = groups(broker, "reset-offsets", "busy", "--topic", "reset-busy", "--to-earliest", "--execute")
    assert out.returncode == 0, out.stderr
    assert committed(broker, "busy") == {("reset-busy", 0): 0}


def test_reset_offsets_of_a_new_group_creates_it(broker: BrokerProcess) -> None:
    create_topic(broker, "reset-new", 1, 10)
    out = groups(broker, "reset-offsets", "brand-new", "--topic", "reset-new", "--to-offset", "4", "--execute")
    assert out.returncode == 0, out.stderr
    assert table(out.stdout) == [{"GROUP": "brand-new", "TOPIC": "reset-new", "PARTITION": "0",
                                  "CURRENT-OFFSET": "-", "NEW-OFFSET": "4"}]
    assert committed(broker, "brand-new") == {("reset-new", 0): 4}


# ------------------------------------------------------------------------------------------ delete


def test_delete_groups(broker: BrokerProcess) -> None:
    create_topic(broker, "doomed", 1, 3)
    commit_offsets(broker, "doomed-a", "doomed", {0: 1})
    commit_offsets(broker, "doomed-b", "doomed", {0: 2})
    out = groups(broker, "delete", "doomed-a", "doomed-b")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["Deleted group doomed-a.", "Deleted group doomed-b."]
    listed = groups(broker, "list").stdout.split()
    assert "doomed-a" not in listed and "doomed-b" not in listed
    out = groups(broker, "describe", "doomed-a")
    assert out.returncode == 1 and "group 'doomed-a' does not exist" in out.stderr
    assert committed(broker, "doomed-a") == {}

    out = groups(broker, "delete", "doomed-a")
    assert out.returncode == 1 and "group 'doomed-a' does not exist" in out.stderr
    out = groups(broker, "delete", "doomed-a", "--if-exists")
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""

    c = consumer(broker, "doomed-busy")
    try:
        c.subscribe(["doomed"])
        wait_assigned(c, 1)
        out = groups(broker, "delete", "doomed-busy")
        assert out.returncode == 1
        assert "cannot delete group 'doomed-busy': it has active members" in out.stderr
        assert "doomed-busy" in groups(broker, "list").stdout.split()
    finally:
        c.close()


# ------------------------------------------------------------------------------------------ errors


def test_describe_errors(broker: BrokerProcess) -> None:
    out = groups(broker, "describe", "no-such-group")
    assert out.returncode == 1
    assert out.stderr.strip() == "tidelog groups describe: group 'no-such-group' does not exist"
    out = groups(broker, "describe")
    assert out.returncode == 2 and "--all-groups" in out.stderr
    out = groups(broker, "describe", "x", "--members", "--state")
    assert out.returncode == 2
    for args in (["describe", ""], ["delete", ""], ["reset-offsets", "", "--all-topics", "--to-earliest"]):
        out = groups(broker, *args)
        assert out.returncode == 2 and "a group id must not be empty" in out.stderr, args


def test_reset_offsets_errors(broker: BrokerProcess) -> None:
    create_topic(broker, "reset-errors", 2, 5)
    commit_offsets(broker, "half-committed", "reset-errors", {0: 3})
    cases = [
        # (arguments, exit code, part of stderr)
        (["half-committed", "--topic", "reset-errors"], 2, "one of the arguments --to-earliest"),
        (["half-committed", "--to-earliest"], 2, "one of the arguments --topic --all-topics is required"),
        (["half-committed", "--topic", "reset-errors", "--all-topics", "--to-earliest"], 2, "not allowed with"),
        (["half-committed", "--topic", "reset-errors:x", "--to-earliest"], 2, "bad partition list"),
        (["half-committed", "--topic", "reset-errors", "--to-offset", "-1"], 2, "expected a number >= 0"),
        (["half-committed", "--topic", "reset-errors", "--to-datetime", "yesterday"], 2, "ISO 8601"),
        (["half-committed", "--topic", "reset-errors", "--to-earliest", "--dry-run", "--execute"], 2, "not allowed"),
        (["half-committed", "--topic", "missing-topic", "--to-earliest"], 1, "topic 'missing-topic' does not exist"),
        (["half-committed", "--topic", "reset-errors:0,7", "--to-earliest"], 1, "there is no partition 7"),
        (["half-committed", "--topic", "reset-errors", "--shift-by", "1"], 1,
         "it has no committed offset for reset-errors-1"),
        (["nobody", "--all-topics", "--to-earliest"], 1, "group 'nobody' has no committed offsets"),
    ]
    for args, code, message in cases:
        out = groups(broker, "reset-offsets", *args)
        assert out.returncode == code, (args, out.stderr)
        assert message in out.stderr, (args, out.stderr)
        assert out.stdout == "", args
    assert committed(broker, "half-committed") == {("reset-errors", 0): 3}


def test_bad_list_filters_and_unreachable_broker() -> None:
    out = groups("127.0.0.1:1", "list", "--state", "sleeping")
    assert out.returncode == 2 and "unknown group state 'sleeping'" in out.stderr
    out = groups("127.0.0.1:1", "list", "--type", "share")
    assert out.returncode == 2 and "unknown group type 'share'" in out.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    commands = (["list"], ["describe", "g"], ["delete", "g"], ["reset-offsets", "g", "--all-topics", "--to-earliest"])
    procs = [subprocess.Popen([sys.executable, "-m", "tidelog", "groups", *args, "--bootstrap-server", address],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for args in commands]
    for args, proc in zip(commands, procs):  # at once: each waits about a second for the refused connection
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 1, args
        assert stderr.strip().endswith(f"cannot reach the broker at {address}"), (args, stderr)
