"""Share groups end to end in a cluster: ZooKeeper and three ``tidelog serve`` processes with
share.version=1, a topic with RF=3 and four partitions, three confluent-kafka ``ShareConsumer`` threads of
one group acknowledging explicitly (ACCEPT most records, RELEASE some once), and a kill -9 while they do:

* of the share coordinator's broker (the leader of the ``__share_group_state`` partition that holds most
  of the group's share partitions): each acknowledgement a share-partition leader answered was written
  through the coordinator to the ISR, so the new coordinator has it;
* of a share-partition leader (the leader of a topic partition, whose share coordinator is on another
  broker): the new leader reads the share partition's state from the coordinator and offers again exactly
  what was not acknowledged;
* (SIGSTOP instead) of a broker that is a share coordinator only, long enough for a share-partition
  leader's acknowledgement write to it to hang past the records' acquisition lock (the peer request
  timeout, 30 s, against a 15 s lock) before it goes to the new coordinator.

Judged on what the clients saw (their acknowledgement-commit callbacks): every record accepted exactly
once, none lost, a record whose ACCEPT the broker confirmed never delivered again, and no record delivered
to a second consumer while the first still held it (before its RELEASE, its lock's expiry or a kill).

Needs java and mvn for ZooKeeper (skips locally without them, fails in CI). The cluster starts once
(10-30 s) and is restored after each test; the kill tests take about 20 s each, the pause test about 70 s
(each bounded by 120 s + 240 s of waits); the module about 2.5 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, Producer, ShareConsumer

from tidelog.coordinator.runtime import partition_for
from tidelog.coordinator.share.persister import SharePartitionKey
from tidelog.protocol.messages import IncrementalAlterConfigsRequest, MetadataRequest
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

STATE_TOPIC = "__share_group_state"
STATE_PARTITIONS = 3
TOPIC_PARTITIONS = 4
RECORDS = 1200  # 300 a partition
CONSUMERS = 3
LOCK_MS = 15_000  # the group's share.record.lock.duration.ms (Kafka's minimum)
GROUP_CONFIG = 32
PROCESSING_S = 0.005  # a consumer's work per record (pacing, not synchronization)

CLUSTER = {"chroot": "/tidelog-share-groups", "session_ms": 4000,
           "overrides": {"share.version": "1",
                         "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
                         "share.coordinator.state.topic.replication.factor": "3",
                         "share.coordinator.state.topic.min.isr": "2",
                         # both record types (ShareSnapshot, ShareUpdate) are replayed by a new coordinator
                         "share.coordinator.snapshot.update.records.per.snapshot": "10",
                         "offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3",
                         "replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                         "default.replication.factor": "3", "min.insync.replicas": "2"}}
CLUSTER_RESTORED = True

Record = tuple[int, int]  # (partition, offset)


@dataclass
class Delivery:
    consumer: int
    at: float  # time.monotonic() when poll() returned it
    ack: int | None = None  # the type acknowledged
    confirmed: float | None = None  # when the client's callback reported the broker's success
    failed: str | None = None  # the error the callback reported instead


@dataclass
class Ledger:
    """What the consumers saw, shared by their threads."""

    name: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    deliveries: dict[Record, list[Delivery]] = field(default_factory=lambda: defaultdict(list))
    released: set[Record] = field(default_factory=set)
    accepted: set[Record] = field(default_factory=set)  # confirmed ACCEPTs
    errors: list[str] = field(default_factory=list)

    def accepted_counts(self, partitions: int) -> list[int]:
        with self.lock:
            return [sum(1 for q, _ in self.accepted if q == p) for p in range(partitions)]

    def accepted_count(self) -> int:
        with self.lock:
            return len(self.accepted)


def group_config(bootstrap: str, group: str, **configs: str) -> None:
    R = IncrementalAlterConfigsRequest
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(R(resources=[R.AlterConfigsResource(resource_type=GROUP_CONFIG, resource_name=group, configs=[
            R.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v) for k, v in configs.items()])]), 1)
        assert r.responses[0].error_code == 0, r


def produce(bootstrap: str, topic: str) -> dict[int, int]:
    """RECORDS records spread over the partitions (acks=all); the count per partition."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "batch.num.messages": 10})  # small batches: a share partition acquires whole batches
    for i in range(RECORDS):
        p.produce(topic, value=b"%d" % i, partition=i % TOPIC_PARTITIONS)
    assert p.flush(60) == 0
    return {q: len(range(q, RECORDS, TOPIC_PARTITIONS)) for q in range(TOPIC_PARTITIONS)}


