"""The high-watermark checkpoint (replication-offset-checkpoint): Kafka's file format, and a restarted
broker's high watermarks starting from it (capped at the log end) instead of at the log end."""

from __future__ import annotations

from pathlib import Path

from tests.unit.storage.conftest import T0, make_batch
from tidelog.config import TopicConfig
from tidelog.replica.hw_checkpoint import REPLICATION_OFFSET_CHECKPOINT, HighWatermarkCheckpoints
from tidelog.storage.log_manager import LogManager
from tidelog.testing import ManualClock


def _manager(dirs: list[Path]) -> LogManager:
    config = TopicConfig()
    m = LogManager(dirs, ManualClock(wall_ms=T0), topic_config=lambda topic: config)
    m.startup()
    return m


def _fill(m: LogManager, topic: str, partition: int, records: int) -> None:
    plog = m.get_or_create_log(topic, partition)
    for _ in range(records):
        plog.append_as_leader(make_batch(1))


def test_the_file_has_kafkas_format_per_log_dir(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    m = _manager(dirs)
    _fill(m, "t", 0, 5)
    _fill(m, "t", 1, 3)
    _fill(m, "u v", 0, 2)  # not a legal topic name, but the format splits from the right
    m.get_log("t", 0).update_high_watermark(4)
    checkpoints = HighWatermarkCheckpoints(m)
    checkpoints.write(checkpoints.snapshot())
    files = {d: (d / REPLICATION_OFFSET_CHECKPOINT).read_text().splitlines() for d in dirs}
    lines = files[dirs[0]][2:] + files[dirs[1]][2:]
    assert sorted(lines) == ["t 0 4", "t 1 3", "u v 0 2"]
    for d in dirs:
        assert files[d][0] == "0" and int(files[d][1]) == len(files[d]) - 2
    m.shutdown()


def test_a_restart_starts_from_the_checkpoint_capped_at_the_log_end(tmp_path: Path) -> None:
    m = _manager([tmp_path])
    _fill(m, "t", 0, 10)
    _fill(m, "t", 1, 4)
    _fill(m, "t", 2, 3)
    m.get_log("t", 0).update_high_watermark(6)
    checkpoints = HighWatermarkCheckpoints(m)
    snapshot = checkpoints.snapshot()
    snapshot[tmp_path][("t", 1)] = 99  # above the log end (e.g. a log truncated after the checkpoint)
    del snapshot[tmp_path][("t", 2)]  # created after the last checkpoint
    checkpoints.write(snapshot)
    m.shutdown()

    again = _manager([tmp_path])
    assert [again.get_log("t", p).high_watermark for p in range(3)] == [10, 4, 3]  # loading: the log end
    assert HighWatermarkCheckpoints(again).restore() == 2
    assert [again.get_log("t", p).high_watermark for p in range(3)] == [6, 4, 0]
    again.shutdown()


def test_without_a_file_or_with_a_broken_one_the_high_watermark_stays_at_the_log_end(tmp_path: Path) -> None:
    m = _manager([tmp_path])
    _fill(m, "t", 0, 5)
    m.shutdown()
    again = _manager([tmp_path])
    assert HighWatermarkCheckpoints(again).restore() == 0
    assert again.get_log("t", 0).high_watermark == 5
    again.shutdown()
    (tmp_path / REPLICATION_OFFSET_CHECKPOINT).write_text("0\n3\nt 0 1\n")  # says 3 entries, has 1
    again = _manager([tmp_path])
    assert HighWatermarkCheckpoints(again).restore() == 0
    assert again.get_log("t", 0).high_watermark == 5
    again.shutdown()
