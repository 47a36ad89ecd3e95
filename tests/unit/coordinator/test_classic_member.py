"""Classic-protocol members of KIP-848 consumer groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup served
by a consumer group), through the real group coordinator on a real log, with a ManualClock. Every
scenario ends by replaying the log into a fresh coordinator, which must rebuild the same group."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.coordinator.conftest import assert_exclusive
from tests.unit.coordinator.mixed_harness import (
    CLASSIC_SESSION_MS,
    GROUP,
    REBALANCE_MS,
    Harness,
    assigned,
    partitions_of,
    snapshot,
)
from tidelog.coordinator.group import PartitionCommit, RequestInfo
from tidelog.coordinator.group.classic.consumer_protocol import protocol_version
from tidelog.coordinator.group.classic.group import ClassicGroup
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup
from tidelog.coordinator.group.modern.member import MemberState
from tidelog.errors import ErrorCode, KafkaError


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


# -- joining, syncing, heartbeating ------------------------------------------------------------------------


def test_a_classic_member_joins_a_consumer_group_and_gets_partitions_once_they_are_released(h: Harness) -> None:
    h.consumer_member_with_everything()
    first = h.join().value
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    answer = h.join(first.member_id).value
    c = answer.member_id
    # Generation = member epoch; the broker assigned, so nobody leads and nobody gets member lists.
    assert (answer.error_code, answer.generation_id, answer.protocol_type, answer.protocol_name) == (0, 2, "consumer",
                                                                                                     "range")
    assert (answer.leader, answer.members) == ("", [])
    group = h.group()
    assert isinstance(group, ConsumerGroup) and group.group_epoch == 2
    member = group.members[c]
    assert member.uses_classic_protocol and member.state is MemberState.UNRELEASED_PARTITIONS
    assert member.classic_member_metadata.session_timeout_ms == CLASSIC_SESSION_MS
    assert (member.client_id, member.client_host) == ("rdkafka", "/10.0.0.2")
    # Its target is still owned by m1: the sync gives an empty assignment, the heartbeat says carry on.
    assert assigned(h.sync(c, 2)) == {}
    assert h.classic_heartbeat(c, 2) == ErrorCode.NONE
    # m1 revokes; once it reports that, c's partitions are free and c is told to rejoin to collect them.
    r1 = h.heartbeat("m1", 1)
    keep = sorted(p for tp in r1.assignment.topic_partitions for p in tp.partitions)
    assert len(keep) == 2
    assert h.classic_heartbeat(c, 2) == ErrorCode.NONE  # m1 has not let go yet
    assert h.heartbeat("m1", 1, owned={"t": keep}).member_epoch == 2
    assert h.classic_heartbeat(c, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = h.join(c).value
    assert (rejoin.error_code, rejoin.generation_id) == (0, 2)
    assert assigned(h.sync(c, 2)) == {"t": sorted({0, 1, 2, 3} - set(keep))}
    assert h.classic_heartbeat(c, 2) == ErrorCode.NONE
    assert group.state_name() == "Stable"
    assert_exclusive(group)
    assert snapshot(h.reloaded_group()) == snapshot(group)


def test_a_classic_member_rejoins_when_its_assignment_changes_eager_and_cooperative(h: Harness) -> None:
    h.consumer_member_elsewhere()
    c = h.join_new().member_id  # t is free: the classic member gets all of it at once
    group = h.group()
    assert isinstance(group, ConsumerGroup) and partitions_of(group, c) == {0, 1, 2, 3}
    assert assigned(h.sync(c, 2)) == {"t": [0, 1, 2, 3]}
    # A consumer-protocol member of t joins: the group epoch moves past c's member epoch.
    assert h.heartbeat("m1", 0).member_epoch == 3
    assert h.classic_heartbeat(c, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.sync(c, 2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    # A cooperative client rejoins with what it owns: it must revoke first, and stays at epoch 2.
    coop = h.join(c, owned={"t": [0, 1, 2, 3]}).value
    assert coop.generation_id == 2
    assert group.members[c].state is MemberState.UNREVOKED_PARTITIONS
    kept = assigned(h.sync(c, 2))["t"]  # no error while revoking: the sync hands out what it keeps
    assert len(kept) == 2
    assert h.classic_heartbeat(c, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat("m1", 3).assignment is None  # m1 waits: c has not revoked yet
    assert_exclusive(group)
    # Having revoked, it rejoins with the rest and moves to epoch 3; m1 then gets the released half.
    assert h.join(c, owned={"t": kept}).value.generation_id == 3
    assert group.members[c].state is MemberState.STABLE
    r1 = h.heartbeat("m1", 3)
    assert sorted(p for tp in r1.assignment.topic_partitions for p in tp.partitions) == sorted({0, 1, 2, 3} - set(kept))
    assert_exclusive(group)

    # m1 leaves; c, eager this time (it revoked everything before rejoining), gets all of t back.
    h.heartbeat("m1", -1)
    assert h.classic_heartbeat(c, 3) == ErrorCode.REBALANCE_IN_PROGRESS
    eager = h.join(c, owned={}).value
    assert eager.generation_id == 4 and group.members[c].state is MemberState.STABLE
    assert assigned(h.sync(c, 4)) == {"t": [0, 1, 2, 3]}
    assert h.classic_heartbeat(c, 4) == ErrorCode.NONE
    assert_exclusive(group)
    assert snapshot(h.reloaded_group()) == snapshot(group)


def test_sync_and_heartbeat_errors(h: Harness) -> None:
    h.consumer_member_with_everything()
    c = h.join_new().member_id
    assert h.sync(c, 7).error_code == ErrorCode.ILLEGAL_GENERATION
    assert h.sync(c, 2, protocol_name="roundrobin").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("nobody", 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync("m1", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # m1 uses the consumer protocol
    assert h.classic_heartbeat(c, 7) == ErrorCode.ILLEGAL_GENERATION
    assert h.classic_heartbeat("m1", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.classic_heartbeat(c, 2, instance="i") == ErrorCode.UNKNOWN_MEMBER_ID


def test_joins_that_are_refused(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.consumer_member_with_everything()
    c = h.join_new(protocols=("range",)).member_id
    assert h.join(protocols=("roundrobin",)).value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="connect").value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(c, protocols=("roundrobin", "range")).value.error_code == 0  # range is common to all
    full = Harness(tmp_path / "full", **{"group.consumer.max.size": 2})
    full.consumer_member_with_everything()
    d = full.join(version=3).value  # JoinGroup v0-v3: the id comes with the answer, no second round
    assert d.error_code == 0
    assert full.join(version=3).value.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert full.join(d.member_id, version=3).value.error_code == 0  # a member already in is no new member


def test_offsets_of_classic_members_use_generations(h: Harness) -> None:
    h.consumer_member_with_everything()
    c = h.join_new().member_id
    commit = [PartitionCommit("t", 0, 5)]
    info = RequestInfo("rdkafka", "/10.0.0.2", 7)  # OffsetCommit v7: fine for a classic member
    assert h.coordinator.commit_offsets(info, GROUP, c, None, 2, commit) == {("t", 0): ErrorCode.NONE}
    with pytest.raises(KafkaError) as e:
        h.coordinator.commit_offsets(info, GROUP, c, None, 1, commit)
    assert e.value.code == ErrorCode.ILLEGAL_GENERATION
    with pytest.raises(KafkaError) as e:  # the consumer-protocol member still needs v9 and its epoch
        h.coordinator.commit_offsets(info, GROUP, "m1", None, 2, commit)
    assert e.value.code == ErrorCode.UNSUPPORTED_VERSION
    assert h.coordinator.fetch_offsets(GROUP, [("t", [0])], c, 1).error_code == ErrorCode.ILLEGAL_GENERATION


def test_classic_members_are_described_as_classic(h: Harness) -> None:
    h.consumer_member_with_everything()
    c = h.join_new().member_id
    (described,) = h.cg.describe([GROUP], h.image)
    assert {m.member_id: m.member_type for m in described.members} == {"m1": 1, c: 0}


# -- timers and leaving --------------------------------------------------------------------------------------


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced(h: Harness) -> None:
    h.consumer_member_elsewhere()
    c = h.join_new().member_id
    h.sync(c, 2)
    h.heartbeat("m1", 0)
    assert h.classic_heartbeat(c, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    for _ in range(2):  # heartbeats keep its session, but the first join timer stands
        h.advance(8_000)
        assert h.classic_heartbeat(c, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(REBALANCE_MS - 16_000 - 1)
    assert c in h.group().members
    h.advance(1)
    assert c not in h.group().members
    assert h.classic_heartbeat(c, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    # c's partitions were freed with it: m1 gets all of t.
    h.heartbeat("m1", 3)
    assert partitions_of(h.group(), "m1") == {0, 1, 2, 3}


def test_a_classic_member_that_does_not_sync_or_heartbeat_is_fenced(h: Harness) -> None:
    h.consumer_member_elsewhere()
    c = h.join_new().member_id
    h.advance(REBALANCE_MS)  # joined, never synced
    assert c not in h.group().members
    d = h.join_new().member_id
    assert assigned(h.sync(d, h.group().members[d].member_epoch))
    h.advance(CLASSIC_SESSION_MS - 1)
    assert h.classic_heartbeat(d, h.group().members[d].member_epoch) == ErrorCode.NONE
    h.advance(CLASSIC_SESSION_MS - 1)
    assert d in h.group().members  # each heartbeat renews its own (classic) session timeout
    h.advance(2)
    assert d not in h.group().members


def test_classic_leave_group(h: Harness) -> None:
    h.consumer_member_with_everything()
    c = h.join_new().member_id
    s = h.join(instance="inst-1").value.member_id  # static members get their id at once
    epoch = h.group().group_epoch
    response = h.leave((c, None), ("nobody", None), ("", "inst-1"), ("", "unknown-instance"), ("other", "inst-1"))
    # Each member answered as the request named it (an admin removal by instance id keeps its empty id).
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        (c, None, 0), ("nobody", None, ErrorCode.UNKNOWN_MEMBER_ID), ("", "inst-1", 0),
        ("", "unknown-instance", ErrorCode.UNKNOWN_MEMBER_ID), ("other", "inst-1", ErrorCode.FENCED_INSTANCE_ID)]
    group = h.group()
    assert set(group.members) == {"m1"} and group.group_epoch == epoch + 1  # one bump for both leavers
    assert s not in group.members
    assert h.heartbeat("m1", 1).member_epoch == epoch + 1
    assert partitions_of(group, "m1") == {0, 1, 2, 3}
    assert snapshot(h.reloaded_group()) == snapshot(group)
    # A LeaveGroup naming nobody it can remove writes nothing and bumps nothing.
    end = h.plog.log_end_offset
    assert h.leave(("nobody", None)).members[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.plog.log_end_offset == end


def test_leave_group_removes_consumer_protocol_members_too(h: Harness) -> None:
    # Kafka 4.x: LeaveGroup (kafka-consumer-groups --delete-members) removes any member of a consumer group.
    h.consumer_member_with_everything()
    h.heartbeat("m2", 0)
    response = h.leave(("m1", None))
    assert [(m.member_id, m.error_code) for m in response.members] == [("m1", 0)]
    group = h.group()
    assert isinstance(group, ConsumerGroup) and set(group.members) == {"m2"}


def test_a_static_classic_member_comes_back_under_a_new_member_id(h: Harness) -> None:
    h.consumer_member_with_everything()
    old = h.join(instance="i1").value
    assert old.error_code == 0  # static members get their id at once
    new = h.join(instance="i1").value
    assert new.error_code == 0 and new.member_id != old.member_id
    group = h.group()
    assert old.member_id not in group.members and group.members[new.member_id].instance_id == "i1"
    assert h.classic_heartbeat(old.member_id, old.generation_id, instance="i1") == ErrorCode.FENCED_INSTANCE_ID
    assert snapshot(h.reloaded_group()) == snapshot(group)


def test_a_failed_append_answers_the_join_with_the_error_and_changes_nothing(h: Harness) -> None:
    h.consumer_member_with_everything()
    first = h.join().value
    before = snapshot(h.group())
    h.writer.failing = True
    assert h.join(first.member_id).value.error_code == ErrorCode.NOT_COORDINATOR
    h.writer.failing = False
    assert snapshot(h.group()) == before


def test_the_assignment_is_written_in_the_members_subscription_version(h: Harness) -> None:
    h.consumer_member_elsewhere()
    c = h.join_new(subscription_version=1).member_id
    sync = h.sync(c, 2)
    assert protocol_version(sync.assignment) == 1 and assigned(sync) == {"t": [0, 1, 2, 3]}
    assert isinstance(h.group(), ConsumerGroup) and not isinstance(h.group(), ClassicGroup)
