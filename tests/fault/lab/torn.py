"""Bufstream's torn transactions, reproduced through the client proxies: a Produce or an EndTxn held
back in the network until the transaction it belongs to has ended and the next one has begun.

Jepsen's Bufstream 0.1.0 analysis (2024) showed that Kafka's transaction protocol assumed ordered
delivery over separate connections: a delayed Produce of an aborted transaction could land in the
producer's next transaction (and commit), a delayed EndTxn could commit or abort the *next*
transaction. KIP-890 defends against it: part 1 (verification) refuses a transactional Produce for
a partition the coordinator does not have in an ongoing transaction; part 2 (transaction version 2:
Produce v12 / EndTxn v5) bumps the producer epoch at every EndTxn, so a request of the previous
transaction carries a fenced epoch.

The scenarios drive the protocol by hand (:class:`~tidelog.testing.client.WireClient`, exact
versions; ``tv=1``: AddPartitionsToTxn v3, Produce v11, EndTxn v4; ``tv=2``: Produce v12 and
EndTxn v5, partitions added implicitly) so that the interleaving is exact; only the held-back
request goes through a delay of the proxies (:meth:`~tests.fault.lab.tcp_proxy.ProxyNetwork.delay`).

* :func:`delayed_produce` -- transaction 1 writes ``t1-p1`` to partition 1 and ``t1-p0`` to
  partition 0, the latter held back; transaction 1 aborts; transaction 2 starts (TV1: adds
  partition 0; TV2: writes ``t2-p1``); then the held-back ``t1-p0`` arrives; transaction 2 writes
  ``t2-p0`` and commits. Torn if ``t1-p0`` (of the aborted transaction) is visible.
* :func:`delayed_end_txn` -- transaction 1 writes ``t1-p0``; its EndTxn(commit) is held back and
  sent again (a client's retry) which commits it; transaction 2 writes ``t2-p0``; the held-back
  commit arrives; the client aborts transaction 2. Torn if ``t2-p0`` is visible.

``python -m tests.fault.lab.torn`` runs them (the delayed Produce also arriving *before* transaction 2
begins, which KIP-890 part 1 refuses) with both transaction versions on a fresh cluster and prints
what happened.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.fault.lab.history import History
from tests.fault.lab.jepsen import fault_cluster
from tests.fault.lab.nemesis import CLIENTS, ClusterNetwork, node
from tests.fault.lab.workload import final_read
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ProduceRequest,
)
from tidelog.records import RecordBatchBuilder
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

PRODUCE, END_TXN = 0, 26
_RETRIABLE = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
              ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
              ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_LEADER_OR_FOLLOWER}
_names = itertools.count()


@dataclass
class Outcome:
    scenario: str
    tv: int
    steps: list[str] = field(default_factory=list)
    #: the error the held-back request got when it finally arrived (0: accepted)
    delayed_error: int | None = None
    #: read_committed, per partition, after everything ended
    visible: dict[int, list[str]] = field(default_factory=dict)
    torn: bool = False

    def describe(self) -> str:
        verdict = "TORN" if self.torn else "not torn"
        err = "accepted" if not self.delayed_error else ErrorCode(self.delayed_error).name
        return (f"{self.scenario} (transaction version {self.tv}): {verdict}; the held-back request: {err}; "
                f"read_committed {self.visible}\n    " + "\n    ".join(self.steps))


class _Producer:
    """One transactional producer spoken by hand."""

    def __init__(self, cluster: LocalCluster, network: ClusterNetwork, topic: str, txn_id: str, tv: int) -> None:
        self.cluster, self.network, self.topic, self.txn_id, self.tv = cluster, network, topic, txn_id, tv
        with WireClient.connect(network.client_bootstrap().split(",")[0], client_id="jepsen-torn") as c:
            found = []  # a first use creates __transaction_state: COORDINATOR_NOT_AVAILABLE meanwhile
            _retrying(lambda: (found.append(c.request(FindCoordinatorRequest(key=txn_id, key_type=1), 3)),
                               found[-1].error_code)[1], timeout=60)
            r = found[-1]
            assert r.error_code == 0, ErrorCode(r.error_code)
            # the coordinator through its client proxy (the address it advertises, in a cluster)
            self.coordinator_id, self.coordinator = r.node_id, network.clients[r.node_id].address
        self.coord = self.connect_coordinator()
        init = InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000)
        answers = []
        _retrying(lambda: (answers.append(self.coord.request(init, 5 if tv == 2 else 4)), answers[-1].error_code)[1],
                  timeout=60)
        r = answers[-1]
        assert r.error_code == 0, ErrorCode(r.error_code)
        self.pid, self.epoch = r.producer_id, r.producer_epoch
        self.seq: dict[int, int] = {}

    def connect_coordinator(self, timeout: float = 30.0) -> WireClient:
        return WireClient.connect(self.coordinator, client_id="jepsen-torn", timeout=timeout)

    def connect_leader(self, partition: int, timeout: float = 30.0) -> WireClient:
        leader = self.cluster.leader(self.topic, partition)
        return WireClient.connect(self.network.clients[leader].address, client_id="jepsen-torn", timeout=timeout)

    def add(self, *partitions: int) -> int:
        """AddPartitionsToTxn (TV1), retried as a client does while the previous transaction is
        still completing (CONCURRENT_TRANSACTIONS)."""
        if self.tv == 2:
            return 0
        return _retrying(lambda: self._add(partitions))

    def _add(self, partitions: tuple[int, ...]) -> int:
        topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=self.topic, partitions=list(partitions))]
        r = self.coord.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.txn_id, v3_and_below_producer_id=self.pid,
            v3_and_below_producer_epoch=self.epoch, v3_and_below_topics=topics), 3)
        return max(p.partition_error_code for t in r.results_by_topic_v3_and_below for p in t.results_by_partition)

    def produce_request(self, partition: int, value: str) -> tuple[ProduceRequest, int]:
        seq = self.seq.get(partition, 0)
        b = RecordBatchBuilder(producer_id=self.pid, producer_epoch=self.epoch, base_sequence=seq,
                               is_transactional=True)
        b.append(0, None, value.encode())
        data = ProduceRequest.PartitionProduceData(index=partition, records=b.build())
        request = ProduceRequest(transactional_id=self.txn_id, acks=-1, timeout_ms=10000, topic_data=[
            ProduceRequest.TopicProduceData(name=self.topic, partition_data=[data])])
        return request, 12 if self.tv == 2 else 11

    def produce(self, client: WireClient, partition: int, value: str) -> int:
        request, version = self.produce_request(partition, value)
        error = _retrying(lambda: client.request(request, version).responses[0].partition_responses[0].error_code)
        if error == 0:
            self.seq[partition] = self.seq.get(partition, 0) + 1
        return error

    def end_request(self, commit: bool) -> tuple[EndTxnRequest, int]:
        return (EndTxnRequest(transactional_id=self.txn_id, producer_id=self.pid, producer_epoch=self.epoch,
                              committed=commit), 5 if self.tv == 2 else 4)

    def ended(self, response) -> int:
        """Take a new epoch from an EndTxn v5 answer (transaction version 2 bumps it at every end)."""
        if response.error_code == 0 and self.tv == 2 and response.producer_epoch > self.epoch:
            self.epoch = response.producer_epoch
            self.seq.clear()  # a new epoch starts at sequence 0 everywhere
        return response.error_code


def _retrying(attempt, timeout: float = 15.0) -> int:
    """``attempt()`` again while it answers a retriable error (CONCURRENT_TRANSACTIONS ...)."""
    deadline = time.monotonic() + timeout
    while True:
        error = attempt()
        if error not in _RETRIABLE or time.monotonic() > deadline:
            return error
        time.sleep(0.1)


def _name(code: int) -> str:
    return ErrorCode(code).name


def _read_committed(cluster: LocalCluster, topic: str) -> dict[int, list[str]]:
    history = History()
    final_read(cluster.bootstrap(), topic, 2, "read_committed", history, timeout=30)
    op = history.ops[-1]
    visible: dict[int, list[str]] = {0: [], 1: []}
    if op.type != "ok":  # e.g. a transaction left open holds the last stable offset back
        visible[-1] = [f"read_committed incomplete: {op.error}"]
    for p, _, value in op.value["records"]:
        visible[p].append(value)
    return visible


def _topic(cluster: LocalCluster, scenario: str, tv: int) -> tuple[str, str]:
    name = f"torn-{scenario}-tv{tv}-{next(_names)}"
    cluster.create_topic(name, 2, 3, {"min.insync.replicas": "2"})
    for p in range(2):
        cluster.wait_for_leader(name, p)
        # every replica in the ISR first: a scenario that meets NOT_ENOUGH_REPLICAS tells nothing about
        # transactions (a broker of the shared cluster may still be catching up after an earlier test)
        wait_for(lambda p=p: len(cluster.state(name, p)["isr"]) == 3, what=f"the full ISR of {name}-{p}")
    return name, name


def delayed_produce(cluster: LocalCluster, network: ClusterNetwork, tv: int, delay: float = 4.0,
                    early: bool = False) -> Outcome:
    """``early``: the held-back Produce arrives before transaction 2 begins (between the abort and the
    next transaction), which KIP-890 part 1's verification refuses with either version."""
    topic, txn_id = _topic(cluster, "produce", tv)
    out = Outcome("delayed Produce" + (", arriving before the next transaction" if early else ""), tv)
    p = _Producer(cluster, network, topic, txn_id, tv)
    steps = out.steps
    steps.append(f"txn 1 (epoch {p.epoch}) begins" + (f"; add [0, 1]: {_name(p.add(0, 1))}" if tv == 1 else ""))
    with p.connect_leader(1) as l1, p.connect_leader(0, timeout=delay + 30) as held, p.connect_leader(0) as l0:
        steps.append(f"txn 1: t1-p1 -> partition 1: {_name(p.produce(l1, 1, 't1-p1'))}")
        rule = network.net.delay([PRODUCE], delay, destination=node(cluster.leader(topic, 0)), peer=CLIENTS, count=1)
        request, version = p.produce_request(0, "t1-p0")
        held.send(request, version)
        steps.append(f"txn 1: t1-p0 -> partition 0 sent, held back {delay:g} s in the network")
        request, version = p.end_request(False)
        steps.append(f"txn 1: EndTxn(abort): {_name(p.ended(p.coord.request(request, version)))} "
                     f"(epoch now {p.epoch})")
        if early:
            pass
        elif tv == 1:
            steps.append(f"txn 2: add [0, 1]: {_name(p.add(0, 1))}")
        else:
            steps.append(f"txn 2: t2-p1 -> partition 1: {_name(p.produce(l1, 1, 't2-p1'))}")
        _, response = held.receive()
        out.delayed_error = response.responses[0].partition_responses[0].error_code
        if out.delayed_error == 0:
            p.seq[0] = p.seq.get(0, 0) + 1  # the client would learn it was written
        steps.append(f"the held-back t1-p0 arrives ({len(rule.delayed)} request held back): "
                     f"{_name(out.delayed_error)}")
        if early and tv == 1:
            steps.append(f"txn 2: add [0, 1]: {_name(p.add(0, 1))}")
        steps.append(f"txn 2: t2-p0 -> partition 0: {_name(p.produce(l0, 0, 't2-p0'))}")
        request, version = p.end_request(True)
        steps.append(f"txn 2: EndTxn(commit): {_name(p.ended(p.coord.request(request, version)))}")
    p.coord.close()
    out.visible = _read_committed(cluster, topic)
    out.torn = "t1-p0" in out.visible[0]
    return out


