"""Jepsen's checklist beyond :mod:`tests.fault.test_faults` (see docs/jepsen.md), bounded for CI on a
cluster whose clients also go through proxies (:func:`tests.fault.lab.jepsen.fault_cluster` with
``client_proxies=True``):

* consumers that join groups by ``subscribe`` (classic and KIP-848 ``group.protocol=consumer``,
  leaving and joining again) under kill -9 and under a cut between the clients and a broker, checked
  for poll-skip, nonmonotonic polls and lost commits (:mod:`tests.fault.lab.groups`);
* list-append transactions under a cut between two brokers and under membership changes (a broker
  joins, a partition moves onto it and back, the broker leaves), checked for G0/G1c cycles, aborted
  reads and torn transactions (:mod:`tests.fault.lab.elle`);
* subscribed consumers while one broker's clocks jump ahead (libfaketime; skipped without it);
* Bufstream's torn transactions: a Produce and an EndTxn held back in the network past the end of
  their transaction (:mod:`tests.fault.lab.torn`); transaction version 2 must refuse both.

About 3 min on 2 cores. Longer: ``TIDELOG_FAULT_SOAK=600 pytest tests/fault/test_jepsen.py -k soak``
or ``python -m tests.fault.lab.jepsen --workload group --nemesis mixed --duration 600``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fault.lab.jepsen import RunResult, fault_cluster, run
from tests.fault.lab.membership import faketime_library
from tests.fault.lab.torn import delayed_end_txn, delayed_produce
from tests.integration.zookeeper import start_zookeeper
from tests.toolchain import require
from tidelog.errors import ErrorCode

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("faults")]

DURATION_S = 15.0
SOAK_ENV = "TIDELOG_FAULT_SOAK"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    root = tmp_path_factory.mktemp("jepsen")
    c, network = fault_cluster(root, zookeeper=start_zookeeper(root / "zk"), chroot="/tidelog-jepsen",
                               client_proxies=True)
    yield c, network
    for i in c.brokers:
        c.kill(i)
    c.stop()
    network.close()


def jepsen_run(cluster, workload: str, nemesis: str, topic: str, **kw) -> RunResult:
    c, network = cluster
    result = run(c, network, nemesis, topic=topic, workload=workload,
                 **{"duration": DURATION_S, "producers": 1, "transactional": 2, "partitions": 4, **kw})
    assert result.verdict.valid, result.failure_message()
    assert [op for op in result.history.ops if op.process == "nemesis" and op.f == "start"], "no fault"
    return result


@pytest.mark.parametrize("nemesis", ["kill", "partition-clients"])
def test_subscribed_consumers_neither_skip_nor_go_back(cluster, nemesis):
    result = jepsen_run(cluster, "group", nemesis, f"j-group-{nemesis}")
    for protocol in ("classic", "consumer"):
        members = {f"{protocol}-c{i}" for i in range(2)}
        polls = [op for op in result.history.ops if op.f == "poll" and op.process in members]
        assigned = [op for op in result.history.ops if op.f == "assign" and op.process in members]
        assert polls and len(assigned) >= 2, f"group.protocol={protocol} never consumed / rebalanced"
        assert any(op.f == "commit" and op.type == "ok" and op.process in members for op in result.history.ops)


@pytest.mark.parametrize("nemesis", ["partition-brokers", "membership"])
def test_list_append_transactions_have_no_cycle_aborted_read_or_torn_transaction(cluster, nemesis):
    result = jepsen_run(cluster, "append", nemesis, f"j-append-{nemesis}")
    txns = [op for op in result.history.ops if op.f == "txn" and op.type == "ok"]
    assert any(op.value["outcome"] == "committed" for op in txns)
    assert any(op.value["outcome"] == "aborted" for op in txns)
    assert any(op.value["reads"] for op in txns), "the transactions never read what others wrote"


def test_subscribed_consumers_with_a_brokers_clock_jumping_ahead(cluster):
    require("libfaketime", faketime_library() is not None, "the clock-jump nemesis needs it (apt-get install faketime)")
    try:
        result = jepsen_run(cluster, "group", "clock-jump", "j-group-clock")
        assert any("jumped" in str(op.value) for op in result.history.ops if op.process == "nemesis")
    finally:
        _restart_off_faketime(cluster[0])


def _restart_off_faketime(c) -> None:
    """The nemesis leaves its broker's clocks ahead (they cannot go back): restart it on the real clock,
    so that the module's later tests do not meet a broker whose timeouts all run early."""
    for i, broker in c.brokers.items():
        if broker.alive and b"faketime" in Path(f"/proc/{broker.proc.pid}/environ").read_bytes():
            c.restart(i)
    c.wait_metadata_brokers([i for i, b in c.brokers.items() if b.alive])


@pytest.mark.parametrize("scenario", [delayed_produce, delayed_end_txn], ids=["produce", "end-txn"])
def test_a_request_held_back_past_its_transaction_is_refused_with_transaction_version_2(cluster, scenario):
    c, network = cluster
    outcome = scenario(c, network, tv=2)
    assert outcome.delayed_error in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED), outcome.describe()
    assert not outcome.torn, outcome.describe()
    expected = ["t2-p0"] if scenario is delayed_produce else ["t1-p0"]
    assert outcome.visible[0] == expected, outcome.describe()


@pytest.mark.parametrize("tv", [1, 2])
def test_a_produce_held_back_past_the_abort_is_refused_by_verification(cluster, tv):
    """KIP-890 part 1: the held-back Produce arrives after its transaction aborted and before the next
    one began; the leader verifies it with the coordinator, which has no transaction open."""
    c, network = cluster
    outcome = delayed_produce(c, network, tv=tv, early=True)
    assert outcome.delayed_error in (ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.INVALID_TXN_STATE,
                                     ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED), outcome.describe()
    assert outcome.visible[0] == ["t2-p0"], outcome.describe()


@pytest.mark.skipif(not os.environ.get(SOAK_ENV), reason=f"a long soak: set {SOAK_ENV}=SECONDS to run it")
@pytest.mark.parametrize("workload", ["group", "append"])
def test_soak_with_every_nemesis_mixed(cluster, workload):
    jepsen_run(cluster, workload, "mixed", f"j-soak-{workload}", duration=float(os.environ[SOAK_ENV]),
               quiet_s=4.0, fault_s=6.0)
