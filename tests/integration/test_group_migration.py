"""Both group protocols in one group, with confluent-kafka 2.16: ``group.protocol=classic`` consumers
(JoinGroup/SyncGroup, client-side eager or cooperative rebalancing) and ``group.protocol=consumer``
ones (KIP-848) share a group, and the group changes type online: a classic group becomes a consumer
group when a consumer-protocol member joins it, and a classic group again when the last one leaves
(``group.consumer.migration.policy=bidirectional``, Kafka 4.x's default).

Every consumer is a subprocess that commits after each record (tests/integration/consumer_process.py).
The checks: every record is consumed exactly once, no partition is ever owned by two consumers at the
same time (from the consumers' own timestamps), and the group rebalances as members come and go.
The broker is the oracle fixtures' ``subject_broker``: ``TIDELOG_ORACLE_SUBJECT=kafka`` runs the same
tests against Apache Kafka 4.4 (they pass there too), which checks the tests themselves. ~30 s.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import ConsumerGroupType
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer

from tests.integration import kafka_io
from tests.integration.consumer_process import ConsumerProcess, consumed, ownership_overlaps
from tests.integration.kafka_io import create_topics, wait_for
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("group_migration")]

SESSION_MS = 6000
BROKER = "subject"  # Tidelog, or Apache Kafka under TIDELOG_ORACLE_SUBJECT=kafka (tests/fixtures.py)
BROKER_OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
}
#: Classic members: a short session and heartbeat so that rebalances show within a second, and a
#: rebalance timeout (max.poll.interval.ms) that bounds a member that never rejoins.
CLASSIC = {"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 20_000}


@pytest.fixture
def consumers() -> Iterator[list[ConsumerProcess]]:
    started: list[ConsumerProcess] = []
    yield started
    for c in started:
        c.stop()



def group_type(admin: AdminClient, group: str) -> ConsumerGroupType | None:
    listing = admin.list_consumer_groups().result(15)
    return next((g.type for g in listing.valid if g.group_id == group), None)


def split(members: list[ConsumerProcess], partitions: int, sizes: list[int]) -> bool:
    """The members own every partition between them, in these sizes, none twice."""
    owned = [m.assignment for m in members]
    return (sorted(len(o) for o in owned) == sorted(sizes) and sum(map(len, owned)) == partitions
            and len(set().union(*owned)) == partitions)


def exactly_once(members: list[ConsumerProcess], expected: set[str]) -> None:
    counts = consumed(members)
    twice = sorted(v for v in expected if counts[v] > 1)
    assert not twice, f"{len(twice)} records consumed more than once, e.g. {twice[:5]}"
    assert set(counts) == expected


def start(b: BrokerProcess, consumers: list[ConsumerProcess], group: str, topic: str, protocol: str,
          **conf: object) -> ConsumerProcess:
    c = ConsumerProcess(b, group, [topic], protocol, **(CLASSIC if protocol == "classic" else {}), **conf)
    consumers.append(c)
    return c


def test_classic_and_consumer_members_share_a_consumer_group(broker: BrokerProcess, admin: AdminClient,
                                                             consumers: list[ConsumerProcess]) -> None:
    topic, n, group = "mix-shared", 6, "mix-shared"
    create_topics(broker, **{topic: n})
    expected = kafka_io.produce_numbered(broker, topic, n, 0, 300)
    began = time.monotonic()

    a = start(broker, consumers, group, topic, "consumer")
    wait_for(lambda: len(a.assignment) == n, 30, "the consumer-protocol member with every partition")
    assert group_type(admin, group) == ConsumerGroupType.CONSUMER
    # Two classic members join the consumer group. They must share a protocol (Kafka refuses a classic
    # member whose protocols the others lack); cooperative-sticky here, librdkafka's eager range in the
    # migration test below.
    cooperative = {"partition.assignment.strategy": "cooperative-sticky"}
    b = start(broker, consumers, group, topic, "classic", **cooperative)
    c = start(broker, consumers, group, topic, "classic", **cooperative)
    wait_for(lambda: split([a, b, c], n, [2, 2, 2]), 40, "two partitions for each of the three members")
    assert group_type(admin, group) == ConsumerGroupType.CONSUMER
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the first 300 records")

    # A classic member leaves (LeaveGroup): its partitions go to the other two.
    b.close()
    wait_for(lambda: split([a, c], n, [3, 3]), 40, "three partitions for each of the two left")
    expected |= kafka_io.produce_numbered(broker, topic, n, 300, 300)
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records after the classic member left")

    # A classic member dies: its session runs out and its partitions move.
    d = start(broker, consumers, group, topic, "classic", **cooperative)
    wait_for(lambda: split([a, c, d], n, [2, 2, 2]), 40, "a third member again")
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records before the death")
    d.kill()
    wait_for(lambda: split([a, c], n, [3, 3]), SESSION_MS / 1000 + 30, "the dead member's partitions moved")
    expected |= kafka_io.produce_numbered(broker, topic, n, 600, 300)
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records after the death")
    time.sleep(1)
    exactly_once(consumers, expected)
    assert not ownership_overlaps(consumers), ownership_overlaps(consumers)
    assert not [e for m in consumers for e in m.errors() if "FATAL" in e.upper()]
    print(f"mixed group scenario: {time.monotonic() - began:.1f} s")


def test_a_classic_group_upgrades_and_downgrades_online(broker: BrokerProcess, admin: AdminClient,
                                                         consumers: list[ConsumerProcess]) -> None:
    topic, n, group = "mix-migrate", 4, "mix-migrate"
    create_topics(broker, **{topic: n})
    expected = kafka_io.produce_numbered(broker, topic, n, 0, 200)
    began = time.monotonic()

    # A classic group: two classic consumers, the client-side range assignor.
    b = start(broker, consumers, group, topic, "classic")
    c = start(broker, consumers, group, topic, "classic")
    wait_for(lambda: split([b, c], n, [2, 2]), 40, "the classic group's two members with two partitions each")
    assert group_type(admin, group) == ConsumerGroupType.CLASSIC
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the first records")

    # Upgrade: a consumer-protocol member joins; the group is a consumer group with all three.
    a = start(broker, consumers, group, topic, "consumer")
    wait_for(lambda: group_type(admin, group) == ConsumerGroupType.CONSUMER, 20, "the upgrade")
    upgraded = time.monotonic()
    wait_for(lambda: split([a, b, c], n, [1, 1, 2]), 40, "the partitions spread over the three members")
    print(f"upgrade to a balanced group: {time.monotonic() - upgraded:.1f} s")
    expected |= kafka_io.produce_numbered(broker, topic, n, 200, 200)
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records after the upgrade")

    # Downgrade: the only consumer-protocol member leaves; the classic members rebalance as a classic
    # group and go on from the committed offsets.
    a.close()
    wait_for(lambda: group_type(admin, group) == ConsumerGroupType.CLASSIC, 20, "the downgrade")
    downgraded = time.monotonic()
    wait_for(lambda: split([b, c], n, [2, 2]), 40, "the classic group's two members again")
    print(f"downgrade to a balanced classic group: {time.monotonic() - downgraded:.1f} s")
    expected |= kafka_io.produce_numbered(broker, topic, n, 400, 200)
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records after the downgrade")

    # Upgrade again, then the consumer-protocol member dies: its session timeout downgrades the group.
    e = start(broker, consumers, group, topic, "consumer")
    wait_for(lambda: group_type(admin, group) == ConsumerGroupType.CONSUMER, 20, "the second upgrade")
    wait_for(lambda: split([b, c, e], n, [1, 1, 2]), 40, "three members again")
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records before the death")
    e.kill()
    wait_for(lambda: group_type(admin, group) == ConsumerGroupType.CLASSIC, SESSION_MS / 1000 + 20,
             "the downgrade after the session timeout")
    wait_for(lambda: split([b, c], n, [2, 2]), 40, "the classic members with everything")
    expected |= kafka_io.produce_numbered(broker, topic, n, 600, 200)
    wait_for(lambda: set(consumed(consumers)) >= expected, 30, "the records after the second downgrade")
    time.sleep(1)
    exactly_once(consumers, expected)
    assert not ownership_overlaps(consumers), ownership_overlaps(consumers)
    print(f"migration scenario: {time.monotonic() - began:.1f} s")


def test_a_kafka_python_classic_member_shares_a_consumer_group(broker: BrokerProcess, admin: AdminClient,
                                                               consumers: list[ConsumerProcess]) -> None:
    """kafka-python 3.0 (classic protocol, its own JoinGroup versions and subscription layout) next to a
    confluent-kafka consumer-protocol member; each takes its half and the records are read once."""
    topic, n, group = "mix-kp", 4, "mix-kp"
    create_topics(broker, **{topic: n})
    a = start(broker, consumers, group, topic, "consumer")
    wait_for(lambda: len(a.assignment) == n, 30, "the consumer-protocol member with every partition")
    kp = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                       enable_auto_commit=False, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
    values: list[str] = []

    def poll() -> None:
        for records in kp.poll(200).values():
            values.extend(r.value.decode() for r in records)
            kp.commit()

    try:
        wait_for(lambda: len(kp.assignment()) == 2 and len(a.assignment) == 2, 40, "a 2/2 split", poll=poll)
        assert {tp.partition for tp in kp.assignment()} | {p for _, p in a.assignment} == set(range(n))
        assert group_type(admin, group) == ConsumerGroupType.CONSUMER
        expected = kafka_io.produce_numbered(broker, topic, n, 0, 200)
        wait_for(lambda: len(values) + len(a.messages) >= 200, 30, "every record", poll=poll)
    finally:
        kp.close()
    counts = consumed([a]) + Counter(values)
    assert set(counts) == expected and max(counts.values()) == 1
    assert values, "kafka-python read none of the records"
