"""TubeMQ answers only once committed (the group service's calls, which the TubeMQ front end awaits): on a real group
coordinator whose ``__consumer_offsets`` writer has a high watermark that lags its log end, as a
cluster-mode leader's does until its followers fetch, the master's answers to a consumer's register,
heartbeat and close, dispatched as TubeMQ frames, wait until the watermark passes the coordinator's
last write; a wait that fails is answered 503 SERVICE_UNAVAILABLE, never success. On a single node
(every write committed when appended) nothing waits."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from tests.unit.server.tubemq.conftest import BROKER, GROUP, Harness, at_once
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import TopicConfig
from tidelog.coordinator.runtime import LogWriter
from tidelog.errors import ErrorCode
from tidelog.protocol.tubemq.error_code import TubeErrorCode
from tidelog.protocol.tubemq.frame import FrameDecoder
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.rpc import (
    METHODS,
    Method,
    Service,
    Status,
    decode_response,
    encode_request,
    parse_message,
)
from tidelog.server.tubemq import ConsumerService, MasterService, TubeHandlerRegistry, TubeOffsets
from tidelog.storage.log import PartitionLog


class LaggingWriter(LogWriter):
    """The offsets log as a cluster-mode leader has it: appended at once, committed only when the
    test moves the high watermark (:meth:`replicate`) or fails the wait (:meth:`fail`)."""

    def __init__(self, plog: PartitionLog) -> None:
        super().__init__(lambda p: plog)
        self.plog = plog
        self.high_watermark = 0
        self.failure = ErrorCode.NONE
        self.moved = asyncio.Event()

    def is_committed(self, partition: int, offset: int) -> bool:
        return self.high_watermark >= offset

    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> ErrorCode:
        while self.failure == ErrorCode.NONE and self.high_watermark < offset:
            self.moved.clear()
            await self.moved.wait()
        return self.failure

    def replicate(self) -> None:
        self.high_watermark = self.plog.log_end_offset
        self.moved.set()

    def fail(self, code: ErrorCode) -> None:
        self.failure = code
        self.moved.set()


def master_registry(h: Harness) -> TubeHandlerRegistry:
    consumers = ConsumerService(None, h.balancer, TubeOffsets(h.service))  # type: ignore[arg-type]
    registry = TubeHandlerRegistry("master", frozenset({Service.MASTER}))
    registry.add(MasterService(h.store, TopicConfigs(TopicConfig.from_dict({})), h.balancer, consumers,
                               lambda: BROKER))
    return registry


SERIALS = iter(range(1, 1_000_000))


def dispatch(registry: TubeHandlerRegistry, method: Method, request):
    frame, = FrameDecoder().feed(encode_request(next(SERIALS), Service.MASTER, method, request))
    return registry.dispatch(frame, "10.0.0.9", "conn-1")


def answer(data: bytes, method: Method):
    frame, = FrameDecoder().feed(data)
    response = decode_response(frame)
    assert response.status == Status.SUCCESS, response
    return parse_message(METHODS[method].response, response.data or b"")


REGISTER = master_pb.RegisterRequestC2M(clientId="a", groupName=GROUP, hostName="10.0.0.9", topicList=["t"])
HEARTBEAT = master_pb.HeartRequestC2M(clientId="a", groupName=GROUP, reportSubscribeInfo=False)
CLOSE = master_pb.CloseRequestC2M(clientId="a", groupName=GROUP)


def test_the_masters_answers_wait_until_the_coordinators_writes_are_committed(tmp_path: Path) -> None:
    asyncio.run(answers_wait(tmp_path))


async def answers_wait(tmp_path: Path) -> None:
    h = Harness(tmp_path, LaggingWriter)
    writer: LaggingWriter = h.writer  # type: ignore[assignment]
    registry = master_registry(h)

    async def held(method: Method, request) -> asyncio.Future:
        written = writer.plog.log_end_offset
        pending = dispatch(registry, method, request)
        assert inspect.isawaitable(pending), f"{method.name} answered before the coordinator's write was committed"
        task = asyncio.ensure_future(pending)
        for _ in range(5):
            await asyncio.sleep(0)
        assert not task.done(), f"{method.name} answered before the high watermark passed the write"
        assert written <= writer.plog.log_end_offset
        return task

    register = await held(Method.CONSUMER_REGISTER_C2M, REGISTER)
    writer.replicate()
    assert answer(await asyncio.wait_for(register, 5), Method.CONSUMER_REGISTER_C2M).success
    # Nothing written since: a heartbeat is answered at once (without waiting).
    beat = dispatch(registry, Method.CONSUMER_HEARTBEAT_C2M, HEARTBEAT)
    assert answer(at_once(beat), Method.CONSUMER_HEARTBEAT_C2M).success
    # Another member joins (written, not yet committed): a's heartbeat reflects that write and waits too.
    other = await held(Method.CONSUMER_REGISTER_C2M, master_pb.RegisterRequestC2M(
        clientId="b", groupName=GROUP, hostName="10.0.0.8", topicList=["t"]))
    beat = await held(Method.CONSUMER_HEARTBEAT_C2M, HEARTBEAT)
    writer.replicate()
    assert answer(await asyncio.wait_for(other, 5), Method.CONSUMER_REGISTER_C2M).success
    assert answer(await asyncio.wait_for(beat, 5), Method.CONSUMER_HEARTBEAT_C2M).success
    close = await held(Method.CONSUMER_CLOSE_CLIENT_C2M, CLOSE)
    writer.replicate()
    assert answer(await asyncio.wait_for(close, 5), Method.CONSUMER_CLOSE_CLIENT_C2M).success
    assert "a" not in h.consumer_groups.group(GROUP).members


@pytest.mark.parametrize("code", [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER], ids=lambda c: c.name)
def test_a_write_that_does_not_reach_the_isr_is_answered_503_never_success(tmp_path: Path, code: ErrorCode) -> None:
    asyncio.run(failed_wait(tmp_path, code))


async def failed_wait(tmp_path: Path, code: ErrorCode) -> None:
    h = Harness(tmp_path, LaggingWriter)
    writer: LaggingWriter = h.writer  # type: ignore[assignment]
    pending = dispatch(master_registry(h), Method.CONSUMER_REGISTER_C2M, REGISTER)
    assert inspect.isawaitable(pending)
    task = asyncio.ensure_future(pending)
    await asyncio.sleep(0)
    writer.fail(code)
    response = answer(await asyncio.wait_for(task, 5), Method.CONSUMER_REGISTER_C2M)
    assert not response.success
    assert response.errCode == TubeErrorCode.SERVICE_UNAVAILABLE, response
    assert "in-sync replicas" in response.errMsg, response.errMsg


def test_on_a_single_node_nothing_waits(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    registry = master_registry(h)
    for method, request in ((Method.CONSUMER_REGISTER_C2M, REGISTER), (Method.CONSUMER_HEARTBEAT_C2M, HEARTBEAT),
                            (Method.CONSUMER_CLOSE_CLIENT_C2M, CLOSE)):
        data = at_once(dispatch(registry, method, request))  # fails if it waits
        assert isinstance(data, bytes), method.name
        assert answer(data, method).success


class ElsewhereWriter(LogWriter):
    """The offsets log of a partition another broker leads."""

    def owns(self, partition: int) -> bool:
        return False


def test_the_group_service_reads_tubemq_asks_wait_for_the_writes_they_reflect(tmp_path: Path) -> None:
    asyncio.run(reads_wait(tmp_path))


async def reads_wait(tmp_path: Path) -> None:
    h = Harness(tmp_path, LaggingWriter)
    writer: LaggingWriter = h.writer  # type: ignore[assignment]
    assert h.service.coordinates(GROUP)  # leadership, no write: answered at once
    register = asyncio.ensure_future(dispatch(master_registry(h), Method.CONSUMER_REGISTER_C2M, REGISTER))
    members = asyncio.ensure_future(h.service.consumer_group_members(GROUP))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not members.done(), "the members were read before the join they reflect was committed"
    writer.replicate()
    assert "a" in await asyncio.wait_for(members, 5)
    assert answer(await asyncio.wait_for(register, 5), Method.CONSUMER_REGISTER_C2M).success
    # Nothing written since: read at once.
    assert set(at_once(h.service.consumer_group_members(GROUP))) == {"a"}
    assert at_once(h.service.consumer_group_members("no-such-group")) == {}


def test_a_broker_that_does_not_lead_the_groups_partition_does_not_coordinate_it(tmp_path: Path) -> None:
    h = Harness(tmp_path, lambda plog: ElsewhereWriter(lambda p: plog))
    assert not h.service.coordinates(GROUP)
    assert not h.balancer.coordinates(GROUP)
