"""franz-go (github.com/twmb/franz-go/pkg/kgo) producing, consuming and in consumer groups.

Every acks level, the idempotent producer and every codec, with keys, null values and repeated
headers: the records come back exactly (per partition, in order, at offsets 0..n-1) and the broker
stores them with the codec and producer id the client used. Groups: classic (client-side
cooperative-sticky and eager range balancers) and KIP-848 (server-side ``uniform``), three members
on six partitions, each record consumed exactly once across a clean leave.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.go.driver import GO_BROKER_OVERRIDES, GoClients, Member, wait_for
from tests.go.sample import by_partition, content, sample_records, stored_batches
from tidelog.records import CompressionType
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("go")]

BROKER_OVERRIDES = GO_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)


def create_topic(go: GoClients, topic: str, partitions: int) -> None:
    with go.admin() as admin:
        answer = admin.call("create_topics", topics=[topic], partitions=partitions)
    assert answer["topics"][topic]["error"] == ""


@pytest.mark.parametrize(("acks", "codec", "idempotent"), [
    ("all", "none", True),
    ("all", "gzip", False),
    ("leader", "snappy", False),
    ("none", "lz4", False),
    ("all", "zstd", True),
    ("leader", "none", False),
])
def test_records_come_back_exactly(go: GoClients, broker: BrokerProcess, acks: str, codec: str,
                                   idempotent: bool) -> None:
    topic = f"franz-{acks}-{codec}-{'idempotent' if idempotent else 'plain'}"
    create_topic(go, topic, 3)
    records = sample_records(60, 3)
    results = go.produce("franz", topic, records, acks=acks, codec=codec, idempotent=idempotent)
    producer = results.pop() if idempotent else None
    assert [r.get("error", "") for r in results] == [""] * len(records)
    if acks != "none":  # without acks the client learns no offsets
        for partition, rows in by_partition(results).items():
            assert [r["offset"] for r in rows] == list(range(len(rows))), f"partition {partition}"

    consumed, _ = go.run("franz-consume", topic=topic, count=len(records))
    assert len(consumed) == len(records)
    expected = by_partition(records)
    got = by_partition(consumed)
    assert sorted(got) == [0, 1, 2]
    for partition, rows in got.items():
        assert [r["offset"] for r in rows] == list(range(len(expected[partition])))
        assert [content(r) for r in rows] == [content(r) for r in expected[partition]]

    codec_id = CompressionType[codec.upper()]
    for partition in range(3):
        batches = stored_batches(broker.bootstrap, topic, partition)
        assert sum(b.last_offset_delta + 1 for b in batches) == 20
        assert {b.compression_type for b in batches} == {codec_id}
        if producer is None:
            assert {b.producer_id for b in batches} == {-1}
        else:
            assert {(b.producer_id, b.producer_epoch) for b in batches} == {
                (producer["producer_id"], producer["producer_epoch"])}
            assert producer["producer_id"] >= 0
            # Sequences start at 0 per partition and continue from batch to batch.
            expected_sequence = 0
            for b in batches:
                assert b.base_sequence == expected_sequence
                expected_sequence += b.last_offset_delta + 1


def test_consume_from_an_offset_and_in_small_fetches(go: GoClients) -> None:
    topic = "franz-offsets"
    create_topic(go, topic, 1)
    records = sample_records(200, 1, tag="s")
    go.produce("franz", topic, records, codec="zstd")
    # Start in the middle of a compressed batch: the client must drop the records before it.
    consumed, _ = go.run("franz-consume", topic=topic, partitions="0", offset=137, count=63,
                         fetch_max_partition_bytes=512)
    assert [r["offset"] for r in consumed] == list(range(137, 200))
    assert [content(r) for r in consumed] == [content(r) for r in records[137:]]


# ------------------------------------------------------------------------------------- groups

def balanced(members: list[Member], partitions: int, sizes: list[int]) -> bool:
    owned = [m.assignment for m in members]
    union = set().union(*owned)
    return (sorted(len(o) for o in owned) == sizes and len(union) == partitions
            and sum(map(len, owned)) == partitions)


def values(members: list[Member]) -> Counter[str]:
    return Counter(value for m in members for (_, _, _, value) in m.records)


def produce_values(go: GoClients, topic: str, partitions: int, start: int, count: int) -> set[str]:
    records = [{"partition": i % partitions, "key": None, "value": f"v{i}", "headers": []}
               for i in range(start, start + count)]
    results = go.produce("franz", topic, records)
    assert all(not r.get("error") for r in results)
    return {r["value"] for r in records}


def run_group(go: GoClients, topic: str, group: str, partitions: int, **member_options: object) -> list[Member]:
    """Three members join, share ``partitions`` evenly and consume; the first leaves cleanly and the
    other two take over its partitions from its committed offsets. Returns the members."""
    create_topic(go, topic, partitions)
    members = [go.member("franz", group, [topic], f"m{i}", **member_options) for i in range(3)]
    try:
        third = partitions // 3
        wait_for(lambda: balanced(members, partitions, [third] * 3), 45, "three members with equal shares")
        first = produce_values(go, topic, partitions, 0, 120)
        wait_for(lambda: set(values(members)) >= first, 30, "the first 120 records")
        for m in members:  # each member read exactly its own partitions' records
            assert {(t, p) for (t, p, _, _) in m.records} == m.assignment
            assert len(m.records) == 120 // 3

        members[0].close()
        rest = members[1:]
        wait_for(lambda: balanced(rest, partitions, [partitions // 2] * 2), 45, "two members with half each")
        second = produce_values(go, topic, partitions, 120, 120)
        expected = first | second
        wait_for(lambda: set(values(members)) >= expected, 30, "the records after the leave")
        for m in rest:  # the second half went to the two remaining members, 60 each
            assert sum(value in second for (_, _, _, value) in m.records) == 120 // 2
        counts = values(members)
        assert set(counts) == expected
        assert [v for v, n in counts.items() if n != 1] == [], "records consumed more than once"
        for m in members:
            assert m.errors() == []
        return members
    except BaseException:
        for m in members:
            m.stop()
        raise


@pytest.mark.parametrize("balancer", ["cooperative-sticky", "range"])
def test_classic_group_shares_partitions_and_rebalances_on_leave(go: GoClients, balancer: str) -> None:
    topic, group = f"franz-classic-{balancer}", f"franz-classic-{balancer}"
    members = run_group(go, topic, group, 6, balancer=balancer)
    with go.admin() as admin:
        described = admin.call("describe_groups", groups=[group])["groups"][group]
        assert described["error"] == ""
        assert described["state"] == "Stable"
        assert described["protocol_type"] == "consumer"
        assert described["protocol"] == balancer
        assigned = sorted(tuple(tp) for m in described["members"] for tp in m["assigned"])
        assert assigned == [(topic, p) for p in range(6)]
        assert len(described["members"]) == 2
        assert group in admin.call("list_groups", types=["classic"])["groups"]
        assert group not in admin.call("list_groups", types=["consumer"])["groups"]
        # ConsumerGroupDescribe (KIP-848) does not describe a classic group.
        as_consumer = admin.call("describe_consumer_groups", groups=[group])["groups"][group]
        assert as_consumer["error"] == "GROUP_ID_NOT_FOUND"
        for m in members[1:]:
            m.close()
        committed = admin.call("fetch_offsets", group=group)["offsets"]
        assert [(o["partition"], o["offset"], o["error"]) for o in committed] == [(p, 40, "") for p in range(6)]
        assert admin.call("describe_groups", groups=[group])["groups"][group]["state"] == "Empty"


@pytest.mark.parametrize(("balancer", "assignor"), [("cooperative-sticky", "uniform"), ("range", "range")])
def test_kip848_group_with_a_server_side_assignor(go: GoClients, balancer: str, assignor: str) -> None:
    topic = group = f"franz-848-{assignor}"
    members = run_group(go, topic, group, 6, server_side=True, balancer=balancer)
    with go.admin() as admin:
        described = admin.call("describe_consumer_groups", groups=[group])["groups"][group]
        assert described["error"] == ""
        assert described["state"] == "Stable"
        assert described["assignor"] == assignor
        # ListGroups v5 filters by group type (KIP-848).
        assert group in admin.call("list_groups", types=["consumer"])["groups"]
        assert group not in admin.call("list_groups", types=["classic"])["groups"]
        assert len(described["members"]) == 2
        assert sorted(tuple(tp) for m in described["members"] for tp in m["assigned"]) == [
            (topic, p) for p in range(6)]
        assert all(m["subscribed_topics"] == [topic] for m in described["members"])
        assert all(m["member_epoch"] > 0 for m in described["members"])
        # The classic DescribeGroups v6 does not describe a consumer group (Kafka: "Group ... is not a
        # classic group.", state Dead).
        as_classic = admin.call("describe_groups", groups=[group])["groups"][group]
        assert (as_classic["error"], as_classic["state"]) == ("GROUP_ID_NOT_FOUND", "Dead")
        for m in members[1:]:
            m.close()
        committed = admin.call("fetch_offsets", group=group)["offsets"]
        assert [(o["partition"], o["offset"], o["error"]) for o in committed] == [(p, 40, "") for p in range(6)]
        assert admin.call("describe_consumer_groups", groups=[group])["groups"][group]["state"] == "Empty"


@pytest.mark.parametrize("kafka", ["0.10.2", "0.11.0", "2.4"])
def test_pinned_to_an_old_kafka(go: GoClients, broker: BrokerProcess, kafka: str) -> None:
    """franz-go limited to an old release's request versions (kgo.MaxVersions): 0.10.2 writes magic 1
    message sets with Produce v2 and reads with Fetch v3 (the broker converts both ways); 0.11.0 is
    the first with record batches, headers and idempotence; a classic group at each."""
    topic = group = f"franz-pinned-{kafka}"
    create_topic(go, topic, 2)
    legacy = kafka == "0.10.2"
    records = sample_records(30, 2, headers=not legacy)
    results = go.produce("franz", topic, records, codec="gzip", idempotent=not legacy, max_version=kafka)
    if not legacy:
        producer = results.pop()
        assert producer["producer_id"] >= 0
    assert [r.get("error", "") for r in results] == [""] * 30
    for partition, rows in by_partition(results).items():
        assert [r["offset"] for r in rows] == list(range(15)), f"partition {partition}"
    consumed, _ = go.run("franz-consume", topic=topic, count=30, max_version=kafka)
    got, expected = by_partition(consumed), by_partition(records)
    for partition in (0, 1):
        assert [r["offset"] for r in got[partition]] == list(range(15))
        assert [content(r) for r in got[partition]] == [content(r) for r in expected[partition]]
        batches = stored_batches(broker.bootstrap, topic, partition)
        assert {b.compression_type for b in batches} == {CompressionType.GZIP}
        assert ({b.producer_id for b in batches} == {-1}) == legacy

    members = [go.member("franz", group, [topic], f"m{i}", balancer="range", max_version=kafka) for i in range(2)]
    try:
        wait_for(lambda: balanced(members, 2, [1, 1]), 45, "two members with one partition each")
        wait_for(lambda: sum(len(m.records) for m in members) >= 30, 30, "every record")
        positions = sorted((p, o) for m in members for (_, p, o, _) in m.records)
        assert positions == [(p, o) for p in (0, 1) for o in range(15)]
        for m in members:
            assert len(m.records) == 15 and m.errors() == []
        for m in members:
            m.close()
    finally:
        for m in members:
            m.stop()
    with go.admin() as admin:
        committed = admin.call("fetch_offsets", group=group)["offsets"]
    assert [(o["partition"], o["offset"]) for o in committed] == [(0, 15), (1, 15)]


def test_topic_settings_the_producer_must_obey(go: GoClients) -> None:
    """max.message.bytes (MESSAGE_TOO_LARGE), min.insync.replicas above the replica count
    (NOT_ENOUGH_REPLICAS for acks=all only) and LogAppendTime (the broker's clock wins)."""
    with go.admin() as admin:
        for topic, config in [("franz-small", {"max.message.bytes": "1024"}),
                              ("franz-isr", {"min.insync.replicas": "2"}),
                              ("franz-append-time", {"message.timestamp.type": "LogAppendTime"})]:
            assert admin.call("create_topics", topics=[topic], partitions=1, configs=config)["topics"][topic][
                "error"] == ""
    big = [{"partition": 0, "key": None, "value": "x" * 5000, "headers": []}]
    [answer] = go.produce("franz", "franz-small", big)
    assert answer["error"].startswith("MESSAGE_TOO_LARGE")
    [answer] = go.produce("franz", "franz-small", [{**big[0], "value": "x" * 500}])
    assert answer == {"partition": 0, "offset": 0}

    one = [{"partition": 0, "key": None, "value": "v", "headers": []}]
    [answer] = go.produce("franz", "franz-isr", one, acks="all", retries=1)  # NOT_ENOUGH_REPLICAS is retriable
    assert answer["error"].startswith("NOT_ENOUGH_REPLICAS")
    assert go.produce("franz", "franz-isr", one, acks="leader") == [{"partition": 0, "offset": 0}]

    before = int(time.time() * 1000)
    records = sample_records(3, 1)  # timestamps in 2023
    go.produce("franz", "franz-append-time", records)
    after = int(time.time() * 1000)
    consumed, _ = go.run("franz-consume", topic="franz-append-time", count=3)
    stamps = {r["timestamp_ms"] for r in consumed}
    assert len(stamps) == 1 and before - 1000 <= stamps.pop() <= after + 1000


def test_static_member_restarts_without_a_rebalance(go: GoClients) -> None:
    """KIP-345: a member with an instance id does not leave on close; restarted with the same id it
    gets its partitions back and the other member sees no rebalance. An admin LeaveGroup by
    instance id then removes it, and the other member takes everything."""
    topic = group = "franz-static"
    create_topic(go, topic, 4)
    a = go.member("franz", group, [topic], "a", balancer="range", instance_id="static-a")
    b = go.member("franz", group, [topic], "b", balancer="range", instance_id="static-b")
    members = [a, b]
    try:
        wait_for(lambda: balanced([a, b], 4, [2, 2]), 45, "two members with two each")
        a_partitions, b_events = a.assignment, len(b.events)
        a.close()
        a2 = go.member("franz", group, [topic], "a2", balancer="range", instance_id="static-a")
        members.append(a2)
        wait_for(lambda: a2.assignment == a_partitions, 30, "the restarted member's old partitions")
        produce_values(go, topic, 4, 0, 40)
        wait_for(lambda: len(a2.records) + len(b.records) >= 40, 30, "the records")
        assert [e for e in b.events[b_events:] if e["event"] != "record"] == [], "b saw a rebalance"
        assert len(a2.records) == len(b.records) == 20

        a2.close()
        with go.admin() as admin:
            left = admin.call("leave_group", group=group, instance_ids=["static-a", "static-nobody"])["members"]
            assert left["static-a"]["error"] == ""
            assert left["static-nobody"]["error"] == "UNKNOWN_MEMBER_ID"
            wait_for(lambda: len(b.assignment) == 4, 30, "b with every partition")
            described = admin.call("describe_groups", groups=[group])["groups"][group]
            assert [m["member_id"] for m in described["members"]] != [] and len(described["members"]) == 1
        b.close()
    finally:
        for m in members:
            m.stop()
