"""The leader-epoch cache: assignment rules, OffsetForLeaderEpoch answers, truncation, the checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.storage.conftest import make_batch
from tidelog.config import TopicConfig
from tidelog.storage.checkpoints import CheckpointError
from tidelog.storage.leader_epoch import LEADER_EPOCH_FILE, LeaderEpochCache
from tidelog.storage.loader import load_log


def test_assign_keeps_epochs_and_start_offsets_strictly_increasing(tmp_path: Path) -> None:
    cache = LeaderEpochCache.load(tmp_path)
    cache.assign(0, 0)
    cache.assign(0, 5)  # the latest epoch again: nothing
    cache.assign(2, 10)
    cache.assign(3, 10)  # same start offset: replaces epoch 2
    assert cache.entries == [(0, 0), (3, 10)]
    cache.assign(1, 4)  # an older epoch (a follower copying a new leader's log): newer entries go
    assert cache.entries == [(0, 0), (1, 4)]
    assert LeaderEpochCache.load(tmp_path).entries == [(0, 0), (1, 4)]
    assert (tmp_path / LEADER_EPOCH_FILE).read_text() == "0\n2\n0 0\n1 4\n"


def test_end_offset_for_answers_as_offset_for_leader_epoch() -> None:
    cache = LeaderEpochCache(None, [(1, 0), (3, 10), (4, 25)])
    assert cache.end_offset_for(4, 30) == (4, 30)  # the latest: the log end
    assert cache.end_offset_for(3, 30) == (3, 25)
    assert cache.end_offset_for(2, 30) == (1, 10)  # unknown epoch: the largest below, ending where 3 began
    assert cache.end_offset_for(0, 30) == (0, 0)  # older than everything: the first start offset
    assert cache.end_offset_for(5, 30) == (-1, -1)
    assert LeaderEpochCache(None).end_offset_for(0, 0) == (-1, -1)


def test_truncation_from_both_ends() -> None:
    cache = LeaderEpochCache(None, [(1, 0), (3, 10), (4, 25)])
    cache.truncate_from_end(25)
    assert cache.entries == [(1, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
    cache.clear()
    assert cache.latest_epoch == -1


def test_a_malformed_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / LEADER_EPOCH_FILE).write_text("0\n2\n1 0\n")
    with pytest.raises(CheckpointError):
        LeaderEpochCache.load(tmp_path)


def test_the_log_keeps_its_cache_through_appends_truncation_and_reopening(open_log, tmp_path, clock) -> None:
    log = open_log()
    log.append_as_leader(make_batch(2), leader_epoch=0)
    log.append_as_leader(make_batch(2), leader_epoch=0)
    log.append_as_leader(make_batch(3), leader_epoch=2)
    assert log.leader_epochs.entries == [(0, 0), (2, 4)]
    follower = load_log(tmp_path / "copy-0", "copy", 0, TopicConfig(), clock)
    for view in log.batches():
        follower.append_as_follower(bytearray(view.buffer))
    assert follower.leader_epochs.entries == [(0, 0), (2, 4)]
    follower.truncate_to(4)
    assert follower.leader_epochs.entries == [(0, 0)]
    follower.leader_epochs.assign(5, 4)  # became leader at its log end, wrote nothing
    follower.truncate_to(4)  # then follower again: the empty epoch goes too
    assert follower.leader_epochs.entries == [(0, 0)]
    log.close()
    (log.directory / LEADER_EPOCH_FILE).unlink()  # a log from before the file existed: rebuilt from the batches
    assert open_log().leader_epochs.entries == [(0, 0), (2, 4)]
