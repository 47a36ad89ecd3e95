"""The transactional APIs at exact versions, against a real broker, through Tidelog's own wire client:
KIP-890 (verification, Produce v12 / EndTxn v5 / TxnOffsetCommit v5), the errors Kafka answers,
require_stable, DescribeProducers, and an admin's WriteTxnMarkers ending a hanging transaction."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from tidelog.records import RecordBatchBuilder
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.integration
TOPIC = "wire-txn"
_ids = itertools.count()


# The module's broker (tests/fixtures.py) has Kafka's defaults; verification off for the hanging-transaction
# test is a separate broker.
def on_broker_started(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as c:
        topic = CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=3, replication_factor=1)
        assert c.request(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 5).topics[0].error_code == 0


@pytest.fixture(scope="module")
def client(broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(broker.bootstrap) as c:
        yield c


def new_id() -> str:
    return f"wire-{next(_ids)}"


def init(c: WireClient, txn_id: str, version: int = 4, timeout_ms: int = 60_000) -> tuple[int, int]:
    assert c.request(FindCoordinatorRequest(key=txn_id, key_type=1), 3).error_code == 0
    r = c.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms), version)
    assert r.error_code == 0, ErrorCode(r.error_code)
    return r.producer_id, r.producer_epoch


def add(c: WireClient, txn_id: str, pid: int, epoch: int, partitions, version: int = 3) -> dict:
    topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=list(partitions))]
    r = c.request(AddPartitionsToTxnRequest(v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                                            v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics), version)
    return {(t.name, p.partition_index): p.partition_error_code for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def batch(pid: int, epoch: int, seq: int = 0, *, transactional: bool = True, value: bytes = b"v") -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)
    b.append(0, b"k", value)
    return b.build()


def produce(c: WireClient, txn_id: str | None, partition: int, records: bytes, version: int) -> tuple[int, str | None]:
    data = ProduceRequest.PartitionProduceData(index=partition, records=records)
    r = c.request(ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[data])]), version)
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.error_message


def end(c: WireClient, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3):
    return c.request(EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit),
                     version)


def lso(c: WireClient, partition: int) -> int:
    r = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-1)])]), 5)
    return r.topics[0].partitions[0].offset


# ------------------------------------------------------------------------------- verification


@pytest.mark.parametrize(("version", "code"), [(10, ErrorCode.INVALID_TXN_STATE), (11, ErrorCode.TRANSACTION_ABORTABLE)])
def test_a_write_to_a_partition_not_in_the_transaction_is_refused(client: WireClient, version: int,
                                                                  code: ErrorCode) -> None:
    txn_id = new_id()
    pid, epoch = init(client, txn_id)
    before = lso(client, 0)
    error, message = produce(client, txn_id, 0, batch(pid, epoch), version)
    assert error == code
    if code == ErrorCode.INVALID_TXN_STATE:
        assert message == "Partition was not added to the transaction"
    assert add(client, txn_id, pid, epoch, [0]) == {(TOPIC, 0): 0}
    assert produce(client, txn_id, 0, batch(pid, epoch), version)[0] == 0
    assert lso(client, 0) == before  # open: read_committed stops before it
    assert end(client, txn_id, pid, epoch, True).error_code == 0
    assert lso(client, 0) > before


def test_transactional_records_need_the_transactional_id_and_one_producer(client: WireClient) -> None:
    txn_id = new_id()
    pid, epoch = init(client, txn_id)
    assert produce(client, None, 1, batch(pid, epoch), 9)[0] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    two = ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch(pid, epoch)),
            ProduceRequest.PartitionProduceData(index=1, records=batch(pid + 1, epoch))])])
    r = client.request(two, 9)
    assert {p.error_code for p in r.responses[0].partition_responses} == {ErrorCode.INVALID_PRODUCER_ID_MAPPING}


# ------------------------------------------------------------------------------------ KIP-890 v2


def test_transaction_version_2_adds_partitions_implicitly_and_bumps_the_epoch(client: WireClient) -> None:
    txn_id = new_id()
    pid, epoch = init(client, txn_id, version=5)
    # Produce v12: no AddPartitionsToTxn; the broker adds the partition to the transaction.
    assert produce(client, txn_id, 2, batch(pid, epoch), 12)[0] == 0
    desc = client.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0]
    assert desc.transaction_state == "Ongoing" and [(t.topic, t.partitions) for t in desc.topics] == [(TOPIC, [2])]
    # TxnOffsetCommit v5: no AddOffsetsToTxn either.
    client.request(FindCoordinatorRequest(key="g-v2", key_type=0), 3)
    commit = TxnOffsetCommitRequest(transactional_id=txn_id, group_id="g-v2", producer_id=pid, producer_epoch=epoch,
                                    topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                                        TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0,
                                                                                               committed_offset=42)])])
    assert client.request(commit, 5).topics[0].partitions[0].error_code == 0
    fetch = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g-v2", topics=[
        OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])], require_stable=True)
    part = client.request(fetch, 8).groups[0].topics[0].partitions[0]
    assert (part.error_code, part.committed_offset) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    r = end(client, txn_id, pid, epoch, True, version=5)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, epoch + 1)
    retry = end(client, txn_id, pid, epoch, True, version=5)
    assert (retry.error_code, retry.producer_epoch) == (0, epoch + 1)
    part = client.request(fetch, 8).groups[0].topics[0].partitions[0]
    assert (part.error_code, part.committed_offset) == (0, 42)
    # The old epoch is fenced everywhere: the marker carried the new one.
    assert produce(client, txn_id, 2, batch(pid, epoch, 1), 12)[0] in (ErrorCode.INVALID_PRODUCER_EPOCH,
                                                                        ErrorCode.PRODUCER_FENCED)
    assert produce(client, txn_id, 2, batch(pid, epoch + 1), 12)[0] == 0
    assert end(client, txn_id, pid, epoch + 1, False, version=5).producer_epoch == epoch + 2


# ------------------------------------------------------------------------------ error answers


def test_coordinator_errors_at_old_and_new_versions(client: WireClient) -> None:
    txn_id = new_id()
    pid, epoch = init(client, txn_id)
    assert add(client, "no-such-id", pid, epoch, [0]) == {(TOPIC, 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    # PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before AddPartitionsToTxn/EndTxn v2.
    assert add(client, txn_id, pid, epoch + 3, [0], version=1) == {(TOPIC, 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert add(client, txn_id, pid, epoch + 3, [0], version=2) == {(TOPIC, 0): ErrorCode.PRODUCER_FENCED}
    assert end(client, txn_id, pid, epoch + 3, True, version=1).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(client, txn_id, pid, epoch, True).error_code == ErrorCode.INVALID_TXN_STATE  # nothing open
    bad = add(client, txn_id, pid, epoch, [0, 99])
    assert bad == {(TOPIC, 0): ErrorCode.OPERATION_NOT_ATTEMPTED, (TOPIC, 99): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    r = client.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=900_001), 4)
    assert r.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    r = client.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=1000, producer_id=pid), 4)
    assert r.error_code == ErrorCode.INVALID_REQUEST
    group = client.request(AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                                  group_id="g-off"), 3)
    assert group.error_code == 0
    listed = client.request(ListTransactionsRequest(state_filters=["Ongoing"], transactional_id_pattern="wire-.*"), 2)
    assert txn_id in {s.transactional_id for s in listed.transaction_states}


def test_batched_add_partitions_and_verify_only(client: WireClient) -> None:
    txn_id = new_id()
    pid, epoch = init(client, txn_id)
    Txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[1])]
    verify = Txn(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, verify_only=True, topics=topics)
    r = client.request(AddPartitionsToTxnRequest(transactions=[verify]), 4)
    assert r.error_code == 0
    assert r.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code == \
        ErrorCode.TRANSACTION_ABORTABLE
    added = Txn(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, verify_only=False, topics=topics)
    r = client.request(AddPartitionsToTxnRequest(transactions=[added, verify]), 5)
    codes = [res.topic_results[0].results_by_partition[0].partition_error_code for res in r.results_by_transaction]
    assert codes == [0, 0]


def test_describe_producers_and_an_admin_abort_of_a_hanging_transaction(tmp_path: Path) -> None:
    # Verification off lets a write open a transaction the coordinator does not know: a hanging one.
    overrides = {"transaction.partition.verification.enable": "false"}
    with BrokerProcess(tmp_path, overrides=overrides) as broker, WireClient.connect(broker.bootstrap) as c:
        topic = CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)
        c.request(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 5)
        txn_id = new_id()
        init(c, txn_id)
        pid, epoch = init(c, txn_id)  # epoch 1: a marker of epoch 0 is then stale
        assert produce(c, txn_id, 0, batch(pid, epoch), 9)[0] == 0
        assert lso(c, 0) == 0
        r = c.request(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name=TOPIC, partition_indexes=[0, 7])]), 0)
        ok, missing = r.topics[0].partitions
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        (state,) = ok.active_producers
        assert (state.producer_id, state.producer_epoch, state.current_txn_start_offset, state.last_sequence) == (
            pid, epoch, 0, 0)
        Marker = WriteTxnMarkersRequest.WritableTxnMarker
        marker = Marker(producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
                        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])])
        stale = Marker(producer_id=pid, producer_epoch=epoch - 1, transaction_result=False,
                       coordinator_epoch=0, topics=marker.topics)
        r = c.request(WriteTxnMarkersRequest(markers=[marker]), 1)
        assert r.markers[0].topics[0].partitions[0].error_code == 0
        assert lso(c, 0) == 2  # the hanging transaction is over
        fetch = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, isolation_level=1, topics=[
            FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=100_000)])]), 4)
        aborted = fetch.responses[0].partitions[0].aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(pid, 0)]
        r = c.request(WriteTxnMarkersRequest(markers=[stale]), 1)
        assert r.markers[0].topics[0].partitions[0].error_code == ErrorCode.INVALID_PRODUCER_EPOCH
