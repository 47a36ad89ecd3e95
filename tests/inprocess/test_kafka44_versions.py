"""The versions Kafka 4.4 added to APIs Tidelog already served, through the broker's request dispatcher,
in process (the wire differential suite, tests/oracle/test_wire_differential.py, compares them with
Kafka 4.4 itself): OffsetCommit / OffsetFetch v10 and TxnOffsetCommit v6 name topics by id,
ListOffsets v11's EARLIEST_PENDING_UPLOAD, WriteTxnMarkers v2's transaction version."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.test_groups import find_coordinator
from tests.inprocess.test_transactions import Producer
from tests.inprocess.wire import list_offsets, listed, produce, produced
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AddOffsetsToTxnRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)

NO_SUCH_ID = uuid.UUID("00000000-0000-4000-8000-00000000abcd")
EARLIEST_PENDING_UPLOAD = -6


async def topic_id(b: InProcessBroker, name: str) -> uuid.UUID:
    r = await b.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]), 12)
    (t,) = r.topics
    assert t.error_code == 0
    return t.topic_id


def test_offset_commit_and_fetch_v10_name_topics_by_id(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("by-id", 2)
        tid = await topic_id(b, "by-id")
        await find_coordinator(b, "g10")
        CT, CP = OffsetCommitRequest.OffsetCommitRequestTopic, OffsetCommitRequest.OffsetCommitRequestPartition
        r = await b.request(OffsetCommitRequest(group_id="g10", generation_id_or_member_epoch=-1, member_id="", topics=[
            CT(topic_id=tid, partitions=[CP(partition_index=0, committed_offset=5),
                                         CP(partition_index=7, committed_offset=1)]),
            CT(topic_id=NO_SUCH_ID, partitions=[CP(partition_index=0, committed_offset=1)])]), 10)
        assert [(t.topic_id, sorted((p.partition_index, p.error_code) for p in t.partitions)) for t in r.topics] == [
            (tid, [(0, 0), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
            (NO_SUCH_ID, [(0, ErrorCode.UNKNOWN_TOPIC_ID)])]

        G, FT = OffsetFetchRequest.OffsetFetchRequestGroup, OffsetFetchRequest.OffsetFetchRequestTopics
        asked = [FT(topic_id=tid, partition_indexes=[0, 1]), FT(topic_id=NO_SUCH_ID, partition_indexes=[3])]
        for topics, expected in (
            (asked, [(tid, [(0, 5, 0), (1, -1, 0)]), (NO_SUCH_ID, [(3, -1, ErrorCode.UNKNOWN_TOPIC_ID)])]),
            (None, [(tid, [(0, 5, 0)])]),  # every committed offset, by id
        ):
            f = await b.request(OffsetFetchRequest(groups=[G(group_id="g10", topics=topics)]), 10)
            (g,) = f.groups
            assert g.error_code == 0
            assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions])
                    for t in g.topics] == expected
        # The same commit read by name (v9) and by id (v10).
        f = await b.request(OffsetFetchRequest(groups=[G(group_id="g10", topics=None)]), 9)
        assert [(t.name, [p.committed_offset for p in t.partitions]) for t in f.groups[0].topics] == [("by-id", [5])]

    run(tmp_path, scenario)


def test_list_offsets_v11_earliest_pending_upload_finds_nothing_without_remote_storage(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("pending", 1)
        assert produced(await b.request(produce("pending", batch(b"a", b"b")), 9))[0] == 0
        assert listed(await b.request(list_offsets("pending", EARLIEST_PENDING_UPLOAD), 11)) == (0, -1, -1)
        # Before v11 the spec is unknown: UNSUPPORTED_VERSION for the partition, as Kafka answers.
        assert listed(await b.request(list_offsets("pending", EARLIEST_PENDING_UPLOAD), 10))[0] == \
            ErrorCode.UNSUPPORTED_VERSION
        assert listed(await b.request(list_offsets("nope", EARLIEST_PENDING_UPLOAD), 11))[0] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, scenario)


def test_txn_offset_commit_v6_names_topics_by_id_and_has_its_own_group_errors(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("in", 1)
        tid = await topic_id(b, "in")
        p = Producer(b, "tx6")
        await p.init()
        added = await b.request(AddOffsetsToTxnRequest(transactional_id="tx6", producer_id=p.pid,
                                                       producer_epoch=p.epoch, group_id="g6"), 3)
        assert added.error_code == 0
        T, P = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic, TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition

        def commit(generation: int) -> TxnOffsetCommitRequest:
            return TxnOffsetCommitRequest(
                transactional_id="tx6", group_id="g6", producer_id=p.pid, producer_epoch=p.epoch,
                generation_id_or_member_epoch=generation, member_id="", topics=[
                    T(topic_id=tid, partitions=[P(partition_index=0, committed_offset=3)]),
                    T(topic_id=NO_SUCH_ID, partitions=[P(partition_index=0, committed_offset=3)])])

        await find_coordinator(b, "g6")  # as a client does before TxnOffsetCommit
        # A generation for a group that does not exist: GROUP_ID_NOT_FOUND from v6, ILLEGAL_GENERATION before.
        r = await b.request(commit(4), 6)
        assert r.topics[0].partitions[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        old = commit(4)
        for t in old.topics:
            t.name, t.topic_id = ("in" if t.topic_id == tid else "gone"), uuid.UUID(int=0)
        r = await b.request(old, 5)
        assert r.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
        # Without a generation (a standalone consumer's commit) the offsets go into the transaction.
        r = await b.request(commit(-1), 6)
        assert [(t.topic_id, [(x.partition_index, x.error_code) for x in t.partitions]) for t in r.topics] == [
            (tid, [(0, 0)]), (NO_SUCH_ID, [(0, ErrorCode.UNKNOWN_TOPIC_ID)])]

    run(tmp_path, scenario)


def test_write_txn_markers_v2_refuses_a_transaction_version_2_marker_without_a_newer_epoch(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("out", 1)
        p = Producer(b, "tx-m")
        await p.init()
        assert await p.add_partitions("out", 0) == {0: 0}
        assert (await p.send("out", b"x"))[0] == 0

        async def marker(epoch: int, transaction_version: int, version: int = 2) -> int:
            r = await b.request(WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
                producer_id=p.pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
                transaction_version=transaction_version, topics=[
                    WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="out", partition_indexes=[0])])]), version)
            return r.markers[0].topics[0].partitions[0].error_code

        # TV2: the coordinator bumped the epoch to end the transaction; the data's epoch is a late marker's
        assert await marker(p.epoch, 2) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert await marker(p.epoch + 1, 2) == 0
        # TV0/1 (and v1, which cannot say): the same epoch is a marker's
        assert (await p.send("out", b"y"))[0] == ErrorCode.INVALID_PRODUCER_EPOCH  # fenced by the bumped marker
        assert await marker(p.epoch + 1, 1) == 0

    run(tmp_path, scenario)
