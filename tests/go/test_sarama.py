"""IBM/sarama (github.com/IBM/sarama): SyncProducer, AsyncProducer, a plain partition consumer and a
ConsumerGroup, with a modern ``Config.Version`` and with old ones (0.10.2: Produce v2, Fetch v3 and
magic 1 message sets; 0.11: the first record batches and idempotence), which Tidelog still serves.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.go.driver import GO_BROKER_OVERRIDES, GoClients, Member, wait_for
from tests.go.sample import by_partition, content, sample_records, stored_batches
from tidelog.records import CompressionType
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("go")]

BROKER_OVERRIDES = GO_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

MODERN = "4.0.0"


def create_topic(go: GoClients, topic: str, partitions: int) -> None:
    with go.admin() as admin:
        answer = admin.call("create_topics", topics=[topic], partitions=partitions)
    assert answer["topics"][topic]["error"] == ""


def consume(go: GoClients, topic: str, partition: int, count: int, version: str, **options: object) -> list[dict]:
    lines, _ = go.run("sarama-consume", topic=topic, partition=partition, count=count, version=version, **options)
    assert lines[-1] == {"high_watermark": count} or "offset" in options
    return [line for line in lines if "offset" in line]


@pytest.mark.parametrize(("version", "mode", "codec", "idempotent"), [
    (MODERN, "sync", "none", True),
    (MODERN, "sync", "zstd", False),
    (MODERN, "async", "gzip", True),
    (MODERN, "async", "lz4", False),
    ("0.11.0.0", "sync", "snappy", True),
    ("0.10.2.0", "sync", "gzip", False),
    ("0.10.2.0", "async", "lz4", False),
])
def test_records_come_back_exactly(go: GoClients, broker: BrokerProcess, version: str, mode: str, codec: str,
                                   idempotent: bool) -> None:
    topic = f"sarama-{version}-{mode}-{codec}-{'idempotent' if idempotent else 'plain'}"
    create_topic(go, topic, 3)
    headers = version != "0.10.2.0"  # message format v1 has no headers
    records = sample_records(45, 3, headers=headers)
    results = go.produce("sarama", topic, records, version=version, codec=codec, idempotent=idempotent,
                         **{"async": mode == "async"})
    assert [r.get("error", "") for r in results] == [""] * len(records)
    for partition, rows in by_partition(results).items():
        assert [r["offset"] for r in rows] == list(range(15)), f"partition {partition}"

    expected = by_partition(records)
    for partition in range(3):
        consumed = consume(go, topic, partition, 15, version)
        assert [r["offset"] for r in consumed] == list(range(15))
        assert [content(r) for r in consumed] == [content(r) for r in expected[partition]]

        batches = stored_batches(broker.bootstrap, topic, partition)
        assert sum(b.last_offset_delta + 1 for b in batches) == 15
        assert {b.compression_type for b in batches} == {CompressionType[codec.upper()]}
        producer_ids = {b.producer_id for b in batches}
        if idempotent:
            assert len(producer_ids) == 1 and producer_ids.pop() >= 0
            sequence = 0
            for b in batches:
                assert b.base_sequence == sequence
                sequence += b.last_offset_delta + 1
        else:
            assert producer_ids == {-1}


def test_old_consumer_gets_records_down_converted(go: GoClients) -> None:
    """Fetch v3 (sarama at 0.10.2) gets magic 1 message sets: headers dropped, offsets kept, also
    inside compressed wrappers, and a zstd batch cannot be converted (UNSUPPORTED_COMPRESSION_TYPE)."""
    topic = "sarama-down-convert"
    create_topic(go, topic, 1)
    records = sample_records(30, 1)
    assert all(not r.get("error") for r in go.produce("franz", topic, records[:20], codec="gzip"))
    assert all(not r.get("error") for r in go.produce("franz", topic, records[20:], codec="zstd"))

    modern = consume(go, topic, 0, 30, MODERN)
    assert [content(r) for r in modern] == [content(r) for r in records]

    # Start inside the gzip batch: the consumer drops the records before its offset.
    old, proc = go.run("sarama-consume", topic=topic, partition=0, offset=5, count=16, version="0.10.2.0",
                       timeout=60, check=False)
    assert [r["offset"] for r in old] == list(range(5, 20))
    assert [content(r, headers=False) for r in old] == [content(r, headers=False) for r in records[5:20]]
    assert all(r["headers"] == [] for r in old)
    assert proc.returncode == 1
    assert "does not support the compression type" in proc.stderr  # error 76 at offset 20


def values(members: list[Member]) -> Counter[str]:
    return Counter(value for m in members for (_, _, _, value) in m.records)


def produce_values(go: GoClients, topic: str, partitions: int, start: int, count: int) -> set[str]:
    records = [{"partition": i % partitions, "key": None, "value": f"v{i}", "headers": []}
               for i in range(start, start + count)]
    results = go.produce("sarama", topic, records)
    assert all(not r.get("error") for r in results)
    return {r["value"] for r in records}


@pytest.mark.parametrize("version", [MODERN, "0.10.2.0"])
def test_consumer_group_shares_partitions_and_rebalances_on_leave(go: GoClients, version: str) -> None:
    topic = group = f"sarama-group-{version}"
    create_topic(go, topic, 4)
    members = [go.member("sarama", group, [topic], f"m{i}", version=version) for i in range(2)]
    try:
        wait_for(lambda: sorted(len(m.assignment) for m in members) == [2, 2]
                 and len(members[0].assignment | members[1].assignment) == 4, 45, "two members with two each")
        first = produce_values(go, topic, 4, 0, 80)
        wait_for(lambda: set(values(members)) >= first, 30, "the first 80 records")
        for m in members:
            assert {(t, p) for (t, p, _, _) in m.records} == m.assignment
            assert len(m.records) == 40

        members[0].close()
        wait_for(lambda: members[1].assignment == {(topic, p) for p in range(4)}, 45, "the survivor with all four")
        second = produce_values(go, topic, 4, 80, 80)
        wait_for(lambda: set(values(members)) >= first | second, 30, "the records after the leave")
        counts = values(members)
        assert set(counts) == first | second
        assert [v for v, n in counts.items() if n != 1] == [], "records consumed more than once"
        assert members[1].errors() == []

        with go.admin() as admin:
            described = admin.call("describe_groups", groups=[group])["groups"][group]
            assert (described["state"], described["protocol"], len(described["members"])) == ("Stable", "range", 1)
            members[1].close()
            committed = admin.call("fetch_offsets", group=group)["offsets"]
        assert [(o["partition"], o["offset"], o["error"]) for o in committed] == [(p, 40, "") for p in range(4)]
    finally:
        for m in members:
            m.stop()
