"""The classic protocol on a ManualClock: joins, syncs, heartbeats, expiry, static members, leader
changes, stale generations, unknown members, rebalances in progress, protocol votes, persistence."""

from __future__ import annotations

from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState
from tidelog.coordinator.group.classic.manager import NEW_MEMBER_JOIN_TIMEOUT_MS
from tidelog.errors import ErrorCode

from .conftest import Harness, subscription

S = ClassicGroupState


def group(h: Harness, gid: str = "g") -> ClassicGroup:
    g = h.coordinator.groups[gid]
    assert isinstance(g, ClassicGroup)
    return g


# ---------------------------------------------------------------------------------------- join


def test_member_id_required_round_trip_then_leader_gets_metadata(harness: Harness) -> None:
    first = harness.join("g", client="alice")
    assert first.value.error_code == ErrorCode.MEMBER_ID_REQUIRED
    member_id = first.value.member_id
    assert member_id.startswith("alice-") and len(member_id) == len("alice-") + 36
    second = harness.join("g", member_id, client="alice")
    assert not second.done  # parked: the initial rebalance waits for its (zero) delay
    harness.settle()
    answer = second.value
    assert (answer.error_code, answer.generation_id, answer.leader, answer.member_id) == (0, 1, member_id, member_id)
    assert answer.protocol_name == "range" and answer.protocol_type == "consumer"
    assert [(m.member_id, m.metadata) for m in answer.members] == [(member_id, subscription("t"))]
    assert group(harness).state is S.COMPLETING_REBALANCE


def test_v3_join_is_given_its_member_id_at_once(harness: Harness) -> None:
    box = harness.join("g", version=3)
    harness.settle()
    assert box.value.error_code == 0 and box.value.member_id.startswith("client-")


def test_followers_get_no_member_list(harness: Harness) -> None:
    a, b = harness.join_new("g", client="a"), harness.join_new("g", client="b")
    harness.settle()
    leader, follower = a.value, b.value
    assert leader.leader == leader.member_id == follower.leader
    assert len(leader.members) == 2 and follower.members == []
    assert leader.generation_id == follower.generation_id == 1


def test_sync_writes_the_assignment_before_anyone_hears_it(harness: Harness) -> None:
    a, b = harness.join_new("g"), harness.join_new("g")
    harness.settle()
    leader, follower = a.value.member_id, b.value.member_id
    follower_sync = harness.sync("g", follower, 1)
    assert not follower_sync.done  # parked until the leader's assignment is written
    before = harness.records_written()
    leader_sync = harness.sync("g", leader, 1, {leader: b"L", follower: b"F"}, protocol_type="consumer",
                               protocol_name="range")
    assert harness.records_written() == before + 1
    assert (leader_sync.value.error_code, leader_sync.value.assignment) == (0, b"L")
    assert (follower_sync.value.error_code, follower_sync.value.assignment) == (0, b"F")
    assert follower_sync.value.protocol_name == "range"
    assert group(harness).state is S.STABLE
    # A later sync in Stable returns the current assignment.
    assert harness.sync("g", follower, 1).value.assignment == b"F"


def test_failed_write_of_the_assignment_sends_everyone_back_to_join(harness: Harness) -> None:
    a, b = harness.join_new("g"), harness.join_new("g")
    harness.settle()
    leader, follower = a.value.member_id, b.value.member_id
    follower_sync = harness.sync("g", follower, 1)
    harness.writer.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    leader_sync = harness.sync("g", leader, 1, {leader: b"L", follower: b"F"})
    assert leader_sync.value.error_code == follower_sync.value.error_code == ErrorCode.NOT_COORDINATOR
    g = group(harness)
    assert g.state is S.PREPARING_REBALANCE and all(m.assignment == b"" for m in g.members.values())


