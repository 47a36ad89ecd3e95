"""The transaction APIs through the broker's request dispatcher, in process: InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit; what read_committed readers see (Fetch,
ListOffsets, OffsetFetch with require_stable); the leader's check of transactional writes
(server/txn_verification.py, KIP-890); a transaction that outlives its timeout, aborted by the
coordinator when the (manual) clock passes it."""

from __future__ import annotations

from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.test_groups import find_coordinator
from tests.inprocess.wire import fetch, fetched, list_offsets, listed, produce, produced, values
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)

READ_COMMITTED = 1
LATEST = -1
#: Answers of a coordinator still loading or finishing the previous transaction: a client retries.
RETRIABLE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
             ErrorCode.CONCURRENT_TRANSACTIONS}


class Producer:
    """A transactional producer's requests, in the versions a client of transaction version 1 (v3
    of AddPartitionsToTxn and EndTxn, Produce v9) or 2 (EndTxn v5, Produce v12) sends."""

    def __init__(self, b: InProcessBroker, txn_id: str, timeout_ms: int = 60_000) -> None:
        self.b, self.txn_id, self.timeout_ms = b, txn_id, timeout_ms
        self.pid = self.epoch = -1
        self.seq: dict[tuple[str, int], int] = {}

    async def init(self) -> InitProducerIdRequest:
        answer = []

        async def done() -> bool:
            r = await self.b.request(InitProducerIdRequest(transactional_id=self.txn_id,
                                                           transaction_timeout_ms=self.timeout_ms), 4)
            answer[:] = [r]
            return r.error_code not in RETRIABLE

        await self.b.wait_until(done, f"InitProducerId of {self.txn_id}")
        r = answer[0]
        assert r.error_code == 0, ErrorCode(r.error_code)
        self.pid, self.epoch, self.seq = r.producer_id, r.producer_epoch, {}
        return r

    async def add_partitions(self, topic: str, *partitions: int) -> dict[int, int]:
        r = await self.b.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.txn_id, v3_and_below_producer_id=self.pid,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic,
                                                                                    partitions=list(partitions))]), 3)
        (t,) = r.results_by_topic_v3_and_below
        return {p.partition_index: p.partition_error_code for p in t.results_by_partition}

    async def send(self, topic: str, *vals: bytes, partition: int = 0, version: int = 9) -> tuple[int, int]:
        seq = self.seq.get((topic, partition), 0)
        records = batch(*vals, producer_id=self.pid, producer_epoch=self.epoch, base_sequence=seq, transactional=True)
        answer = produced(await self.b.request(produce(topic, records, partition=partition,
                                                       transactional_id=self.txn_id), version))
        if answer[0] == 0:
            self.seq[(topic, partition)] = seq + len(vals)
        return answer

    async def end(self, commit: bool, version: int = 3, epoch: int | None = None):
        r = await self.b.request(EndTxnRequest(transactional_id=self.txn_id, producer_id=self.pid,
                                               producer_epoch=self.epoch if epoch is None else epoch,
                                               committed=commit), version)
        return r


async def stable_at(b: InProcessBroker, topic: str, offset: int, partition: int = 0) -> None:
    """Wait until ``topic``'s last stable offset is ``offset`` (the markers are written after EndTxn is answered)."""

    async def reached() -> bool:
        return fetched(await b.request(fetch(topic, 0, partition=partition, isolation_level=READ_COMMITTED),
                                       12)).last_stable_offset == offset

    await b.wait_until(reached, f"{topic}-{partition}'s last stable offset at {offset}")


