"""The leader's view of its followers: caught-up times, the high watermark by the ISR, shrink and expand."""

from __future__ import annotations

from tidelog.replica.isr import LeaderPartitionState


def state(isr=(1, 2, 3), now=0) -> LeaderPartitionState:
    return LeaderPartitionState.become_leader(1, 5, (1, 2, 3), isr, 7, epoch_start_offset=10, now_ms=now)


def test_high_watermark_is_the_smallest_isr_log_end_and_waits_for_unknown_followers() -> None:
    s = state()
    assert s.high_watermark(20, 10) == 10  # followers not heard from yet hold it
    s.record_fetch(2, 15, 20, 100)
    assert s.high_watermark(20, 10) == 10
    s.record_fetch(3, 18, 20, 100)
    assert s.high_watermark(20, 10) == 15
    s.record_fetch(2, 20, 20, 110)
    assert s.high_watermark(20, 15) == 18
    assert s.high_watermark(20, 19) == 19  # never backwards


def test_a_follower_outside_the_isr_does_not_hold_the_high_watermark() -> None:
    s = state(isr=(1, 2))
    s.record_fetch(2, 20, 20, 0)
    assert s.high_watermark(20, 0) == 20
    s.pending = (1, 2, 3)  # being added: counted in (the maximal ISR)
    assert s.high_watermark(20, 0) == 0


def test_lagging_followers_leave_after_the_max_lag() -> None:
    s = state(now=0)
    s.record_fetch(2, 20, 20, 1000)  # caught up at 1000
    s.record_fetch(3, 12, 20, 1000)  # behind since it became leader at 0
    assert s.proposed_shrink(20, 1500, 1000) == (1, 2)
    assert s.proposed_shrink(20, 900, 1000) is None


def test_a_follower_reaching_the_log_end_the_leader_had_at_its_previous_fetch_was_caught_up_then() -> None:
    s = state(now=0)
    s.record_fetch(2, 10, 20, 1000)  # behind
    s.record_fetch(2, 20, 30, 1800)  # reached the end the leader had at 1000: caught up at 1000
    assert s.followers[2].last_caught_up_ms == 1000
    assert s.out_of_sync(30, 2100, 1000) == [2, 3]  # 3 never caught up since 0


def test_a_follower_joins_once_it_reaches_the_high_watermark_and_the_epoch_start() -> None:
    s = state(isr=(1, 2))
    s.record_fetch(3, 8, 20, 0)
    assert s.proposed_expand(3, 8, {1, 2, 3}) is None  # below this epoch's start (10)
    s.record_fetch(3, 15, 20, 0)
    assert s.proposed_expand(3, 16, {1, 2, 3}) is None  # below the high watermark
    assert s.proposed_expand(3, 15, {1, 2}) is None  # not registered
    assert s.proposed_expand(3, 15, {1, 2, 3}) == (1, 2, 3)
    s.pending = (1, 2, 3)
    assert s.proposed_expand(3, 15, {1, 2, 3}) is None  # one change at a time
    s.update_metadata((1, 2, 3), (1, 2, 3), 8, 0)
    assert s.pending is None and s.isr == (1, 2, 3)