def delayed_end_txn(cluster: LocalCluster, network: ClusterNetwork, tv: int, delay: float = 4.0) -> Outcome:
    topic, txn_id = _topic(cluster, "endtxn", tv)
    out = Outcome("delayed EndTxn", tv)
    p = _Producer(cluster, network, topic, txn_id, tv)
    steps = out.steps
    with p.connect_leader(0) as l0, p.connect_coordinator(timeout=delay + 30) as held:
        steps.append(f"txn 1 (epoch {p.epoch}) begins" + (f"; add [0]: {_name(p.add(0))}" if tv == 1 else ""))
        steps.append(f"txn 1: t1-p0 -> partition 0: {_name(p.produce(l0, 0, 't1-p0'))}")
        rule = network.net.delay([END_TXN], delay, destination=node(p.coordinator_id), peer=CLIENTS, count=1)
        request, version = p.end_request(True)
        held.send(request, version)
        steps.append(f"txn 1: EndTxn(commit) sent, held back {delay:g} s in the network")
        request, version = p.end_request(True)
        steps.append(f"txn 1: EndTxn(commit) again (the client's retry): "
                     f"{_name(p.ended(p.coord.request(request, version)))} (epoch now {p.epoch})")
        if tv == 1:
            steps.append(f"txn 2: add [0]: {_name(p.add(0))}")
        steps.append(f"txn 2: t2-p0 -> partition 0: {_name(p.produce(l0, 0, 't2-p0'))}")
        _, response = held.receive()
        out.delayed_error = response.error_code
        steps.append(f"the held-back EndTxn(commit) of txn 1 arrives ({len(rule.delayed)} request held back): "
                     f"{_name(out.delayed_error)}")
        request, version = p.end_request(False)
        steps.append(f"txn 2: EndTxn(abort): {_name(p.ended(p.coord.request(request, version)))}")
    p.coord.close()
    out.visible = _read_committed(cluster, topic)
    out.torn = "t2-p0" in out.visible[0]
    return out


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="tidelog-torn-"))
    cluster, network = fault_cluster(root, client_proxies=True)
    outcomes = []
    try:
        for tv in (1, 2):
            for run in (delayed_produce, lambda c, n, tv: delayed_produce(c, n, tv, early=True), delayed_end_txn):
                outcomes.append(run(cluster, network, tv))
                print(outcomes[-1].describe(), flush=True)
    finally:
        cluster.stop()
        network.close()
    return 1 if any(o.torn and o.tv == 2 for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Outcome", "delayed_end_txn", "delayed_produce"]
