"""Coordinators in a cluster: answers wait until the high watermark passes the writes they reflect
(runtime rule 6, through the group coordinator service and the dispatcher), requests for partitions not led here answer NOT_COORDINATOR (rule 7),
and a partition whose leadership moves is unloaded (groups, offsets, transactional ids, timers)."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from pathlib import Path

import pytest

from tidelog.cluster.metadata import PartitionMetadata, TopicMetadata
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.coordinator.group.records import CoordinatorRecord, OffsetCommitKey, OffsetCommitValue
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.leadership import leadership_change
from tidelog.coordinator.runtime import CoordinatorRuntime, Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol import ApiKey, encode_request
from tidelog.protocol.messages import HeartbeatRequest, HeartbeatResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry, handles
from tidelog.testing import ManualClock

from .conftest import Harness, SwitchableWriter, subscription
from .txn.conftest import TxnHarness


class HeldWriter(SwitchableWriter):
    """The real log writer, with a high watermark the test moves and leadership it takes away."""

    def __init__(self, logs) -> None:
        super().__init__(logs)
        self.hw: dict[int, int] = {}
        self.owned = True
        self.wait_result = ErrorCode.NONE
        self.waited: list[tuple[int, int]] = []
        self.timeouts: list[int] = []

    def owns(self, partition: int) -> bool:
        return self.owned

    def is_committed(self, partition: int, offset: int) -> bool:
        return self.hw.get(partition, 0) >= offset

    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> ErrorCode:
        self.waited.append((partition, offset))
        self.timeouts.append(timeout_ms)
        if self.wait_result == ErrorCode.NONE:
            self.hw[partition] = offset
        return self.wait_result


@pytest.fixture
def held(tmp_path: Path) -> Harness:
    h = Harness(tmp_path)
    h.writer = HeldWriter(h.logs)
    h.coordinator = h._new()
    return h


def _commit(h: Harness, group: str, offset: int) -> dict:
    return h.coordinator.commit_offsets(_info(), group, "", None, -1, [PartitionCommit("t", 0, offset, -1, "", -1)])


def _info():
    from tidelog.coordinator.group import RequestInfo
    return RequestInfo("client", "/127.0.0.1", 8)


def _served_commit(h: Harness, group: str, offset: int) -> dict:
    """An OffsetCommit as a client's is answered: through the service, once committed."""
    return asyncio.run(GroupCoordinatorService(h.coordinator).offset_commit(
        _info(), group, "", None, -1, [PartitionCommit("t", 0, offset, -1, "", -1)]))


def test_a_commit_is_pending_until_the_high_watermark_passes_it(held: Harness) -> None:
    partition = held.coordinator.partition_for("g")
    assert _commit(held, "g", 4) == {("t", 0): ErrorCode.NONE}  # the coordinator's own write: not waited for
    assert not held.coordinator.runtime.is_committed(partition) and held.writer.waited == []
    codes = _served_commit(held, "g", 5)
    assert codes == {("t", 0): ErrorCode.NONE}
    end = held.logs[partition].log_end_offset
    assert held.writer.waited == [(partition, end)]  # it waited for the end of its own write
    assert held.coordinator.runtime.is_committed(partition)


def test_the_wait_is_bounded_by_offsets_commit_timeout_ms(tmp_path: Path) -> None:
    from tidelog.config import BrokerConfig
    from tidelog.coordinator.group.config import GroupConfig

    assert GroupConfig.from_broker_config(BrokerConfig.from_props({})).offsets_commit_timeout_ms == 5000  # Kafka's
    configured = GroupConfig.from_broker_config(BrokerConfig.from_props({"offsets.commit.timeout.ms": "1234"}))
    h = Harness(tmp_path, offsets_commit_timeout_ms=configured.offsets_commit_timeout_ms)
    h.writer = HeldWriter(h.logs)
    h.coordinator = h._new()
    assert _served_commit(h, "g", 5) == {("t", 0): ErrorCode.NONE}
    assert h.writer.timeouts == [1234]


def test_a_read_waits_for_the_writes_it_reflects(held: Harness) -> None:
    _commit(held, "g", 5)  # written outside any request: nothing to wait for there
    partition = held.coordinator.partition_for("g")
    assert not held.coordinator.runtime.is_committed(partition)  # the commit the read shows is not committed yet
    group = asyncio.run(GroupCoordinatorService(held.coordinator).offset_fetch("g", [("t", [0])]))
    assert group.topics[0].partitions[0].committed_offset == 5
    assert held.writer.waited == [(partition, held.logs[partition].log_end_offset)]  # the read waited for it
    assert held.coordinator.runtime.is_committed(partition)


