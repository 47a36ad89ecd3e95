"""Loading a ``__transaction_state`` partition in the background: COORDINATOR_LOAD_IN_PROGRESS for
every transaction API routed to it (ListTransactions: at the top level while any partition loads),
the other partitions served; then the loaded state; an unload mid-load leaves nothing; the timeout
abort and the resumed markers wait for the end of the load."""

from __future__ import annotations

import asyncio

from tidelog.coordinator.runtime import partition_for
from tidelog.coordinator.txn import TransactionCoordinator
from tidelog.coordinator.txn.state import TransactionState as S
from tidelog.errors import ErrorCode

from .conftest import STATE_PARTITIONS, TIMEOUT_MS, TxnHarness

LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def ids_on(partition: int, n: int) -> list[str]:
    return [t for t in (f"tx{i}" for i in range(1000)) if partition_for(t, STATE_PARTITIONS) == partition][:n]


def churn(txn: TxnHarness, txn_id: str, rounds: int) -> None:
    """Many records in the id's partition: each InitProducerId writes one."""
    for _ in range(rounds):
        txn.init(txn_id)


def taking_over(txn: TxnHarness, partition: int, *, chunk: int = 3) -> TransactionCoordinator:
    c = TransactionCoordinator(txn.config, txn.clock, txn.writer, lambda: next(txn.ids), txn.data.write)
    c.load([p for p in range(STATE_PARTITIONS) if p != partition])
    c.runtime.loads.chunk_batches = chunk
    c.load([partition], background=True)
    txn.coordinator = c
    return c


async def until_loaded(c: TransactionCoordinator, partition: int) -> None:
    task = c.runtime.loads.task(partition)
    if task is not None:
        await task


def test_every_transaction_api_answers_load_in_progress_until_loaded(txn: TxnHarness) -> None:
    busy, other = ids_on(1, 2)[0], ids_on(2, 1)[0]
    churn(txn, ids_on(1, 2)[1], 60)
    pid, epoch = txn.init(busy)
    txn.begin(busy, pid, epoch, [("t", 0)])
    opid, oepoch = txn.init(other)

    async def scenario() -> None:
        c = taking_over(txn, 1)
        assert c.init_producer_id(busy, TIMEOUT_MS).error == LOADING
        assert c.add_partitions(busy, pid, epoch, [("t", 1)]) == LOADING  # AddPartitionsToTxn, AddOffsetsToTxn
        assert c.verify_partitions(busy, pid, epoch, [("t", 0)]) == {("t", 0): LOADING}
        assert c.end_txn(busy, pid, epoch, True).error == LOADING
        assert [s.error_code for s in c.describe_transactions([busy, other])] == [LOADING, 0]
        assert c.list_transactions().error_code == LOADING
        assert c.add_partitions(other, opid, oepoch, [("t", 2)]) == ErrorCode.NONE  # partition 2 is served
        await until_loaded(c, 1)
        assert c.runtime.loads.stats[1].chunks > 10
        described = c.describe_transactions([busy])[0]
        assert (described.error_code, described.transaction_state, described.producer_id) == (0, "Ongoing", pid)
        assert c.list_transactions().error_code == 0
        assert c.end_txn(busy, pid, epoch, True).error == ErrorCode.NONE

    asyncio.run(scenario())


def test_an_unload_during_the_load_leaves_nothing(txn: TxnHarness) -> None:
    ids = ids_on(3, 3)
    for t in ids:
        churn(txn, t, 20)

    async def scenario() -> None:
        c = taking_over(txn, 3)
        for _ in range(4):
            await asyncio.sleep(0)
        assert c.runtime.is_loading(3)
        task = c.runtime.loads.task(3)
        c.unload([3])
        for _ in range(20):
            await asyncio.sleep(0)
        assert task.cancelled() and 3 not in c.partitions and not c._loading
        assert all(c.metadata(t) is None for t in ids)
        assert c.init_producer_id(ids[0], TIMEOUT_MS).error == ErrorCode.NOT_COORDINATOR
        assert c.list_transactions().error_code == 0

    asyncio.run(scenario())


def test_the_timeout_abort_and_resumed_markers_wait_for_the_load(txn: TxnHarness) -> None:
    open_id, deciding_id = ids_on(0, 2)
    churn(txn, ids_on(0, 3)[2], 60)
    pid, epoch = txn.init(open_id, timeout_ms=1_000)
    txn.begin(open_id, pid, epoch, [("t", 0)])
    dpid, depoch = txn.init(deciding_id)
    txn.begin(deciding_id, dpid, depoch, [("t", 1)])
    txn.data.fail[("t", 1)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert txn.coordinator.end_txn(deciding_id, dpid, depoch, True).error == ErrorCode.NONE  # PrepareCommit
    txn.coordinator.close()  # the old coordinator stops (its broker died)
    del txn.data.fail[("t", 1)]

    async def scenario() -> None:
        c = taking_over(txn, 0)
        for _ in range(3):
            await asyncio.sleep(0)
        txn.clock.advance(60_000)  # past the open transaction's timeout and the abort interval
        c.poll()
        assert c.runtime.is_loading(0)
        assert txn.markers("t", 0) == [] and txn.markers("t", 1) == []  # nothing aborted, nothing resumed
        await until_loaded(c, 0)
        txn.advance(10_000)  # the next abort pass, and the resumed markers
        assert txn.markers("t", 1) == [(dpid, depoch, True)]
        assert c.metadata(deciding_id).state is S.COMPLETE_COMMIT
        assert [m[2] for m in txn.markers("t", 0)] == [False]  # the timed-out transaction, aborted now
        assert c.metadata(open_id).state is S.COMPLETE_ABORT

    asyncio.run(scenario())
