"""The transactional APIs and their error paths, Apache Kafka against Tidelog.

The same sequences of requests, on the wire at the versions real clients send (Tidelog's wire
client), go to a Kafka broker and to a Tidelog broker; every answer is reduced to what must agree
(error codes by name, producer epochs, states, partitions, offsets) with producer ids replaced by
their order of appearance and times by whether they are set, and the two lists are compared.
Scenarios: InitProducerId (timeouts, KIP-360 recovery, bad requests), AddPartitionsToTxn (errors,
the batched and verify-only forms of KIP-890), EndTxn (every state, version 1 and version 2
tables), fencing a producer with an open transaction (both protocols), AddOffsetsToTxn and
TxnOffsetCommit with require_stable, Produce into a transaction, DescribeTransactions,
ListTransactions, DescribeProducers, and a transaction aborted by its timeout. Then the Java client
(tests/java's ``Transactions`` scenario: commit, abort, sendOffsetsToTransaction, an open
transaction, a fencing second instance, Admin's three transaction calls, read_committed and
read_uncommitted) runs against both brokers and must see the same.

A difference is a test failure, or a ``broker_bug`` xfail naming it (listed in docs/transactions.md,
"Differences from Kafka"). ~60 s on 2 cores, Kafka's start included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.oracle import jvm
from tests.oracle.fixtures import SHARED_OVERRIDES
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    ApiKey,
    ApiVersionsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from tidelog.records import RecordBatchBuilder
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle_transactions")]

TOPIC, PARTITIONS = "txn-oracle", 3
RETRIABLE = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


@pytest.fixture(scope="module")
def broker_overrides() -> dict[str, str]:
    # One __transaction_state partition (Kafka loads 50 otherwise) and a quick timeout check.
    return {**SHARED_OVERRIDES, "transaction.state.log.num.partitions": "1",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}


def name(code: int) -> str:
    return ErrorCode(code).name


class Session:
    """One broker: a wire connection, and producer ids named in the order they appear."""

    def __init__(self, bootstrap: str) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        self.client = WireClient.connect(bootstrap, timeout=60)
        self.pids: dict[int, str] = {}
        self.until(lambda: self.client.request(FindCoordinatorRequest(key_type=1, coordinator_keys=["probe"]), 4)
                   .coordinators[0], "the transaction coordinator")
        self.until(lambda: self.client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["probe"]), 4)
                   .coordinators[0], "the group coordinator")
        # A fresh Kafka loads __transaction_state, and allocates producer ids, a moment after the first
        # FindCoordinator; it answers Produce for a new partition a moment after creating it.
        self.until(lambda: self.client.request(InitProducerIdRequest(transactional_id="probe",
                                                                     transaction_timeout_ms=60_000), 4),
                   "a loaded transaction coordinator")
        self.until(lambda: self.client.request(InitProducerIdRequest(transactional_id=None,
                                                                     transaction_timeout_ms=60_000), 4),
                   "a producer id")
        self.until(lambda: self._probe_produce(), "the topic's leaders")

    def _probe_produce(self) -> Any:
        for p in range(PARTITIONS):
            code = self.produce(None, p, self.batch(-1, -1, transactional=False), 9)
            if code != "NONE":
                return type("Answer", (), {"error_code": ErrorCode.NOT_COORDINATOR})()
        return type("Answer", (), {"error_code": 0})()

    @staticmethod
    def until(call: Callable[[], Any], what: str, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            answer = call()
            if answer is not None and getattr(answer, "error_code", 0) not in RETRIABLE:
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {timeout} s: {answer}")
            time.sleep(0.2)

    def pid(self, producer_id: int) -> str:
        if producer_id < 0:
            return str(producer_id)
        return self.pids.setdefault(producer_id, f"P{len(self.pids)}")

    # -- requests ----------------------------------------------------------------------------------------

    def init(self, txn_id: str | None, timeout_ms: int = 60_000, version: int = 4, producer_id: int = -1,
             producer_epoch: int = -1) -> tuple[str, int, int]:
        """(error, producer id, epoch); the raw id is in ``self.last_pid``."""
        r = self.client.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms,
                                                      producer_id=producer_id, producer_epoch=producer_epoch), version)
        self.last_pid = r.producer_id
        return name(r.error_code), self.pid(r.producer_id), r.producer_epoch

    def init_ok(self, txn_id: str, version: int = 4, timeout_ms: int = 60_000) -> tuple[int, int]:
        r = self.until(lambda: self.client.request(InitProducerIdRequest(
            transactional_id=txn_id, transaction_timeout_ms=timeout_ms), version), f"InitProducerId for {txn_id}")
        assert r.error_code == 0, name(r.error_code)
        self.pid(r.producer_id)
        return r.producer_id, r.producer_epoch

    def add(self, txn_id: str, pid: int, epoch: int, partitions: list[int], version: int = 3,
            topic: str = TOPIC) -> dict[int, str]:
        topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=partitions)]
        r = self.client.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=topics), version)
        return {p.partition_index: name(p.partition_error_code) for t in r.results_by_topic_v3_and_below
                for p in t.results_by_partition}

    def add_batched(self, version: int, *txns: tuple[str, int, int, bool, list[int]]) -> list[Any]:
        Txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
        request = AddPartitionsToTxnRequest(transactions=[
            Txn(transactional_id=t, producer_id=pid, producer_epoch=e, verify_only=v,
                topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=ps)])
            for t, pid, e, v, ps in txns])
        r = self.client.request(request, version)
        return [name(r.error_code), [(res.transactional_id, {p.partition_index: name(p.partition_error_code)
                                                             for t in res.topic_results for p in t.results_by_partition})
                                     for res in r.results_by_transaction]]

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> Any:
        r = self.client.request(EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                              committed=commit), version)
        if version >= 5:
            return name(r.error_code), self.pid(r.producer_id), r.producer_epoch
        return name(r.error_code)

    @staticmethod
    def batch(pid: int, epoch: int, seq: int = 0, *, transactional: bool = True) -> bytes:
        b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                               is_transactional=transactional)
        b.append(0, b"k", b"v")
        return b.build()

    def produce(self, txn_id: str | None, partition: int, records: bytes, version: int) -> str:
        data = ProduceRequest.PartitionProduceData(index=partition, records=records)
        r = self.client.request(ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[data])]), version)
        return name(r.responses[0].partition_responses[0].error_code)

    def describe(self, txn_id: str) -> Any:
        s = self.client.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0]
        if s.error_code:
            return name(s.error_code)
        return (s.transaction_state, self.pid(s.producer_id), s.producer_epoch, s.transaction_timeout_ms,
                s.transaction_start_time_ms >= 0, sorted((t.topic, sorted(t.partitions)) for t in s.topics))

    def producers(self, partition: int, topic: str = TOPIC) -> Any:
        r = self.client.request(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name=topic, partition_indexes=[partition])]), 0)
        p = r.topics[0].partitions[0]
        if p.error_code:
            return name(p.error_code)
        return sorted((self.pid(s.producer_id), s.producer_epoch, s.last_sequence, s.current_txn_start_offset >= 0)
                      for s in p.active_producers)

    def offset(self, group: str, partition: int, stable: bool) -> tuple[str, int]:
        fetch = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[partition])])],
            require_stable=stable)
        g = self.client.request(fetch, 8).groups[0]
        if g.error_code:
            return name(g.error_code), -1
        part = g.topics[0].partitions[0]
        return name(part.error_code), part.committed_offset

    def txn_offset_commit(self, txn_id: str, group: str, pid: int, epoch: int, offset: int, version: int = 3) -> str:
        commit = TxnOffsetCommitRequest(
            transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=epoch,
            topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])
        return name(self.client.request(commit, version).topics[0].partitions[0].error_code)

    def add_offsets(self, txn_id: str, pid: int, epoch: int, group: str) -> str:
        return name(self.client.request(AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=pid,
                                                               producer_epoch=epoch, group_id=group), 3).error_code)

    def wait_state(self, txn_id: str, states: set[str], timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            d = self.describe(txn_id)
            if (isinstance(d, tuple) and d[0] in states) or time.monotonic() > deadline:
                return d
            time.sleep(0.1)

    def close(self) -> None:
        self.client.close()


# ----------------------------------------------------------------------------------------- scenarios
# Each takes a Session and returns a list of (step, outcome); epochs are given relative to the first.


def scenario_init(s: Session) -> list:
    out: list = []
    err, p, e0 = s.init("init-a")
    pid = s.last_pid
    out.append(("new id", (err, p, e0)))
    out.append(("again", s.init("init-a")[0::2]))
    out.append(("empty id", s.init("")[0]))
    out.append(("timeout above max", s.init("init-a", timeout_ms=900_001)[0]))
    out.append(("timeout 0", s.init("init-a", timeout_ms=0)[0]))
    out.append(("id without epoch", s.init("init-a", producer_id=pid)[0]))
    out.append(("KIP-360 current epoch", s.init("init-a", version=4, producer_id=pid, producer_epoch=1)))
    out.append(("KIP-360 retry of that", s.init("init-a", version=4, producer_id=pid, producer_epoch=1)))
    out.append(("KIP-360 stale epoch", s.init("init-a", version=4, producer_id=pid, producer_epoch=0)[0]))
    out.append(("KIP-360 other producer", s.init("init-a", version=4, producer_id=pid + 777, producer_epoch=2)[0]))
    out.append(("idempotent (no id)", s.init(None)[0]))
    out.append(("describe", s.describe("init-a")))
    return out


def scenario_add_partitions(s: Session) -> list:
    pid, e = s.init_ok("add-a")
    out: list = [
        ("unknown id", s.add("add-unknown", pid, e, [0])),
        ("other producer id", s.add("add-a", pid + 777, e, [0])),
        ("wrong epoch v2", s.add("add-a", pid, e + 1, [0], version=2)),
        ("wrong epoch v3", s.add("add-a", pid, e + 1, [0])),
        ("unknown partition", s.add("add-a", pid, e, [0, 99])),
        ("unknown topic", s.add("add-a", pid, e, [0], topic="no-such-topic")),
        ("add 0 1", s.add("add-a", pid, e, [0, 1])),
        ("add 0 again", s.add("add-a", pid, e, [0])),
        ("describe", s.describe("add-a")),
        ("verify-only", s.add_batched(4, ("add-a", pid, e, True, [1, 2]))),
        ("verify-only wrong epoch", s.add_batched(4, ("add-a", pid, e + 1, True, [1]))),
        ("verify-only unknown id", s.add_batched(4, ("add-unknown", pid, e, True, [1]))),
        ("batched add 2", s.add_batched(4, ("add-a", pid, e, False, [2]))),
        ("describe after batched add", s.describe("add-a")),
        ("abort", s.end("add-a", pid, e, False)),
        ("describe after abort", s.wait_state("add-a", {"CompleteAbort"})),
    ]
    return out


def scenario_end_txn_v1(s: Session) -> list:
    pid, e = s.init_ok("end-a")
    out: list = [
        ("commit in Empty", s.end("end-a", pid, e, True)),
        ("abort in Empty", s.end("end-a", pid, e, False)),
        ("unknown id", s.end("end-unknown", pid, e, True)),
        ("produce v11 not added", s.produce("end-a", 0, s.batch(pid, e), 11)),
        ("produce v10 not added", s.produce("end-a", 0, s.batch(pid, e), 10)),
        ("add 0", s.add("end-a", pid, e, [0])),
        ("produce v11", s.produce("end-a", 0, s.batch(pid, e), 11)),
        ("producers of 0 while open", s.producers(0)),
        ("commit wrong epoch", s.end("end-a", pid, e + 1, True)),
        ("commit other producer", s.end("end-a", pid + 777, e, True)),
        ("commit", s.end("end-a", pid, e, True)),
        ("describe", s.wait_state("end-a", {"CompleteCommit"})),
        ("commit again (a retry)", s.end("end-a", pid, e, True)),
        ("abort after commit", s.end("end-a", pid, e, False)),
        ("producers of 0 after", s.producers(0)),
    ]
    return out


def scenario_end_txn_v2(s: Session) -> list:
    pid, e = s.init_ok("end-b", version=5)
    out: list = [
        ("produce v12 (implicit add)", s.produce("end-b", 2, s.batch(pid, e), 12)),
        ("describe", s.describe("end-b")),
        ("commit", s.end("end-b", pid, e, True, 5)),
    ]
    # Kafka answers EndTxn once PrepareCommit is written and the markers follow: a retry meets
    # PrepareCommit (CONCURRENT_TRANSACTIONS) or CompleteCommit depending on timing. Compared once complete.
    s.wait_state("end-b", {"CompleteCommit"})
    out += [
        ("commit retry", s.end("end-b", pid, e, True, 5)),
        ("commit with the new epoch", s.end("end-b", pid, e + 1, True, 5)),
        ("abort with the new epoch (empty abort)", s.end("end-b", pid, e + 1, False, 5)),
    ]
    s.wait_state("end-b", {"CompleteAbort"})
    out += [
        ("abort retry", s.end("end-b", pid, e + 1, False, 5)),
        ("commit with an old epoch", s.end("end-b", pid, e, True, 5)),
        ("produce v12 with the old epoch", s.produce("end-b", 2, s.batch(pid, e, 1), 12)),
        ("producers of 2", s.producers(2)),
        ("describe after", s.describe("end-b")),
    ]
    pid2, e2 = s.init_ok("end-c", version=5)
    out += [("commit in Empty", s.end("end-c", pid2, e2, True, 5)),
            ("abort in Empty", s.end("end-c", pid2, e2, False, 5))]
    return out


def _fence(s: Session, txn_id: str, version: int) -> list:
    """A producer with an open transaction in partition 1, then a second instance of the same id."""
    pid, e = s.init_ok(txn_id, version=4 if version == 1 else 5)
    out: list = []
    if version == 1:
        out.append(("add 1", s.add(txn_id, pid, e, [1])))
        out.append(("produce", s.produce(txn_id, 1, s.batch(pid, e), 11)))
    else:
        out.append(("produce v12", s.produce(txn_id, 1, s.batch(pid, e), 12)))
    v = 4 if version == 1 else 5
    r = s.client.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), v)
    out.append(("second instance", (name(r.error_code), r.producer_epoch if r.error_code == 0 else None)))
    r = s.until(lambda: s.client.request(InitProducerIdRequest(transactional_id=txn_id,
                                                               transaction_timeout_ms=60_000), v), "InitProducerId")
    deadline = time.monotonic() + 20
    while r.error_code == ErrorCode.CONCURRENT_TRANSACTIONS and time.monotonic() < deadline:
        time.sleep(0.1)
        r = s.client.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), v)
    out.append(("second instance, retried", (name(r.error_code), s.pid(r.producer_id), r.producer_epoch - e)))
    out += [
        ("describe", s.describe(txn_id)[:3]),
        ("producers of 1 (the abort marker)", [(p, epoch - e, seq, open_) for p, epoch, seq, open_ in s.producers(1)]),
        ("zombie add", s.add(txn_id, pid, e, [0])),
        ("zombie commit", s.end(txn_id, pid, e, True, 3 if version == 1 else 5)),
        ("zombie produce", s.produce(txn_id, 1, s.batch(pid, e, 1), 11 if version == 1 else 12)),
    ]
    return out


def scenario_fence_v1(s: Session) -> list:
    return _fence(s, "fence-a", 1)


def scenario_fence_v2(s: Session) -> list:
    return _fence(s, "fence-b", 2)


def scenario_offsets(s: Session) -> list:
    pid, e = s.init_ok("off-a")
    out: list = [
        ("add offsets unknown id", s.add_offsets("off-unknown", pid, e, "og")),
        ("add offsets wrong epoch", s.add_offsets("off-a", pid, e + 1, "og")),
        ("txn offset commit before add offsets", s.txn_offset_commit("off-a", "og", pid, e, 3)),
        ("add offsets", s.add_offsets("off-a", pid, e, "og")),
        ("describe", s.describe("off-a")[::5]),
        ("txn offset commit wrong epoch", s.txn_offset_commit("off-a", "og", pid, e + 1, 4)),
        ("txn offset commit", s.txn_offset_commit("off-a", "og", pid, e, 5)),
        ("fetch require_stable while open", s.offset("og", 0, True)),
        ("fetch while open", s.offset("og", 0, False)),
        ("commit", s.end("off-a", pid, e, True)),
    ]
    s.wait_state("off-a", {"CompleteCommit"})
    out.append(("fetch require_stable after", s.until(lambda: _answer(s.offset("og", 0, True)), "a stable offset")
                .value))
    pid2, e2 = s.init_ok("off-b", version=5)
    out += [("txn offset commit v5 (implicit add)", s.txn_offset_commit("off-b", "og2", pid2, e2, 9, version=5)),
            ("abort v5", s.end("off-b", pid2, e2, False, 5))]
    s.wait_state("off-b", {"CompleteAbort"})
    out.append(("fetch after the abort", s.offset("og2", 0, True)))
    return out


def _answer(value: tuple[str, int]) -> Any:
    """An answer for ``Session.until``: retried while UNSTABLE_OFFSET_COMMIT (markers still being written)."""
    code = ErrorCode.NOT_COORDINATOR if value[0] == "UNSTABLE_OFFSET_COMMIT" else 0
    return type("Answer", (), {"error_code": code, "value": value})()


def scenario_describe_and_list(s: Session) -> list:
    pid, e = s.init_ok("list-a")
    s.add("list-a", pid, e, [0])
    s.produce("list-a", 0, s.batch(pid, e), 11)

    def listed(**filters: Any) -> Any:
        r = s.client.request(ListTransactionsRequest(**filters), 1)
        return (name(r.error_code), sorted(r.unknown_state_filters),
                sorted((t.transactional_id, s.pid(t.producer_id), t.transaction_state)
                       for t in r.transaction_states if t.transactional_id.startswith("list-")))

    out: list = [
        ("describe unknown id", s.describe("list-unknown")),
        ("describe empty id", s.describe("")),
        ("list Ongoing", listed(state_filters=["Ongoing"])),
        ("list unknown state", listed(state_filters=["Bogus", "Ongoing"])),
        ("list by producer id", listed(producer_id_filters=[pid])),
        ("list by an unknown producer id", listed(producer_id_filters=[pid + 777])),
        ("list open longer than an hour", listed(duration_filter=3_600_000)),
        ("list open longer than 0 ms", listed(duration_filter=0)),
        ("producers of an unknown partition", s.producers(99)),
        ("producers of an unknown topic", s.producers(0, topic="no-such-topic")),
    ]
    s.end("list-a", pid, e, False)
    return out


def scenario_timeout(s: Session) -> list:
    pid, e = s.init_ok("timeout-a", timeout_ms=1000)
    out: list = [("add 2", s.add("timeout-a", pid, e, [2])),
                 ("produce", s.produce("timeout-a", 2, s.batch(pid, e), 11))]
    d = s.wait_state("timeout-a", {"CompleteAbort"}, timeout=30)
    out += [
        ("describe after the timeout", (d[0], d[2] - e) if isinstance(d, tuple) else d),
        ("commit", s.end("timeout-a", pid, e, True)),
        ("add", s.add("timeout-a", pid, e, [2])),
        ("produce", s.produce("timeout-a", 2, s.batch(pid, e, 1), 11)),
        ("producers of 2", [(p, epoch - e, seq, open_) for p, epoch, seq, open_ in s.producers(2)]),
        ("the producer starts again", s.init("timeout-a", timeout_ms=1000)[0]),
    ]
    return out


SCENARIOS = {f.__name__.removeprefix("scenario_"): f for f in (
    scenario_init, scenario_add_partitions, scenario_end_txn_v1, scenario_end_txn_v2, scenario_fence_v1,
    scenario_fence_v2, scenario_offsets, scenario_describe_and_list, scenario_timeout)}


def run_all(bootstrap: str) -> dict[str, list]:
    """Every scenario against one broker (a scenario that raises gives one "raised" step)."""
    session = Session(bootstrap)
    try:
        out = {}
        for scenario, run in SCENARIOS.items():
            try:
                out[scenario] = run(session)
            except Exception as e:  # one failing scenario must not hide the others
                out[scenario] = [("raised", repr(e))]
        return out
    finally:
        session.close()


@pytest.fixture(scope="module")
def outcomes(kafka_broker, tidelog_broker) -> Iterator[dict[str, dict[str, list]]]:
    yield {"kafka": run_all(kafka_broker.bootstrap), "tidelog": run_all(tidelog_broker.bootstrap)}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_answers_as_kafka(outcomes, scenario: str) -> None:
    kafka, tidelog = outcomes["kafka"][scenario], outcomes["tidelog"][scenario]
    assert [step for step, _ in kafka] == [step for step, _ in tidelog], (kafka, tidelog)
    differences = [(step, k, t) for (step, k), (_, t) in zip(kafka, tidelog, strict=True) if k != t]
    assert differences == [], "\n".join(f"{step}: kafka {k!r}, tidelog {t!r}" for step, k, t in differences)


TRANSACTIONAL_APIS = (ApiKey.PRODUCE, ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN,
                      ApiKey.END_TXN, ApiKey.WRITE_TXN_MARKERS, ApiKey.TXN_OFFSET_COMMIT, ApiKey.DESCRIBE_TRANSACTIONS,
                      ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_PRODUCERS)

#: Newest versions Kafka 4.4 serves and Tidelog does not: none (Produce v13, TxnOffsetCommit v6 and
#: WriteTxnMarkers v2 are served since the codec follows Kafka 4.4's specs).
KNOWN_NEWER_IN_KAFKA: dict[str, tuple[int, int]] = {}


def advertised(bootstrap: str) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """The transactional APIs' (min, max) versions and the finalized features a broker advertises."""
    with WireClient.connect(bootstrap) as client:
        r = client.request(ApiVersionsRequest(client_software_name="tidelog-oracle", client_software_version="0"), 3)
    keys = {ApiKey(k.api_key).name: (k.min_version, k.max_version) for k in r.api_keys
            if k.api_key in TRANSACTIONAL_APIS}
    return keys, {f.name: f.max_version_level for f in r.finalized_features}