def test_sync_checks(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    assert harness.sync("g", "nobody", 1).value.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert harness.sync("g", follower, 0).value.error_code == ErrorCode.ILLEGAL_GENERATION
    assert harness.sync("g", follower, 1, protocol_name="roundrobin").value.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert harness.sync("nogroup", follower, 1).value.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    rejoin = harness.join("g", leader)  # the leader rejoins: a rebalance starts
    assert not rejoin.done and group(harness).state is S.PREPARING_REBALANCE
    assert harness.sync("g", follower, 1).value.error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_invalid_join_requests(harness: Harness) -> None:
    assert harness.join("").value.error_code == ErrorCode.INVALID_GROUP_ID
    assert harness.join("g", session_ms=999).value.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert harness.join("g", session_ms=60_001).value.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert harness.join("g", "made-up-id").value.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert harness.join("g", protocols=[]).value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_votes_and_inconsistent_protocols(harness: Harness) -> None:
    both = [("range", subscription("t")), ("roundrobin", subscription("t"))]
    rr_first = [("roundrobin", subscription("t")), ("range", subscription("t"))]
    boxes = [harness.join_new("g", protocols=p) for p in (both, rr_first, rr_first)]
    harness.settle()
    assert {b.value.protocol_name for b in boxes} == {"roundrobin"}
    assert harness.join("g", protocols=[("sticky", b"")]).value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert harness.join("g", protocol_type="connect").value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_initial_rebalance_delay_is_extended_by_new_members(tmp_path) -> None:
    h = Harness(tmp_path, group_initial_rebalance_delay_ms=3000)
    a = h.join_new("g", rebalance_ms=10_000)
    h.advance(2000)
    b = h.join_new("g", rebalance_ms=10_000)
    h.advance(1000)  # first delay over, but a member came: wait another delay
    assert not a.done and not b.done
    h.advance(2999)
    assert not a.done
    h.advance(1)
    assert a.value.error_code == b.value.error_code == 0 and len(a.value.members) == 2


def test_group_max_size_reached(tmp_path) -> None:
    h = Harness(tmp_path, group_max_size=1)
    h.stable_group("g", n=1)
    box = h.join("g", version=3)
    assert (box.value.error_code, box.value.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")


# ---------------------------------------------------------------------------- heartbeats, expiry


def test_heartbeat_answers(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    assert harness.heartbeat("g", follower, 1) == 0
    assert harness.heartbeat("g", follower, 0) == ErrorCode.ILLEGAL_GENERATION
    assert harness.heartbeat("g", "unknown", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert harness.heartbeat("other", follower, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert harness.coordinator.heartbeat("", follower, None, 1).error_code == ErrorCode.INVALID_GROUP_ID
    harness.join("g", leader)
    assert harness.heartbeat("g", follower, 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_session_expiry_removes_the_silent_member(harness: Harness) -> None:
    leader, follower = harness.stable_group("g", session_ms=10_000)
    for _ in range(2):
        harness.advance(4000)
        assert harness.heartbeat("g", leader, 1) == 0
    g = group(harness)
    assert g.state is S.STABLE and follower in g.members
    harness.advance(2000)  # 10 s without a heartbeat from the follower
    assert g.state is S.PREPARING_REBALANCE and follower not in g.members
    assert harness.heartbeat("g", leader, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = harness.join("g", leader)
    assert rejoin.value.generation_id == 2 and [m.member_id for m in rejoin.value.members] == [leader]


def test_member_that_does_not_rejoin_in_time_is_removed(harness: Harness) -> None:
    leader, follower = harness.stable_group("g", rebalance_ms=20_000, session_ms=10_000)
    rejoin = harness.join("g", leader, rebalance_ms=20_000)
    for _ in range(4):  # the follower keeps heartbeating but never rejoins
        harness.advance(4999)
        assert harness.heartbeat("g", follower, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert not rejoin.done
    harness.advance(10)
    assert rejoin.value.generation_id == 2 and len(rejoin.value.members) == 1
    assert harness.heartbeat("g", follower, 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_that_does_not_sync_in_time_is_removed(harness: Harness) -> None:
    a, b = harness.join_new("g", rebalance_ms=5000), harness.join_new("g", rebalance_ms=5000)
    harness.settle()
    leader, follower = a.value.member_id, b.value.member_id
    harness.sync("g", leader, 1, {leader: b"L", follower: b"F"})
    harness.advance(5000)
    g = group(harness)
    assert follower not in g.members and g.state is S.PREPARING_REBALANCE


def test_pending_member_that_never_comes_back_expires(harness: Harness) -> None:
    first = harness.join("g", session_ms=5000)
    pending = first.value.member_id
    assert pending in group(harness).pending_join_members
    harness.advance(5000)
    assert pending not in group(harness).pending_join_members
    assert harness.join("g", pending).value.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_new_member_parked_too_long_is_dropped(harness: Harness) -> None:
    leader, _ = harness.stable_group("g", session_ms=60_000, rebalance_ms=NEW_MEMBER_JOIN_TIMEOUT_MS * 2)
    late = harness.join_new("g", session_ms=60_000, rebalance_ms=NEW_MEMBER_JOIN_TIMEOUT_MS * 2)
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 50_000):
        harness.advance(50_000)
        harness.heartbeat("g", leader, 1)
    assert late.value.error_code == ErrorCode.UNKNOWN_MEMBER_ID


# ------------------------------------------------------------------------------ leader, leave


def test_leader_leaving_hands_leadership_to_a_rejoining_member(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    response = harness.coordinator.leave_group("g", [(leader, None, "bye")])
    assert [(m.member_id, m.error_code) for m in response.members] == [(leader, 0)]
    assert group(harness).leader_id == follower
    rejoin = harness.join("g", follower)
    assert rejoin.value.leader == follower and rejoin.value.generation_id == 2


def test_leave_checks_and_batch_form(harness: Harness) -> None:
    ids = harness.stable_group("g", n=3)
    response = harness.coordinator.leave_group("g", [(ids[1], None, None), ("ghost", None, None), ("", "nope", None)])
    assert [m.error_code for m in response.members] == [0, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
    none = harness.coordinator.leave_group("missing", [("x", None, None)])
    assert [m.error_code for m in none.members] == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert harness.coordinator.leave_group("", [("x", None, None)]).error_code == ErrorCode.INVALID_GROUP_ID


def test_everyone_leaving_empties_the_group_and_persists_it(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    before = harness.records_written()
    harness.coordinator.leave_group("g", [(leader, None, None), (follower, None, None)])
    g = group(harness)
    assert g.state is S.EMPTY and g.generation_id == 2 and not g.members
    assert harness.records_written() == before + 1
    replayed = harness.fresh().groups["g"]
    assert isinstance(replayed, ClassicGroup) and replayed.snapshot() == g.snapshot()


# ----------------------------------------------------------------------------- static members


def test_static_member_takes_over_its_instance_without_rebalance(harness: Harness) -> None:
    a = harness.join("g", instance="i-a", client="a")
    b = harness.join("g", instance="i-b", client="b")  # static members get no MEMBER_ID_REQUIRED
    harness.settle()
    leader = a.value.member_id
    assert leader.startswith("i-a-")
    old = b.value.member_id
    harness.sync("g", leader, 1, {leader: b"A", old: b"B"}, instance="i-a")
    harness.sync("g", old, 1, instance="i-b")
    before = harness.records_written()
    again = harness.join("g", instance="i-b", client="b")  # restarted: no member id
    new = again.value.member_id
    assert new != old and again.value.generation_id == 1 and group(harness).state is S.STABLE
    assert harness.records_written() == before + 1
    assert harness.heartbeat("g", old, 1, instance="i-b") == ErrorCode.FENCED_INSTANCE_ID
    assert harness.heartbeat("g", new, 1, instance="i-b") == 0
    assert harness.sync("g", new, 1, instance="i-b").value.assignment == b"B"
    # Leaving by instance id alone works for static members.
    response = harness.coordinator.leave_group("g", [("", "i-b", None)])
    assert response.members[0].error_code == 0 and new not in group(harness).members


def test_static_member_survives_missing_a_rebalance(harness: Harness) -> None:
    a = harness.join("g", instance="i-a", session_ms=30_000)
    b = harness.join("g", instance="i-b", session_ms=30_000)
    harness.settle()
    leader, other = a.value.member_id, b.value.member_id
    harness.sync("g", leader, 1, {})
    rejoin = harness.join("g", leader, instance="i-a", session_ms=30_000)
    harness.advance(20_000)  # the rebalance timeout: a dynamic member that did not rejoin would be removed
    assert rejoin.value.generation_id == 2 and other in group(harness).members


# ----------------------------------------------------------------------------- persistence


def test_replaying_the_log_rebuilds_the_same_groups(harness: Harness) -> None:
    harness.stable_group("g1", n=2)
    harness.stable_group("g2", n=3, instance=None)
    fresh = harness.fresh()
    for gid in ("g1", "g2"):
        replayed = fresh.groups[gid]
        assert isinstance(replayed, ClassicGroup)
        assert replayed.snapshot() == group(harness, gid).snapshot()
        assert replayed.state is S.STABLE and replayed.subscribed_topics == {"t"}


def test_loaded_members_must_heartbeat_within_their_session(harness: Harness) -> None:
    leader, follower = harness.stable_group("g", session_ms=10_000)
    harness.coordinator = harness.fresh()
    harness.advance(6000)
    assert harness.heartbeat("g", leader, 1) == 0
    harness.advance(6000)
    g = group(harness)
    assert leader in g.members and follower not in g.members and g.state is S.PREPARING_REBALANCE


def test_close_answers_parked_requests(harness: Harness) -> None:
    leader, _ = harness.stable_group("g")
    rejoin = harness.join("g", leader)
    harness.coordinator.close()
    assert rejoin.value.error_code == ErrorCode.NOT_COORDINATOR


def test_a_repeated_parked_request_answers_the_one_it_replaces(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    first = harness.join("g", leader)
    second = harness.join("g", leader)
    assert first.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS and not second.done
    harness.join("g", follower)
    assert second.value.generation_id == 2
    sync1 = harness.sync("g", follower, 2)
    sync2 = harness.sync("g", follower, 2)
    assert sync1.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS and not sync2.done
    harness.sync("g", leader, 2, {follower: b"F"})
    assert sync2.value.assignment == b"F"
