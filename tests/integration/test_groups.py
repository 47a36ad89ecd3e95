"""Consumer groups against a real broker: confluent-kafka and kafka-python consumers with the classic
protocol, the assignment examples of the design documents, members joining, leaving and dying,
committed offsets across a restart, offset expiry, group deletion, and invalid requests.

One module-scoped broker with short timings (``group.initial.rebalance.delay.ms=0``, sessions down
to one second, offset expiry checked every 300 ms); every test uses its own topics and groups.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from tests.integration import kafka_io
from tests.integration.kafka_io import create_topics, wait_for
from tidelog.coordinator.group.records import CoordinatorRecord, OffsetCommitKey
from tidelog.coordinator.group.serde import serialize
from tidelog.coordinator.runtime import partition_for
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.integration

OFFSETS_PARTITIONS = 10
BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.retention.check.interval.ms": "300",
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
}
FRESH_BROKER_OVERRIDES = BROKER_OVERRIDES
Assignment = set[tuple[str, int]]


def produce(broker: BrokerProcess, topic: str, partitions: int, per_partition: int, tag: str = "") -> set[str]:
    """``per_partition`` records in each partition, valued ``{tag}{topic}-{partition}-{i}``; their values."""
    values = [f"{tag}{topic}-{part}-{i}" for part in range(partitions) for i in range(per_partition)]
    kafka_io.produce(broker, topic, values, partition=[part for part in range(partitions) for _ in range(per_partition)])
    return set(values)


# ------------------------------------------------------------------------------ consumer helpers


def ck(broker: BrokerProcess, group: str, client_id: str, strategy: str, topics: list[str], **conf) -> Consumer:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": client_id,
                  "partition.assignment.strategy": strategy, "session.timeout.ms": 3000,
                  "heartbeat.interval.ms": 300, "max.poll.interval.ms": 10_000, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, **conf})
    c.subscribe(topics)
    return c


class KP:
    """A kafka-python consumer polled by its own thread (its joins block inside poll)."""

    def __init__(self, broker: BrokerProcess, group: str, client_id: str, assignor, topics: list[str]) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap, group_id=group, client_id=client_id,
            # Kafka's defaults for the session (a 3 s session expired members of a loaded 2-core machine's
            # CI run again and again, and the group never settled in 60 s); heartbeats every second
            partition_assignment_strategy=[assignor], session_timeout_ms=10_000, heartbeat_interval_ms=1000,
            max_poll_interval_ms=30_000, auto_offset_reset="earliest", enable_auto_commit=False)
        # Subscribed, then the topics' partitions known before the first join (the first poll): a
        # kafka-python 3.0 leader that assigns before its metadata has them hands out nothing, and
        # can lose the rejoin it makes when they appear (see test_cluster_coordinators'
        # kafka_python_member). Asked before subscribing, the coordinator's snapshot can still lack them.
        self.consumer.subscribe(topics)
        for topic in topics:
            wait_for(lambda topic=topic: self.consumer.partitions_for_topic(topic), 10,
                     f"{topic}'s partitions in kafka-python's metadata")
        self.assigned: Assignment = set()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            self.consumer.poll(timeout_ms=100)
            self.assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(10)
        self.consumer.close()


def ck_assignment(c: Consumer) -> Assignment:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def settle_ck(consumers: dict[str, Consumer], expected: dict[str, Assignment], timeout: float = 20) -> None:
    def poll() -> None:
        for c in consumers.values():
            c.poll(0.05)

    wait_for(lambda: {n: ck_assignment(c) for n, c in consumers.items()} == expected, timeout,
             f"the assignment {expected}", poll=poll)


def tps(spec: str) -> Assignment:
    """``"t0p0 t1p2"`` -> {("t0", 0), ("t1", 2)}, with topic names prefixed by the caller."""
    out = set()
    for item in spec.split():
        topic, _, part = item.rpartition("p")
        out.add((topic, int(part)))
    return out


def named(prefix: str, spec: str) -> Assignment:
    return {(prefix + t, p) for t, p in tps(spec)}


# ------------------------------------------------------------------- the design documents' examples

RANGE_2x3 = {"C0": "t0p0 t0p1 t1p0 t1p1", "C1": "t0p2 t1p2"}
ROUNDROBIN_2x3 = {"C0": "t0p0 t0p2 t1p1", "C1": "t0p1 t1p0 t1p2"}


@pytest.mark.parametrize(("strategy", "expected"), [("range", RANGE_2x3), ("roundrobin", ROUNDROBIN_2x3)])
def test_confluent_two_consumers_two_topics(broker: BrokerProcess, admin: AdminClient, strategy: str,
                                            expected: dict[str, str]) -> None:
    prefix = f"ck-{strategy}-"
    create_topics(admin, **{prefix + "t0": 3, prefix + "t1": 3})
    consumers = {}
    for name in ("C0", "C1"):
        consumers[name] = ck(broker, prefix + "group", name, strategy, [prefix + "t0", prefix + "t1"])
    try:
        settle_ck(consumers, {n: named(prefix, s) for n, s in expected.items()})
    finally:
        for c in consumers.values():
            c.close()


@pytest.mark.parametrize(("assignor", "expected"),
                         [(RangePartitionAssignor, RANGE_2x3), (RoundRobinPartitionAssignor, ROUNDROBIN_2x3)])
def test_kafka_python_two_consumers_two_topics(broker: BrokerProcess, admin: AdminClient, assignor,
                                               expected: dict[str, str]) -> None:
    prefix = f"kp-{assignor.name}-"
    create_topics(admin, **{prefix + "t0": 3, prefix + "t1": 3})
    consumers = {n: KP(broker, prefix + "group", n, assignor, [prefix + "t0", prefix + "t1"]) for n in ("C0", "C1")}
    try:
        want = {n: named(prefix, s) for n, s in expected.items()}
        wait_for(lambda: {n: c.assigned for n, c in consumers.items()} == want, 30, f"the assignment {want}")
    finally:
        for c in consumers.values():
            c.close()


THREE_SUBSCRIPTIONS = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
ROUNDROBIN_3 = {"C0": "t0p0", "C1": "t1p0", "C2": "t1p1 t2p0 t2p1 t2p2"}
STICKY_3 = {"C0": "t0p0", "C1": "t1p0 t1p1", "C2": "t2p0 t2p1 t2p2"}


# kafka-python 3.0.12's RoundRobinPartitionAssignor fails on members with different subscriptions (it
# looks a member up by a (group_instance_id, member_id) pair: KeyError), so that example runs with
# confluent-kafka below; the sticky one with kafka-python.
@pytest.mark.parametrize(("assignor", "expected"), [(StickyPartitionAssignor, STICKY_3)])
def test_kafka_python_three_consumers_different_subscriptions(broker: BrokerProcess, admin: AdminClient, assignor,
                                                              expected: dict[str, str]) -> None:
    prefix = f"kp3-{assignor.name}-"
    create_topics(admin, **{prefix + "t0": 1, prefix + "t1": 2, prefix + "t2": 3})
    consumers: dict[str, KP] = {}
    try:
        for name, topics in THREE_SUBSCRIPTIONS.items():  # one after the other, each once balanced
            consumers[name] = KP(broker, prefix + "group", name, assignor, [prefix + t for t in topics])
            # 60 s: a kafka-python rebalance needs several of its poll rounds, which a loaded 2-core machine
            # stretched past 30 s once (it takes ~11 s alone)
            wait_for(lambda c=consumers[name]: bool(c.assigned), 60, f"partitions for {name}")
        want = {n: named(prefix, s) for n, s in expected.items()}
        wait_for(lambda: {n: c.assigned for n, c in consumers.items()} == want, 60, f"the assignment {want}")
    finally:
        for c in consumers.values():
            c.close()


def test_confluent_roundrobin_three_consumers_different_subscriptions(broker: BrokerProcess,
                                                                       admin: AdminClient) -> None:
    prefix = "ck3-"
    create_topics(admin, **{prefix + "t0": 1, prefix + "t1": 2, prefix + "t2": 3})
    consumers = {n: ck(broker, prefix + "group", n, "roundrobin", [prefix + t for t in topics])
                 for n, topics in THREE_SUBSCRIPTIONS.items()}
    try:
        settle_ck(consumers, {n: named(prefix, s) for n, s in ROUNDROBIN_3.items()})
    finally:
        for c in consumers.values():
            c.close()


def test_confluent_cooperative_sticky_balances_and_consumes_everything(broker: BrokerProcess,
                                                                        admin: AdminClient) -> None:
    topic = "coop"
    create_topics(admin, coop=6)
    values = produce(broker, topic, 6, 20)
    consumed: list[str] = []
    consumers = {n: ck(broker, "coop-group", n, "cooperative-sticky", [topic]) for n in ("A", "B")}

    def poll() -> None:
        for c in consumers.values():
            m = c.poll(0.05)
            if m is not None and not m.error():
                consumed.append(m.value().decode())

    try:
        # (Nothing is committed here, so a partition that moves is read again from the start.)
        wait_for(lambda: sorted(len(ck_assignment(c)) for c in consumers.values()) == [3, 3]
                 and set(consumed) >= values, 30, "a 3/3 split and every record", poll=poll)
        a, b = (ck_assignment(c) for c in consumers.values())
        assert a | b == {(topic, p) for p in range(6)} and not a & b
    finally:
        for c in consumers.values():
            c.close()


# ------------------------------------------------------------------------- join, leave and die

WORKER = textwrap.dedent("""
    import signal, sys
    from confluent_kafka import Consumer
    bootstrap, group, topic, client_id = sys.argv[1:5]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                  "partition.assignment.strategy": "range", "session.timeout.ms": 4000,
                  "heartbeat.interval.ms": 300, "max.poll.interval.ms": 10000,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    c.subscribe([topic])
    print("started", flush=True)
    while not stop:
        m = c.poll(0.05)
        if m is None or m.error():
            continue
        print("msg", m.value().decode(), flush=True)
        c.commit(message=m, asynchronous=False)
        print("commit", m.partition(), m.offset() + 1, flush=True)
    c.close()
    print("closed", flush=True)