def test_newest_versions_and_transaction_version_as_kafka(kafka_broker, tidelog_broker) -> None:
    (kafka, kafka_features), (tidelog, tidelog_features) = advertised(kafka_broker.bootstrap), \
        advertised(tidelog_broker.bootstrap)
    assert set(kafka) == set(tidelog) == {k.name for k in TRANSACTIONAL_APIS}
    newer = {k: (kafka[k][1], tidelog[k][1]) for k in kafka if kafka[k][1] != tidelog[k][1]}
    assert newer == KNOWN_NEWER_IN_KAFKA
    # Tidelog keeps the old versions Kafka 4.0 dropped (KIP-896): never a higher minimum than Kafka's.
    assert all(tidelog[k][0] <= kafka[k][0] for k in kafka), (kafka, tidelog)
    assert kafka_features.get("transaction.version") == tidelog_features.get("transaction.version") == 2


# ------------------------------------------------------------------------------------- the Java client


def java_transactions(classpath: str, bootstrap: str) -> dict:
    done = jvm.run_java(classpath, "tidelog.oracle.Clients", bootstrap, "jt", "transactions", timeout=300)
    lines = jvm.json_lines(done.stdout)
    assert lines and "result" in lines[0], f"exit {done.returncode}: {lines}\n{done.stderr[-3000:]}"
    return lines[0]["result"]