@pytest.mark.parametrize(("wait_error", "answer"), [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE),
])
def test_a_failed_wait_answers_kafkas_coordinator_error(held: Harness, wait_error: ErrorCode,
                                                         answer: ErrorCode) -> None:
    held.writer.wait_result = wait_error
    with pytest.raises(KafkaError) as e:
        _served_commit(held, "g", 5)
    assert e.value.code == answer


def test_partitions_not_led_here_answer_not_coordinator(held: Harness) -> None:
    leader, follower = held.stable_group("g")
    held.writer.owned = False
    with pytest.raises(KafkaError) as e:
        _commit(held, "g", 1)
    assert e.value.code == ErrorCode.NOT_COORDINATOR
    with pytest.raises(KafkaError) as e:  # the dispatcher answers it as the Heartbeat's error
        held.heartbeat("g", leader, 1)
    assert e.value.code == ErrorCode.NOT_COORDINATOR
    assert held.coordinator.fetch_offsets("g", [("t", [0])]).error_code == ErrorCode.NOT_COORDINATOR
    sync = held.sync("g", leader, 1)
    assert sync.value.error_code == ErrorCode.NOT_COORDINATOR
    assert held.join("g", follower).value.error_code == ErrorCode.NOT_COORDINATOR


def test_unloading_drops_the_partitions_groups_offsets_and_timers(harness: Harness) -> None:
    c = harness.coordinator
    ids = harness.stable_group("a")
    other = next(g for g in (f"b{i}" for i in range(100)) if c.partition_for(g) != c.partition_for("a"))
    for g, members in (("a", ids), (other, harness.stable_group(other))):
        assert c.commit_offsets(_info(), g, members[0], None, 1, [PartitionCommit("t", 0, 7, -1, "", -1)]) == {
            ("t", 0): ErrorCode.NONE}
    rejoin = harness.join("a", ids[0], protocols=[("range", subscription("t", "u"))])  # parks: a rebalance
    assert not rejoin.done
    timers_before = len(c.runtime.timers)
    c.unload([c.partition_for("a")])
    assert rejoin.value.error_code == ErrorCode.NOT_COORDINATOR
    assert "a" not in c.groups and not c.offsets.has_offsets("a")
    assert other in c.groups and c.offsets.get(other, "t", 0).offset == 7
    assert len(c.runtime.timers) < timers_before
    assert not any("-a-" in key or key.endswith("-a") for key in c.runtime._timer_partitions)
    harness.advance(60_000)  # the unloaded group's timers do not fire (nothing written for it)
    c.load([c.partition_for("a")])  # leadership back: the log has it all
    assert c.offsets.get("a", "t", 0).offset == 7 and "a" in c.groups


def test_unloading_transactional_ids_and_loading_them_back(tmp_path: Path) -> None:
    h = TxnHarness(tmp_path)
    pid, epoch = h.init("tx")
    c = h.coordinator
    partition = c.partition_for("tx")
    c.unload([partition])
    assert c.metadata("tx") is None
    assert c.init_producer_id("tx", 60_000).error == ErrorCode.NOT_COORDINATOR
    c.load([partition])
    md = c.metadata("tx")
    assert md is not None and (md.producer_id, md.producer_epoch) == (pid, epoch)


# ---------------------------------------------------------------------------------------- leadership

def _topic(leaders: list[tuple[int, int]], topic_id: uuid.UUID) -> TopicMetadata:
    return TopicMetadata("__consumer_offsets", topic_id, tuple(
        PartitionMetadata(i, leader, epoch, (1, 2, 3), (1, 2, 3), 0) for i, (leader, epoch) in enumerate(leaders)))


def test_leadership_change_loads_gains_and_unloads_losses() -> None:
    tid = uuid.uuid4()
    before = _topic([(1, 0), (2, 0), (1, 0), (3, 0)], tid)
    after = _topic([(2, 1), (2, 0), (1, 2), (1, 1)], tid)
    change = leadership_change(1, before, after)
    assert change.unload == (0, 2)  # lost 0; 2 led in a new epoch: unloaded, then loaded again
    assert change.load == (2, 3)
    assert leadership_change(1, before, before).load == leadership_change(1, before, before).unload == ()