def consume(index: int, bootstrap: str, group: str, topic: str, ledger: Ledger, stop: threading.Event) -> None:
    """One share consumer: ACCEPT each record, but RELEASE once the first delivery of every 7th offset."""
    pending: dict[Record, Delivery] = {}

    def on_commit(offsets, error) -> None:
        now = time.monotonic()
        with ledger.lock:
            for tp, acked in offsets.items():
                for offset in acked:
                    d = pending.pop((tp.partition, offset), None)
                    if d is None:
                        continue
                    if error is None:
                        d.confirmed = now
                        if d.ack == AcknowledgeType.ACCEPT:
                            ledger.accepted.add((tp.partition, offset))
                    else:
                        d.failed = str(error)

    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit", "client.id": f"share-{index}"})
    try:
        c.set_acknowledgement_commit_callback(on_commit)
        c.subscribe([topic])
        while not stop.is_set():
            try:
                messages = c.poll(1.0)
            except KafkaException as e:  # the client reconnects; keep going
                with ledger.lock:
                    ledger.errors.append(f"poll: {e}")
                continue
            now = time.monotonic()
            for m in messages:
                if m.error() is not None:
                    continue
                record = (m.partition(), m.offset())
                with ledger.lock:
                    release = m.offset() % 7 == 3 and record not in ledger.released
                    if release:
                        ledger.released.add(record)
                    d = Delivery(index, now, AcknowledgeType.RELEASE if release else AcknowledgeType.ACCEPT)
                    ledger.deliveries[record].append(d)
                    pending[record] = d
                c.acknowledge(m, d.ack)
                time.sleep(PROCESSING_S)  # the work a record takes: the kill comes while they acknowledge
            try:
                c.commit_sync(90)
            except KafkaException as e:
                with ledger.lock:
                    ledger.errors.append(f"commit: {e}")
    finally:
        c.close()


def topic_id(cluster: LocalCluster, topic: str) -> uuid.UUID:
    with WireClient.connect(cluster.bootstrap(cluster.live_ids()[0])) as wire:
        return wait_for(lambda: next((t.topic_id for t in wire.request(MetadataRequest(topics=None), 12).topics
                                      if t.name == topic and t.topic_id != uuid.UUID(int=0)), None),
                        what="the topic's id")


def coordinators(cluster: LocalCluster, group: str, tid: uuid.UUID) -> dict[int, int]:
    """topic partition -> the broker leading its share partition's ``__share_group_state`` partition."""
    out = {}
    for q in range(TOPIC_PARTITIONS):
        state_partition = partition_for(SharePartitionKey(group, tid, q).coordinator_key(), STATE_PARTITIONS)
        out[q] = wait_for(lambda sp=state_partition: (s := cluster.state_or_none(STATE_TOPIC, sp)) and s["leader"] > 0
                          and s["leader"],
                          timeout=60, what=f"a leader of {STATE_TOPIC}-{state_partition}")
    return out


def check(ledger: Ledger, counts: dict[int, int], kills: tuple[float, float]) -> None:
    """``kills``: when the broker was killed (or paused) and when it was done with."""
    everything = {(q, o) for q, n in counts.items() for o in range(n)}
    with ledger.lock:
        all_deliveries = [d for ds in ledger.deliveries.values() for d in ds]
        print(f"\n{ledger.name}: deliveries {len(all_deliveries)} of {len(ledger.deliveries)} records, acks failed "
              f"{sum(d.failed is not None for d in all_deliveries)}, unanswered "
              f"{sum(d.failed is None and d.confirmed is None for d in all_deliveries)}, delivered after the kill "
              f"{sum(d.at > kills[0] for d in all_deliveries)}, client errors {len(ledger.errors)}")
        lost = sorted(everything - ledger.accepted)
        assert not lost, f"{len(lost)} records never accepted, e.g. {lost[:10]} (errors: {ledger.errors[-5:]})"
        assert set(ledger.deliveries) == everything
        for record, deliveries in ledger.deliveries.items():
            deliveries.sort(key=lambda d: d.at)
            confirmed_accepts = [d for d in deliveries if d.ack == AcknowledgeType.ACCEPT and d.confirmed is not None]
            assert len(confirmed_accepts) == 1, (record, "accepted more than once", deliveries)
            # an ACCEPT the broker confirmed is never lost: the record is never delivered again
            assert confirmed_accepts[0] is deliveries[-1], (record, "delivered again after its ACCEPT", deliveries)
            for first, then in itertools.pairwise(deliveries):
                # the earlier holder let go first: its RELEASE, or its lock ran out, or a kill -9 dropped it
                let_go = ((first.ack == AcknowledgeType.RELEASE and first.confirmed is not None)
                          or then.at - first.at >= LOCK_MS / 1000 * 0.9
                          or (first.at <= kills[1] and then.at >= kills[0]))
                assert let_go, (record, "delivered to two consumers at once", deliveries)