""")


class Worker:
    """A consumer in a subprocess that commits every message it handles, reporting on stdout."""

    def __init__(self, broker: BrokerProcess, group: str, topic: str, client_id: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, broker.bootstrap, group, topic, client_id],
                                     stdout=subprocess.PIPE, text=True)
        self.consumed: list[str] = []
        self.committed: dict[int, int] = {}
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            kind, *rest = line.split()
            if kind == "msg":
                self.consumed.append(rest[0])
            elif kind == "commit":
                self.committed[int(rest[0])] = int(rest[1])

    def stop(self, sig: int) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(20)


def test_partitions_move_when_members_join_leave_and_die(broker: BrokerProcess, admin: AdminClient) -> None:
    topic, group = "jld", "jld-group"
    create_topics(admin, jld=4)
    everything = produce(broker, topic, 4, 25, "a")
    main = ck(broker, group, "main", "range", [topic])
    consumed: list[tuple[str, int, int]] = []

    def poll() -> None:
        m = main.poll(0.05)
        if m is not None and not m.error():
            consumed.append((m.value().decode(), m.partition(), m.offset()))
            main.commit(message=m, asynchronous=False)

    all_partitions = {(topic, p) for p in range(4)}
    try:
        wait_for(lambda: ck_assignment(main) == all_partitions and len(consumed) == 100, 20,
                 "main with every partition and record", poll=poll)

        # A member joins: the partitions are split; records produced now go to both.
        worker = Worker(broker, group, topic, "worker")
        wait_for(lambda: len(ck_assignment(main)) == 2, 20, "main with two partitions", poll=poll)
        everything |= produce(broker, topic, 4, 25, "b")
        wait_for(lambda: len(consumed) + len(worker.consumed) >= 200, 20, "200 records", poll=poll)
        assert worker.consumed, "the joining member got partitions with records"

        # It leaves cleanly (LeaveGroup): its partitions move at once, well within the session timeout.
        worker.stop(signal.SIGTERM)
        assert worker.lines[-1].strip() == "closed"
        moved = wait_for(lambda: ck_assignment(main) == all_partitions, 10, "main with every partition", poll=poll)
        assert moved < 3.0

        # Another member joins and dies (SIGKILL): its partitions move once its session (4 s) expires.
        doomed = Worker(broker, group, topic, "doomed")
        wait_for(lambda: len(ck_assignment(main)) == 2, 20, "main with two partitions", poll=poll)
        everything |= produce(broker, topic, 4, 25, "c")
        wait_for(lambda: len(consumed) + len(worker.consumed) + len(doomed.consumed) >= 300, 20, "300 records",
                 poll=poll)
        doomed.stop(signal.SIGKILL)
        everything |= produce(broker, topic, 4, 25, "d")
        moved = wait_for(lambda: ck_assignment(main) == all_partitions, 20, "main with every partition", poll=poll)
        assert 2.0 < moved < 4.0 + 4.0
        wait_for(lambda: {v for v, _, _ in consumed} | set(worker.consumed) | set(doomed.consumed) >= everything,
                 20, "every record", poll=poll)
    finally:
        main.close()

    # Nothing consumed twice after a clean commit: a record consumed by main and by a worker lies at or
    # after the worker's last committed offset of that partition (it was handled but not committed).
    by_workers = set(worker.consumed) | set(doomed.consumed)
    last_commit: dict[int, int] = {}
    for w in (worker, doomed):
        for p, off in w.committed.items():
            last_commit[p] = max(last_commit.get(p, 0), off)
    for value, partition, offset in consumed:
        if value in by_workers:
            assert offset >= last_commit.get(partition, 0), f"{value} was committed by a worker, then read again"
    assert len(consumed) == len({v for v, _, _ in consumed})


def test_static_member_closing_keeps_its_partitions_until_its_session_expires(broker: BrokerProcess,
                                                                             admin: AdminClient) -> None:
    topic, group = "static", "static-group"
    create_topics(admin, static=2)
    dynamic = ck(broker, group, "dyn", "range", [topic])
    static = ck(broker, group, "stat", "range", [topic], **{"group.instance.id": "instance-1"})
    consumers = {"dyn": dynamic, "stat": static}
    try:
        wait_for(lambda: all(len(ck_assignment(c)) == 1 for c in consumers.values()), 20,
                 "a partition for each member", poll=lambda: [c.poll(0.05) for c in consumers.values()])
        described = admin.describe_consumer_groups([group])[group].result(10)
        assert {m.group_instance_id for m in described.members} == {None, "instance-1"}
        static.close()  # a static member does not send LeaveGroup
        closed_at = time.monotonic()
        wait_for(lambda: len(ck_assignment(dynamic)) == 2, 15, "the dynamic member with both partitions",
                 poll=lambda: dynamic.poll(0.05))
        assert time.monotonic() - closed_at > 2.0  # only after the 3 s session timeout
    finally:
        dynamic.close()


# ---------------------------------------------------------------------------- offsets, admin


def test_committed_offsets_survive_a_restart(fresh_broker: BrokerProcess) -> None:
    b = fresh_broker
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    create_topics(a, durable=2)
    produce(b, "durable", 2, 10)
    c = ck(b, "durable-group", "c", "range", ["durable"])
    seen = []
    wait_for(lambda: len(seen) >= 6, 20, "six records",
             poll=lambda: (m := c.poll(0.05)) is not None and not m.error() and seen.append(m) is None)
    c.commit(offsets=[TopicPartition("durable", 0, 6), TopicPartition("durable", 1, 3)], asynchronous=False)
    c.close()
    b.restart()
    c = ck(b, "durable-group", "c", "range", ["durable"])
    try:
        committed = c.committed([TopicPartition("durable", 0), TopicPartition("durable", 1)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 6), (1, 3)]
        first: dict[int, int] = {}
        wait_for(lambda: len(first) == 2, 20, "a record from each partition",
                 poll=lambda: (m := c.poll(0.05)) is not None and not m.error()
                 and first.setdefault(m.partition(), m.offset()) is not None)
        assert first == {0: 6, 1: 3}
    finally:
        c.close()


def test_expired_offsets_disappear_and_leave_tombstones(broker: BrokerProcess, admin: AdminClient) -> None:
    create_topics(admin, expiring=1)
    group = "expiring-group"
    Topic, Partition = OffsetCommitRequest.OffsetCommitRequestTopic, OffsetCommitRequest.OffsetCommitRequestPartition
    with WireClient.connect(broker.bootstrap) as client:
        commit = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                     retention_time_ms=1000, topics=[Topic(name="expiring", partitions=[
                                         Partition(partition_index=0, committed_offset=5, committed_metadata="m")])])
        response = client.request(commit, 2)  # v2-v4 carry a per-commit retention
        assert response.topics[0].partitions[0].error_code == 0

        def fetched() -> int:
            request = OffsetFetchRequest(group_id=group, topics=[
                OffsetFetchRequest.OffsetFetchRequestTopic(name="expiring", partition_indexes=[0])])
            return client.request(request, 1).topics[0].partitions[0].committed_offset

        def listed() -> set[str]:
            return {g.group_id for g in client.request(ListGroupsRequest(), 0).groups}

        assert fetched() == 5 and group in listed()
        wait_for(lambda: fetched() == -1, 10, "the offset to expire")
        wait_for(lambda: group not in listed(), 5, "the empty group to go")
    # The tombstone is in the group's __consumer_offsets partition.
    key = serialize(CoordinatorRecord(OffsetCommitKey(group, "expiring", 0)))[0]
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "tombstone-reader",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS), 0)])
    values = []
    try:
        wait_for(lambda: len(values) >= 2, 10, "the commit and its tombstone",
                 poll=lambda: (m := reader.poll(0.1)) is not None and not m.error() and m.key() == key
                 and values.append(m.value()) is None)
    finally:
        reader.close()
    assert values[0] is not None and values[-1] is None


def test_delete_groups(broker: BrokerProcess, admin: AdminClient) -> None:
    create_topics(admin, deletable=1)
    produce(broker, "deletable", 1, 3)
    idle = ck(broker, "idle-group", "c", "range", ["deletable"])
    wait_for(lambda: bool(ck_assignment(idle)), 20, "an assignment", poll=lambda: idle.poll(0.05))
    idle.commit(offsets=[TopicPartition("deletable", 0, 2)], asynchronous=False)
    idle.close()
    active = ck(broker, "active-group", "c", "range", ["deletable"])
    try:
        wait_for(lambda: bool(ck_assignment(active)), 20, "an assignment", poll=lambda: active.poll(0.05))
        futures = admin.delete_consumer_groups(["idle-group", "active-group", "no-such-group"])
        futures["idle-group"].result(10)
        errors = {}
        for name in ("active-group", "no-such-group"):
            with pytest.raises(KafkaException) as e:
                futures[name].result(10)
            errors[name] = e.value.args[0].code()
        assert errors == {"active-group": ErrorCode.NON_EMPTY_GROUP, "no-such-group": ErrorCode.GROUP_ID_NOT_FOUND}
        listed = {g.group_id for g in admin.list_consumer_groups().result(10).valid}
        assert "active-group" in listed and "idle-group" not in listed
    finally:
        active.close()
    with WireClient.connect(broker.bootstrap) as client:
        request = OffsetFetchRequest(group_id="idle-group", topics=None)
        assert client.request(request, 3).topics == []


def test_describe_and_list_groups(broker: BrokerProcess, admin: AdminClient) -> None:
    create_topics(admin, described=2)
    consumers = {n: ck(broker, "described-group", n, "range", ["described"]) for n in ("d0", "d1")}
    try:
        wait_for(lambda: all(len(ck_assignment(c)) == 1 for c in consumers.values()), 20,
                 "a partition for each member", poll=lambda: [c.poll(0.05) for c in consumers.values()])
        d = admin.describe_consumer_groups(["described-group"])["described-group"].result(10)
        assert d.state.name == "STABLE" and d.partition_assignor == "range"
        assert sorted(m.client_id for m in d.members) == ["d0", "d1"]
        assert all(m.host == "/127.0.0.1" for m in d.members)
        assert sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions) == [0, 1]
        stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(10).valid
        assert "described-group" in {g.group_id for g in stable}
    finally:
        for c in consumers.values():
            c.close()


# ------------------------------------------------------------------------------ bad requests


def test_find_coordinator_in_every_form(broker: BrokerProcess) -> None:
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    with WireClient.connect(broker.bootstrap) as client:
        for version in range(4):
            r = client.request(FindCoordinatorRequest(key="any-group"), version)
            assert (r.error_code, r.node_id, r.port) == (0, 0, port)
        r = client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "", "b"]), 4)
        assert [(c.key, c.error_code, c.port) for c in r.coordinators] == [("a", 0, port), ("", 0, port),
                                                                           ("b", 0, port)]
        r = client.request(FindCoordinatorRequest(key_type=1, coordinator_keys=["txn"]), 6)  # a transactional id
        assert (r.coordinators[0].error_code, r.coordinators[0].port) == (0, port)
        r = client.request(FindCoordinatorRequest(key="x", key_type=5), 3)
        assert (r.error_code, r.node_id) == (ErrorCode.INVALID_REQUEST, -1)


def test_invalid_group_requests(broker: BrokerProcess, admin: AdminClient) -> None:
    create_topics(admin, invalid=1)
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]

    def join(client: WireClient, group: str, session_ms: int, member_id: str = ""):
        return client.request(JoinGroupRequest(group_id=group, session_timeout_ms=session_ms,
                                               rebalance_timeout_ms=5000, member_id=member_id,
                                               protocol_type="consumer", protocols=protocols), 3)

    with WireClient.connect(broker.bootstrap, client_id="raw") as client:
        assert join(client, "", 5000).error_code == ErrorCode.INVALID_GROUP_ID
        assert join(client, "raw-group", 999).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
        assert join(client, "raw-group", 1_800_001).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
        assert join(client, "raw-group", 5000, "not-a-member").error_code == ErrorCode.UNKNOWN_MEMBER_ID
        joined = join(client, "raw-group", 5000)
        assert joined.error_code == 0 and joined.member_id.startswith("raw-") and joined.leader == joined.member_id
        me, generation = joined.member_id, joined.generation_id
        heartbeat = client.request(HeartbeatRequest(group_id="raw-group", generation_id=generation + 1, member_id=me), 1)
        assert heartbeat.error_code == ErrorCode.ILLEGAL_GENERATION
        heartbeat = client.request(HeartbeatRequest(group_id="raw-group", generation_id=generation, member_id="who"), 1)
        assert heartbeat.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        sync = client.request(SyncGroupRequest(group_id="raw-group", generation_id=generation - 1, member_id=me), 1)
        assert sync.error_code == ErrorCode.ILLEGAL_GENERATION
        sync = client.request(SyncGroupRequest(group_id="raw-group", generation_id=generation, member_id=me), 1)
        assert sync.error_code == 0
        Topic = OffsetCommitRequest.OffsetCommitRequestTopic
        Partition = OffsetCommitRequest.OffsetCommitRequestPartition
        commit = OffsetCommitRequest(group_id="raw-group", generation_id_or_member_epoch=-1, member_id="", topics=[
            Topic(name="invalid", partitions=[Partition(partition_index=0, committed_offset=1)]),
            Topic(name="no-such-topic", partitions=[Partition(partition_index=0, committed_offset=1)])])
        codes = [t.partitions[0].error_code for t in client.request(commit, 8).topics]
        assert codes == [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        commit.generation_id_or_member_epoch, commit.member_id = generation - 1, me
        assert client.request(commit, 8).topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
        commit.generation_id_or_member_epoch = generation
        commit.topics[0].partitions[0].committed_metadata = "x" * 4097
        assert client.request(commit, 8).topics[0].partitions[0].error_code == ErrorCode.OFFSET_METADATA_TOO_LARGE


def test_multi_group_offset_fetch_offset_delete_and_list_filters(broker: BrokerProcess, admin: AdminClient) -> None:
    create_topics(admin, multi=2)
    Topic, Partition = OffsetCommitRequest.OffsetCommitRequestTopic, OffsetCommitRequest.OffsetCommitRequestPartition
    FetchGroup = OffsetFetchRequest.OffsetFetchRequestGroup
    with WireClient.connect(broker.bootstrap) as client:
        for group, offset in (("multi-a", 3), ("multi-b", 7)):
            commit = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                Topic(name="multi", partitions=[Partition(partition_index=p, committed_offset=offset + p)
                                                for p in (0, 1)])])
            assert {p.error_code for p in client.request(commit, 9).topics[0].partitions} == {0}
        request = OffsetFetchRequest(require_stable=True, groups=[
            FetchGroup(group_id="multi-a", topics=None),
            FetchGroup(group_id="multi-b", topics=[OffsetFetchRequest.OffsetFetchRequestTopics(
                name="multi", partition_indexes=[1, 5])]),
            FetchGroup(group_id="multi-none", topics=None)])
        response = client.request(request, 8)
        got = {g.group_id: {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions}
               for g in response.groups}
        assert got == {"multi-a": {("multi", 0): 3, ("multi", 1): 4}, "multi-b": {("multi", 1): 8, ("multi", 5): -1},
                       "multi-none": {}}
        assert {g.error_code for g in response.groups} == {0}

        delete = OffsetDeleteRequest(group_id="multi-a", topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(name="multi", partitions=[
                OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)]),
            OffsetDeleteRequest.OffsetDeleteRequestTopic(name="gone", partitions=[
                OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])])
        deleted = client.request(delete, 0)
        assert deleted.error_code == 0
        assert {t.name: [p.error_code for p in t.partitions] for t in deleted.topics} == {
            "multi": [0], "gone": [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]}
        again = client.request(OffsetFetchRequest(groups=[FetchGroup(group_id="multi-a", topics=None)]), 8)
        assert [(p.partition_index, p.committed_offset) for p in again.groups[0].topics[0].partitions] == [(1, 4)]
        delete.group_id = "multi-unknown"
        assert client.request(delete, 0).error_code == ErrorCode.GROUP_ID_NOT_FOUND

        listed = client.request(ListGroupsRequest(states_filter=["Empty"], types_filter=["classic"]), 5).groups
        assert {"multi-a", "multi-b"} <= {g.group_id for g in listed}
        assert all((g.group_state, g.group_type) == ("Empty", "classic") for g in listed)
        assert client.request(ListGroupsRequest(types_filter=["share"]), 5).groups == []