def test_a_committed_transaction_is_read_committed_after_its_marker(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 2)
        p = Producer(b, "tx")
        init = await p.init()
        assert (init.producer_id >= 0, init.producer_epoch) == (True, 0)
        assert await p.add_partitions("t", 0, 1) == {0: 0, 1: 0}
        assert await p.send("t", b"a", b"b") == (0, 0)
        assert await p.send("t", b"c", partition=1) == (0, 0)

        open_txn = fetched(await b.request(fetch("t", 0, isolation_level=READ_COMMITTED), 12))
        assert (open_txn.high_watermark, open_txn.last_stable_offset, values(open_txn.records)) == (2, 0, [])
        assert listed(await b.request(list_offsets("t", LATEST, isolation_level=READ_COMMITTED), 7))[2] == 0
        assert values(fetched(await b.request(fetch("t", 0), 12)).records) == [b"a", b"b"]  # read_uncommitted

        assert (await p.end(commit=True)).error_code == 0
        await stable_at(b, "t", 3)  # records 0-1, the marker at 2
        done = fetched(await b.request(fetch("t", 0, isolation_level=READ_COMMITTED), 12))
        assert (values(done.records), done.aborted_transactions or []) == ([b"a", b"b"], [])
        await stable_at(b, "t", 2, partition=1)
        assert listed(await b.request(list_offsets("t", LATEST, isolation_level=READ_COMMITTED), 7))[2] == 3

    run(tmp_path, scenario)


def test_an_aborted_transaction_is_named_to_read_committed_readers(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        p = Producer(b, "tx")
        await p.init()
        assert await p.add_partitions("t", 0) == {0: 0}
        assert await p.send("t", b"gone") == (0, 0)
        assert (await p.end(commit=False)).error_code == 0
        await stable_at(b, "t", 2)
        r = fetched(await b.request(fetch("t", 0, isolation_level=READ_COMMITTED), 12))
        # The broker sends the records with the aborted transactions; the client drops those (as in Kafka).
        assert [(a.producer_id, a.first_offset) for a in r.aborted_transactions] == [(p.pid, 0)]
        # The next transaction of the same producer goes on.
        assert await p.add_partitions("t", 0) == {0: 0}
        assert await p.send("t", b"kept") == (0, 2)
        assert (await p.end(commit=True)).error_code == 0
        await stable_at(b, "t", 4)

    run(tmp_path, scenario)


def test_a_second_init_fences_the_first_producer(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        first = Producer(b, "tx")
        await first.init()
        assert await first.add_partitions("t", 0) == {0: 0}
        assert await first.send("t", b"zombie") == (0, 0)
        second = Producer(b, "tx")
        # As in Kafka: the open transaction is aborted with the epoch bumped (fencing the first), the
        # retried InitProducerId (CONCURRENT_TRANSACTIONS meanwhile) bumps it once more.
        again = await second.init()
        assert (again.producer_id, again.producer_epoch) == (first.pid, first.epoch + 2)
        await stable_at(b, "t", 2)
        assert (await first.end(commit=True)).error_code == ErrorCode.PRODUCER_FENCED
        assert (await first.end(commit=True, version=1)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH  # pre-KIP-588
        assert (await first.send("t", b"late"))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert (await second.end(commit=True)).error_code == ErrorCode.INVALID_TXN_STATE  # nothing open

    run(tmp_path, scenario)


def test_offsets_committed_in_a_transaction_are_pending_until_it_commits(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("in", 1)
        await b.create_topic("out", 1)
        p = Producer(b, "tx")
        await p.init()
        assert await p.add_partitions("out", 0) == {0: 0}
        assert await p.send("out", b"result") == (0, 0)
        added = await b.request(AddOffsetsToTxnRequest(transactional_id="tx", producer_id=p.pid,
                                                       producer_epoch=p.epoch, group_id="g"), 3)
        assert added.error_code == 0
        await find_coordinator(b, "g")  # as a client does before TxnOffsetCommit
        commit = TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=p.pid,
                                        producer_epoch=p.epoch, generation_id_or_member_epoch=-1, member_id="", topics=[
                                            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="in", partitions=[
                                                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                                    partition_index=0, committed_offset=17)])])
        r = await b.request(commit, 3)
        assert [(t.name, [(x.partition_index, x.error_code) for x in t.partitions]) for t in r.topics] == \
            [("in", [(0, 0)])]

        async def offset(require_stable: bool) -> tuple[int, int]:
            f = await b.request(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id="g", topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name="in", partition_indexes=[0])])],
                require_stable=require_stable), 8)
            (part,) = f.groups[0].topics[0].partitions
            return part.committed_offset, part.error_code

        assert await offset(require_stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        assert await offset(require_stable=False) == (-1, 0)  # not visible before the commit
        assert (await p.end(commit=True)).error_code == 0

        async def visible() -> bool:
            return await offset(require_stable=True) == (17, 0)

        await b.wait_until(visible, "the transaction's offset commit")

    run(tmp_path, scenario)


def test_the_leader_refuses_a_write_to_a_partition_not_in_the_transaction(tmp_path: Path) -> None:
    """KIP-890 part 1 (server/txn_verification.py): a transactional batch of Produce v9 to a partition
    that AddPartitionsToTxn did not add is refused, so that no write opens a transaction its
    coordinator does not know of; Produce v11 gets the abortable error of its version."""

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 2)
        p = Producer(b, "tx")
        await p.init()
        assert await p.add_partitions("t", 0) == {0: 0}
        assert await p.send("t", b"in", partition=0) == (0, 0)
        assert (await p.send("t", b"out", partition=1))[0] == ErrorCode.INVALID_TXN_STATE
        assert (await p.send("t", b"out", partition=1, version=11))[0] == ErrorCode.TRANSACTION_ABORTABLE
        assert fetched(await b.request(fetch("t", 0, partition=1), 12)).high_watermark == 0  # nothing written
        assert (await p.end(commit=True)).error_code == 0
        await stable_at(b, "t", 2)

    run(tmp_path, scenario)