def run(cluster: LocalCluster, group: str, topic: str, victim, *, pause: bool = False) -> tuple[int, dict[int, int]]:
    """Produce, consume with CONSUMERS share consumers, kill -9 ``victim(tid, owners)`` once a fifth of each partition is accepted,
    wait until every record is accepted; check the ledger. Returns the broker killed and the coordinators."""
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three registered brokers")
    cluster.create_topic(topic, TOPIC_PARTITIONS, 3)
    bootstrap = cluster.bootstrap(*cluster.live_ids())
    group_config(cluster.bootstrap(cluster.live_ids()[0]), group, share_auto_offset_reset="earliest", share_record_lock_duration_ms=str(LOCK_MS),
                 share_delivery_count_limit="10",
                 share_partition_max_record_locks="100")  # a small window: acknowledgements flow all along
    counts = produce(bootstrap, topic)
    tid = topic_id(cluster, topic)
    ledger, stop = Ledger(group), threading.Event()
    threads = [threading.Thread(target=consume, args=(i, bootstrap, group, topic, ledger, stop), daemon=True)
               for i in range(CONSUMERS)]
    for t in threads:
        t.start()
    try:
        owners = coordinators(cluster, group, tid)  # the share state exists once the consumers joined
        wait_for(lambda: min(ledger.accepted_counts(TOPIC_PARTITIONS)) >= RECORDS // TOPIC_PARTITIONS // 5,
                 timeout=120, interval=0.02, what="a fifth of each partition's records accepted")
        killed = victim(tid, owners)
        assert ledger.accepted_count() < RECORDS, "the kill came while the consumers were acknowledging"
        killed_at = time.monotonic()
        if pause:  # SIGSTOP: requests to it hang (a remote share-state write until its 30 s timeout)
            cluster.pause(killed)
        else:
            cluster.kill(killed)
        wait_for(lambda: ledger.accepted_count() >= RECORDS, timeout=240, interval=0.2,
                 what="every record accepted after the kill")
        kills = (killed_at, time.monotonic())
        if pause:
            cluster.resume(killed)
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    check(ledger, counts, kills)
    return killed, owners


def test_a_kill_9_of_the_share_coordinators_broker_loses_no_acknowledgement(cluster: LocalCluster) -> None:
    def the_coordinator(tid: uuid.UUID, owners: dict[int, int]) -> int:
        # best a broker that is both the coordinator and the leader of one share partition: its new leader
        # then reads the state from the new coordinator (a lost write would come back as a redelivery);
        # else the coordinator of most share partitions
        both = sorted(b for q, b in owners.items() if cluster.leader("jobs-coordinator", q) == b)
        by_count = defaultdict(int)
        for broker in owners.values():
            by_count[broker] += 1
        return max(both or sorted(by_count), key=lambda b: by_count[b])

    killed, owners = run(cluster, "jobs-coordinator", "jobs-coordinator", the_coordinator)
    assert killed in owners.values()


def test_a_kill_9_of_a_share_partition_leader_loses_no_acknowledgement(cluster: LocalCluster) -> None:
    chosen: dict[str, int] = {}

    def a_partition_leader(tid: uuid.UUID, owners: dict[int, int]) -> int:
        leaders = {q: cluster.leader("jobs-leader", q) for q in range(TOPIC_PARTITIONS)}
        # a partition whose leader is not its share coordinator: the two roles on different brokers
        q = next((q for q in range(TOPIC_PARTITIONS) if leaders[q] != owners[q]), 0)
        chosen.update(partition=q, leader=leaders[q], coordinator=owners[q])
        return leaders[q]

    killed, _ = run(cluster, "jobs-leader", "jobs-leader", a_partition_leader)
    assert killed == chosen["leader"]
    new_leader = cluster.wait_for_leader("jobs-leader", chosen["partition"], not_in=[killed])
    assert new_leader != killed


def test_a_share_coordinator_that_stops_answering_for_longer_than_the_lock_loses_no_acknowledgement(
        cluster: LocalCluster) -> None:
    """SIGSTOP of the share coordinator's broker: a share-partition leader's acknowledgement writes to it
    hang past the records' acquisition lock (15 s) before they go to the new coordinator; the records stay
    with their acknowledgement meanwhile, so one answered is never delivered again."""

    def a_coordinator_only(tid: uuid.UUID, owners: dict[int, int]) -> int:
        leaders = {cluster.leader("jobs-paused", q) for q in range(TOPIC_PARTITIONS)}
        return min(set(owners.values()) - leaders or set(owners.values()))

    killed, owners = run(cluster, "jobs-paused", "jobs-paused", a_coordinator_only, pause=True)
    assert killed in owners.values()
