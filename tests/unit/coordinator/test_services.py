"""The coordinator services answer only once committed (runtime rule 6, service rule 1): real partition
logs, a ManualClock, and a replicated-partition writer whose high watermark the test moves, as the
followers' fetches would. A response must not complete before the high watermark passes the write it
reflects (its own, or, for a parked SyncGroup, the leader's); a commit that fails or times out
answers Kafka's coordinator errors; on a single node every call completes without waiting."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from tidelog.coordinator.group import PartitionCommit, RequestInfo
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.runtime import LogWriter
from tidelog.coordinator.txn.service import TransactionCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol import ApiKey, encode_request
from tidelog.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.handlers.offsets import OffsetHandlers
from tidelog.storage.log import PartitionLog
from tidelog.testing import ManualClock

from .conftest import Harness, image_with, subscription
from .txn.conftest import TxnHarness

INFO = RequestInfo("client", "/127.0.0.1", 8)


class ReplicatedWriter(LogWriter):
    """The leader's real log, with the high watermark of a replicated partition: it moves only when the
    test says the followers have fetched (:meth:`replicate`). ``wait_committed`` is acks=all's
    purgatory: done when the high watermark reaches the offset, REQUEST_TIMED_OUT once
    ``timeout_ms`` of the ManualClock have passed (:meth:`expire`), or the error the test
    :meth:`fail` s the partition's waiters with (the ISR shrank below min.insync.replicas,
    the leadership moved)."""

    def __init__(self, logs: dict[int, PartitionLog], clock: ManualClock) -> None:
        super().__init__(logs.__getitem__)
        self.logs = logs
        self.clock = clock
        self.hw: dict[int, int] = dict.fromkeys(logs, 0)
        self.waiters: list[tuple[int, int, int, asyncio.Future[ErrorCode]]] = []

    def is_committed(self, partition: int, offset: int) -> bool:
        return self.hw[partition] >= offset

    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> ErrorCode:
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.waiters.append((partition, offset, self.clock.monotonic_ms() + timeout_ms, future))
        return await future

    def _settle(self, done: Any) -> None:
        for waiter in [w for w in self.waiters if done(w) is not None]:
            self.waiters.remove(waiter)
            code = done(waiter)
            if not waiter[3].done():
                waiter[3].set_result(code)

    def replicate(self, partition: int, to: int | None = None) -> None:
        """The followers caught up to ``to`` (default: the log end): the high watermark moves there."""
        self.hw[partition] = self.logs[partition].log_end_offset if to is None else to
        self._settle(lambda w: ErrorCode.NONE if w[0] == partition and self.hw[partition] >= w[1] else None)

    def fail(self, partition: int, code: ErrorCode) -> None:
        self._settle(lambda w: code if w[0] == partition else None)

    def expire(self) -> None:
        now = self.clock.monotonic_ms()
        self._settle(lambda w: ErrorCode.REQUEST_TIMED_OUT if w[2] <= now else None)


async def settled() -> None:
    """Let every runnable task run as far as it can."""
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.fixture
def replicated(tmp_path: Path) -> Harness:
    h = Harness(tmp_path, offsets_commit_timeout_ms=5000)
    h.writer = ReplicatedWriter(h.logs, h.clock)
    h.coordinator = h._new()
    return h


def _commit(service: GroupCoordinatorService, group: str, offset: int) -> Coroutine[Any, Any, Any]:
    return service.offset_commit(INFO, group, "", None, -1, [PartitionCommit("t", 0, offset)])


# ---------------------------------------------------------------------------------------- writes


def test_an_offset_commit_is_answered_only_once_the_high_watermark_passes_it(replicated: Harness) -> None:
    writer: ReplicatedWriter = replicated.writer  # type: ignore[assignment]
    service = GroupCoordinatorService(replicated.coordinator)
    partition = service.partition_for("g")

    async def scenario() -> None:
        commit = asyncio.ensure_future(_commit(service, "g", 5))
        await settled()
        end = replicated.logs[partition].log_end_offset
        assert end > 0 and not commit.done()  # in the leader's log (and memory), not yet answered
        assert replicated.coordinator.offsets.get("g", "t", 0).offset == 5
        writer.replicate(partition, end - 1)  # the followers have all but the last record
        await settled()
        assert not commit.done()
        writer.replicate(partition)
        await settled()
        assert commit.result() == {("t", 0): ErrorCode.NONE}

    asyncio.run(scenario())


def test_a_read_waits_for_the_writes_it_reflects(replicated: Harness) -> None:
    writer: ReplicatedWriter = replicated.writer  # type: ignore[assignment]
    service = GroupCoordinatorService(replicated.coordinator)
    partition = service.partition_for("g")

    async def scenario() -> None:
        commit = asyncio.ensure_future(_commit(service, "g", 7))
        await settled()
        fetch = asyncio.ensure_future(service.offset_fetch("g", [("t", [0])]))
        describe = asyncio.ensure_future(service.describe_groups(["g"], 5))
        await settled()
        assert not fetch.done() and not describe.done()  # they would show an offset the ISR may not have
        writer.replicate(partition)
        await settled()
        assert commit.done() and fetch.result().topics[0].partitions[0].committed_offset == 7
        assert describe.result()[0].error_code == 0

    asyncio.run(scenario())


def test_a_sync_answer_parked_for_the_leader_waits_for_the_leaders_write(replicated: Harness) -> None:
    """The follower's SyncGroup is parked until the leader's SyncGroup writes the assignment: it is
    answered once that write is committed, not when it is appended."""
    writer: ReplicatedWriter = replicated.writer  # type: ignore[assignment]
    service = GroupCoordinatorService(replicated.coordinator)
    partition = service.partition_for("g")

    def join_request(member_id: str = "") -> JoinGroupRequest:
        return JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=20_000,
                                member_id=member_id, protocol_type="consumer", protocols=[
                                    JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("t"))])

    def sync_request(member_id: str, generation: int, assignments: dict[str, bytes]) -> SyncGroupRequest:
        return SyncGroupRequest(group_id="g", generation_id=generation, member_id=member_id, assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()])

    async def scenario() -> None:
        v3 = RequestInfo("client", "/127.0.0.1", 3)  # member ids given by the coordinator on the first join
        joins = [asyncio.ensure_future(service.join_group(v3, join_request())) for _ in range(2)]
        await settled()
        replicated.settle()  # the initial rebalance delay (0) runs out: the join phase completes
        await settled()
        writer.replicate(partition)
        await settled()
        answers = [j.result() for j in joins]
        assert all(a.error_code == 0 for a in answers), answers
        leader = answers[0].leader
        follower = next(a.member_id for a in answers if a.member_id != leader)
        generation = answers[0].generation_id
        follower_sync = asyncio.ensure_future(service.sync_group(INFO, sync_request(follower, generation, {})))
        await settled()
        assert not follower_sync.done()  # parked for the leader
        before = replicated.logs[partition].log_end_offset
        leader_sync = asyncio.ensure_future(service.sync_group(INFO, sync_request(
            leader, generation, {leader: b"L", follower: b"F"})))
        await settled()
        assert replicated.logs[partition].log_end_offset > before  # the leader's assignment is written
        assert not follower_sync.done() and not leader_sync.done()  # not committed: neither is answered
        writer.replicate(partition)
        await settled()
        assert (follower_sync.result().error_code, follower_sync.result().assignment) == (0, b"F")
        assert (leader_sync.result().error_code, leader_sync.result().assignment) == (0, b"L")

    asyncio.run(scenario())


def test_a_consumer_group_heartbeat_waits_for_its_records(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    writer = ReplicatedWriter(h.logs, h.clock)
    image = image_with(t=2)
    from tidelog.coordinator.group import GroupCoordinator

    coordinator = GroupCoordinator(h.config, h.clock, writer, num_partitions=len(h.logs),
                                   group_types=[ConsumerGroupType], image_source=lambda: image)
    coordinator.load(range(len(h.logs)))
    service = GroupCoordinatorService(coordinator)
    partition = service.partition_for("cg")
    request = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m1", member_epoch=0, rebalance_timeout_ms=30_000,
                                            subscribed_topic_names=["t"], topic_partitions=[])

    async def scenario() -> None:
        beat = asyncio.ensure_future(service.consumer_group_heartbeat(request, api_version=1, image=image))
        await settled()
        assert h.logs[partition].log_end_offset > 0 and not beat.done()
        writer.replicate(partition)
        await settled()
        assert beat.result().member_epoch == 1 and beat.result().assignment is not None

    asyncio.run(scenario())


# -------------------------------------------------------------------------------------- failures


@pytest.mark.parametrize(("cause", "answer"), [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
])
def test_a_failed_commit_answers_kafkas_coordinator_error(replicated: Harness, cause: ErrorCode,
                                                           answer: ErrorCode) -> None:
    writer: ReplicatedWriter = replicated.writer  # type: ignore[assignment]
    service = GroupCoordinatorService(replicated.coordinator)

    async def scenario() -> None:
        commit = asyncio.ensure_future(_commit(service, "g", 5))
        await settled()
        writer.fail(service.partition_for("g"), cause)
        await settled()
        with pytest.raises(KafkaError) as e:
            commit.result()
        assert e.value.code == answer

    asyncio.run(scenario())


def test_a_commit_not_replicated_within_offsets_commit_timeout_ms_times_out(replicated: Harness) -> None:
    writer: ReplicatedWriter = replicated.writer  # type: ignore[assignment]
    service = GroupCoordinatorService(replicated.coordinator)

    async def scenario() -> None:
        commit = asyncio.ensure_future(_commit(service, "g", 5))
        await settled()
        replicated.clock.advance(4999)
        writer.expire()
        await settled()
        assert not commit.done()
        replicated.clock.advance(1)
        writer.expire()
        await settled()
        with pytest.raises(KafkaError) as e:
            commit.result()
        assert e.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE

    asyncio.run(scenario())


def test_the_offset_commit_handler_answers_once_committed_or_with_the_error(replicated: Harness) -> None:
    """The whole Kafka front end: the dispatcher's answer to an OffsetCommit frame completes after
    the high watermark passes the commit, and a failed commit is the partitions' error."""
    writer: ReplicatedWriter = replicated.writer  # type: ignore[assignment]
    service = GroupCoordinatorService(replicated.coordinator)
    from tidelog.cluster.metadata import MetadataImage

    class Store:
        image: MetadataImage = image_with(t=1)

    registry = HandlerRegistry()
    registry.add(OffsetHandlers(service, Store()))  # type: ignore[arg-type]
    request = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)])])
    partition = service.partition_for("g")

    def dispatch() -> Any:
        frame = encode_request(request, 8, 1)
        d = registry.dispatch(frame, lambda header: RequestContext(header, "c", "127.0.0.1"))
        assert d.api_key == ApiKey.OFFSET_COMMIT
        return asyncio.ensure_future(d.result)

    async def scenario() -> None:
        answer = dispatch()
        await settled()
        assert not answer.done()
        writer.replicate(partition)
        await settled()
        assert answer.result().topics[0].partitions[0].error_code == 0
        answer = dispatch()
        await settled()
        writer.fail(partition, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        await settled()
        assert answer.result().topics[0].partitions[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE

    asyncio.run(scenario())


# ----------------------------------------------------------------------------------- transactions


def test_transaction_apis_are_answered_only_once_committed(tmp_path: Path) -> None:
    h = TxnHarness(tmp_path)
    writer = ReplicatedWriter(h.state_logs, h.clock)
    h.writer = writer  # type: ignore[assignment]
    h.coordinator.close()
    h.coordinator = h._new()
    service = TransactionCoordinatorService(h.coordinator)
    partition = service.partition_for("tx")

    async def step(call: Coroutine[Any, Any, Any]) -> Any:
        task = asyncio.ensure_future(call)
        await settled()
        assert not task.done()  # its transition is in the leader's log, not yet committed
        writer.replicate(partition)
        await settled()
        return task.result()

    async def scenario() -> None:
        init = await step(service.init_producer_id("tx", 60_000))
        assert init.error == ErrorCode.NONE
        pid, epoch = init.producer_id, init.producer_epoch
        assert await step(service.add_partitions_to_txn("tx", pid, epoch, [("t", 0)])) == ErrorCode.NONE
        described = asyncio.ensure_future(service.describe_transactions(["tx"]))
        await settled()
        assert described.result()[0].transaction_state == "Ongoing"  # every write it shows is committed
        end = asyncio.ensure_future(service.end_txn("tx", pid, epoch, True))
        await settled()
        described = asyncio.ensure_future(service.describe_transactions(["tx"]))
        await settled()
        assert not end.done() and not described.done()  # PrepareCommit is not committed: not shown yet
        writer.replicate(partition)
        await settled()
        assert end.result().error == ErrorCode.NONE
        assert described.result()[0].transaction_state in ("PrepareCommit", "CompleteCommit")
        # a commit that does not reach the ISR: the coordinator's error
        failing = asyncio.ensure_future(service.init_producer_id("other", 60_000))
        await settled()
        writer.fail(service.partition_for("other"), ErrorCode.NOT_LEADER_OR_FOLLOWER)
        await settled()
        with pytest.raises(KafkaError) as e:
            failing.result()
        assert e.value.code == ErrorCode.NOT_COORDINATOR

    asyncio.run(scenario())


# ------------------------------------------------------------------------------------ single node


def _completes_at_once(call: Coroutine[Any, Any, Any]) -> Any:
    """Drive ``call`` without an event loop: it must finish without ever suspending."""
    try:
        call.send(None)
    except StopIteration as done:
        return done.value
    call.close()
    raise AssertionError("the call waited")


def test_on_a_single_node_every_call_completes_at_once(harness: Harness, tmp_path: Path) -> None:
    assert isinstance(harness.writer, LogWriter)
    service = GroupCoordinatorService(harness.coordinator)
    assert _completes_at_once(_commit(service, "g", 1)) == {("t", 0): ErrorCode.NONE}
    assert _completes_at_once(service.offset_fetch("g", None)).topics[0].partitions[0].committed_offset == 1
    assert _completes_at_once(service.heartbeat("g", "nobody", None, 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert [r.error_code for r in _completes_at_once(service.delete_groups(["g"]))] == [0]
    txn = TransactionCoordinatorService(TxnHarness(tmp_path / "txn").coordinator)
    assert _completes_at_once(txn.init_producer_id("tx", 60_000)).error == ErrorCode.NONE
