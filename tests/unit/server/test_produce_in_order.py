"""A producer's pipelined transactional Produce requests are appended in the order they arrive, also
when the first of them waits for the transaction coordinator (issue 23, finding 1).

The race, made deterministic on a real broker started in this process: a transaction's marker is held
back (its partition's ``min.insync.replicas`` is above the single node's ISR, so the marker write fails
with NOT_ENOUGH_REPLICAS and is retried), so after EndTxn v5 (which bumps the epoch) the coordinator
stays in PrepareCommit. The producer's first request of the next transaction (epoch + 1, sequence 0)
then gets CONCURRENT_TRANSACTIONS from the coordinator and waits ``add.partitions.to.txn.retry.backoff.ms``
before asking again. Meanwhile the marker is released, the transaction completes, and the producer's
second request (sequence 5) arrives: it must be appended after the first, as Kafka (one request of a
connection at a time) does. Before the fix it passed the check at once, was appended first and was
refused with OUT_OF_ORDER_SEQUENCE_NUMBER (the new epoch must start at sequence 0), while the first
succeeded: franz-go's consume-transform-produce chain failed on this.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

from tidelog.config import BrokerConfig
from tidelog.coordinator.txn import TransactionState
from tidelog.errors import ErrorCode
from tidelog.protocol import encode_request
from tidelog.protocol.messages import (
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ProduceRequest,
)
from tidelog.records import RecordBatchBuilder
from tidelog.server.broker import Broker
from tidelog.server.context import RequestContext

TXN_ID = "chain-0"
TOPIC = "out"
BACKOFF_MS = 4000  # the first request's wait for the coordinator: the marker is released within it


def config(data: Path) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": str(data), "listeners": "PLAINTEXT://127.0.0.1:0",
                                    "add.partitions.to.txn.retry.backoff.ms": str(BACKOFF_MS),
                                    "add.partitions.to.txn.retry.backoff.max.ms": "60000"})


def batch(pid: int, epoch: int, seq: int, n: int) -> bytes:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    for i in range(n):
        builder.append(1_700_000_000_000 + i, b"k%d" % (seq + i), b"v")
    return builder.build()


def produce(pid: int, epoch: int, seq: int, n: int) -> ProduceRequest:
    data = ProduceRequest.PartitionProduceData(index=0, records=batch(pid, epoch, seq, n))
    return ProduceRequest(transactional_id=TXN_ID, acks=1, timeout_ms=30_000,
                          topic_data=[ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[data])])


def dispatch(broker: Broker, body, version: int) -> asyncio.Future:
    """Run the handler as the network layer does: synchronously, an awaitable answer becomes a task."""
    d = broker.handlers.dispatch(encode_request(body, version, 1, "test"),
                                 lambda header: RequestContext(header, "conn-1", "127.0.0.1"))
    if inspect.isawaitable(d.result):
        return asyncio.ensure_future(d.result)
    done = asyncio.get_running_loop().create_future()
    done.set_result(d.result)
    return done


def partition_error(response) -> tuple[ErrorCode, int]:
    (p,) = response.responses[0].partition_responses
    return ErrorCode(p.error_code), p.base_offset


async def wait_for_state(broker: Broker, state: TransactionState, timeout_s: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while broker.transactions.metadata(TXN_ID).state is not state:
        assert asyncio.get_running_loop().time() < deadline, broker.transactions.metadata(TXN_ID)
        await asyncio.sleep(0.01)


def test_pipelined_requests_of_a_new_epoch_are_appended_in_order(tmp_path: Path) -> None:
    async def main() -> None:
        broker = Broker(config(tmp_path))
        await broker.start()
        try:
            await scenario(broker)
        finally:
            await broker.stop()

    async def scenario(broker: Broker) -> None:
        broker.controller.create_topic(TOPIC, 1)
        # as a client does: the transaction coordinator is found first (which creates its topic; the
        # controller's queue decides the new partitions' leaders)
        found = await dispatch(broker, FindCoordinatorRequest(key_type=1, coordinator_keys=[TXN_ID]), 4)
        assert found.coordinators[0].error_code == 0
        await broker.partition_controller.await_leaders([TOPIC], 10_000)
        init = await dispatch(broker, InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000), 5)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        assert partition_error(await dispatch(broker, produce(pid, epoch, 0, 2), 12))[0] == ErrorCode.NONE

        # Hold the commit marker back: it is retried until the ISR is large enough again.
        broker.controller.set_topic_configs(TOPIC, {"min.insync.replicas": "2"})
        end = await dispatch(broker, EndTxnRequest(transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch,
                                                   committed=True), 5)
        assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)
        assert broker.transactions.metadata(TXN_ID).state is TransactionState.PREPARE_COMMIT
        epoch = end.producer_epoch

        first = dispatch(broker, produce(pid, epoch, 0, 5), 12)
        await asyncio.sleep(0)  # the first request asks the coordinator: CONCURRENT_TRANSACTIONS, it waits
        assert not first.done()

        broker.controller.set_topic_configs(TOPIC, {})  # the marker goes through, the transaction completes
        await wait_for_state(broker, TransactionState.COMPLETE_COMMIT)
        assert not first.done(), "the first request must still be waiting to ask the coordinator again"

        second = dispatch(broker, produce(pid, epoch, 5, 3), 12)
        first_answer, second_answer = await asyncio.wait_for(asyncio.gather(first, second), 60)
        first_code, first_offset = partition_error(first_answer)
        second_code, second_offset = partition_error(second_answer)
        assert (first_code, second_code) == (ErrorCode.NONE, ErrorCode.NONE)
        assert first_offset < second_offset

        plog = broker.logs.get_log(TOPIC, 0)
        data = [(v.producer_epoch, v.base_sequence) for v in plog.batches() if not v.is_control_batch]
        assert data == [(0, 0), (1, 0), (1, 5)]
        entry = plog.producer_state.last_entry(pid)
        assert (entry.producer_epoch, entry.last_seq) == (1, 7)

    asyncio.run(main())
