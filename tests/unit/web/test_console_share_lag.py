"""A share partition's lag in the console (KIP-1226): records from the share start offset to the high
watermark not yet delivery-complete (tidelog.web.console.share_group_api)."""

from __future__ import annotations

import uuid

from tidelog.share.manager import SharePartitionSnapshot
from tidelog.web.console.share_group_api import share_lag


def window(start: int, end: int, complete: int) -> SharePartitionSnapshot:
    return SharePartitionSnapshot("t", uuid.UUID(int=1), 0, start, end, acquired=0, available=0,
                                  delivery_complete=complete)


def test_with_the_window_the_complete_records_past_the_start_are_not_lag() -> None:
    assert share_lag(4, 10, window(4, 8, 1)) == 5


def test_without_a_window_or_with_a_stale_one_the_lag_is_end_minus_start() -> None:
    assert share_lag(4, 10, None) == 6
    assert share_lag(2, 10, window(4, 10, 1)) == 8  # the offsets were reset while the leader held the window


def test_unknown_offsets_give_no_lag() -> None:
    assert share_lag(-1, 10, None) is None
    assert share_lag(-1, 10, window(0, 3, 0)) is None
    assert share_lag(4, None, window(4, 8, 1)) is None
    assert share_lag(12, 10, None) == 0
