"""Crash recovery: torn final writes, garbage tails, lost or corrupt indexes, clean restarts.

A "crash" is simulated by closing nothing: the files are left as a killed process leaves them, then
the log is opened again without the clean-shutdown flag.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.storage.conftest import T0, make_batch
from tidelog.config import TopicConfig
from tidelog.records import RecordBatchView
from tidelog.storage import files
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

CLOCK = ManualClock(wall_ms=T0 + 1000)


def _open(directory: Path, clean: bool = False, **cfg):
    config = TopicConfig.from_dict({k.replace("_", "."): v for k, v in cfg.items()})
    return load_log(directory, "t", 0, config, CLOCK, clean_shutdown=clean)


def _all_values(log) -> list[bytes]:
    return [r.value for view in log.batches() for r in view.records()]


def _write_acknowledged(directory: Path, count: int, **cfg) -> tuple[list[bytes], int]:
    log = _open(directory, **cfg)
    values = [f"value-{i}".encode() * 3 for i in range(count)]
    for v in values:
        log.append_as_leader(make_batch(1, value=v))
    size = log.active_segment.size
    log.flush()
    return values, size


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(cut=st.integers(min_value=1, max_value=10_000), seed=st.integers(0, 2**32 - 1))
def test_torn_final_batch_at_any_byte(tmp_path_factory, cut: int, seed: int) -> None:
    directory = tmp_path_factory.mktemp("torn") / "t-0"
    values, size = _write_acknowledged(directory, 5)
    last = make_batch(1, value=b"the torn one" * 10)
    cut = cut % len(last)  # anywhere inside the final batch, 0 .. len-1 bytes of it survive
    with open(files.log_file(directory, 0), "ab") as f:
        f.write(bytes(last[:cut]))
    log = _open(directory)
    assert _all_values(log) == values
    assert log.log_end_offset == 5 and log.active_segment.size == size
    assert log.append_as_leader(make_batch(1, value=b"after")).first_offset == 5
    assert _all_values(log)[-1] == b"after"


def test_torn_final_batch_every_byte_exhaustive(tmp_path: Path) -> None:
    last = make_batch(2, value=b"z" * 7)
    for cut in range(len(last)):
        directory = tmp_path / f"c{cut}" / "t-0"
        values, _ = _write_acknowledged(directory, 2)
        with open(files.log_file(directory, 0), "ab") as f:
            f.write(bytes(last[:cut]))
        log = _open(directory)
        assert _all_values(log) == values, cut
        assert log.log_end_offset == 2


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(garbage=st.binary(min_size=1, max_size=300))
def test_garbage_appended_is_truncated(tmp_path_factory, garbage: bytes) -> None:
    directory = tmp_path_factory.mktemp("garbage") / "t-0"
    values, size = _write_acknowledged(directory, 4)
    with open(files.log_file(directory, 0), "ab") as f:
        f.write(garbage)
    log = _open(directory)
    assert _all_values(log) == values
    assert log.active_segment.size == size
    assert log.log_end_offset == 4


def test_corrupted_byte_in_last_batch_truncates_it(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    values, _ = _write_acknowledged(directory, 3)
    path = files.log_file(directory, 0)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x55
    path.write_bytes(bytes(data))
    log = _open(directory)
    assert _all_values(log) == values[:2]


def test_later_segments_after_a_hole_are_dropped(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    one = len(make_batch(1, value=b"x" * 50))
    log = _open(directory, segment_bytes=one * 2)
    for _ in range(6):
        log.append_as_leader(make_batch(1, value=b"x" * 50))
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    seg1 = files.log_file(directory, 2)
    with open(seg1, "r+b") as f:  # damage the second segment's second batch
        f.seek(one + 30)
        f.write(b"\xff\xff")
    log = _open(directory, segment_bytes=one * 2)
    assert log.log_end_offset == 3
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert not files.log_file(directory, 4).exists()


def test_missing_and_corrupt_indexes_are_rebuilt(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    one = len(make_batch(1, value=b"y" * 40))
    log = _open(directory, segment_bytes=one * 4, index_interval_bytes=1)
    for i in range(12):
        log.append_as_leader(make_batch(1, ts=T0 + i, value=b"y" * 40))
    log.close()
    files.index_file(directory, 0).unlink()
    files.time_index_file(directory, 4).write_bytes(b"\x01\x02\x03")
    with open(files.index_file(directory, 8), "r+b") as f:
        f.write(b"\x7f\xff\xff\xff\x7f\xff\xff\xff")  # an entry pointing far past the log
    for clean in (True, False):
        log = _open(directory, clean=clean, segment_bytes=one * 4, index_interval_bytes=1)
        assert log.log_end_offset == 12
        for offset in range(12):
            view = RecordBatchView(log.read(offset, one).records.read())
            assert view.base_offset == offset
        assert log.offset_for_timestamp(T0 + 5) == (T0 + 5, 5)
        assert len(log.segments[0].offset_index) == 4
        log.close()


def test_clean_shutdown_skips_validation(tmp_path: Path) -> None:
    """With the clean-shutdown flag the tail is trusted (no CRC scan); without it, it is checked."""
    directory = tmp_path / "t-0"
    _write_acknowledged(directory, 3)
    path = files.log_file(directory, 0)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # a bad CRC in the last batch, which only a recovery scan notices
    path.write_bytes(bytes(data))
    assert _open(directory, clean=True).log_end_offset == 3
    assert _open(directory, clean=False).log_end_offset == 2


def test_leftover_files_are_cleaned_up(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_acknowledged(directory, 2)
    for name in ("00000000000000000000.log.cleaned", "00000000000000000007.log.deleted", "x.tmp"):
        (directory / name).write_bytes(b"junk")
    log = _open(directory)
    assert log.log_end_offset == 2
    assert sorted(p.name for p in directory.iterdir() if not p.name.endswith(".snapshot")) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",  # rebuilt from the batches (written before it existed)
    ]


def test_nothing_acknowledged_is_lost_across_many_crashes(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    acknowledged: list[bytes] = []
    for round_ in range(5):
        log = _open(directory, segment_bytes=400)
        for i in range(7):
            v = f"r{round_}-{i}".encode()
            log.append_as_leader(make_batch(1, value=v))
            acknowledged.append(v)
        log.flush()
        with open(files.log_file(directory, log.active_segment.base_offset), "ab") as f:
            f.write(os.urandom(13))  # each crash leaves some junk behind
    log = _open(directory, segment_bytes=400)
    assert _all_values(log) == acknowledged
