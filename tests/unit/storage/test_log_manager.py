"""LogManager: several log dirs, checkpoints, clean and unclean restarts, deferred deletion."""

from __future__ import annotations

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
