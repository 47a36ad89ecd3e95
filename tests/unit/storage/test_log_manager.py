"""LogManager: several log dirs, checkpoints, clean and unclean restarts, deferred deletion."""

from __future__ import annotations

import os
from pathlib import Path

from tests.unit.storage.conftest import T0, make_batch
from tidelog.config import TopicConfig
from tidelog.storage import files
from tidelog.storage.checkpoints import read_checkpoint
from tidelog.storage.log_manager import LogManager
from tidelog.testing import ManualClock


def _manager(dirs: list[Path], clock: ManualClock, **cfg) -> LogManager:
    config = TopicConfig.from_dict({k.replace("_", "."): v for k, v in cfg.items()})
    m = LogManager(dirs, clock, topic_config=lambda topic: config)
    m.startup()
    return m


def test_partitions_spread_over_log_dirs_and_survive_restart(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0)
    dirs = [tmp_path / "a", tmp_path / "b"]
    m = _manager(dirs, clock)
    for p in range(4):
        log = m.get_or_create_log("orders", p)
        log.append_as_leader(make_batch(p + 1))
    assert {m.log_dir_of("orders", p) for p in range(4)} == set(dirs)
    m.shutdown()
    for d in dirs:
        assert (d / files.CLEAN_SHUTDOWN_FILE).exists()
        assert set(read_checkpoint(d / files.RECOVERY_POINT_CHECKPOINT).values()) <= {1, 2, 3, 4}
    m2 = _manager(dirs, clock)
    assert all(m2.had_clean_shutdown.values())
    for d in dirs:
        assert not (d / files.CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is unclean
    for p in range(4):
        assert m2.get_log("orders", p).log_end_offset == p + 1


def test_unclean_restart_recovers(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0)
    m = _manager([tmp_path], clock)
    log = m.get_or_create_log("t", 0)
    for _ in range(3):
        log.append_as_leader(make_batch(1))
    m.flush_due_logs()
    m.checkpoint()
    with open(files.log_file(log.directory, 0), "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x01")
    m2 = _manager([tmp_path], clock)  # no shutdown(): a crash
    assert not m2.had_clean_shutdown[tmp_path]
    assert m2.get_log("t", 0).log_end_offset == 3


def test_flush_by_policy_and_recovery_point_checkpoint(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0)
    m = _manager([tmp_path], clock, flush_messages=2)
    log = m.get_or_create_log("t", 0)
    log.append_as_leader(make_batch(1))
    assert m.flush_due_logs() == 0
    log.append_as_leader(make_batch(1))
    assert m.flush_due_logs() == 1
    m.checkpoint()
    assert read_checkpoint(tmp_path / files.RECOVERY_POINT_CHECKPOINT) == {("t", 0): 2}


def test_retention_defers_file_removal(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0)
    one = len(make_batch(1))
    m = _manager([tmp_path], clock, segment_bytes=one, retention_ms=1000, file_delete_delay_ms=5000)
    log = m.get_or_create_log("t", 0)
    for _ in range(3):
        log.append_as_leader(make_batch(1, ts=clock.wall_ms()))
    clock.advance(2000)
    assert m.apply_retention() == 2
    deleted = sorted(p.name for p in log.directory.glob("*.deleted"))
    assert "00000000000000000000.log.deleted" in deleted
    assert m.remove_deleted_segments() == 0
    clock.advance(5000)
    assert m.remove_deleted_segments() == 2
    assert not list(log.directory.glob("*.deleted"))
    assert log.log_start_offset == 2


def test_delete_log_removes_the_directory(tmp_path: Path) -> None:
    m = _manager([tmp_path], ManualClock(wall_ms=T0))
    log = m.get_or_create_log("gone", 3)
    log.append_as_leader(make_batch(1))
    directory = log.directory
    assert m.delete_log("gone", 3)
    assert not directory.exists() and m.get_log("gone", 3) is None


def test_deleted_partitions_are_renamed_now_and_removed_by_purge(tmp_path: Path) -> None:
    m = _manager([tmp_path], ManualClock(wall_ms=T0))
    for p in range(3):
        m.get_or_create_log("gone", p).append_as_leader(make_batch(2))
    for p in range(3):
        assert m.delete_log("gone", p)
    renamed = sorted(tmp_path.glob("gone-*.*-delete"))
    assert len(renamed) == 3 and m.pending_removal == 3
    assert all(files.is_deleted_partition_dir(d.name) for d in renamed)
    assert m.purge_deleted_logs() == 3
    assert not list(tmp_path.glob("*-delete")) and m.pending_removal == 0


def test_a_slice_read_before_the_partition_is_deleted_stays_readable_until_released(tmp_path: Path) -> None:
    """A Fetch response built before a DeleteTopics may still be queued or half sent: the slice it
    holds must keep the segment file open (renamed, even purged) until the network releases it."""
    m = _manager([tmp_path], ManualClock(wall_ms=T0))
    log = m.get_or_create_log("gone", 0)
    log.append_as_leader(make_batch(3, value=b"x" * 100))
    records = log.read(0, 1 << 20).records
    assert records is not None
    expected = records.read()
    unrelated = log.read(0, 1 << 20).records
    assert unrelated is not None
    m.delete_log("gone", 0)
    m.purge_deleted_logs()
    assert not list(tmp_path.glob("gone-*"))
    assert records.read() == expected  # old code: ValueError, I/O operation on closed file
    assert os.pread(records.fileno(), records.size, records.position) == expected  # as sendfile reads it
    records.release()
    records.release()  # idempotent
    assert not records.file.closed, "another slice still holds the file"
    del unrelated  # a slice nobody sends (a dropped response) releases the file too
    assert records.file.closed, "the descriptor of a deleted segment must close once no slice holds it"


def test_a_part_of_a_slice_holds_the_deleted_segment_file_open_on_its_own(tmp_path: Path) -> None:
    """ShareFetch answers the part of what it read that holds the acquired batches: that part must keep
    the file open after the slice it came from is released, as a slice read from the log does."""
    m = _manager([tmp_path], ManualClock(wall_ms=T0))
    log = m.get_or_create_log("gone", 0)
    log.append_as_leader(make_batch(3, value=b"x" * 100))
    log.append_as_leader(make_batch(2, value=b"y" * 100))
    records = log.read(0, 1 << 20).records
    assert records is not None
    whole = records.read()
    first = len(make_batch(3, value=b"x" * 100))
    tail = records.part(first, records.size - first)
    assert (tail.position, tail.size) == (records.position + first, records.size - first)
    read_already = records.part(0, first, whole[:first])
    assert read_already.read() is not None and read_already.read() == whole[:first]
    read_already.release()
    try:
        records.part(first, records.size)
        raise AssertionError("a part beyond the slice")
    except ValueError:
        pass
    records.release()
    m.delete_log("gone", 0)
    m.purge_deleted_logs()
    assert tail.read() == whole[first:]
    assert not tail.file.closed, "the part still holds the file"
    tail.release()
    assert tail.file.closed


def test_closing_a_segment_with_no_slice_out_closes_its_file_at_once(tmp_path: Path) -> None:
    m = _manager([tmp_path], ManualClock(wall_ms=T0))
    log = m.get_or_create_log("t", 0)
    log.append_as_leader(make_batch(1))
    sent = log.read(0, 1 << 20).records
    assert sent is not None
    sent.release()
    segment = log.segments[0]
    m.delete_log("t", 0)
    assert segment.file.closed


def test_a_new_topic_may_reuse_the_name_before_the_old_files_are_removed(tmp_path: Path) -> None:
    m = _manager([tmp_path], ManualClock(wall_ms=T0))
    m.get_or_create_log("reused", 0).append_as_leader(make_batch(5))
    m.delete_log("reused", 0)
    fresh = m.get_or_create_log("reused", 0)
    assert fresh.log_end_offset == 0
    m.purge_deleted_logs()
    assert fresh.directory.exists() and m.get_log("reused", 0) is fresh


def test_startup_reports_clean_and_unclean_log_dirs(tmp_path: Path) -> None:
    clock = ManualClock(wall_ms=T0)
    m = _manager([tmp_path], clock)
    m.get_or_create_log("r", 0).append_as_leader(make_batch(3))
    m.shutdown()
    m2 = LogManager([tmp_path], clock)
    (clean,) = m2.startup()
    assert clean.clean and clean.partitions == 1 and not clean.truncated
    assert "clean shutdown, no recovery needed" in clean.describe()[0]
    m2.get_log("r", 0).flush()
    seg = tmp_path / "r-0" / ("0" * 20 + ".log")
    with open(seg, "ab") as f:
        f.write(b"\xff" * 10)
    m3 = LogManager([tmp_path], clock)  # m2 "crashed": no shutdown, no marker
    (report,) = m3.startup()
    assert not report.clean and report.segments_recovered == 1
    assert report.truncated_bytes == 10 and report.truncated[0].truncated_at_offset == 3
    lines = report.describe()
    assert lines[0].startswith("r-0: truncated 10 invalid bytes at offset 3")
    assert "recovered after an unclean shutdown" in lines[-1]


def test_lock_dirs_refuses_a_second_owner_and_names_it(tmp_path: Path) -> None:
    from tidelog.storage.log_dir import LogDirLockedError

    first = LogManager([tmp_path / "a"], ManualClock(wall_ms=T0))
    first.lock_dirs()
    second = LogManager([tmp_path / "b", tmp_path / "a"], ManualClock(wall_ms=T0))
    try:
        second.lock_dirs()
    except LogDirLockedError as e:
        assert str(tmp_path / "a") in str(e) and f"process {os.getpid()}" in str(e)
    else:
        raise AssertionError("the second lock was granted")
    # Nothing is held after the failure: b can be locked by someone else now.
    third = LogManager([tmp_path / "b"], ManualClock(wall_ms=T0))
    third.lock_dirs()
    third.release_dirs()
    first.release_dirs()
    second.lock_dirs()
    second.release_dirs()
