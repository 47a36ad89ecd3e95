"""Truncation by leader epochs: the leader's diverging-epoch answer and the follower's cut (KIP-101/279)."""

from __future__ import annotations

from tidelog.replica.divergence import diverging_epoch, truncation_offset
from tidelog.storage.leader_epoch import LeaderEpochCache


def test_kip_101_the_old_leader_drops_the_suffix_the_new_leader_does_not_have() -> None:
    # Both had epoch 1 up to offset 10; the old leader wrote 10..12 in epoch 1 alone; the new leader
    # began epoch 2 at 10.
    leader = LeaderEpochCache(None, [(1, 0), (2, 10)])
    follower = LeaderEpochCache(None, [(1, 0)])
    answer = diverging_epoch(leader, 15, last_fetched_epoch=1, fetch_offset=13)
    assert answer == (1, 10)
    assert truncation_offset(follower, 13, 10, *answer) == (10, True)


def test_a_follower_in_step_reads_on() -> None:
    leader = LeaderEpochCache(None, [(1, 0), (2, 10)])
    assert diverging_epoch(leader, 15, last_fetched_epoch=2, fetch_offset=12) is None
    assert diverging_epoch(leader, 15, last_fetched_epoch=1, fetch_offset=10) is None
    assert diverging_epoch(leader, 15, last_fetched_epoch=-1, fetch_offset=0) is None


def test_kip_279_several_leader_changes_resolve_in_rounds() -> None:
    # The follower led epoch 3 (offsets 20..24) that the leader never saw; the leader has 1, 2, 4.
    leader = LeaderEpochCache(None, [(1, 0), (2, 10), (4, 20)])
    follower = LeaderEpochCache(None, [(1, 0), (2, 10), (3, 20)])
    answer = diverging_epoch(leader, 30, last_fetched_epoch=3, fetch_offset=25)
    assert answer == (2, 20)
    offset, complete = truncation_offset(follower, 25, 18, *answer)
    assert (offset, complete) == (20, True)
    follower.truncate_from_end(offset)
    assert diverging_epoch(leader, 30, follower.latest_epoch, offset) is None


def test_a_follower_without_the_leaders_epoch_cuts_at_its_own_end_and_asks_again() -> None:
    follower = LeaderEpochCache(None, [(1, 0), (3, 8)])
    assert truncation_offset(follower, 12, 5, leader_epoch=2, leader_end=10) == (8, False)


def test_the_cut_never_goes_past_either_log() -> None:
    follower = LeaderEpochCache(None, [(1, 0)])
    assert truncation_offset(follower, 6, 4, leader_epoch=1, leader_end=10) == (6, True)
    assert truncation_offset(follower, 6, 4, leader_epoch=-1, leader_end=-1) == (4, True)  # Kafka: to the HW
