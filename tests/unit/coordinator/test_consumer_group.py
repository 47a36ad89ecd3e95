"""The KIP-848 consumer group state machine, driven through the real coordinator runtime.

A real PartitionLog in tmp_path holds ``__consumer_offsets``; a ManualClock drives sessions and
rebalance timeouts. Every scenario can be reloaded from the log into a fresh coordinator, and the
state must come back identical (Result + replay).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.unit.coordinator.conftest import FlakyWriter, assert_exclusive, image_with, topic_id
from tidelog.cluster.metadata import MetadataImage
from tidelog.config import TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator, PartitionCommit, RequestInfo
from tidelog.coordinator.group.modern.consumer.config import ConsumerGroupConfig
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup, ConsumerGroupState
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.modern.consumer.manager import ConsumerGroupCoordinator
from tidelog.coordinator.group.modern.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from tidelog.coordinator.group.modern.member import MemberState
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import ConsumerGroupHeartbeatRequest
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

GROUP = "g"
SESSION_MS = 45_000


def consumer_groups(coordinator: GroupCoordinator) -> ConsumerGroupCoordinator:
    consumer = coordinator.types["consumer"]
    assert isinstance(consumer, ConsumerGroupType)
    return consumer.manager


class Harness:
    """The group coordinator with the consumer group extension, on a real log (one partition)."""

    def __init__(self, tmp_path: Path, clock: ManualClock, image: MetadataImage, **values: object) -> None:
        self.clock, self.image = clock, image
        self.plog = load_log(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0,
                             TopicConfig.from_dict({"cleanup.policy": "compact"}), clock)
        self.writer = FlakyWriter(lambda p: self.plog)
        self.config = GroupConfig(offsets_topic_num_partitions=1,
                                  values={"group.consumer.session.timeout.ms": SESSION_MS, **values})
        self.coordinator = self._new()

    def _new(self) -> GroupCoordinator:
        return GroupCoordinator(self.config, self.clock, self.writer, num_partitions=1,
                                group_types=[functools.partial(ConsumerGroupType, classic_members=False)])

    @property
    def cg(self) -> ConsumerGroupCoordinator:
        return consumer_groups(self.coordinator)

    def poll(self) -> int:
        return self.coordinator.poll()

    def heartbeat(self, member_id: str, epoch: int, *, version: int = 1, **fields):
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", 300_000)
            fields.setdefault("topic_partitions", [])
            if "subscribed_topic_regex" not in fields:
                fields.setdefault("subscribed_topic_names", ["t"])
        request = ConsumerGroupHeartbeatRequest(group_id=fields.pop("group_id", GROUP), member_id=member_id,
                                                member_epoch=epoch, **fields)
        return self.coordinator.runtime.apply(0, lambda: self.cg.heartbeat(
            request, api_version=version, image=self.image, client_id="client", client_host="/127.0.0.1"))

    def owned(self, member_id: str, epoch: int, partitions: dict[str, list[int]]):
        tps = [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id(t), partitions=ps)
               for t, ps in partitions.items()]
        return self.heartbeat(member_id, epoch, topic_partitions=tps)

    def group(self) -> ConsumerGroup:
        group = self.cg.group(GROUP)
        assert group is not None
        return group

    def reloaded(self) -> ConsumerGroupCoordinator:
        """A second coordinator that loads the same log."""
        coordinator = self._new()
        coordinator.load([0])
        return consumer_groups(coordinator)

    def restart(self) -> None:
        self.coordinator.close()
        self.coordinator = self._new()
        self.coordinator.load([0])


def parts(response, name: str = "t") -> set[int]:
    assert response.assignment is not None
    return {p for tp in response.assignment.topic_partitions if tp.topic_id == topic_id(name) for p in tp.partitions}


def snapshot(group: ConsumerGroup) -> tuple:
    return (group.group_epoch, group.assignment_epoch, group.metadata_hash, dict(group.members),
            dict(group.target_assignment), dict(group.resolved_regexes), group.state)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def h(tmp_path: Path, clock: ManualClock) -> Harness:
    return Harness(tmp_path, clock, image_with(t=4))


def error_of(call) -> ErrorCode:
    with pytest.raises(KafkaError) as e:
        call()
    return e.value.code


# -- join and assignment -------------------------------------------------------------------------------


def test_first_member_joins_and_gets_every_partition(h: Harness) -> None:
    r = h.heartbeat("m1", 0)
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("m1", 1, 5000)
    assert parts(r) == {0, 1, 2, 3}
    group = h.group()
    assert group.state is ConsumerGroupState.STABLE
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    assert group.members["m1"].state is MemberState.STABLE
    # A plain heartbeat with nothing new carries no assignment and writes nothing.
    end = h.plog.log_end_offset
    r = h.heartbeat("m1", 1)
    assert r.member_epoch == 1 and r.assignment is None
    assert h.plog.log_end_offset == end


def test_v0_joining_without_a_member_id_gets_one_from_the_coordinator(h: Harness) -> None:
    # ConsumerGroupHeartbeat v0 lets the coordinator choose the id (v1+ requires the client's own).
    r = h.heartbeat("", 0, version=0)
    assert r.error_code == 0 and len(r.member_id) == 22 and r.member_epoch == 1
    assert set(h.group().members) == {r.member_id}
    assert h.heartbeat(r.member_id, 1, version=0).member_epoch == 1
    assert error_of(lambda: h.heartbeat("", 0, version=1)) is ErrorCode.INVALID_REQUEST


def test_second_member_gets_partitions_only_after_the_first_revokes_them(h: Harness) -> None:
    h.heartbeat("m1", 0)
    r2 = h.heartbeat("m2", 0)
    group = h.group()
    # m2 is at epoch 2 but waits: its target partitions are still owned by m1.
    assert r2.member_epoch == 2 and parts(r2) == set()
    assert group.members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.state is ConsumerGroupState.RECONCILING
    target2 = group.target_assignment["m2"][topic_id("t")]
    assert len(target2) == 2

    # m1's next heartbeat asks it to revoke m2's half; it stays at epoch 1 meanwhile.
    r1 = h.heartbeat("m1", 1)
    assert r1.member_epoch == 1 and parts(r1) == {0, 1, 2, 3} - target2
    assert group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert_exclusive(group)
    # m2 still cannot have them.
    assert h.heartbeat("m2", 2).assignment is None
    assert_exclusive(group)

    # m1 reports that it has revoked them: it moves to epoch 2; then m2 gets them.
    r1 = h.owned("m1", 1, {"t": sorted({0, 1, 2, 3} - target2)})
    assert r1.member_epoch == 2 and group.members["m1"].state is MemberState.STABLE
    r2 = h.heartbeat("m2", 2)
    assert parts(r2) == target2
    assert group.members["m2"].state is MemberState.STABLE
    assert group.state is ConsumerGroupState.STABLE
    assert_exclusive(group)
    assert snapshot(h.reloaded().group(GROUP)) == snapshot(group)


def test_member_still_reporting_revoked_partitions_waits(h: Harness) -> None:
    h.heartbeat("m1", 0)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1)
    r = h.owned("m1", 1, {"t": [0, 1, 2, 3]})  # has not let go yet
    assert r.member_epoch == 1
    assert h.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS


def test_lost_epoch_bump_is_tolerated_with_previous_epoch_and_subset(h: Harness) -> None:
    h.heartbeat("m1", 0)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1)
    keep = sorted(h.group().members["m1"].assigned_partitions[topic_id("t")])
    assert h.owned("m1", 1, {"t": keep}).member_epoch == 2
    # The response carrying epoch 2 was lost: m1 retries with epoch 1 and its (subset) partitions.
    assert h.owned("m1", 1, {"t": keep}).member_epoch == 2
    # With a partition it does not hold, the old epoch is fenced.
    assert error_of(lambda: h.owned("m1", 1, {"t": [0, 1, 2, 3]})) is ErrorCode.FENCED_MEMBER_EPOCH


def test_fencing_and_unknown_members(h: Harness) -> None:
    h.heartbeat("m1", 0)
    assert error_of(lambda: h.heartbeat("m1", 7)) is ErrorCode.FENCED_MEMBER_EPOCH
    assert error_of(lambda: h.heartbeat("nobody", 3)) is ErrorCode.UNKNOWN_MEMBER_ID
    assert error_of(lambda: h.heartbeat("m1", 1, group_id="other")) is ErrorCode.GROUP_ID_NOT_FOUND
    # A fenced client rejoins with epoch 0 after its member is gone (here: it left).
    h.heartbeat("m1", -1)
    assert h.heartbeat("m1", 0).member_epoch == 3


# -- leaving, sessions, rebalance timeouts --------------------------------------------------------------


def test_leave_frees_partitions_for_the_others(h: Harness) -> None:
    h.heartbeat("m1", 0)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1)
    h.owned("m1", 1, {"t": sorted(h.group().members["m1"].assigned_partitions[topic_id("t")])})
    h.heartbeat("m2", 2)
    r = h.heartbeat("m1", -1)
    assert (r.member_id, r.member_epoch) == ("m1", -1)
    group = h.group()
    assert set(group.members) == {"m2"} and group.group_epoch == 3
    assert group.state is ConsumerGroupState.ASSIGNING
    r2 = h.heartbeat("m2", 2)
    assert r2.member_epoch == 3 and parts(r2) == {0, 1, 2, 3}
    assert group.state is ConsumerGroupState.STABLE
    assert error_of(lambda: h.heartbeat("m1", -1)) is ErrorCode.UNKNOWN_MEMBER_ID


def test_session_expiry_fences_a_silent_member(h: Harness, clock: ManualClock) -> None:
    h.heartbeat("m1", 0)
    h.heartbeat("m2", 0)
    clock.advance(SESSION_MS - 1)
    h.heartbeat("m2", 2)  # m2 keeps its session alive, m1 stays silent
    clock.advance(1)
    assert h.poll() >= 1
    group = h.group()
    assert set(group.members) == {"m2"}
    r = h.heartbeat("m2", 2)
    assert r.member_epoch == group.group_epoch and parts(r) == {0, 1, 2, 3}
    assert error_of(lambda: h.heartbeat("m1", 1)) is ErrorCode.UNKNOWN_MEMBER_ID
    clock.advance(SESSION_MS)
    h.poll()
    assert h.group().state is ConsumerGroupState.EMPTY


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(h: Harness, clock: ManualClock) -> None:
    h.heartbeat("m1", 0, rebalance_timeout_ms=10_000)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1)  # now UNREVOKED_PARTITIONS
    clock.advance(9_999)
    h.heartbeat("m1", 1)
    h.heartbeat("m2", 2)
    h.poll()
    assert "m1" in h.group().members
    clock.advance(1)
    h.poll()
    assert set(h.group().members) == {"m2"}


def test_member_that_revokes_in_time_is_not_fenced(h: Harness, clock: ManualClock) -> None:
    h.heartbeat("m1", 0, rebalance_timeout_ms=10_000)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1)
    h.owned("m1", 1, {"t": sorted(h.group().members["m1"].assigned_partitions[topic_id("t")])})
    clock.advance(10_000)
    h.heartbeat("m2", 2)
    h.poll()
    assert set(h.group().members) == {"m1", "m2"}


def test_static_member_leaves_temporarily_and_comes_back(h: Harness) -> None:
    h.heartbeat("a1", 0, instance_id="i-a")
    h.heartbeat("b1", 0, instance_id="i-b")
    h.heartbeat("a1", 1, instance_id="i-a")
    keep = sorted(h.group().members["a1"].assigned_partitions[topic_id("t")])
    h.owned("a1", 1, {"t": keep})
    h.heartbeat("b1", 2, instance_id="i-b")
    before = h.group().members["a1"].assigned_partitions
    epoch = h.group().group_epoch
    r = h.heartbeat("a1", -2, instance_id="i-a")
    assert r.member_epoch == -2
    group = h.group()
    assert group.group_epoch == epoch and group.members["a1"].member_epoch == -2
    # Another process with the same instance id but a new member id takes over a1's partitions.
    r = h.heartbeat("a2", 0, instance_id="i-a")
    assert set(group.members) == {"a2", "b1"}
    assert parts(r) == set(before[topic_id("t")])
    # While a2 holds the instance id, a third process cannot use it.
    assert error_of(lambda: h.heartbeat("a3", 0, instance_id="i-a")) is ErrorCode.UNRELEASED_INSTANCE_ID
    assert error_of(lambda: h.heartbeat("a1", 1, instance_id="i-a")) is ErrorCode.FENCED_INSTANCE_ID
    assert snapshot(h.reloaded().group(GROUP)) == snapshot(group)


# -- subscriptions, assignors, validation ---------------------------------------------------------------


def test_regex_subscription_picks_up_a_new_topic(h: Harness) -> None:
    """Regexes are resolved off the heartbeat (Kafka 4.x): the joining heartbeat gets nothing for its
    regex; the resolution then bumps the group epoch and the next heartbeat gets the topics."""
    h.image = image_with(version=1, **{"r-1": 2, "other": 3})
    r = h.heartbeat("m1", 0, subscribed_topic_regex="r-.*")
    group = h.group()
    assert parts(r, "r-1") == set() and group.resolved_regexes == {}
    assert h.poll() == 1  # the resolution
    assert group.resolved_regexes["r-.*"].topics == {"r-1"} and group.group_epoch == 2
    r = h.heartbeat("m1", r.member_epoch)
    assert parts(r, "r-1") == {0, 1} and parts(r, "other") == set()
    h.image = image_with(version=2, **{"r-1": 2, "other": 3, "r-2": 3})
    r = h.heartbeat("m1", r.member_epoch)
    assert r.assignment is None  # no change: r-2 is not resolved yet against the new image
    h.poll()
    r = h.heartbeat("m1", r.member_epoch)
    assert r.member_epoch == group.group_epoch == 3
    assert parts(r, "r-2") == {0, 1, 2} and parts(r, "r-1") == {0, 1}
    assert group.resolved_regexes["r-.*"].topics == {"r-1", "r-2"}
    assert snapshot(h.reloaded().group(GROUP)) == snapshot(group)


def test_literal_topics_are_assigned_at_once_while_a_regex_resolves(h: Harness) -> None:
    h.image = image_with(version=1, **{"r-1": 2, "t": 2})
    by_regex = h.heartbeat("m1", 0, subscribed_topic_regex="r-.*")
    by_name = h.heartbeat("m2", 0, subscribed_topic_names=["t"])
    assert parts(by_name, "t") == {0, 1} and parts(by_regex, "r-1") == set()
    h.poll()
    by_regex = h.heartbeat("m1", by_regex.member_epoch)
    assert parts(by_regex, "r-1") == {0, 1}


def test_switching_between_regex_and_names(h: Harness) -> None:
    h.image = image_with(**{"r-1": 2, "t": 2})
    h.heartbeat("m1", 0, subscribed_topic_regex="r-.*")
    h.poll()  # the regex is resolved: epoch 2
    r = h.heartbeat("m2", 0, subscribed_topic_regex="r-.*")
    group = h.group()
    assert group.group_epoch == 3 and set(group.resolved_regexes) == {"r-.*"}
    # m2 drops the regex for a topic name: a new epoch, the regex stays (m1 still uses it).
    r = h.heartbeat("m2", r.member_epoch, subscribed_topic_regex="", subscribed_topic_names=["t"])
    assert group.group_epoch == 4 and set(group.resolved_regexes) == {"r-.*"}
    assert group.target_assignment["m2"] == {topic_id("t"): {0, 1}}
    # m1 leaves: its regex has no subscriber left and its resolution is deleted.
    h.heartbeat("m1", -1)
    assert group.resolved_regexes == {} and group.group_epoch == 5
    assert snapshot(h.reloaded().group(GROUP)) == snapshot(group)


def test_a_failed_append_changes_nothing(h: Harness) -> None:
    h.heartbeat("m1", 0)
    before = snapshot(h.group())
    h.writer.failing = True
    h.image = image_with(version=2, t=6)
    assert error_of(lambda: h.heartbeat("m1", 1)) is ErrorCode.NOT_COORDINATOR
    assert error_of(lambda: h.heartbeat("m2", 0)) is ErrorCode.NOT_COORDINATOR
    assert snapshot(h.group()) == before
    h.writer.failing = False
    # The retried heartbeat still notices the new partitions.
    r = h.heartbeat("m1", 1)
    assert r.member_epoch == 2 and parts(r) == set(range(6))


def test_new_partitions_bump_the_epoch_and_are_assigned(h: Harness) -> None:
    r = h.heartbeat("m1", 0)
    assert parts(r) == {0, 1, 2, 3}
    h.image = image_with(version=2, t=6)
    r = h.heartbeat("m1", 1)
    assert r.member_epoch == 2 and parts(r) == set(range(6))


def test_topic_created_after_subscription(h: Harness) -> None:
    h.image = image_with(version=1)
    r = h.heartbeat("m1", 0, subscribed_topic_names=["later"])
    assert parts(r, "later") == set()
    h.image = image_with(version=2, later=2)
    assert parts(h.heartbeat("m1", r.member_epoch), "later") == {0, 1}


def test_range_assignor_selected_by_members(h: Harness) -> None:
    h.image = image_with(t=4, u=4)
    h.heartbeat("m1", 0, subscribed_topic_names=["t", "u"], server_assignor="range")
    h.heartbeat("m2", 0, subscribed_topic_names=["t", "u"], server_assignor="range")
    target = h.group().target_assignment
    assert target["m1"] == {topic_id("t"): {0, 1}, topic_id("u"): {0, 1}}
    assert target["m2"] == {topic_id("t"): {2, 3}, topic_id("u"): {2, 3}}
    described = h.cg.describe([GROUP, "nope"], h.image)
    assert described[0].assignor_name == "range" and described[0].group_state == "Reconciling"
    assert described[1].error_code == ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize(("fields", "version", "code"), [
    ({"member_id": ""}, 1, ErrorCode.INVALID_REQUEST),
    ({"rebalance_timeout_ms": -1}, 1, ErrorCode.INVALID_REQUEST),
    ({"topic_partitions": None}, 1, ErrorCode.INVALID_REQUEST),
    ({"subscribed_topic_names": None}, 0, ErrorCode.INVALID_REQUEST),
    ({"instance_id": ""}, 1, ErrorCode.INVALID_REQUEST),
    ({"server_assignor": "sticky"}, 1, ErrorCode.UNSUPPORTED_ASSIGNOR),
    ({"subscribed_topic_regex": "a(b"}, 1, ErrorCode.INVALID_REGULAR_EXPRESSION),
    ({"group_id": " "}, 1, ErrorCode.INVALID_REQUEST),
])
def test_invalid_heartbeats(h: Harness, fields: dict, version: int, code: ErrorCode) -> None:
    member_id = fields.pop("member_id", "m1")
    assert error_of(lambda: h.heartbeat(member_id, 0, version=version, **fields)) is code
    assert h.plog.log_end_offset == 0
    assert error_of(lambda: h.heartbeat("m1", -3)) is ErrorCode.INVALID_REQUEST


def test_v0_lets_the_broker_generate_member_ids_but_v1_does_not(h: Harness) -> None:
    assert error_of(lambda: h.heartbeat("", 0, version=1)) is ErrorCode.INVALID_REQUEST


def test_group_max_size(tmp_path: Path, clock: ManualClock) -> None:
    h = Harness(tmp_path, clock, image_with(t=2), **{"group.consumer.max.size": 1})
    h.heartbeat("m1", 0)
    assert error_of(lambda: h.heartbeat("m2", 0)) is ErrorCode.GROUP_MAX_SIZE_REACHED


# -- offsets, deletion, records ---------------------------------------------------------------------------


def test_offset_commit_and_fetch_validation(h: Harness) -> None:
    h.heartbeat("m1", 0)
    group = h.group()
    group.validate_offset_commit("m1", None, 1, 9)
    assert error_of(lambda: group.validate_offset_commit("m1", None, 1, 8)) is ErrorCode.UNSUPPORTED_VERSION
    assert error_of(lambda: group.validate_offset_commit("m1", None, 0, 9)) is ErrorCode.STALE_MEMBER_EPOCH
    assert error_of(lambda: group.validate_offset_commit("x", None, 1, 9)) is ErrorCode.UNKNOWN_MEMBER_ID
    assert error_of(lambda: group.validate_offset_commit("", None, -1, 9)) is ErrorCode.UNKNOWN_MEMBER_ID
    group.validate_offset_fetch(None, -1)
    group.validate_offset_fetch("m1", 1)
    assert error_of(lambda: group.validate_offset_fetch("m1", 5)) is ErrorCode.STALE_MEMBER_EPOCH
    assert group.is_subscribed_to("t") and not group.is_subscribed_to("u")
    h.heartbeat("m1", -1)
    group.validate_offset_commit("", None, -1, 2)  # admin commit into the empty group


def test_delete_an_empty_group(h: Harness) -> None:
    h.heartbeat("m1", 0)
    assert error_of(h.group().validate_delete) is ErrorCode.NON_EMPTY_GROUP
    h.heartbeat("m1", -1)
    group = h.group()
    group.validate_delete()
    h.coordinator.runtime.write(0, Result(group.tombstones()))
    assert h.cg.group(GROUP) is None and GROUP not in h.coordinator.groups
    assert h.reloaded().group(GROUP) is None


@pytest.mark.parametrize("record", [
    CoordinatorRecord(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7, -123456789)),
    CoordinatorRecord(ConsumerGroupMemberMetadataKey("g", "m"), ConsumerGroupMemberMetadataValue(
        "i", None, "cid", "/1.2.3.4", ("a", "b"), "x.*", 30_000, "range")),
    CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey("g", "m"), ConsumerGroupTargetAssignmentMemberValue(
        {topic_id("a"): frozenset({0, 2})})),
    CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey("g"), ConsumerGroupTargetAssignmentMetadataValue(3)),
    CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey("g", "m"), ConsumerGroupCurrentMemberAssignmentValue(
        4, 3, 1, {topic_id("a"): frozenset({1})}, {topic_id("b"): frozenset({0, 5})})),
    CoordinatorRecord(ConsumerGroupRegularExpressionKey("g", "x.*"),
                      ConsumerGroupRegularExpressionValue(("xa", "xb"), 12, 1_700_000_000_000)),
    CoordinatorRecord(ConsumerGroupMemberMetadataKey("g", "m"), None),
])
def test_records_round_trip_in_kafkas_layout(record: CoordinatorRecord) -> None:
    key, value = serialize(record)
    assert deserialize(key, value) == record


def test_key_versions_are_kafkas() -> None:
    versions = {type(k).__name__: int.from_bytes(serialize(CoordinatorRecord(k, None))[0][:2], "big")
                for k in (ConsumerGroupMetadataKey("g"), ConsumerGroupMemberMetadataKey("g", "m"),
                          ConsumerGroupTargetAssignmentMetadataKey("g"), ConsumerGroupTargetAssignmentMemberKey("g", "m"),
                          ConsumerGroupCurrentMemberAssignmentKey("g", "m"), ConsumerGroupRegularExpressionKey("g", "r"))}
    assert versions == {"ConsumerGroupMetadataKey": 3, "ConsumerGroupMemberMetadataKey": 5,
                        "ConsumerGroupTargetAssignmentMetadataKey": 6, "ConsumerGroupTargetAssignmentMemberKey": 7,
                        "ConsumerGroupCurrentMemberAssignmentKey": 8, "ConsumerGroupRegularExpressionKey": 16}


def test_reload_restores_members_and_arms_their_sessions(h: Harness, clock: ManualClock) -> None:
    h.heartbeat("m1", 0)
    h.heartbeat("m2", 0)
    h.heartbeat("m1", 1)
    before = snapshot(h.group())
    h.restart()
    assert snapshot(h.group()) == before
    # The revocation continues where it stopped.
    clock.advance(1_000)
    keep = sorted(h.group().members["m1"].assigned_partitions[topic_id("t")])
    assert h.owned("m1", 1, {"t": keep}).member_epoch == 2
    clock.advance(SESSION_MS - 1_000)
    h.poll()
    assert set(h.group().members) == {"m1"}  # m1 heartbeated after the reload; m2 did not


def test_config_from_broker_config_names() -> None:
    class Cfg:
        values = {"group.consumer.assignors": ("org.apache.kafka.coordinator.group.assignor.RangeAssignor",)}
        props = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.session.timeout.ms": "6000"}

    cfg = ConsumerGroupConfig.from_broker_config(Cfg())
    assert (cfg.assignors, cfg.heartbeat_interval_ms, cfg.session_timeout_ms) == (("range",), 500, 6000)
    Cfg.values = {"group.consumer.assignors": ("sticky",)}
    with pytest.raises(ValueError):
        ConsumerGroupConfig.from_broker_config(Cfg())


# -- through the group coordinator's hooks ---------------------------------------------------------------


def test_offset_commits_of_members_go_through_the_group(h: Harness) -> None:
    h.heartbeat("m1", 0)
    coordinator = h.coordinator
    commit = [PartitionCommit("t", 0, 42)]
    assert coordinator.commit_offsets(RequestInfo(api_version=9), GROUP, "m1", None, 1, commit) == {
        ("t", 0): ErrorCode.NONE}
    for version, epoch, code in ((8, 1, ErrorCode.UNSUPPORTED_VERSION), (9, 0, ErrorCode.STALE_MEMBER_EPOCH)):
        def call(version: int = version, epoch: int = epoch) -> object:
            return coordinator.commit_offsets(RequestInfo(api_version=version), GROUP, "m1", None, epoch, commit)
        assert error_of(call) is code
    fetched = coordinator.fetch_offsets(GROUP, [("t", [0])], "m1", 1)
    assert fetched.error_code == 0 and fetched.topics[0].partitions[0].committed_offset == 42
    assert coordinator.fetch_offsets(GROUP, [("t", [0])], "m1", 3).error_code == ErrorCode.STALE_MEMBER_EPOCH
    listed = coordinator.list_groups(types_filter=["consumer"])
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == [
        (GROUP, "consumer", "Stable", "consumer")]
    assert coordinator.list_groups(states_filter=["empty"]) == []


def test_a_simple_group_with_offsets_becomes_a_consumer_group(h: Harness) -> None:
    coordinator = h.coordinator
    coordinator.commit_offsets(RequestInfo(api_version=9), GROUP, "", None, -1, [PartitionCommit("t", 1, 7)])
    assert coordinator.groups[GROUP].group_type == "classic"
    assert h.heartbeat("m1", 0).member_epoch == 1
    assert isinstance(coordinator.groups[GROUP], ConsumerGroup)
    assert coordinator.fetch_offsets(GROUP, [("t", [1])]).topics[0].partitions[0].committed_offset == 7
    reloaded = h.reloaded()
    assert snapshot(reloaded.group(GROUP)) == snapshot(h.group())


def test_classic_requests_on_a_consumer_group(h: Harness) -> None:
    h.heartbeat("m1", 0)
    assert h.coordinator.heartbeat(GROUP, "m1", None, 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    described = h.coordinator.describe_groups([GROUP], 6)[0]
    assert described.error_code == ErrorCode.GROUP_ID_NOT_FOUND
