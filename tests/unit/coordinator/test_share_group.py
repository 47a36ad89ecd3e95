"""The share group type (KIP-932) driven through the real coordinator runtime on a real
``__consumer_offsets`` log: records and their round trip, heartbeat rules, share-partition initialization
(initializing -> initialized -> assigned), fencing by session timeout, deletion, and the state rebuilt by
replay equal to the live state."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.config import TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator
from tidelog.coordinator.group.modern.member import MemberState
from tidelog.coordinator.group.modern.share.group import ShareGroup, ShareGroupMember
from tidelog.coordinator.group.modern.share.group_type import ShareGroupType
from tidelog.coordinator.group.modern.share.manager import ShareGroupCoordinator
from tidelog.coordinator.group.modern.share.records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.coordinator.runtime import LogWriter
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import ShareGroupHeartbeatRequest
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

GROUP = "sg"
T = uuid.uuid5(uuid.NAMESPACE_DNS, "t")


def image(partitions: int = 3) -> MetadataImage:
    return MetadataImage(cluster_id="c", controller_id=1, brokers={}, version=1, topics={
        "t": TopicMetadata("t", T, tuple(PartitionMetadata(p, 1, 0, (1,), (1,)) for p in range(partitions)))})


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = ManualClock()
        self.image = image()
        self.plog = load_log(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0,
                             TopicConfig.from_dict({"cleanup.policy": "compact"}), self.clock)
        self.writer = LogWriter(lambda p: self.plog)
        self.config = GroupConfig(offsets_topic_num_partitions=1, values={"group.share.max.size": 3})
        self.coordinator = self._new()

    def _new(self) -> GroupCoordinator:
        return GroupCoordinator(self.config, self.clock, self.writer, num_partitions=1, group_types=[ShareGroupType],
                                image_source=lambda: self.image)

    @property
    def sg(self) -> ShareGroupCoordinator:
        share = self.coordinator.types["share"]
        assert isinstance(share, ShareGroupType)
        return share.manager

    def heartbeat(self, member_id: str, epoch: int, topics: list[str] | None = None, **fields):
        if epoch == 0 and topics is None:
            topics = ["t"]
        request = ShareGroupHeartbeatRequest(group_id=fields.pop("group_id", GROUP), member_id=member_id,
                                             member_epoch=epoch, subscribed_topic_names=topics, **fields)
        return self.coordinator.runtime.apply(0, lambda: self.sg.heartbeat(
            request, api_version=1, image=self.image, client_id="client", client_host="/127.0.0.1"))

    def initialize_all(self) -> None:
        """What the service does after a heartbeat: every initializing partition initialized."""
        _, pending = self.sg.take_initialization(GROUP)
        self.coordinator.runtime.apply(0, lambda: self.sg.initialized(GROUP, pending, {}))

    def group(self) -> ShareGroup:
        group = self.sg.group(GROUP)
        assert group is not None
        return group

    def reloaded(self) -> ShareGroupCoordinator:
        coordinator = self._new()
        coordinator.load([0])
        share = coordinator.types["share"]
        assert isinstance(share, ShareGroupType)
        return share.manager


def snapshot(group: ShareGroup) -> tuple:
    return (group.group_epoch, group.metadata_hash, group.assignment_epoch, dict(group.members),
            dict(group.target_assignment), dict(group.initializing), dict(group.initialized), group.state_name())


def parts(response) -> set[int]:
    assert response.assignment is not None
    return {p for tp in response.assignment.topic_partitions for p in tp.partitions}


@pytest.mark.parametrize("record", [
    CoordinatorRecord(ShareGroupMetadataKey(GROUP), ShareGroupMetadataValue(3, -42)),
    CoordinatorRecord(ShareGroupMemberMetadataKey(GROUP, "m"), ShareGroupMemberMetadataValue("r1", "c", "/h", ("a", "b"))),
    CoordinatorRecord(ShareGroupTargetAssignmentMetadataKey(GROUP), ShareGroupTargetAssignmentMetadataValue(3, 17)),
    CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(GROUP, "m"),
                      ShareGroupTargetAssignmentMemberValue({T: frozenset({0, 2})})),
    CoordinatorRecord(ShareGroupCurrentMemberAssignmentKey(GROUP, "m"),
                      ShareGroupCurrentMemberAssignmentValue(3, 2, 0, {T: frozenset({1})})),
    CoordinatorRecord(ShareGroupStatePartitionMetadataKey(GROUP), ShareGroupStatePartitionMetadataValue(
        {T: ("t", frozenset({2}))}, {T: ("t", frozenset({0, 1}))}, {uuid.UUID(int=5): "gone"})),
    CoordinatorRecord(ShareGroupMemberMetadataKey(GROUP, "m")),
])
def test_records_round_trip_with_kafka_key_versions(record: CoordinatorRecord) -> None:
    key, value = serialize(record)
    assert int.from_bytes(key[:2], "big") == type(record.key).RECORD_TYPE
    assert 10 <= type(record.key).RECORD_TYPE <= 15
    assert deserialize(key, value) == record


def test_join_initialize_assign_and_replay(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    first = h.heartbeat("a", 0)
    assert (first.member_id, first.member_epoch) == ("a", 1)
    assert parts(first) == set()  # nothing is initialized yet
    assert h.group().initializing == {T: ("t", frozenset({0, 1, 2}))}
    epoch, pending = h.sg.take_initialization(GROUP)
    assert (epoch, pending) == (1, {T: ("t", frozenset({0, 1, 2}))})
    assert h.sg.take_initialization(GROUP) == (1, {})  # already started: not handed out twice
    h.coordinator.runtime.apply(0, lambda: h.sg.initialized(GROUP, pending, {}))
    assert h.group().initialized == {T: ("t", frozenset({0, 1, 2}))} and h.group().initializing == {}
    assert h.group().group_epoch == 2
    r = h.heartbeat("a", 1)
    assert (r.member_epoch, parts(r)) == (2, {0, 1, 2})

    b = h.heartbeat("b", 0)
    assert b.member_epoch == 3 and len(parts(b)) == 1
    r = h.heartbeat("a", 2)
    assert r.member_epoch == 3 and parts(r) | parts(b) == {0, 1, 2} and not parts(r) & parts(b)
    assert h.group().state_name() == "Stable"
    assert h.group().members["a"].state is MemberState.STABLE
    # The previous epoch is still accepted (the answer with the bump may have been lost); others are fenced.
    assert h.heartbeat("a", 2).member_epoch == 3
    with pytest.raises(KafkaError) as e:
        h.heartbeat("a", 7)
    assert e.value.code == ErrorCode.FENCED_MEMBER_EPOCH and "a greater member epoch (7)" in e.value.message
    with pytest.raises(KafkaError) as e:
        h.heartbeat("a", 1)
    assert e.value.code == ErrorCode.FENCED_MEMBER_EPOCH
    assert "a smaller member epoch (1) than the one known by the group coordinator (3), and it does not match " \
           "the previous member epoch (2)" in e.value.message

    assert snapshot(h.reloaded().group(GROUP)) == snapshot(h.group())


def test_failed_initialization_is_tried_again(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.heartbeat("a", 0)
    _, pending = h.sg.take_initialization(GROUP)
    h.coordinator.runtime.apply(0, lambda: h.sg.initialized(GROUP, {}, pending))
    assert h.group().initializing == {} and h.group().initialized == {}
    h.heartbeat("a", 1)  # the next heartbeat asks again
    assert h.sg.take_initialization(GROUP)[1] == {T: ("t", frozenset({0, 1, 2}))}


def test_new_partitions_bump_the_epoch_and_are_initialized(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.heartbeat("a", 0)
    h.initialize_all()
    r = h.heartbeat("a", 1)
    assert parts(r) == {0, 1, 2}
    h.image = image(5)
    r = h.heartbeat("a", r.member_epoch)
    assert h.group().initializing == {T: ("t", frozenset({3, 4}))}
    h.initialize_all()
    r = h.heartbeat("a", r.member_epoch)
    assert parts(r) == {0, 1, 2, 3, 4}


def test_bad_heartbeats(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    for member, epoch, topics, code in [
        ("a", 0, [], ErrorCode.INVALID_REQUEST),  # no subscription in the first request
        ("", 0, ["t"], ErrorCode.INVALID_REQUEST),  # v1: the client names the member
        ("a", -3, None, ErrorCode.INVALID_REQUEST),
        ("a", 1, None, ErrorCode.GROUP_ID_NOT_FOUND),
        ("a", -1, None, ErrorCode.GROUP_ID_NOT_FOUND),
    ]:
        with pytest.raises(KafkaError) as e:
            h.heartbeat(member, epoch, topics)
        assert e.value.code == code, (member, epoch, topics)
    with pytest.raises(KafkaError) as e:
        h.heartbeat("a", 0, group_id="")
    assert e.value.code == ErrorCode.INVALID_REQUEST
    with pytest.raises(KafkaError) as e:
        h.heartbeat("a", 0, rack_id="")
    assert e.value.code == ErrorCode.INVALID_REQUEST
    h.heartbeat("a", 0)
    with pytest.raises(KafkaError) as e:
        h.heartbeat("zz", 1)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    for m in ("b", "c"):
        h.heartbeat(m, 0)
    with pytest.raises(KafkaError) as e:  # group.share.max.size is 3 here
        h.heartbeat("d", 0)
    assert e.value.code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_session_timeout_fences_and_leave_removes(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.heartbeat("a", 0)
    h.heartbeat("b", 0)
    left = h.heartbeat("b", -1)
    assert left.member_epoch == -1 and set(h.group().members) == {"a"}
    # As Kafka 4.4: the others' targets are computed at once, at the new group epoch.
    assert h.group().assignment_epoch == h.group().group_epoch
    h.clock.advance(44_999)
    h.coordinator.poll()
    assert set(h.group().members) == {"a"}
    h.clock.advance(2)
    h.coordinator.poll()
    assert h.group().members == {} and h.group().state_name() == "Empty"
    assert snapshot(h.reloaded().group(GROUP)) == snapshot(h.group())


def test_share_group_member_replay_of_a_tombstone_leaves_no_member() -> None:
    group = ShareGroup(GROUP)
    group.replay(ShareGroupMemberMetadataKey(GROUP, "m"), ShareGroupMemberMetadataValue(None, "c", "/h", ("t",)))
    assert group.members == {"m": ShareGroupMember("m", None, "c", "/h", ("t",))}
    group.replay(ShareGroupMemberMetadataKey(GROUP, "m"), None)
    assert group.members == {} and group.is_empty()


def test_an_empty_share_group_is_not_expired(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.heartbeat("a", 0)
    h.heartbeat("a", -1)
    assert h.group().is_empty()
    h.clock.advance(8 * 24 * 3_600_000)  # past offsets.retention.minutes
    assert h.coordinator.cleanup_group_metadata() == 0
    assert h.sg.group(GROUP) is not None