def test_java_transactional_client_sees_what_it_sees_on_kafka(java_classpath, kafka_broker, tidelog_broker) -> None:
    kafka = java_transactions(java_classpath, kafka_broker.bootstrap)
    tidelog = java_transactions(java_classpath, tidelog_broker.bootstrap)
    # What the scenario must see on either broker (tests/java/.../Transactions.java).
    values = sorted(v for _, _, v in tidelog["read_committed"])
    expected = sorted([f"c-{i}" for i in range(60)] + [f"o-{i}" for i in range(15)] + ["b-0"])
    assert values == expected, "read_committed: the committed transactions only"
    uncommitted = sorted(v for _, _, v in tidelog["read_uncommitted"])
    assert uncommitted == sorted(expected + [f"a-{i}" for i in range(30)] + [f"z-{i}" for i in range(9)])
    assert tidelog["zombie_commit"] == "ProducerFencedException"
    assert tidelog["group_offsets"] == {"0": [7, "seven"], "1": [3, ""]}
    assert tidelog["open_describe"]["state"] == "Ongoing" and tidelog["final_describe"]["state"] == "CompleteCommit"
    for part in ("read_committed", "read_uncommitted"):  # offsets (markers included), per partition
        for broker in (kafka, tidelog):
            broker[part] = sorted(map(tuple, broker[part]))
    assert tidelog == kafka
