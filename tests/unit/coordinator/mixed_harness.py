"""The group coordinator as the broker builds it (consumer groups with classic members and online
migration) on one real ``__consumer_offsets`` partition and a ManualClock, with requests in the shapes
real clients send: the harness of test_classic_member.py and test_migration.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.coordinator.conftest import Box, FlakyWriter, image_with, topic_id
from tidelog.config import TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator, RequestInfo
from tidelog.coordinator.group.classic.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.modern.consumer.manager import ConsumerGroupCoordinator
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
)
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

GROUP = "g"
SESSION_MS = 45_000          # the consumer group's session timeout
CLASSIC_SESSION_MS = 10_000  # what the classic members ask for
REBALANCE_MS = 20_000


class Harness:
    """The group coordinator as the broker builds it (consumer groups, classic members), on one real
    ``__consumer_offsets`` partition; requests in the shapes real clients send."""

    def __init__(self, tmp_path: Path, **values: Any) -> None:
        self.clock = ManualClock()
        self.image = image_with(t=4, other=1)
        self.plog = load_log(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0,
                             TopicConfig.from_dict({"cleanup.policy": "compact"}), self.clock)
        self.writer = FlakyWriter(lambda p: self.plog)
        self.config = GroupConfig(offsets_topic_num_partitions=1, group_initial_rebalance_delay_ms=0,
                                  group_min_session_timeout_ms=1000, group_max_session_timeout_ms=60_000,
                                  values={"group.consumer.session.timeout.ms": SESSION_MS, **values})
        self.coordinator = self.new_coordinator()

    def new_coordinator(self) -> GroupCoordinator:
        c = GroupCoordinator(self.config, self.clock, self.writer, num_partitions=1, group_types=[ConsumerGroupType],
                             image_source=lambda: self.image)
        c.load([0])
        return c

    @property
    def cg(self) -> ConsumerGroupCoordinator:
        consumer = self.coordinator.types["consumer"]
        assert isinstance(consumer, ConsumerGroupType)
        return consumer.manager

    def group(self) -> Any:
        return self.coordinator.groups.get(GROUP)

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        for _ in range(20):
            if not self.coordinator.poll():
                return

    # -- the consumer protocol -----------------------------------------------------------------------

    def heartbeat(self, member_id: str, epoch: int, owned: dict[str, list[int]] | None = None, **fields: Any):
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", 300_000)
            fields.setdefault("subscribed_topic_names", ["t"])
            owned = {}
        tps = None if owned is None else [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id(t), partitions=p)
                                          for t, p in owned.items()]
        request = ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch,
                                                topic_partitions=tps, **fields)
        return self.coordinator.runtime.apply(0, lambda: self.cg.heartbeat(
            request, api_version=1, image=self.image, client_id="java", client_host="/10.0.0.1"))

    def consumer_member_with_everything(self, member_id: str = "m1") -> None:
        assert self.heartbeat(member_id, 0).member_epoch == 1

    def consumer_member_elsewhere(self, member_id: str = "m0") -> None:
        """A consumer-protocol member of topic "other": the group is a consumer group, t is all free."""
        assert self.heartbeat(member_id, 0, subscribed_topic_names=["other"]).member_epoch == 1

    # -- the classic protocol ------------------------------------------------------------------------

    def join(self, member_id: str = "", *, topics: tuple[str, ...] = ("t",), owned: dict[str, list[int]] | None = None,
             protocols: tuple[str, ...] = ("range", "roundrobin"), instance: str | None = None, version: int = 5,
             subscription_version: int = 3, protocol_type: str = "consumer") -> Box:
        metadata = encode_subscription(list(topics), b"", version=subscription_version, owned_partitions=owned or {},
                                       rack_id=None)
        request = JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=CLASSIC_SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
            member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=metadata) for n in protocols])
        box = Box()
        self.coordinator.join_group(RequestInfo("rdkafka", "/10.0.0.2", version), request, box)
        return box

    def join_new(self, **kwargs: Any) -> Any:
        first = self.join(**kwargs).value
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
        answer = self.join(first.member_id, **kwargs).value
        assert answer.error_code == 0, answer
        return answer

    def sync_box(self, member_id: str, generation: int, protocol_name: str | None = "range",
                 instance: str | None = None, assignments: dict[str, bytes] | None = None,
                 protocol_type: str = "consumer") -> Box:
        box = Box()
        self.coordinator.sync_group(RequestInfo("rdkafka", "/10.0.0.2", 5), SyncGroupRequest(
            group_id=GROUP, generation_id=generation, member_id=member_id, group_instance_id=instance,
            protocol_type=protocol_type if protocol_name else None, protocol_name=protocol_name,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                         for m, a in (assignments or {}).items()]), box)
        return box

    def sync(self, member_id: str, generation: int, protocol_name: str | None = "range",
             instance: str | None = None) -> Any:
        return self.sync_box(member_id, generation, protocol_name, instance).value

    def classic_group(self, n: int, user_data: bytes | None = None, **join: Any) -> list[str]:
        """A Stable classic group of ``n`` members (no KIP-848 member around): the leader splits t's
        four partitions in turn (with ``user_data`` in each assignment). Returns the member ids, leader
        first."""
        firsts = [self.join(**join).value for _ in range(n)]
        boxes = [self.join(f.member_id, **join) for f in firsts]
        self.advance(0)  # the initial rebalance (delay 0) completes the join phase
        answers = [b.value for b in boxes]
        leader = answers[0].leader
        ids = [a.member_id for a in answers]
        plan = {m: encode_assignment({"t": [p for p in range(4) if p % n == i]}, user_data)
                for i, m in enumerate(ids)}
        syncs = [self.sync_box(m, answers[0].generation_id, assignments=plan if m == leader else None,
                               protocol_type=join.get("protocol_type", "consumer")) for m in ids]
        assert all(b.value.error_code == 0 for b in syncs)
        return [leader] + [m for m in ids if m != leader]

    def classic_heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> ErrorCode:
        return ErrorCode(self.coordinator.heartbeat(GROUP, member_id, instance, generation).error_code)

    def leave(self, *members: tuple[str, str | None]) -> LeaveGroupResponse:
        return self.coordinator.leave_group(GROUP, [(m, i, "test") for m, i in members])

    def reloaded_group(self) -> Any:
        return self.new_coordinator().groups.get(GROUP)


def assigned(sync_response: Any) -> dict[str, list[int]]:
    assert sync_response.error_code == 0, sync_response
    return {t: sorted(ps) for t, ps in decode_assignment(sync_response.assignment).items()}


def snapshot(group: ConsumerGroup) -> tuple:
    return (group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target_assignment),
            group.state)


def partitions_of(group: ConsumerGroup, member_id: str) -> set[int]:
    return set(group.members[member_id].assigned_partitions.get(topic_id("t"), ()))
