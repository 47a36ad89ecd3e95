"""Committed offsets: commit rules by group state, fetch, delete, retention and tombstones, replay."""

from __future__ import annotations

import pytest

from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState
from tidelog.coordinator.group.group import RequestInfo
from tidelog.coordinator.group.offsets import PartitionCommit, java_length
from tidelog.errors import ErrorCode, KafkaError

from .conftest import Harness

S = ClassicGroupState
V8 = RequestInfo("c", "/h", 8)
V9 = RequestInfo("c", "/h", 9)


def commit(h: Harness, group: str, *commits: PartitionCommit, member: str = "", generation: int = -1,
           info: RequestInfo = V8, instance: str | None = None, retention_ms: int = -1) -> dict:
    return h.coordinator.commit_offsets(info, group, member, instance, generation, list(commits), retention_ms)


def offsets(coordinator, group: str) -> dict[tuple[str, int], int]:
    fetched = coordinator.fetch_offsets(group, None)
    return {(t.name, p.partition_index): p.committed_offset for t in fetched.topics for p in t.partitions}


def test_simple_commit_creates_an_empty_group_and_survives_replay(harness: Harness) -> None:
    codes = commit(harness, "simple", PartitionCommit("t", 0, 10, 3, "m"), PartitionCommit("t", 1, 20))
    assert codes == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    g = harness.coordinator.groups["simple"]
    assert isinstance(g, ClassicGroup) and g.state is S.EMPTY and g.protocol_type is None
    fetched = harness.coordinator.fetch_offsets("simple", [("t", [0, 1, 2])])
    assert [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
            for p in fetched.topics[0].partitions] == [(0, 10, 3, "m"), (1, 20, -1, ""), (2, -1, -1, "")]
    fresh = harness.fresh()
    assert offsets(fresh, "simple") == {("t", 0): 10, ("t", 1): 20}
    assert fresh.groups["simple"].state_name() == "Empty"


def test_simple_commit_is_rejected_while_the_group_has_members(harness: Harness) -> None:
    harness.stable_group("g")
    with pytest.raises(KafkaError) as e:
        commit(harness, "g", PartitionCommit("t", 0, 1))
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_commits_are_checked(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    assert commit(harness, "g", PartitionCommit("t", 0, 5), member=follower, generation=1) == {("t", 0): 0}
    for member, generation, code in [(follower, 0, ErrorCode.ILLEGAL_GENERATION),
                                     ("ghost", 1, ErrorCode.UNKNOWN_MEMBER_ID)]:
        with pytest.raises(KafkaError) as e:
            commit(harness, "g", PartitionCommit("t", 0, 6), member=member, generation=generation)
        assert e.value.code == code
    with pytest.raises(KafkaError) as e:
        commit(harness, "g", PartitionCommit("t", 0, 6), member=follower, generation=1, instance="not-mine")
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    harness.join("g", leader)  # PreparingRebalance: commits of the previous generation are fine
    assert commit(harness, "g", PartitionCommit("t", 0, 7), member=follower, generation=1) == {("t", 0): 0}
    assert offsets(harness.coordinator, "g") == {("t", 0): 7}


def test_commit_while_completing_rebalance(harness: Harness) -> None:
    a = harness.join_new("g")
    harness.settle()
    with pytest.raises(KafkaError) as e:
        commit(harness, "g", PartitionCommit("t", 0, 1), member=a.value.member_id, generation=1)
    assert e.value.code == ErrorCode.REBALANCE_IN_PROGRESS


def test_commit_to_a_missing_group_with_a_generation(harness: Harness) -> None:
    for info, code in [(V8, ErrorCode.ILLEGAL_GENERATION), (V9, ErrorCode.GROUP_ID_NOT_FOUND)]:
        with pytest.raises(KafkaError) as e:
            commit(harness, "nope", PartitionCommit("t", 0, 1), member="m", generation=3, info=info)
        assert e.value.code == code
    assert "nope" not in harness.coordinator.groups


def test_metadata_too_large_fails_only_that_partition(tmp_path) -> None:
    h = Harness(tmp_path, offset_metadata_max_bytes=4)
    codes = commit(h, "g", PartitionCommit("t", 0, 1, metadata="12345"), PartitionCommit("t", 1, 2, metadata="1234"),
                   PartitionCommit("t", 2, 3, metadata="\U0001F600\U0001F600\U0001F600"))
    assert codes == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 1): 0,
                     ("t", 2): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert offsets(h.coordinator, "g") == {("t", 1): 2}
    assert java_length("\U0001F600") == 2


def test_failed_append_changes_nothing(harness: Harness) -> None:
    commit(harness, "g", PartitionCommit("t", 0, 1))
    harness.writer.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KafkaError) as e:
        commit(harness, "g", PartitionCommit("t", 0, 2))
    assert e.value.code == ErrorCode.NOT_COORDINATOR
    assert offsets(harness.coordinator, "g") == {("t", 0): 1}


