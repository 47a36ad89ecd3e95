"""Back-to-back transactions under transaction version 2, on the wire, as Kafka's Java client 4.x sends
them (issue 23, finding 3): InitProducerId v5, Produce v12, EndTxn v5 (every EndTxn bumps the epoch and
answers with the producer id and epoch to use next).

The commit's marker is held back for a while: the topic's ``min.insync.replicas`` is raised above the
single node's ISR after the transaction's records are in, so the marker write fails with
NOT_ENOUGH_REPLICAS and the coordinator retries it; EndTxn is answered once PrepareCommit is written, as
Kafka (and Tidelog in a cluster) answers before the markers are. The producer's next EndTxn (an abort of
a transaction whose records never left the client: the Java client sends it without any Produce) then
reaches the coordinator while those markers are pending. It must be answered CONCURRENT_TRANSACTIONS
(the client retries) and succeed once the markers are written; Tidelog answered PRODUCER_FENCED, and the
Java client failed with ProducerFencedException.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    CreateTopicsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    ProduceRequest,
)
from tidelog.records import RecordBatchBuilder
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.integration
TOPIC = "back-to-back"
TXN_ID = "back-to-back-0"
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
TOPIC_RESOURCE = 2


def on_broker_started(broker: BrokerProcess) -> None:  # the module's broker (tests/fixtures.py)
    with WireClient.connect(broker.bootstrap) as c:
        topic = CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)
        assert c.request(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 5).topics[0].error_code == 0


@pytest.fixture(scope="module")
def client(broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(broker.bootstrap) as c:
        yield c


def min_insync_replicas(c: WireClient, value: str | None) -> None:
    config = IncrementalAlterConfigsRequest.AlterableConfig(
        name="min.insync.replicas", config_operation=SET if value else DELETE, value=value)
    r = c.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=TOPIC, configs=[config])]), 1)
    assert r.responses[0].error_code == 0


def state(c: WireClient) -> tuple[str, int]:
    t = c.request(DescribeTransactionsRequest(transactional_ids=[TXN_ID]), 0).transaction_states[0]
    return t.transaction_state, t.producer_epoch


def end(c: WireClient, pid: int, epoch: int, commit: bool) -> tuple[ErrorCode, int, int]:
    r = c.request(EndTxnRequest(transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch, committed=commit), 5)
    return ErrorCode(r.error_code), r.producer_id, r.producer_epoch


def test_the_next_end_txn_while_markers_are_pending_is_retried_not_fenced(client: WireClient) -> None:
    assert client.request(FindCoordinatorRequest(key=TXN_ID, key_type=1), 3).error_code == 0
    r = client.request(InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000), 5)
    assert r.error_code == 0
    pid, epoch = r.producer_id, r.producer_epoch
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True)
    b.append(0, b"k", b"v")
    data = ProduceRequest.PartitionProduceData(index=0, records=b.build())
    produced = client.request(ProduceRequest(transactional_id=TXN_ID, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[data])]), 12)
    assert produced.responses[0].partition_responses[0].error_code == 0

    min_insync_replicas(client, "2")  # the commit marker cannot be written for now
    assert end(client, pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    assert state(client) == ("PrepareCommit", epoch + 1)
    # The next transaction's end, with the epoch the commit handed out, while its marker is pending.
    for _ in range(3):
        assert end(client, pid, epoch + 1, False)[0] == ErrorCode.CONCURRENT_TRANSACTIONS

    min_insync_replicas(client, None)
    deadline = time.monotonic() + 30
    while end(client, pid, epoch + 1, False)[0] == ErrorCode.CONCURRENT_TRANSACTIONS:  # as the client retries
        assert time.monotonic() < deadline, state(client)
        time.sleep(0.05)
    assert state(client) == ("CompleteAbort", epoch + 2)
    # The retry that went through got epoch + 2; a retry of it is answered with the same ids.
    assert end(client, pid, epoch + 1, False) == (ErrorCode.NONE, pid, epoch + 2)
