"""Log compaction: latest value per key, offsets kept, tombstones (KIP-534), cleanability rules,
the crash-safe swap, reopening, producer state, the log manager's scheduling and the null-key check.

Real files in tmp_path, a ManualClock, batches from RecordBatchBuilder; a "crash" leaves the files as
they are and opens the directory again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.unit.storage.conftest import T0, make_batch
from tidelog.config import TopicConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import ControlRecordType, RecordBatchView, build_control_batch
from tidelog.storage import files
from tidelog.storage.checkpoints import read_checkpoint
from tidelog.storage.cleaner import CleanResult, LogCleaner, log_to_clean
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.storage.log_manager import LogManager
from tidelog.testing import ManualClock

COMPACT = {"cleanup_policy": "compact", "segment_bytes": 400, "index_interval_bytes": 100}


def _config(**cfg) -> TopicConfig:
    return TopicConfig.from_dict({k.replace("_", "."): v for k, v in {**COMPACT, **cfg}.items()})


def _open(directory: Path, clock: ManualClock, *, clean: bool = False, recovery_point: int = 0, **cfg) -> PartitionLog:
    return load_log(directory, "t", 0, _config(**cfg), clock, recovery_point=recovery_point, clean_shutdown=clean)


def _put(log: PartitionLog, key: bytes | None, value: bytes | None, ts: int = T0) -> int:
    return log.append_as_leader(make_batch(1, key=key, value=value, ts=ts)).first_offset


def _fill(log: PartitionLog, count: int, keys: int, ts: int = T0, start: int = 0) -> dict[int, tuple[bytes, bytes]]:
    written = {}
    for i in range(start, start + count):
        key, value = f"key-{i % keys}".encode(), f"value-{i}".encode()
        written[_put(log, key, value, ts)] = (key, value)
    return written


def _content(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for view in log.batches() for r in view.records()]


def _data(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """Like :func:`_content`, without transaction markers."""
    return [(r.offset, r.key, r.value) for view in log.batches() if not view.is_control_batch for r in view.records()]


def _latest_below(written: dict[int, tuple[bytes, bytes]], end: int) -> list[int]:
    latest: dict[bytes, int] = {}
    for offset in sorted(written):
        if offset < end:
            latest[written[offset][0]] = offset
    return sorted(latest.values())


def _views(data: bytes) -> list[RecordBatchView]:
    views, pos = [], 0
    while pos < len(data):
        views.append(RecordBatchView(memoryview(data)[pos:]))
        pos += views[-1].size_in_bytes
    return views


def _leftovers(directory: Path) -> list[str]:
    suffixes = (files.CLEANED_SUFFIX, files.SWAP_SUFFIX, files.DELETED_SUFFIX)
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffixes))


def _assert_tiled(log: PartitionLog) -> None:
    for seg, nxt in zip(log.segments, log.segments[1:], strict=False):
        assert seg.next_offset == nxt.base_offset


def _clean(cleaner: LogCleaner, log: PartitionLog, *, force: bool = False) -> CleanResult | None:
    done = cleaner.clean_log(log, force=force)
    if done is None:
        return None
    result, replaced = done
    for seg in replaced:
        seg.delete_files()
    return result


# ----------------------------------------------------------------------------- what survives


def test_latest_value_per_key_across_many_segments_with_offsets_kept(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    written = _fill(log, 100, keys=7)
    segments_before = len(log.segments)
    assert segments_before > 10
    result = _clean(LogCleaner(clock), log)
    end = log.active_segment.base_offset
    assert result is not None and result.end_offset == end == log.cleaner_offset
    content = _content(log)
    for offset, key, value in content:
        assert written[offset] == (key, value)  # every survivor sits at its original offset
    assert [c[0] for c in content if c[0] < end] == _latest_below(written, end)
    assert [c for c in content if c[0] >= end] == [(o, *written[o]) for o in sorted(written) if o >= end]
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 100, 100)
    _assert_tiled(log)
    assert not _leftovers(log.directory)
    for view in log.batches():
        view.validate(allow_compacted=True)
    # The cleaned segments are now tiny: a second pass merges them into one named after the first base.
    segments_after_first = len(log.segments)
    assert _clean(LogCleaner(clock), log, force=True) is not None
    assert len(log.segments) < segments_after_first and log.segments[0].base_offset == 0
    assert files.log_file(log.directory, 0).exists()
    assert _content(log) == content
    _assert_tiled(log)


def test_reads_by_offset_after_compaction(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    _fill(log, 80, keys=5)
    _clean(LogCleaner(clock), log)
    survivors = [c[0] for c in _content(log)]
    assert len(survivors) < 80
    for offset in range(log.log_end_offset):
        # Like a consumer: fetch, skip records below the offset and empty batches, fetch again.
        position, got = offset, None
        while got is None:
            views = _views(log.read(position, 1 << 20).records.read())
            assert views[0].last_offset >= position  # the batch holding the offset, or the next one
            got = next((r.offset for v in views for r in v.records() if r.offset >= offset), None)
            position = views[-1].next_offset
        assert got == next(o for o in survivors if o >= offset)


@pytest.mark.parametrize("compression", [0, 1, 4])  # none, gzip, zstd
def test_a_batch_keeps_its_base_and_last_offset_when_thinned(tmp_path: Path, clock: ManualClock, compression: int) -> None:
    log = _open(tmp_path / "t-0", clock)
    keys, values = [b"a", b"b", b"c", b"d"], [b"1", b"2", b"3", b"4"]
    log.append_as_leader(make_batch(4, keys=keys, values=values, compression=compression))
    log.append_as_leader(make_batch(2, keys=[b"b", b"d"], values=[b"5", b"6"]))
    log.append_as_leader(make_batch(1, key=b"z", value=b"7"))
    log.roll()
    _clean(LogCleaner(clock), log)
    views = list(log.batches())
    assert [(v.base_offset, v.last_offset, v.record_count) for v in views] == [(0, 3, 2), (4, 5, 2), (6, 6, 1)]
    assert [(r.offset, r.key) for r in views[0].records()] == [(0, b"a"), (2, b"c")]
    assert views[0].compression_type == compression and views[0].last_sequence == -1


def test_committed_transactional_records_compact_like_others_and_markers_stay(tmp_path: Path,
                                                                               clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    _put(log, b"a", b"1")
    txn = make_batch(1, key=b"a", value=b"txn", producer_id=7, producer_epoch=0, base_sequence=0)
    txn[21:23] = (RecordBatchView(txn).attributes | 0x10).to_bytes(2, "big")  # the transactional bit
    txn[17:21] = RecordBatchView(txn).compute_crc().to_bytes(4, "big")
    log.append_as_leader(txn)
    _put(log, b"b", b"1")
    log.roll()
    assert log_to_clean(log, clock.wall_ms()).first_uncleanable_offset == 1  # the open transaction
    assert _clean(LogCleaner(clock), log, force=True) is None
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                 timestamp_ms=T0, base_offset=log.log_end_offset)
    log.append_as_follower(marker)
    log.roll()
    _clean(LogCleaner(clock), log, force=True)
    assert _data(log) == [(1, b"a", b"txn"), (2, b"b", b"1")]  # committed: it supersedes offset 0
    _put(log, b"a", b"2")
    log.roll()
    _clean(LogCleaner(clock), log, force=True)
    assert _data(log) == [(2, b"b", b"1"), (4, b"a", b"2")]
    views = {v.base_offset: v for v in log.batches()}
    assert views[1].record_count == 0 and views[1].producer_id == 7  # the producer's last batch, emptied
    assert views[3].is_control_batch and views[3].record_count == 1  # the marker stays


# ---------------------------------------------------------------------------------- tombstones


def test_tombstones_kept_until_the_delete_horizon_then_removed(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock, delete_retention_ms=10_000)
    _put(log, b"gone", b"v1")
    _put(log, b"kept", b"v2")
    _put(log, b"gone", None)
    _put(log, b"other", b"v3")
    log.roll()
    cleaner = LogCleaner(clock)
    result = _clean(cleaner, log)
    assert _content(log) == [(1, b"kept", b"v2"), (2, b"gone", None), (3, b"other", b"v3")]
    (tombstone_batch,) = [v for v in log.batches() if v.base_offset == 2]
    assert tombstone_batch.delete_horizon_ms == clock.wall_ms() + 10_000 == result.delete_horizon_ms
    horizon = tombstone_batch.delete_horizon_ms
    clock.advance(9_999)
    _clean(cleaner, log, force=True)
    assert (2, b"gone", None) in _content(log)
    assert [v.delete_horizon_ms for v in log.batches() if v.base_offset == 2] == [horizon]  # not pushed back
    clock.advance(1)
    result = _clean(cleaner, log, force=True)
    assert _content(log) == [(1, b"kept", b"v2"), (3, b"other", b"v3")]
    assert result.stats.tombstones_removed == 1 and result.delete_horizon_ms is None
    assert log.log_end_offset == 4


# ------------------------------------------------------------------------------- cleanability


def test_dirty_ratio_threshold(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock, min_cleanable_dirty_ratio=0.5)
    cleaner = LogCleaner(clock)
    _fill(log, 60, keys=60)  # distinct keys: nothing to remove, but the pass moves the checkpoint
    assert _clean(cleaner, log) is not None
    clean_end = log.cleaner_offset
    assert clean_end == log.active_segment.base_offset
    _fill(log, 20, keys=3, start=1000)
    ltc = log_to_clean(log, clock.wall_ms())
    assert ltc.first_dirty_offset == clean_end and 0 < ltc.cleanable_ratio < 0.5 and not ltc.is_cleanable
    before = _content(log)
    assert _clean(cleaner, log) is None and _content(log) == before
    _fill(log, 60, keys=3, start=2000)
    assert log_to_clean(log, clock.wall_ms()).cleanable_ratio > 0.5
    assert _clean(cleaner, log) is not None
    assert len(_content(log)) < len(before)


def test_min_compaction_lag(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock, min_compaction_lag_ms=60_000)
    now = clock.wall_ms()
    old = _fill(log, 30, keys=3, ts=now - 120_000)
    log.roll()
    young_start = log.log_end_offset
    young = _fill(log, 30, keys=3, ts=now, start=30)
    cleaner = LogCleaner(clock)
    assert log_to_clean(log, now).first_uncleanable_offset == young_start
    _clean(cleaner, log)
    content = _content(log)
    assert [c[0] for c in content if c[0] < young_start] == _latest_below(old, young_start)
    assert [c for c in content if c[0] >= young_start] == [(o, *young[o]) for o in sorted(young)]
    clock.advance(60_001)
    _clean(cleaner, log)
    end = log.active_segment.base_offset
    assert [c[0] for c in _content(log) if c[0] < end] == _latest_below({**old, **young}, end)


def test_max_compaction_lag_forces_a_pass_and_rolls_the_active_segment(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock, min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=5_000)
    cleaner = LogCleaner(clock)
    _fill(log, 40, keys=40, ts=clock.wall_ms())
    assert _clean(cleaner, log) is not None  # all dirty: ratio 1.0
    _fill(log, 10, keys=2, ts=clock.wall_ms(), start=100)
    assert _clean(cleaner, log) is None  # ratio below 0.99
    clock.advance(5_001)
    segments = len(log.segments)
    _put(log, b"late", b"x", ts=clock.wall_ms())
    assert len(log.segments) == segments + 1  # the active segment rolled after max.compaction.lag.ms
    ltc = log_to_clean(log, clock.wall_ms())
    assert ltc.needs_compaction_now and ltc.cleanable_ratio < 0.99
    assert _clean(cleaner, log) is not None


def test_active_segment_and_records_above_the_high_watermark_are_untouched(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    written = _fill(log, 60, keys=4)
    active = log.active_segment
    active_bytes = active.log_path.read_bytes()
    log.high_watermark_follows_end = False
    log.update_high_watermark(31)
    bound = max(s.base_offset for s in log.segments if s.base_offset <= 31)
    _clean(LogCleaner(clock), log)
    assert log.active_segment is active and active.log_path.read_bytes() == active_bytes
    content = _content(log)
    assert [c for c in content if c[0] >= bound] == [(o, *written[o]) for o in sorted(written) if o >= bound]
    assert [c[0] for c in content if c[0] < bound] == _latest_below(written, bound)
    assert log.cleaner_offset == bound


def test_compact_delete_also_applies_retention(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock, cleanup_policy="compact,delete", retention_ms=3_600_000)
    now = clock.wall_ms()
    _fill(log, 30, keys=3, ts=now - 7_200_000)
    log.roll()
    recent_start = log.log_end_offset
    recent = _fill(log, 30, keys=3, ts=now, start=30)
    _clean(LogCleaner(clock), log)
    expired = log.expired_segments()
    assert expired and all(s.next_offset <= recent_start for s in expired)
    for seg in expired:
        seg.delete_files()
    assert log.log_start_offset == recent_start
    end = log.active_segment.base_offset
    assert [c[0] for c in _content(log) if c[0] < end] == _latest_below(recent, end)


def test_a_small_offset_map_takes_several_passes(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    written = _fill(log, 60, keys=8)
    cleaner = LogCleaner(clock, max_map_entries=3)
    end = log.active_segment.base_offset
    result = _clean(cleaner, log)
    assert result.end_offset < end
    for _ in range(30):
        if log.cleaner_offset == end:
            break
        _clean(cleaner, log, force=True)
    assert log.cleaner_offset == end
    assert [c[0] for c in _content(log) if c[0] < end] == _latest_below(written, end)


def test_truncation_lowers_the_first_dirty_offset(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    _fill(log, 40, keys=4)
    _clean(LogCleaner(clock), log)
    assert log.cleaner_offset is not None and log.cleaner_offset > 30
    log.truncate_to(30)
    assert log.cleaner_offset == 30


# --------------------------------------------------------------------------- producer state


def test_producer_state_survives_a_rebuild_from_the_cleaned_log(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = _open(directory, clock)

    def idempotent(seq: int) -> bytearray:
        return make_batch(1, key=b"a", value=b"p%d" % seq, producer_id=42, producer_epoch=3, base_sequence=seq)

    log.append_as_leader(idempotent(0))
    log.append_as_leader(idempotent(1))
    _fill(log, 20, keys=1)  # key-0: supersedes nothing of "a"...
    for _ in range(6):
        _put(log, b"a", b"newer")  # ...but these supersede the producer's records
    log.roll()
    _clean(LogCleaner(clock), log)
    views = {v.base_offset: v for v in log.batches()}
    assert 0 not in views  # the producer's older batch is gone entirely
    assert views[1].record_count == 0 and views[1].producer_id == 42 and views[1].last_sequence == 1
    for path in directory.glob("*" + files.SNAPSHOT_SUFFIX):
        path.unlink()
    reopened = _open(directory, clock)  # a crash: the state comes from replaying the cleaned log
    entry = reopened.producer_state.last_entry(42)
    assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (3, 1, 1)
    retry = reopened.append_as_leader(idempotent(1))
    assert retry.duplicate and retry.first_offset == 1
    assert reopened.append_as_leader(idempotent(2)).first_offset == reopened.log_end_offset - 1


# ------------------------------------------------------------------------------ reopening


@pytest.mark.parametrize("how", ["clean", "crash-full-recovery", "crash-from-recovery-point"])
def test_log_reopens_with_the_same_content(tmp_path: Path, clock: ManualClock, how: str) -> None:
    directory = tmp_path / "t-0"
    log = _open(directory, clock, delete_retention_ms=1_000)
    _fill(log, 70, keys=6)
    _put(log, b"key-1", None)
    _fill(log, 20, keys=6, start=100)
    _clean(LogCleaner(clock), log)
    log.flush()
    content, leo = _content(log), log.log_end_offset
    if how == "clean":
        log.close()
        reopened = _open(directory, clock, clean=True)
    else:
        recovery_point = 0 if how == "crash-full-recovery" else log.recovery_point
        reopened = _open(directory, clock, recovery_point=recovery_point)
    assert _content(reopened) == content and reopened.log_end_offset == leo
    _assert_tiled(reopened)
    assert reopened.append_as_leader(make_batch(1, key=b"k")).first_offset == leo


def test_appends_during_a_pass_are_kept(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    _fill(log, 40, keys=4)
    cleaner = LogCleaner(clock)
    plan = cleaner.plan(log)
    _fill(log, 30, keys=4, start=500)  # the loop keeps appending while the executor cleans
    result = cleaner.clean(plan)
    replaced = cleaner.commit(log, result)
    assert replaced
    assert log.log_end_offset == 70
    assert [c[0] for c in _content(log)][-30:] == list(range(40, 70))


def test_a_pass_is_discarded_when_retention_removed_its_segments(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock, cleanup_policy="compact,delete", retention_ms=3_600_000)
    _fill(log, 30, keys=3, ts=clock.wall_ms() - 7_200_000)
    log.roll()
    _fill(log, 30, keys=3, ts=clock.wall_ms(), start=30)
    cleaner = LogCleaner(clock)
    plan = cleaner.plan(log)
    result = cleaner.clean(plan)
    assert result.groups and any(f.endswith(files.CLEANED_SUFFIX) for f in _leftovers(log.directory))
    for seg in log.expired_segments():
        seg.delete_files()
    content = _content(log)
    assert cleaner.commit(log, result) is None
    assert _content(log) == content and log.cleaner_offset is None
    assert not _leftovers(log.directory)


# ------------------------------------------------------------------ crash during the swap


def _write_swap_scenario(log: PartitionLog) -> None:
    for i in range(24):  # thinned batches shrink, so an old index would point into the middle of one
        keys = [b"a%d" % i, b"b%d" % (i % 5), b"dup"]
        log.append_as_leader(make_batch(3, keys=keys, values=[b"value-%d-%d" % (i, j) for j in range(3)]))
    log.flush()


@pytest.fixture(scope="module")
def swap_scenario(tmp_path_factory) -> dict:
    """A flushed log of 8 segments (written once), and its content before and after a clean pass."""
    clock = ManualClock(wall_ms=T0 + 1000)
    root = tmp_path_factory.mktemp("swap")
    template = root / "template" / "t-0"
    log = _open(template, clock, index_interval_bytes=50)  # an index entry per batch
    _write_swap_scenario(log)
    reference, result = _copy_and_clean(template, root / "reference" / "t-0", clock, log.recovery_point)
    old = _content(reference)
    assert LogCleaner(clock).commit(reference, result) is not None
    return {"template": template, "recovery_point": log.recovery_point, "old": old, "new": _content(reference),
            "log_end_offset": reference.log_end_offset}


def _copy_and_clean(template: Path, directory: Path, clock: ManualClock, recovery_point: int):
    shutil.copytree(template, directory)
    log = _open(directory, clock, index_interval_bytes=50, segment_bytes=1_000, recovery_point=recovery_point)
    cleaner = LogCleaner(clock)
    result = cleaner.clean(cleaner.plan(log))  # groups of 2-3 segments
    assert len(result.groups) >= 2
    return log, result


def _rename(directory: Path, base: int, suffix: str, old: str, new: str) -> None:
    os.replace(files.segment_file(directory, base, suffix + old), files.segment_file(directory, base, suffix + new))


def _crash_state(directory: Path, result: CleanResult, step: str) -> None:
    """Leave the files as a crash at ``step`` of the swap protocol would."""
    first = result.groups[0]
    b = first.base_offset
    if step == "cleaned":
        return
    _rename(directory, b, files.LOG_SUFFIX, files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
    if step == "first-log-swapped":
        return
    _rename(directory, b, files.INDEX_SUFFIX, files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
    if step == "first-index-swapped":
        return
    _rename(directory, b, files.TIME_INDEX_SUFFIX, files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
    for group in result.groups[1:]:
        for suffix in (files.LOG_SUFFIX, files.INDEX_SUFFIX, files.TIME_INDEX_SUFFIX):
            _rename(directory, group.base_offset, suffix, files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
    if step == "all-swapped":
        return
    _rename(directory, b, files.LOG_SUFFIX, "", files.DELETED_SUFFIX)  # old <b>.log gone, its index not yet
    if step == "old-first-log-deleted":
        return
    for src in first.sources:
        for suffix in (files.LOG_SUFFIX, files.INDEX_SUFFIX, files.TIME_INDEX_SUFFIX):
            if files.segment_file(directory, src.base_offset, suffix).exists():
                _rename(directory, src.base_offset, suffix, "", files.DELETED_SUFFIX)
    if step == "old-group-deleted":
        return
    _rename(directory, b, files.INDEX_SUFFIX, files.SWAP_SUFFIX, "")
    _rename(directory, b, files.TIME_INDEX_SUFFIX, files.SWAP_SUFFIX, "")
    if step == "new-indexes-in-place":
        return
    _rename(directory, b, files.LOG_SUFFIX, files.SWAP_SUFFIX, "")
    assert step == "first-group-done"


STEPS = [
    "cleaned", "first-log-swapped", "first-index-swapped", "all-swapped", "old-first-log-deleted",
    "old-group-deleted", "new-indexes-in-place", "first-group-done",
]


@pytest.mark.parametrize("from_recovery_point", [False, True])
@pytest.mark.parametrize("step", STEPS)
def test_crash_during_the_swap(tmp_path: Path, swap_scenario: dict, step: str, from_recovery_point: bool) -> None:
    clock = ManualClock(wall_ms=T0 + 1000)
    old, new = swap_scenario["old"], swap_scenario["new"]
    assert len(new) < len(old)
    directory = tmp_path / "t-0"
    _, result = _copy_and_clean(swap_scenario["template"], directory, clock, swap_scenario["recovery_point"])
    recovery_point = swap_scenario["recovery_point"] if from_recovery_point else 0
    _crash_state(directory, result, step)
    reopened = _open(directory, clock, recovery_point=recovery_point)
    content = _content(reopened)
    first_end = result.groups[0].next_offset
    if step == "cleaned":
        assert content == old
    elif step in ("first-log-swapped", "first-index-swapped"):
        # Only the first group reached its commit point; the other groups' .cleaned files are dropped.
        assert content == [c for c in new if c[0] < first_end] + [c for c in old if c[0] >= first_end]
    else:
        assert content == new
    assert reopened.log_end_offset == swap_scenario["log_end_offset"]
    assert not _leftovers(directory)
    _assert_tiled(reopened)
    for view in reopened.batches():
        view.validate(allow_compacted=True)
    for offset in range(reopened.log_end_offset):  # every index lookup lands on the right batch
        first = RecordBatchView(reopened.read(offset, 1).records.read())
        assert first.last_offset >= offset
    again = _open(directory, clock, recovery_point=recovery_point)
    assert _content(again) == content


def test_loader_removes_orphan_swap_indexes(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = _open(directory, clock)
    _fill(log, 10, keys=2)
    log.flush()
    content = _content(log)
    orphan = files.segment_file(directory, 0, files.INDEX_SUFFIX + files.SWAP_SUFFIX)
    shutil.copy(files.index_file(directory, 0), orphan)
    reopened = _open(directory, clock)
    assert not orphan.exists() and _content(reopened) == content


# -------------------------------------------------------------------------------- log manager


def test_log_manager_cleans_the_dirtiest_log_and_checkpoints_it(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0 + 1000)
    configs = {"a": _config(), "b": _config(), "plain": _config(cleanup_policy="delete")}
    m = LogManager([tmp_path], clock, topic_config=configs.__getitem__)
    m.startup()
    a, b, plain = (m.get_or_create_log(t, 0) for t in ("a", "b", "plain"))
    _fill(a, 60, keys=60)
    _fill(plain, 60, keys=2)
    first = m.clean_filthiest_log()
    assert first is not None and first.plan.topic == "a"  # the only compacted log with dirty data
    _fill(a, 10, keys=2, start=100)  # a little dirt on a
    _fill(b, 60, keys=3)  # b is all dirty
    plan = m.grab_filthiest_compacted_log()
    assert plan.topic == "b"
    assert m.grab_filthiest_compacted_log() is None  # b is being cleaned; a is not dirty enough
    result = m.cleaner.clean(plan)  # the executor part
    assert m.complete_clean(result)
    assert b.cleaner_offset == b.active_segment.base_offset
    deleted = sorted(b.directory.glob("*" + files.DELETED_SUFFIX))
    assert deleted and m.remove_deleted_segments() == 0  # file.delete.delay.ms not over yet
    clock.advance(b.config.file_delete_delay_ms)
    assert m.remove_deleted_segments() > 0 and not list(b.directory.glob("*" + files.DELETED_SUFFIX))
    m.checkpoint()
    checkpoint = read_checkpoint(tmp_path / files.CLEANER_OFFSET_CHECKPOINT)
    assert checkpoint == {("a", 0): a.cleaner_offset, ("b", 0): b.cleaner_offset}
    content = {t: _content(log) for t, log in (("a", a), ("b", b))}
    m.shutdown()
    m2 = LogManager([tmp_path], clock, topic_config=configs.__getitem__)
    m2.startup()
    for t in ("a", "b"):
        reopened = m2.get_log(t, 0)
        assert reopened.cleaner_offset == checkpoint[(t, 0)] and _content(reopened) == content[t]
    assert m2.get_log("plain", 0).cleaner_offset is None


def test_log_manager_cleans_again_when_a_tombstone_horizon_passes(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0 + 1000)
    config = _config(delete_retention_ms=5_000)
    m = LogManager([tmp_path], clock, topic_config=lambda topic: config)
    m.startup()
    log = m.get_or_create_log("t", 0)
    _fill(log, 30, keys=3)
    _put(log, b"key-1", None)
    log.roll()
    assert m.clean_filthiest_log() is not None
    assert (log.log_end_offset - 1, b"key-1", None) in _content(log)
    assert m.clean_filthiest_log() is None  # nothing dirty, horizon not reached
    clock.advance(5_000)
    assert m.clean_filthiest_log() is not None
    assert all(key != b"key-1" for _, key, _ in _content(log))
    assert m.clean_filthiest_log() is None


# ------------------------------------------------------------------------------ null keys


def test_compacted_topic_rejects_records_without_key(tmp_path: Path, clock: ManualClock) -> None:
    log = _open(tmp_path / "t-0", clock)
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(make_batch(2, keys=[b"a", None], values=[b"1", b"2"]))
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert "Compacted topic cannot accept message without key" in str(e.value)
    assert log.log_end_offset == 0
    plain = _open(tmp_path / "p-0", clock, cleanup_policy="delete")
    assert plain.append_as_leader(make_batch(1, key=None)).last_offset == 0
