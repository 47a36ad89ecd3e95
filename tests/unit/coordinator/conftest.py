"""A group coordinator on real partition logs in tmp_path, a ManualClock, and request helpers.

``Harness.fresh()`` builds a second coordinator that loads the same logs: replaying what the first
one wrote must give the same state.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.config import TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator, RequestInfo
from tidelog.coordinator.group.classic.consumer_protocol import encode_subscription
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup
from tidelog.coordinator.runtime import LogWriter
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import JoinGroupRequest, SyncGroupRequest
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.testing import ManualClock

PARTITIONS = 4
TOPIC = "__consumer_offsets"


class SwitchableWriter(LogWriter):
    """The real log writer; ``fail_with`` makes the partition unavailable, as a lost leadership would."""

    def __init__(self, logs: dict[int, PartitionLog]) -> None:
        super().__init__(logs.__getitem__)
        self.fail_with: ErrorCode | None = None

    def append(self, partition: int, batch: bytes) -> int:
        if self.fail_with is not None:
            raise KafkaError(self.fail_with, "partition unavailable")
        return super().append(partition, batch)


class FlakyWriter(LogWriter):
    """The real log writer, which fails its appends while ``failing`` is set (a lost leadership)."""

    failing = False

    def append(self, partition: int, batch: bytes) -> int:
        if self.failing:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "no longer the leader")
        return super().append(partition, batch)


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


def image_with(version: int = 1, **topics: int) -> MetadataImage:
    """A metadata image of these topics (name: partition count), every partition led by broker 1."""
    return MetadataImage(cluster_id="c", controller_id=1, brokers={}, version=version, topics={
        name: TopicMetadata(name, topic_id(name), tuple(PartitionMetadata(p, 1, 0, (1,), (1,)) for p in range(n)))
        for name, n in topics.items()})


def assert_exclusive(group: ConsumerGroup) -> None:
    """No partition is held (assigned or being revoked) by two members at once."""
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for m in group.members.values():
        for tps in (m.assigned_partitions, m.partitions_pending_revocation):
            for t, ps in tps.items():
                for p in ps:
                    assert (t, p) not in seen, f"{t}-{p} held by {seen[(t, p)]} and {m.member_id}"
                    seen[(t, p)] = m.member_id


@dataclass
class Box:
    """Collects the answers a parked request gets."""

    items: list[Any] = field(default_factory=list)

    def __call__(self, response: Any) -> None:
        self.items.append(response)

    @property
    def done(self) -> bool:
        return bool(self.items)

    @property
    def value(self) -> Any:
        assert len(self.items) == 1, f"expected one answer, got {self.items}"
        return self.items[0]


def subscription(*topics: str) -> bytes:
    return encode_subscription(list(topics))


class Harness:
    def __init__(self, tmp_path: Path, **config: Any) -> None:
        self.tmp_path = tmp_path
        self.clock = ManualClock()
        self.logs = {p: load_log(tmp_path / f"{TOPIC}-{p}", TOPIC, p, TopicConfig(cleanup_policy="compact"), self.clock)
                     for p in range(PARTITIONS)}
        self.writer = SwitchableWriter(self.logs)
        defaults = dict(offsets_topic_num_partitions=PARTITIONS, group_initial_rebalance_delay_ms=0,
                        group_min_session_timeout_ms=1000, group_max_session_timeout_ms=60_000,
                        offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000)
        defaults.update(config)
        self.config = GroupConfig(**defaults)
        self.coordinator = self._new()

    def _new(self) -> GroupCoordinator:
        c = GroupCoordinator(self.config, self.clock, self.writer, num_partitions=PARTITIONS)
        c.load(range(PARTITIONS))  # as the broker does at start-up (this also starts offset expiry)
        return c

    def fresh(self) -> GroupCoordinator:
        """A new coordinator that replays everything written so far."""
        return self._new()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.settle()

    def settle(self) -> None:
        """Run due timers until none is due (a zero-delay timer may schedule another)."""
        for _ in range(20):
            if not self.coordinator.poll():
                return
        raise AssertionError("timers keep firing")

    def records_written(self) -> int:
        return sum(plog.log_end_offset for plog in self.logs.values())

    # ------------------------------------------------------------------------------- requests

    def join(self, group: str, member_id: str = "", *, protocols: list[tuple[str, bytes]] | None = None,
             session_ms: int = 10_000, rebalance_ms: int = 20_000, instance: str | None = None,
             client: str = "client", version: int = 9, protocol_type: str = "consumer") -> Box:
        box = Box()
        request = JoinGroupRequest(
            group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                       for n, m in (protocols if protocols is not None else [("range", subscription("t"))])])
        self.coordinator.join_group(RequestInfo(client, "/127.0.0.1", version), request, box)
        return box

    def join_new(self, group: str, **kwargs: Any) -> Box:
        """The v4+ round trip: MEMBER_ID_REQUIRED, then the join with the id it gave."""
        first = self.join(group, **kwargs)
        assert first.value.error_code == ErrorCode.MEMBER_ID_REQUIRED
        return self.join(group, first.value.member_id, **kwargs)

    def sync(self, group: str, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *,
             instance: str | None = None, protocol_type: str | None = None, protocol_name: str | None = None) -> Box:
        box = Box()
        request = SyncGroupRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance,
            protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                         for m, a in (assignments or {}).items()])
        self.coordinator.sync_group(RequestInfo("client", "/127.0.0.1", 5), request, box)
        return box

    def heartbeat(self, group: str, member_id: str, generation: int, instance: str | None = None) -> int:
        return self.coordinator.heartbeat(group, member_id, instance, generation).error_code

    def stable_group(self, group: str, n: int = 2, **kwargs: Any) -> list[str]:
        """Bring ``group`` to Stable with ``n`` members; returns the member ids, leader first."""
        boxes = [self.join_new(group, client=f"c{i}", **kwargs) for i in range(n)]
        self.settle()  # the initial rebalance timer (delay 0)
        answers = [b.value for b in boxes]
        assert all(a.error_code == 0 for a in answers), answers
        leader = answers[0].leader
        generation = answers[0].generation_id
        ids = [a.member_id for a in answers]
        syncs = [self.sync(group, m, generation, {x: x.encode() for x in ids} if m == leader else None) for m in ids]
        assert all(s.value.error_code == 0 for s in syncs), [s.items for s in syncs]
        return [leader] + [m for m in ids if m != leader]


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
