"""KIP-890's retry backoff on the leader (server/txn_verification.py) runs on the broker's clock.

A transaction's commit marker is held back (the partition's ``min.insync.replicas`` is above the single
node's ISR, so the marker write fails with NOT_ENOUGH_REPLICAS and is retried), so after EndTxn v5 the
coordinator stays in PrepareCommit. The producer's first write of its next transaction (Produce v12,
which adds the partition) gets CONCURRENT_TRANSACTIONS and waits ``add.partitions.to.txn.retry.backoff.ms``
(here a minute) before asking again: it is answered once the ManualClock has passed the backoff, not before,
whatever the real time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.test_groups import find_coordinator
from tests.inprocess.wire import fetch, fetched, produce, produced
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import EndTxnRequest, IncrementalAlterConfigsRequest, InitProducerIdRequest

TXN_ID = "verified"
TOPIC = "out"
BACKOFF_MS = 60_000
TOPIC_RESOURCE, SET, DELETE = 2, 0, 1


async def min_insync(b: InProcessBroker, value: str | None) -> None:
    config = IncrementalAlterConfigsRequest.AlterableConfig(name="min.insync.replicas",
                                                            config_operation=SET if value else DELETE, value=value)
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=TOPIC,
                                                                   configs=[config])
    (r,) = (await b.request(IncrementalAlterConfigsRequest(resources=[resource]), 1)).responses
    assert r.error_code == 0


def test_a_write_waiting_for_the_previous_transaction_asks_again_after_the_backoff_of_the_clock(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic(TOPIC)
        await find_coordinator(b, TXN_ID, key_type=1)  # as a client does first
        init = await b.request(InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=600_000), 5)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch

        def write(seq: int, value: bytes):
            records = batch(value, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
            return b.send(produce(TOPIC, records, acks=1, transactional_id=TXN_ID), 12)

        assert produced(await write(0, b"a"))[0] == ErrorCode.NONE
        await min_insync(b, "2")  # the commit marker cannot be written: retried every 100 ms
        end = await b.request(EndTxnRequest(transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch,
                                            committed=True), 5)
        assert (end.error_code, end.producer_epoch) == (0, epoch + 1)
        epoch = end.producer_epoch

        first = write(0, b"b")  # CONCURRENT_TRANSACTIONS: it waits BACKOFF_MS before asking again
        await b.settle()
        assert not first.done()

        await min_insync(b, None)
        for _ in range(100):  # the marker's retries (on the clock too): the transaction completes
            await b.advance(100)
            if fetched(await b.request(fetch(TOPIC, 0, isolation_level=1), 12)).last_stable_offset == 2:
                break
        else:
            raise AssertionError("the commit marker was not written")
        await b.settle()
        assert not first.done(), "the write must still wait for its backoff to pass on the clock"

        await b.advance(BACKOFF_MS)
        code, offset = produced(await asyncio.wait_for(first, 30))
        assert (code, offset) == (ErrorCode.NONE, 2)

    run(tmp_path, scenario, overrides={"add.partitions.to.txn.retry.backoff.ms": str(BACKOFF_MS),
                                       "add.partitions.to.txn.retry.backoff.max.ms": str(10 * BACKOFF_MS)})
