"""A full disk under the storage layer, on a real tiny tmpfs (root; skipped without): a failed append
is rolled back whole (log file, indexes, offsets), answers KAFKA_STORAGE_ERROR, and the log stays valid
through recovery; the space reserve keeps atomic small writes (checkpoints, the metadata file) possible
with 0 bytes free; the log dir's condition is logged once and cleared once; shutdown on a full disk."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.small_fs import fill, small_tmpfs
from tests.unit.storage.conftest import T0, make_batch
from tidelog import disk_space
from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.store import EmbeddedStore
from tidelog.config import TopicConfig
from tidelog.disk_space import LogDirSpace, write_atomically
from tidelog.errors import ErrorCode, KafkaError
from tidelog.storage import files
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.storage.log_manager import LogManager
from tidelog.testing import ManualClock

CONFIG = TopicConfig.from_dict({"segment.bytes": str(64 * 1024), "index.interval.bytes": "1"})


@pytest.fixture
def mnt() -> Iterator[Path]:
    with small_tmpfs("512k") as path:
        yield path


def _open(directory: Path, *, clean: bool = False) -> PartitionLog:
    return load_log(directory, "t", 0, CONFIG, ManualClock(wall_ms=T0 + 1000), clean_shutdown=clean)


def _append_until_full(log: PartitionLog, value_size: int) -> tuple[list[bytes], KafkaError]:
    values = []
    for i in range(100_000):
        value = os.urandom(value_size) + i.to_bytes(4, "big")
        try:
            log.append_as_leader(make_batch(1, value=value))
        except KafkaError as e:
            return values, e
        values.append(value)
    raise AssertionError("the file system never filled up")


def _values(log: PartitionLog) -> list[bytes]:
    return [r.value for view in log.batches() for r in view.records()]


def test_an_append_that_finds_no_room_is_rolled_back_whole(mnt: Path) -> None:
    (mnt / "spare").write_bytes(b"\0" * 65536)  # freed at the end
    log = _open(mnt / "t-0")
    values, error = _append_until_full(log, 3000)
    assert error.code is ErrorCode.KAFKA_STORAGE_ERROR
    assert "No space left on device" in str(error)
    assert log.log_end_offset == len(values) and log.high_watermark == len(values)
    for seg in log.segments:  # the file holds exactly the appended batches, the indexes no more
        assert os.path.getsize(seg.log_path) == seg.size
        assert os.path.getsize(seg.offset_index.path) == len(seg.offset_index) * 8
        assert os.path.getsize(seg.time_index.path) == len(seg.time_index) * 12
        seg.offset_index.sanity_check(seg.size)
    for size in (200, 1):  # smaller appends fill what is left, then fail the same way
        more, error = _append_until_full(log, size)
        values += more
        assert error.code is ErrorCode.KAFKA_STORAGE_ERROR
    assert _values(log) == values
    log.close_for_deletion()
    recovered = _open(mnt / "t-0")
    assert recovered.log_end_offset == len(values) and _values(recovered) == values
    fill(mnt, "ballast")  # whatever recovery's files left free
    with pytest.raises(KafkaError) as info:
        recovered.append_as_leader(make_batch(1, value=os.urandom(5000)))
    assert info.value.code is ErrorCode.KAFKA_STORAGE_ERROR
    (mnt / "spare").unlink()
    recovered.append_as_leader(make_batch(1, value=b"after"))  # writes resume once there is room
    assert _values(recovered) == [*values, b"after"]
    assert recovered.log_end_offset == len(values) + 1


def test_a_roll_that_finds_no_room_leaves_no_half_segment() -> None:
    """No inode left for the new segment's third file: the two created go again, nothing changes,
    and the roll succeeds once there is room."""
    with small_tmpfs("512k,nr_inodes=64") as mnt:
        config = TopicConfig.from_dict({"segment.bytes": str(16 * 1024)})
        log = load_log(mnt / "t-0", "t", 0, config, ManualClock(wall_ms=T0 + 1000), clean_shutdown=False)
        values = [os.urandom(2000) for _ in range(7)]
        for value in values:
            log.append_as_leader(make_batch(1, value=value))
        assert len(log.segments) == 1
        taken = []
        for i in range(1000):  # every inode
            try:
                (mnt / f"inode-{i}").touch()
            except OSError:
                break
            taken.append(mnt / f"inode-{i}")
        for path in taken[-2:]:  # room for two of the new segment's files only
            path.unlink()
        with pytest.raises(KafkaError) as info:
            log.append_as_leader(make_batch(1, value=b"n" * 2000))  # 16 KiB segments: this one rolls
        assert info.value.code is ErrorCode.KAFKA_STORAGE_ERROR
        assert len(log.segments) == 1 and log.log_end_offset == 7
        assert sorted(p.name for p in (mnt / "t-0").iterdir() if p.name.startswith(files.offset_prefix(7))) == []
        for path in taken[:10]:
            path.unlink()
        log.append_as_leader(make_batch(1, value=b"n" * 2000))
        assert [seg.base_offset for seg in log.segments] == [0, 7]
        assert _values(log) == [*values, b"n" * 2000]


def test_the_reserve_makes_an_atomic_write_succeed_with_no_room(mnt: Path) -> None:
    space = LogDirSpace(mnt, min_reserve_bytes=64 * 1024)
    target = mnt / "checkpoint"
    fill(mnt)
    with pytest.raises(OSError) as info:  # not a registered log dir: no reserve
        write_atomically(target, b"x" * 10_000)
    assert info.value.errno == errno.ENOSPC
    assert sorted(p.name for p in mnt.iterdir()) == ["ballast"]  # no .tmp left behind
    os.unlink(mnt / "ballast")
    disk_space.register(space)
    try:
        assert space.ensure_reserve() == 64 * 1024
        fill(mnt)
        write_atomically(target, b"x" * 10_000)
        write_atomically(target, b"y" * 12_000)  # again: the reserve was taken back as far as it could
        assert target.read_bytes() == b"y" * 12_000
        assert space.reserved_bytes < 64 * 1024
        assert not (mnt / "checkpoint.tmp").exists()
    finally:
        disk_space.unregister(space)


def test_the_metadata_file_is_rewritten_with_no_room(mnt: Path) -> None:
    space = LogDirSpace(mnt)
    disk_space.register(space)
    try:
        store = EmbeddedStore(mnt)
        image = store.open(BrokerInfo(0, "localhost", 9092))
        space.ensure_reserve()
        fill(mnt)
        from dataclasses import replace

        store.publish(replace(image, broker_configs={"log.retention.ms": "1000"}))
        assert EmbeddedStore(mnt).open(BrokerInfo(0, "localhost", 9092)).broker_configs == {"log.retention.ms": "1000"}
    finally:
        disk_space.unregister(space)


def test_the_condition_is_logged_once_and_its_end_once(mnt: Path, caplog: pytest.LogCaptureFixture) -> None:
    space = LogDirSpace(mnt, min_reserve_bytes=64 * 1024)
    space.ensure_reserve()
    fill(mnt)
    log = _open(mnt / "t-0")
    log.dir_space = space
    caplog.set_level(logging.INFO, logger="tidelog.disk_space")
    for _ in range(50):
        with pytest.raises(KafkaError):
            log.append_as_leader(make_batch(1, value=os.urandom(5000)))
    assert space.full and "is full" in (space.status() or "")
    space.check()  # still no room
    assert space.full
    os.unlink(mnt / "ballast")
    space.check()
    assert not space.failing and space.status() is None
    log.append_as_leader(make_batch(1))
    messages = [r.getMessage() for r in caplog.records]
    assert sum("is full" in m for m in messages) == 1
    assert sum("has room again" in m for m in messages) == 1


def test_a_log_manager_shuts_down_on_a_full_disk_and_loses_nothing(mnt: Path) -> None:
    clock = ManualClock(wall_ms=T0)
    m = LogManager([mnt / "logs"], clock, topic_config=lambda topic: CONFIG)
    m.lock_dirs()
    m.startup()
    log = m.get_or_create_log("t", 0)
    values, error = _append_until_full(log, 3000)
    assert error.code is ErrorCode.KAFKA_STORAGE_ERROR and [s.directory for s in m.full_dirs()] == [mnt / "logs"]
    fill(mnt)
    m.checkpoint()
    m.shutdown()  # raises nothing
    m2 = LogManager([mnt / "logs"], clock, topic_config=lambda topic: CONFIG)
    m2.lock_dirs()
    m2.startup()
    assert _values(m2.get_log("t", 0)) == values
    m2.release_dirs()


def test_a_shutdown_whose_writes_all_fail_logs_one_line_and_leaves_the_dir_to_recovery(
        mnt: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock(wall_ms=T0)
    m = LogManager([mnt / "logs"], clock, topic_config=lambda topic: CONFIG)  # no lock_dirs: no reserve
    m.startup()
    log = m.get_or_create_log("t", 0)
    values, _ = _append_until_full(log, 3000)
    fill(mnt)
    caplog.set_level(logging.WARNING, logger="tidelog.storage.log_manager")
    m.shutdown()  # the checkpoints and the producer snapshot fail: raises nothing
    assert [r.getMessage() for r in caplog.records if "at shutdown" in r.getMessage()] == [
        f"log dir {mnt / 'logs'}: writing the checkpoints failed at shutdown (No space left on device); "
        "the next start recovers it"]
    assert not (mnt / "logs" / files.CLEAN_SHUTDOWN_FILE).exists()
    m2 = LogManager([mnt / "logs"], clock, topic_config=lambda topic: CONFIG)
    m2.startup()
    assert not m2.had_clean_shutdown[mnt / "logs"]
    assert _values(m2.get_log("t", 0)) == values
