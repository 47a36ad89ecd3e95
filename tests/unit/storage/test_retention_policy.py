"""The pure retention policy."""

from __future__ import annotations

from tidelog.storage.retention import SegmentSummary, segments_to_delete


def _segs(*specs: tuple[int, int, int, int]) -> list[SegmentSummary]:
    return [SegmentSummary(base, nxt, size, ts, ts) for base, nxt, size, ts in specs]


SEGS = _segs((0, 10, 100, 1000), (10, 20, 100, 2000), (20, 30, 100, 3000), (30, 35, 50, 4000))


def _delete(**kw) -> int:
    args = {"now_ms": 5000, "log_start_offset": 0, "retention_ms": -1, "retention_bytes": -1, "delete_policy": True}
    args.update(kw)
    return segments_to_delete(SEGS, **args)


def test_nothing_to_delete_by_default() -> None:
    assert _delete() == 0


def test_by_time_oldest_first_never_active() -> None:
    assert _delete(retention_ms=3500) == 1  # only the segment whose max ts 1000 < 1500
    assert _delete(retention_ms=2500) == 2
    assert _delete(retention_ms=0) == 3  # the active segment stays


def test_by_size() -> None:
    assert _delete(retention_bytes=350) == 0
    assert _delete(retention_bytes=250) == 1  # 350 - 100 = 250 >= 250
    assert _delete(retention_bytes=0) == 3


def test_by_log_start_offset_whatever_the_policy() -> None:
    assert _delete(log_start_offset=20, delete_policy=False) == 2
    assert _delete(log_start_offset=19, delete_policy=False) == 1
    assert _delete(log_start_offset=35, delete_policy=False) == 3


def test_compact_policy_ignores_time_and_size() -> None:
    assert _delete(retention_ms=0, retention_bytes=0, delete_policy=False) == 0