def test_without_verification_such_a_write_is_accepted(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 2)
        p = Producer(b, "tx")
        await p.init()
        assert await p.add_partitions("t", 0) == {0: 0}
        assert await p.send("t", b"out", partition=1) == (0, 0)  # a hanging transaction, as Kafka allows then

    run(tmp_path, scenario, overrides={"transaction.partition.verification.enable": "false"})


def test_transaction_version_2_adds_partitions_by_produce_and_bumps_the_epoch_at_the_end(tmp_path: Path) -> None:
    """KIP-890 part 2: Produce v12 adds its partition to the transaction (no AddPartitionsToTxn);
    EndTxn v5 answers the next epoch, which the producer's next transaction uses."""

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        p = Producer(b, "tx")
        await p.init()
        assert await p.send("t", b"a", version=12) == (0, 0)
        end = await p.end(commit=True, version=5)
        assert (end.error_code, end.producer_id, end.producer_epoch) == (0, p.pid, p.epoch + 1)
        await stable_at(b, "t", 2)
        p.epoch, p.seq = end.producer_epoch, {}
        assert await p.send("t", b"b", version=12) == (0, 2)
        old = await p.end(commit=True, version=5, epoch=p.epoch - 1)
        assert old.error_code == ErrorCode.PRODUCER_FENCED
        assert (await p.end(commit=False, version=5)).error_code == 0
        await stable_at(b, "t", 4)
        r = fetched(await b.request(fetch("t", 0, isolation_level=READ_COMMITTED), 12))
        assert [(a.producer_id, a.first_offset) for a in r.aborted_transactions] == [(p.pid, 2)]

    run(tmp_path, scenario)


def test_a_transaction_past_its_timeout_is_aborted_by_the_coordinator(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        p = Producer(b, "tx", timeout_ms=20_000)
        await p.init()
        assert await p.add_partitions("t", 0) == {0: 0}
        assert await p.send("t", b"slow") == (0, 0)
        await b.advance(15_000)
        assert fetched(await b.request(fetch("t", 0, isolation_level=READ_COMMITTED), 12)).last_stable_offset == 0
        # past its timeout, and the coordinator's check (every 10 s) came round
        await b.advance(20_000)
        await stable_at(b, "t", 2)
        r = fetched(await b.request(fetch("t", 0, isolation_level=READ_COMMITTED), 12))
        assert [(a.producer_id, a.first_offset) for a in r.aborted_transactions] == [(p.pid, 0)]
        assert (await p.end(commit=True)).error_code == ErrorCode.PRODUCER_FENCED  # the abort bumped the epoch

    run(tmp_path, scenario)
