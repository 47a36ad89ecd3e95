"""Offset and time indexes: lookups at boundaries, persistence, truncation, corruption."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.storage.index import CorruptIndexError, OffsetIndex, TimeIndex


def test_offset_index_lookup_boundaries(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "x.index", 100, 1024, load=False)
    assert idx.lookup(100) == (100, 0)  # empty index: scan from the start
    for i, off in enumerate((100, 110, 130)):
        idx.append(off, i * 4096)
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(100) == (100, 0)
    assert idx.lookup(109) == (100, 0)
    assert idx.lookup(110) == (110, 4096)
    assert idx.lookup(129) == (110, 4096)
    assert idx.lookup(10**9) == (130, 8192)
    idx.append(120, 9999)  # not increasing: ignored
    assert len(idx) == 3


def test_offset_index_persists_and_truncates(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    idx = OffsetIndex(path, 0, 1024, load=False)
    for i in range(10):
        idx.append(i * 10, i * 100)
    idx.flush()
    idx.close()
    again = OffsetIndex(path, 0, 1024)
    assert len(again) == 10 and again.lookup(55) == (50, 500)
    again.truncate_to(50)
    assert len(again) == 5 and again.lookup(10**6) == (40, 400)
    again.close()
    assert path.stat().st_size == 5 * 8
    assert len(OffsetIndex(path, 0, 1024)) == 5


def test_offset_index_fullness(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "x.index", 0, 8 * 3, load=False)
    for i in range(3):
        assert not idx.is_full
        idx.append(i, i)
    assert idx.is_full


def test_partial_entry_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(b"\x00" * 12)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 1024)


def test_sanity_check_detects_bad_entries(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "x.index", 0, 1024, load=False)
    idx.append(5, 100)
    idx.append(9, 50_000)
    idx.sanity_check(log_size=60_000)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check(log_size=1_000)  # entry points past the log


def test_time_index(tmp_path: Path) -> None:
    path = tmp_path / "x.timeindex"
    idx = TimeIndex(path, 1000, 1024, load=False)
    assert idx.last_entry == (-1, 1000)
    idx.maybe_append(10, 1000)
    idx.maybe_append(10, 1005)  # same timestamp: ignored
    idx.maybe_append(30, 1010)
    idx.maybe_append(20, 1020)  # smaller timestamp: ignored
    assert len(idx) == 2
    assert idx.lookup(5) == (-1, 1000)
    assert idx.lookup(10) == (10, 1000)
    assert idx.lookup(29) == (10, 1000)
    assert idx.lookup(31) == (30, 1010)
    idx.flush()
    idx.close()
    again = TimeIndex(path, 1000, 1024)
    assert again.last_entry == (30, 1010)
    again.truncate_to(1010)
    assert again.last_entry == (10, 1000)
    again.sanity_check(next_offset=1011)
