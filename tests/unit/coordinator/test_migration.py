"""Online migration between the classic and the consumer group protocol: a classic group upgraded by a
consumer-protocol member, a consumer group downgraded when its last consumer-protocol member goes, and
``group.consumer.migration.policy``. Real log, ManualClock; each scenario is replayed into a fresh
coordinator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.coordinator.conftest import assert_exclusive, topic_id
from tests.unit.coordinator.mixed_harness import (
    CLASSIC_SESSION_MS,
    GROUP,
    SESSION_MS,
    Harness,
    partitions_of,
    snapshot,
)
from tidelog.coordinator.group import PartitionCommit, RequestInfo
from tidelog.coordinator.group.classic.consumer_protocol import decode_assignment
from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState
from tidelog.coordinator.group.modern.consumer.config import ConsumerGroupConfig, ConsumerGroupMigrationPolicy
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup
from tidelog.coordinator.group.modern.consumer.records import ConsumerGroupMetadataKey
from tidelog.coordinator.group.modern.member import MemberState
from tidelog.coordinator.group.records import GroupMetadataKey
from tidelog.coordinator.group.serde import deserialize
from tidelog.errors import ErrorCode, KafkaError


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def error_of(call) -> ErrorCode:
    with pytest.raises(KafkaError) as e:
        call()
    return e.value.code


def keys_written(h: Harness, since: int) -> list[type]:
    out = []
    for batch in h.plog.batches(since):
        for rec in batch.records():
            if rec.offset >= since:
                out.append(type(deserialize(rec.key, rec.value).key))
    return out


def classic_snapshot(group: ClassicGroup) -> dict:
    snap = group.snapshot()
    del snap["state"]  # a loaded classic group is Stable; the live one may be rebalancing
    return snap


def mixed_group(h: Harness) -> list[str]:
    """m1 (consumer protocol) and two classic members, c1 and c2, reconciled: returns [c1, c2]."""
    h.consumer_member_with_everything("m1")
    c1 = h.join_new().member_id
    c2 = h.join_new().member_id
    for _ in range(4):  # let everyone reconcile: m1 revokes, the classic members collect
        epoch = h.group().members["m1"].member_epoch
        owned = sorted(partitions_of(h.group(), "m1"))
        h.heartbeat("m1", epoch, owned={"t": owned})
        for c in (c1, c2):
            m = h.group().members[c]
            if h.classic_heartbeat(c, m.member_epoch) == ErrorCode.REBALANCE_IN_PROGRESS:
                h.join(c)
            h.sync(c, h.group().members[c].member_epoch)
    group = h.group()
    assert group.state_name() == "Stable", {m.member_id: (m.member_epoch, m.state) for m in group.members.values()}
    assert_exclusive(group)
    return [c1, c2]


# -- upgrade ---------------------------------------------------------------------------------------------------


def test_a_consumer_protocol_member_upgrades_a_classic_group(h: Harness) -> None:
    leader, follower = h.classic_group(2)
    classic = h.group()
    generation = classic.generation_id
    h.coordinator.commit_offsets(RequestInfo("rdkafka", "/h", 7), GROUP, leader, None, generation,
                                 [PartitionCommit("t", 0, 11)])
    start = h.plog.log_end_offset
    r = h.heartbeat("m1", 0)
    group = h.group()
    assert isinstance(group, ConsumerGroup)
    assert keys_written(h, start)[0] is GroupMetadataKey  # the classic group's tombstone comes first
    # The classic members carry on at epoch = generation, holding their last assignment.
    assert (group.group_epoch, group.assignment_epoch) == (generation + 1, generation + 1)
    for mid, expected in ((leader, {0, 2}), (follower, {1, 3})):
        member = group.members[mid]
        assert member.uses_classic_protocol and member.member_epoch == generation
        assert partitions_of(group, mid) == expected
        assert member.classic_member_metadata.session_timeout_ms == CLASSIC_SESSION_MS
    # The newcomer waits for partitions the classic members still own.
    assert r.member_epoch == generation + 1 and group.members["m1"].state is MemberState.UNRELEASED_PARTITIONS
    assert_exclusive(group)
    # The classic members learn of the rebalance from their heartbeats and rejoin (eager: owning nothing).
    for mid in (leader, follower):
        assert h.classic_heartbeat(mid, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        answer = h.join(mid).value
        assert (answer.error_code, answer.generation_id) == (0, generation + 1)
        assert h.sync(mid, generation + 1).error_code == 0
    r = h.heartbeat("m1", generation + 1)
    assert r.assignment is not None and r.assignment.topic_partitions
    assert_exclusive(group)
    assert set().union(*(partitions_of(group, m) for m in group.members)) == {0, 1, 2, 3}
    # Offsets committed by the classic group stay.
    assert h.coordinator.fetch_offsets(GROUP, [("t", [0])]).topics[0].partitions[0].committed_offset == 11
    assert snapshot(h.reloaded_group()) == snapshot(group)


def test_an_upgrade_answers_parked_joins_with_rebalance_in_progress(h: Harness) -> None:
    h.classic_group(2)
    late = h.join().value
    parked = h.join(late.member_id)  # a new member: the group prepares a rebalance, the join waits
    assert not parked.done and h.group().state is ClassicGroupState.PREPARING_REBALANCE
    h.heartbeat("m1", 0)
    assert parked.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    group = h.group()
    assert isinstance(group, ConsumerGroup) and late.member_id in group.members  # it joined with no partitions
    assert partitions_of(group, late.member_id) == set()


def test_the_group_keeps_its_type_when_the_upgrade_is_not_allowed(tmp_path: Path) -> None:
    for i, (values, join) in enumerate([
        ({"group.consumer.migration.policy": "downgrade"}, {}),
        ({"group.consumer.migration.policy": "disabled"}, {}),
        ({}, {"protocol_type": "connect"}),                           # not the consumer embedded protocol
        ({"group.consumer.max.size": 1}, {}),                          # too many members for a consumer group
    ]):
        h = Harness(tmp_path / str(i), **values)
        h.classic_group(2, **join)
        assert error_of(lambda h=h: h.heartbeat("m1", 0)) is ErrorCode.GROUP_ID_NOT_FOUND
        assert isinstance(h.group(), ClassicGroup) and h.group().state is ClassicGroupState.STABLE


def test_a_failed_upgrade_append_leaves_the_classic_group_as_it_was(h: Harness) -> None:
    h.classic_group(2)
    before = h.group().snapshot()
    h.writer.failing = True
    assert error_of(lambda: h.heartbeat("m1", 0)) is ErrorCode.NOT_COORDINATOR
    h.writer.failing = False
    assert isinstance(h.group(), ClassicGroup) and h.group().snapshot() == before


# -- downgrade -------------------------------------------------------------------------------------------------


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group(h: Harness) -> None:
    c1, c2 = mixed_group(h)
    consumer_group = h.group()
    epoch = consumer_group.group_epoch
    targets = {c: sorted(consumer_group.target_assignment[c][topic_id("t")]) for c in (c1, c2)}
    start = h.plog.log_end_offset
    assert h.heartbeat("m1", -1).member_epoch == -1
    group = h.group()
    assert isinstance(group, ClassicGroup)
    assert (group.generation_id, group.protocol_type, group.protocol_name) == (epoch, "consumer", "range")
    assert set(group.members) == {c1, c2} and group.leader_id in (c1, c2)
    assert group.state is ClassicGroupState.PREPARING_REBALANCE  # it rebalances at once
    for c in (c1, c2):  # each member's assignment is its target, in its subscription's version
        assert decode_assignment(group.members[c].assignment) == {"t": targets[c]}
        assert group.members[c].session_timeout_ms == CLASSIC_SESSION_MS
    written = keys_written(h, start)
    assert written[-1] is GroupMetadataKey and ConsumerGroupMetadataKey in written
    # Replayed, the log gives the classic group as it was written (Stable, the same members).
    reloaded = h.reloaded_group()
    assert isinstance(reloaded, ClassicGroup) and classic_snapshot(reloaded) == classic_snapshot(group)
    # The classic members learn of the rebalance from their heartbeats, rejoin, and the leader assigns.
    for c in (c1, c2):
        assert h.classic_heartbeat(c, epoch) == ErrorCode.REBALANCE_IN_PROGRESS
    boxes = [h.join(c) for c in (c1, c2)]
    answers = [b.value for b in boxes]
    assert all(a.error_code == 0 and a.generation_id == epoch + 1 for a in answers)
    leader = answers[0].leader
    assert len([a for a in answers if a.members]) == 1  # only the leader gets the members
    syncs = [h.sync_box(c, epoch + 1, assignments={c1: b"", c2: b""} if c == leader else None) for c in (c1, c2)]
    assert all(s.value.error_code == 0 for s in syncs) and group.state is ClassicGroupState.STABLE


def test_a_session_timeout_of_the_last_consumer_protocol_member_downgrades_too(h: Harness) -> None:
    c1, c2 = mixed_group(h)
    for _ in range(SESSION_MS // 5_000):  # the classic members heartbeat; m1 has gone silent
        h.advance(5_000)
        for c in (c1, c2):
            if isinstance(h.group(), ConsumerGroup):
                h.classic_heartbeat(c, h.group().members[c].member_epoch)
    h.advance(1)
    assert isinstance(h.group(), ClassicGroup) and set(h.group().members) == {c1, c2}


@pytest.mark.parametrize("values", [{"group.consumer.migration.policy": "upgrade"},
                                    {"group.consumer.migration.policy": "DISABLED"},
                                    {"group.max.size": 1}])
def test_no_downgrade_when_not_allowed_the_classic_members_carry_on(tmp_path: Path, values: dict) -> None:
    h = Harness(tmp_path, **values)
    c1, c2 = mixed_group(h)
    h.heartbeat("m1", -1)
    group = h.group()
    assert isinstance(group, ConsumerGroup) and set(group.members) == {c1, c2}
    for c in (c1, c2):
        assert h.classic_heartbeat(c, group.members[c].member_epoch) == ErrorCode.REBALANCE_IN_PROGRESS
        h.join(c)
    for c in (c1, c2):
        h.classic_heartbeat(c, group.members[c].member_epoch)
        h.join(c)
        h.sync(c, group.members[c].member_epoch)
    assert set().union(*(partitions_of(group, c) for c in (c1, c2))) == {0, 1, 2, 3}
    assert_exclusive(group)
    assert snapshot(h.reloaded_group()) == snapshot(group)


def test_a_consumer_member_of_a_group_without_classic_members_leaves_no_classic_group(h: Harness) -> None:
    h.consumer_member_with_everything("m1")
    h.heartbeat("m2", 0)
    h.heartbeat("m1", -1)
    assert isinstance(h.group(), ConsumerGroup)  # a consumer-protocol member remains
    h.heartbeat("m2", -1)
    assert isinstance(h.group(), ConsumerGroup) and h.group().is_empty()  # empty: no downgrade


def test_a_classic_member_replacing_the_last_consumer_static_member_downgrades_without_rebalance(h: Harness) -> None:
    h.heartbeat("m1", 0, instance_id="i1")
    c1 = h.join_new().member_id
    epoch = h.group().group_epoch
    target_of_m1 = sorted(h.group().target_assignment["m1"][topic_id("t")])
    answer = h.join(instance="i1").value  # the same instance, now a classic consumer
    assert answer.error_code == 0
    group = h.group()
    assert isinstance(group, ClassicGroup) and group.state is ClassicGroupState.STABLE
    assert set(group.members) == {c1, answer.member_id} and group.generation_id == epoch
    assert group.static_members == {"i1": answer.member_id}
    assert decode_assignment(group.members[answer.member_id].assignment) == {"t": target_of_m1}
    reloaded = h.reloaded_group()
    assert isinstance(reloaded, ClassicGroup) and classic_snapshot(reloaded) == classic_snapshot(group)


def test_a_replacement_with_another_subscription_downgrades_and_rebalances(h: Harness) -> None:
    h.heartbeat("m1", 0, instance_id="i1")
    c1 = h.join_new().member_id
    answer = h.join(instance="i1", topics=("t", "other")).value
    assert answer.error_code == 0
    group = h.group()
    assert isinstance(group, ClassicGroup) and set(group.members) == {c1, answer.member_id}
    assert group.state is ClassicGroupState.PREPARING_REBALANCE


def test_leave_group_of_the_last_consumer_protocol_member_downgrades(h: Harness) -> None:
    # As Kafka 4.x: an admin removal (LeaveGroup) of consumer-protocol members fences them like a leave.
    c1, c2 = mixed_group(h)
    response = h.leave(("m1", None))
    assert [(m.member_id, m.error_code) for m in response.members] == [("m1", 0)]
    group = h.group()
    assert isinstance(group, ClassicGroup) and set(group.members) == {c1, c2}
    assert group.state is ClassicGroupState.PREPARING_REBALANCE
    assert error_of(lambda: h.heartbeat("m1", 3)) is ErrorCode.GROUP_ID_NOT_FOUND  # not a consumer group now


def test_leaving_together_downgrades_when_only_classic_members_remain(h: Harness) -> None:
    c1, c2 = mixed_group(h)
    h.leave(("m1", None), (c1, None))  # the consumer-protocol member and a classic one at once
    group = h.group()
    assert isinstance(group, ClassicGroup) and set(group.members) == {c2}
    reloaded = h.reloaded_group()
    assert isinstance(reloaded, ClassicGroup) and set(reloaded.members) == {c2}


def test_an_upgrade_refuses_assignments_with_user_data(h: Harness) -> None:
    h.classic_group(2, user_data=b"sticky-state")
    assert error_of(lambda: h.heartbeat("m1", 0)) is ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(h.group(), ClassicGroup)


def test_a_failed_downgrade_append_leaves_the_consumer_group_as_it_was(h: Harness) -> None:
    mixed_group(h)
    before = snapshot(h.group())
    h.writer.failing = True
    assert error_of(lambda: h.heartbeat("m1", -1)) is ErrorCode.NOT_COORDINATOR
    h.writer.failing = False
    assert isinstance(h.group(), ConsumerGroup) and snapshot(h.group()) == before


def test_upgrade_then_downgrade_round_trip(h: Harness) -> None:
    leader, follower = h.classic_group(2)
    h.heartbeat("m1", 0)
    assert isinstance(h.group(), ConsumerGroup)
    h.heartbeat("m1", -1)
    group = h.group()
    assert isinstance(group, ClassicGroup) and set(group.members) == {leader, follower}
    assert isinstance(h.reloaded_group(), ClassicGroup)


# -- the policy --------------------------------------------------------------------------------------------------


def test_the_migration_policy_settings() -> None:
    P = ConsumerGroupMigrationPolicy
    assert [(p.value, p.upgrade_enabled, p.downgrade_enabled) for p in P] == [
        ("bidirectional", True, True), ("upgrade", True, False), ("downgrade", False, True), ("disabled", False, False)]
    assert P.parse("Upgrade") is P.UPGRADE and P.parse("nonsense") is P.DISABLED and P.parse(None) is P.DISABLED

    class Cfg:
        values = {"group.consumer.migration.policy": "downgrade", "group.max.size": 7}
        props: dict = {}

    cfg = ConsumerGroupConfig.from_broker_config(Cfg())
    assert (cfg.migration_policy, cfg.classic_max_size) == (P.DOWNGRADE, 7)
    assert ConsumerGroupConfig().migration_policy is P.BIDIRECTIONAL  # Kafka 4.x's default
