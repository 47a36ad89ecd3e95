"""A TubeMQ balancer on a real group coordinator service (KIP-848 consumer groups) over a real
``__consumer_offsets`` log in tmp_path, a real metadata store and a ManualClock, plus a simulated
TubeMQ consumer that heartbeats the way the Java client does (apply an event when it arrives,
confirm it on the next heartbeat with a report of what it holds). The balancer's calls are
``async``; on a single node they complete without waiting (:func:`at_once`)."""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import EmbeddedStore
from tidelog.config import TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.runtime import LogWriter, PartitionWriter
from tidelog.protocol.messages import ConsumerGroupHeartbeatRequest
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.notation import BrokerAddress, PartitionRef, SubscribeInfo, parse_subscribe_info
from tidelog.server.tubemq.balancer import EventType, TubeBalancer
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.testing import ManualClock

GROUP = "g"
SESSION_MS = 10_000
BROKER = BrokerAddress(0, "broker-host", 8123)


def at_once(aw: Any) -> Any:
    """The value of awaitable ``aw``, which must complete without waiting: on a single node every
    coordinator write is committed when appended, so nothing waits. Fails if it would wait."""
    if not inspect.isawaitable(aw):
        return aw
    steps = aw.__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        return done.value
    steps.close()
    raise AssertionError("waited although nothing had to be committed")


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


def image_with(**topics: int) -> MetadataImage:
    return MetadataImage(cluster_id="c", controller_id=0, brokers={0: BrokerInfo(0, "h", 9092)}, version=1, topics={
        name: TopicMetadata(name, topic_id(name), tuple(PartitionMetadata(p, 0, 0, (0,), (0,)) for p in range(n)))
        for name, n in topics.items()})


class Harness:
    def __init__(self, tmp_path: Path, writer: Callable[[PartitionLog], PartitionWriter] | None = None) -> None:
        """``writer``: the coordinator's writer over the offsets log (a :class:`LogWriter` by default:
        a single node, every write committed when appended)."""
        self.clock = ManualClock()
        plog = load_log(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0,
                        TopicConfig.from_dict({"cleanup.policy": "compact"}), self.clock)
        self.writer = writer(plog) if writer is not None else LogWriter(lambda p: plog)
        self.coordinator = GroupCoordinator(
            GroupConfig(offsets_topic_num_partitions=1, values={"group.consumer.session.timeout.ms": SESSION_MS}),
            self.clock, self.writer, num_partitions=1,
            group_types=[functools.partial(ConsumerGroupType, classic_members=False)])
        self.coordinator.load([0])
        self.store = EmbeddedStore(tmp_path)
        self.store.open(BrokerInfo(0, "h", 9092))
        self.store.publish(image_with(t=4, u=2))
        self.service = GroupCoordinatorService(self.coordinator)
        self.consumer_groups = self.service.consumer_groups
        assert self.consumer_groups is not None
        self.balancer = TubeBalancer(self.service, self.store, self.clock, lambda: BROKER)

    def kafka_heartbeat(self, member_id: str, epoch: int, owned: set[int], topics: tuple[str, ...] = ("t",)):
        """A KIP-848 member of the same group heartbeating as a Kafka consumer does."""
        request = ConsumerGroupHeartbeatRequest(
            group_id=GROUP, member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=60_000,
            subscribed_topic_names=list(topics),
            topic_partitions=[ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id("t"),
                                                                             partitions=sorted(owned))] if owned else [])
        return at_once(self.service.consumer_group_heartbeat(request, api_version=1, image=self.store.image,
                                                             client_id="kafka", client_host="/127.0.0.1"))

    def exclusive(self) -> None:
        """The coordinator never lets two members own (or revoke) one partition."""
        group = self.consumer_groups.group(GROUP)
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for m in group.members.values() if group is not None else ():
            for tps in (m.assigned_partitions, m.partitions_pending_revocation):
                for t, ps in tps.items():
                    for p in ps:
                        assert (t, p) not in seen, f"{p} owned by {seen[(t, p)]} and {m.member_id}"
                        seen[(t, p)] = m.member_id


class SimClient:
    """A TubeMQ consumer as the Java client behaves: it applies an event as soon as it gets it
    (registering or unregistering the partitions), and confirms it on its next heartbeat together
    with a report of the partitions it holds."""

    def __init__(self, harness: Harness, client_id: str, topics: tuple[str, ...] = ("t",)) -> None:
        self.h = harness
        self.client_id = client_id
        self.topics = topics
        self.held: set[tuple[str, int]] = set()
        self.done: master_pb.EventProto | None = None
        self.events: list[tuple[EventType, set[tuple[str, int]]]] = []

    def _infos(self, held: set[tuple[str, int]] | None = None) -> list[str]:
        return [str(SubscribeInfo(self.client_id, GROUP, PartitionRef(BROKER, t, p)))
                for t, p in sorted(self.held if held is None else held)]

    def register(self, claimed: set[tuple[str, int]] | None = None) -> master_pb.RegisterResponseM2C:
        if claimed is not None:
            self.held = set(claimed)
        request = master_pb.RegisterRequestC2M(clientId=self.client_id, groupName=GROUP, hostName="10.0.0.9",
                                               topicList=list(self.topics), subscribeInfo=self._infos())
        return at_once(self.h.balancer.register("10.0.0.9", request))

    def heartbeat(self) -> master_pb.HeartResponseM2C:
        request = master_pb.HeartRequestC2M(clientId=self.client_id, groupName=GROUP, reportSubscribeInfo=False)
        if self.done is not None:
            request.event.CopyFrom(self.done)
            request.reportSubscribeInfo = True
            request.subscribeInfo.extend(self._infos())
            self.done = None
        response = at_once(self.h.balancer.heartbeat("10.0.0.9", request))
        if response.HasField("event"):
            event = response.event
            partitions = {(i.partition.topic, i.partition.partition) for i in map(parse_subscribe_info,
                                                                                   event.subscribeInfo)}
            assert all(parse_subscribe_info(i).consumer_id == self.client_id for i in event.subscribeInfo)
            kind = EventType(event.opType)
            self.events.append((kind, partitions))
            if kind in (EventType.CONNECT, EventType.ONLY_CONNECT):
                self.held |= partitions
            else:
                self.held -= partitions
            self.done = master_pb.EventProto(rebalanceId=event.rebalanceId, opType=event.opType, status=2,
                                             subscribeInfo=event.subscribeInfo)
        return response

    def close(self) -> None:
        at_once(self.h.balancer.close("10.0.0.9", master_pb.CloseRequestC2M(clientId=self.client_id, groupName=GROUP)))
        self.held.clear()


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
