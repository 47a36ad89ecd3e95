"""``tidelog share-groups`` (list, describe, reset-offsets, delete-offsets, delete) run as a user runs it:
``python -m tidelog`` subprocesses against a real ``tidelog serve`` with share groups on, with real
confluent-kafka ShareConsumers in this process making the groups and acknowledging records."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime

from confluent_kafka import ShareConsumer

from tests.integration import kafka_io
from tests.integration.kafka_io import wait_for
from tidelog.protocol.messages import IncrementalAlterConfigsRequest
from tidelog.testing.client import WireClient

BROKER_OVERRIDES = {"share.version": "1"}
FRESH_BROKER_OVERRIDES = {"share.version": "0"}
BASE_MS = int(datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC).timestamp() * 1000)  # record i: BASE_MS + i s
GROUP_CONFIG = 32


def share_groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", "share-groups", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=120)


def ok(bootstrap: str, *args: str) -> str:
    done = share_groups(bootstrap, *args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def rows(text: str) -> list[list[str]]:
    """The data rows of a table (the header dropped), split on whitespace."""
    return [line.split() for line in text.splitlines()[1:] if line.strip()]


def earliest(bootstrap: str, group: str) -> None:
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=GROUP_CONFIG, resource_name=group, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name="share.auto.offset.reset", config_operation=0, value="earliest")])]), 1)
        assert r.responses[0].error_code == 0


def create(broker, admin, topic: str, partitions: int, per_partition: int) -> None:
    kafka_io.create_topic(admin, topic, partitions)
    records = [(p, i) for p in range(partitions) for i in range(per_partition)]
    kafka_io.produce(broker, topic, [f"{p}-{i}" for p, i in records], partition=[p for p, _ in records],
                     timestamp_ms=[BASE_MS + i * 1000 for _, i in records])


def consume(bootstrap: str, group: str, topic: str, n: int, timeout: float = 120) -> tuple[ShareConsumer, list]:
    """A share consumer of ``group`` that has received (and, implicitly, acknowledged) ``n`` records;
    still a member (the caller closes it)."""
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += [(m.partition(), m.offset()) for m in c.poll(1.0) if m.error() is None]
    c.commit_sync()  # acknowledges what the last poll delivered
    return c, sorted(got)


def start_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], str]:
    return {(r[1], int(r[2])): r[3] for r in rows(ok(bootstrap, "describe", group))}


def test_list_describe_reset_delete_a_share_group(broker, admin) -> None:
    b, topic, group = broker.bootstrap, "sg-cli", "sg-cli-group"
    create(broker, admin, topic, 2, 10)
    earliest(b, group)
    c, got = consume(b, group, topic, 20)
    try:
        assert got == [(p, i) for p in range(2) for i in range(10)]
        assert group in ok(b, "list").split()
        assert [group, "Stable"] in rows(ok(b, "list", "--state"))
        assert [group, "Stable"] not in rows(ok(b, "list", "--state", "empty"))
        members = rows(ok(b, "describe", group, "--members"))
        assert len(members) == 1 and members[0][0] == group
        assert members[0][-2:] == ["2", f"{topic}:0,1"]
        verbose = ok(b, "describe", group, "--members", "--verbose")
        assert verbose.splitlines()[0].split()[-3:] == ["#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"]
        everything = ok(b, "describe", "--all-groups", "--state")
        assert [r[0] for r in rows(everything) if r and r[0] == group] == [group]
        state = ok(b, "describe", group, "--state")
        assert state.splitlines()[0].split() == ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"]
        assert state.splitlines()[1].split()[0] == group and state.splitlines()[1].split()[-2:] == ["Stable", "1"]
        # every record acknowledged: the start offsets move to the log end
        wait_for(lambda: start_offsets(b, group) == {(topic, 0): "10", (topic, 1): "10"}, 60,
                 "start offsets at 10")
        refused = share_groups(b, "reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
        assert refused.returncode == 1 and "is not empty" in refused.stderr, refused
        refused = share_groups(b, "delete", group)
        assert refused.returncode == 1 and "it has members" in refused.stderr, refused
        dry = share_groups(b, "reset-offsets", group, "--all-topics", "--to-earliest")  # allowed: a dry run
        assert dry.returncode == 0 and rows(dry.stdout) == [[group, topic, "0", "0"], [group, topic, "1", "0"]]
    finally:
        c.close()
    wait_for(lambda: rows(ok(b, "describe", group, "--state"))[0][-2:] == ["Empty", "0"], 60, "an empty group")

    # dry runs change nothing
    plan = rows(ok(b, "reset-offsets", group, "--topic", f"{topic}:0", "--to-datetime", str(BASE_MS + 7000)))
    assert plan == [[group, topic, "0", "7"]]
    plan = rows(ok(b, "reset-offsets", group, "--topic", topic, "--to-offset", "99"))
    assert plan == [[group, topic, "0", "10"], [group, topic, "1", "10"]]
    assert start_offsets(b, group) == {(topic, 0): "10", (topic, 1): "10"}

    # --execute: partition 0 from 7 again; a new consumer of the group gets exactly 7, 8, 9 of it
    executed = share_groups(b, "reset-offsets", group, "--topic", f"{topic}:0", "--to-datetime",
                            "2024-05-01T12:00:07Z", "--execute")
    assert executed.returncode == 0 and rows(executed.stdout) == [[group, topic, "0", "7"]], executed
    assert start_offsets(b, group)[(topic, 0)] == "7"
    c, got = consume(b, group, topic, 3)
    try:
        assert got == [(0, 7), (0, 8), (0, 9)]
    finally:
        c.close()
    wait_for(lambda: rows(ok(b, "describe", group, "--state"))[0][-2:] == ["Empty", "0"], 60, "an empty group")

    # delete-offsets: the topic's share state goes
    assert rows(ok(b, "delete-offsets", group, "--topic", topic)) == [[topic, "Successful"]]
    described = share_groups(b, "describe", group)
    assert described.returncode == 0 and described.stdout == ""
    assert f"share group {group!r} has no offset information" in described.stderr

    # delete
    assert ok(b, "delete", group).strip() == f"Deleted share group {group}."
    assert group not in ok(b, "list").split()
    again = share_groups(b, "delete", group)
    assert again.returncode == 1 and f"share group {group!r} does not exist" in again.stderr
    assert share_groups(b, "delete", group, "--if-exists").returncode == 0


def test_describe_shows_each_share_partitions_lag(broker, admin) -> None:
    """LAG is DescribeShareGroupOffsets v1's (KIP-1226): the high watermark less the start offset and the
    records already delivered for good; records produced and not yet acknowledged are lag."""
    b, topic, group = broker.bootstrap, "sg-cli-lag", "sg-cli-lag-group"
    create(broker, admin, topic, 1, 10)
    earliest(b, group)
    c, got = consume(b, group, topic, 10)
    try:
        assert got == [(0, i) for i in range(10)]
        wait_for(lambda: rows(ok(b, "describe", group)) == [[group, topic, "0", "10", "0"]], 60,
                 "start offset 10, lag 0")
        header = ok(b, "describe", group).splitlines()[0].split()
        assert header == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
        # four more records, not polled (so not acknowledged): they are the lag
        kafka_io.produce(broker, topic, ["a", "b", "c", "d"], partition=0)
        wait_for(lambda: rows(ok(b, "describe", group)) == [[group, topic, "0", "10", "4"]], 60, "lag 4")
        verbose = rows(ok(b, "describe", group, "--verbose"))
        assert len(verbose) == 1 and verbose[0][-2:] == ["10", "4"]
    finally:
        c.close()


def test_errors_are_one_line_with_exit_codes(broker, admin) -> None:
    b = broker.bootstrap
    missing = share_groups(b, "describe", "sg-no-such-group")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == ["tidelog share-groups describe: share group 'sg-no-such-group' "
                                                    "does not exist"]
    usage = share_groups(b, "describe")
    assert usage.returncode == 2 and "name the groups to describe, or give --all-groups" in usage.stderr
    usage = share_groups(b, "reset-offsets", "g", "--all-topics")
    assert usage.returncode == 2 and "--to-earliest" in usage.stderr
    no_topic = share_groups(b, "reset-offsets", "g", "--topic", "sg-no-such-topic", "--to-latest")
    assert no_topic.returncode == 1 and "sg-no-such-topic" in no_topic.stderr
    assert len(no_topic.stderr.strip().splitlines()) == 1, no_topic.stderr


def test_a_broker_without_share_groups(fresh_broker) -> None:
    """share.version=0: no share group is listed, and a request that needs the share APIs says so."""
    b = fresh_broker.bootstrap
    assert ok(b, "list") == ""
    done = share_groups(b, "describe", "g")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("tidelog share-groups describe: the broker at ")
    assert line.endswith(" does not serve ShareGroupDescribe")