def test_fetch_of_an_unknown_group_is_no_error(harness: Harness) -> None:
    fetched = harness.coordinator.fetch_offsets("who", [("t", [0])])
    assert fetched.error_code == 0 and fetched.topics[0].partitions[0].committed_offset == -1
    assert harness.coordinator.fetch_offsets("who", None).topics == []


def test_delete_offsets(harness: Harness) -> None:
    with pytest.raises(KafkaError) as e:
        harness.coordinator.delete_offsets("nope", [("t", [0])])
    assert e.value.code == ErrorCode.GROUP_ID_NOT_FOUND
    commit(harness, "simple", PartitionCommit("t", 0, 1), PartitionCommit("u", 0, 1))
    response = harness.coordinator.delete_offsets("simple", [("t", [0, 5])])
    assert [(p.partition_index, p.error_code) for p in response.topics[0].partitions] == [(0, 0), (5, 0)]
    assert offsets(harness.coordinator, "simple") == {("u", 0): 1}
    assert offsets(harness.fresh(), "simple") == {("u", 0): 1}
    harness.stable_group("g")  # subscribed to "t"
    commit_all = harness.coordinator.groups["g"]
    assert commit_all.is_subscribed_to("t") and not commit_all.is_subscribed_to("u")
    response = harness.coordinator.delete_offsets("g", [("t", [0]), ("u", [0])])
    assert [[p.error_code for p in t.partitions] for t in response.topics] == [[ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC], [0]]


def test_delete_offsets_of_a_non_consumer_group_with_members(harness: Harness) -> None:
    harness.stable_group("connect", protocol_type="connect")
    with pytest.raises(KafkaError) as e:
        harness.coordinator.delete_offsets("connect", [("t", [0])])
    assert e.value.code == ErrorCode.NON_EMPTY_GROUP


def test_offsets_of_an_empty_group_expire_retention_after_it_became_empty(harness: Harness) -> None:
    leader, follower = harness.stable_group("g", session_ms=60_000)
    commit(harness, "g", PartitionCommit("t", 0, 42), member=leader, generation=1)
    for _ in range(4):  # twice the retention while the group lives and subscribes to "t": kept
        harness.advance(30_000)
        harness.heartbeat("g", leader, 1), harness.heartbeat("g", follower, 1)
    assert offsets(harness.coordinator, "g") == {("t", 0): 42}
    harness.coordinator.leave_group("g", [(leader, None, None), (follower, None, None)])
    assert harness.coordinator.groups["g"].state_name() == "Empty"
    harness.advance(50_000)
    assert offsets(harness.coordinator, "g") == {("t", 0): 42}
    harness.advance(10_000)  # retention (60 s) since the group became empty, at the next check
    assert "g" not in harness.coordinator.groups and harness.coordinator.offsets.group_offsets("g") == {}
    fresh = harness.fresh()
    assert "g" not in fresh.groups and len(fresh.offsets) == 0


def test_simple_group_offsets_expire_from_their_commit(harness: Harness) -> None:
    commit(harness, "s", PartitionCommit("t", 0, 1))
    harness.advance(30_000)
    commit(harness, "s", PartitionCommit("t", 1, 2))
    harness.advance(30_000)
    assert offsets(harness.coordinator, "s") == {("t", 1): 2}
    harness.advance(30_000)
    assert "s" not in harness.coordinator.groups


def test_explicit_retention_of_old_commits(harness: Harness) -> None:
    commit(harness, "s", PartitionCommit("t", 0, 1), retention_ms=5_000)
    assert harness.coordinator.offsets.get("s", "t", 0).expire_timestamp_ms == harness.clock.wall_ms() + 5_000
    assert harness.fresh().offsets.get("s", "t", 0).expire_timestamp_ms == harness.clock.wall_ms() + 5_000
    harness.advance(10_000)
    assert "s" not in harness.coordinator.groups


def test_offsets_of_deleted_topics_are_removed(harness: Harness) -> None:
    commit(harness, "s", PartitionCommit("gone", 0, 1), PartitionCommit("kept", 0, 2))
    harness.coordinator.topic_exists = lambda name: name != "gone"
    harness.coordinator.cleanup_group_metadata()
    assert offsets(harness.coordinator, "s") == {("kept", 0): 2}


def test_commits_keep_a_member_alive(harness: Harness) -> None:
    leader, follower = harness.stable_group("g", session_ms=10_000)
    for _ in range(3):
        harness.advance(6000)
        commit(harness, "g", PartitionCommit("t", 0, 1), member=follower, generation=1)
        commit(harness, "g", PartitionCommit("t", 1, 1), member=leader, generation=1)
    assert harness.coordinator.groups["g"].state_name() == "Stable"