def test_leadership_change_on_creation_and_deletion() -> None:
    tid = uuid.uuid4()
    created = _topic([(1, 0), (2, 0)], tid)
    assert leadership_change(1, None, created).unload == ()
    assert leadership_change(1, None, created, assumed_all=True).unload == (1,)
    assert leadership_change(1, created, None).unload == (0,)
    assert leadership_change(1, created, _topic([(1, 0), (2, 0)], uuid.uuid4())).unload == (0,)


# ---------------------------------------------------------------------------------------- dispatcher

def _runtime(tmp_path: Path) -> tuple[CoordinatorRuntime, HeldWriter]:
    h = Harness(tmp_path)
    writer = HeldWriter(h.logs)
    return CoordinatorRuntime(ManualClock(), writer, lambda *a: None, serialize, deserialize), writer


def _heartbeat_registry(runtime: CoordinatorRuntime) -> HandlerRegistry:
    record = CoordinatorRecord(OffsetCommitKey("g", "t", 0), OffsetCommitValue(1, "", 0))

    class Handler:
        @handles(ApiKey.HEARTBEAT, 0, 4)
        async def heartbeat(self, ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
            return await runtime.run(0, lambda: runtime.apply(0, lambda: Result([record], HeartbeatResponse())))

    registry = HandlerRegistry()
    registry.add(Handler())
    return registry


def _dispatch_heartbeat(registry: HandlerRegistry):
    frame = encode_request(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 4, 7)
    return registry.dispatch(frame, lambda header: RequestContext(header, "test", "127.0.0.1")).result


def test_the_dispatcher_answers_once_committed_or_with_the_coordinator_error(tmp_path: Path) -> None:
    runtime, writer = _runtime(tmp_path)
    registry = _heartbeat_registry(runtime)
    result = _dispatch_heartbeat(registry)
    assert inspect.isawaitable(result)  # the write is not committed yet
    assert asyncio.run(result).error_code == ErrorCode.NONE
    writer.wait_result = ErrorCode.NOT_LEADER_OR_FOLLOWER
    result = _dispatch_heartbeat(registry)
    assert asyncio.run(result).error_code == ErrorCode.NOT_COORDINATOR
    writer.hw[0] = 10**9  # committed at once (a single node): answered without waiting
    writer.waited.clear()
    assert asyncio.run(_dispatch_heartbeat(registry)).error_code == ErrorCode.NONE
    assert writer.waited == []


# ------------------------------------------------------------------------------------- txn markers

def test_a_transaction_completes_only_once_its_markers_are_committed(tmp_path: Path) -> None:
    from tidelog.coordinator.txn import TransactionCoordinator
    from tidelog.coordinator.txn.state import TransactionState

    loop = asyncio.new_event_loop()

    def settle() -> None:  # the done callbacks of resolved confirmations run
        loop.run_until_complete(asyncio.sleep(0))

    h = TxnHarness(tmp_path)
    t0 = loop.create_future()  # committed when the test says so
    lost = loop.create_future()
    lost.set_result(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    states: dict[tuple[str, int], list] = {("t", 0): [t0],
                                           ("t", 1): [lost, ErrorCode.NONE]}  # lost with its leader, then committed
    h.coordinator.close()
    h.coordinator = c = TransactionCoordinator(h.config, h.clock, h.writer, lambda: next(h.ids), h.data.write,
                                               confirm_marker=lambda t, p, pid: states[(t, p)].pop(0))
    try:
        c.load(range(len(h.state_logs)))
        pid, epoch = h.init("a")
        h.begin("a", pid, epoch)
        assert c.end_txn("a", pid, epoch, True).error == ErrorCode.NONE
        assert c.metadata("a").state is TransactionState.PREPARE_COMMIT  # markers written, not yet committed
        h.advance(20)
        assert c.metadata("a").state is TransactionState.PREPARE_COMMIT
        h.advance(200)  # t-1's marker was lost with its leader: written again after the backoff, confirmed
        settle()
        assert c.metadata("a").state is TransactionState.PREPARE_COMMIT  # t-0: still not committed
        assert "txn-markers:a" not in c.runtime.timers  # nothing polls the confirmation
        t0.set_result(ErrorCode.NONE)  # t-0's marker is committed: the transaction completes, nothing polled
        settle()
        assert c.metadata("a").state is TransactionState.COMPLETE_COMMIT
        assert h.markers("t", 0) == [(pid, epoch, True)]
        assert h.markers("t", 1) == [(pid, epoch, True)] * 2
        assert states == {("t", 0): [], ("t", 1): []}
    finally:
        loop.close()
