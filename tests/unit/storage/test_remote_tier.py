"""The seam for a remote tier (KIP-405): offsets below the local log start are the remote tier's.

No remote tier exists; these tests attach one made of a real log's local segments (the offsets a
tiered log would have uploaded and deleted locally) to a log whose local segments start later, and
check the partition log asks the right tier. Without one, both start offsets are the log start offset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.storage.conftest import T0, OpenLog, make_batch
from tidelog.config import TopicConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import iter_batches
from tidelog.storage.loader import load_log
from tidelog.storage.local_log import LocalLog
from tidelog.storage.log import PartitionLog
from tidelog.storage.segment import FileSlice
from tidelog.testing import ManualClock

UPLOADED = 6  # offsets [0, 6) live in the remote tier only


class SegmentsTier:
    """A RemoteTier over segments in another directory (as a cache of downloaded segments would be)."""

    def __init__(self, local: LocalLog, end_offset: int) -> None:
        self.local = local
        self.end_offset = end_offset
        self.reads: list[int] = []

    def read(self, offset: int, max_bytes: int, limit: int, min_one_batch: bool) -> FileSlice | None:
        self.reads.append(offset)
        return self.local.read(offset, max_bytes, min(limit, self.end_offset), min_one_batch)

    def find_offset_by_timestamp(self, timestamp: int, log_start_offset: int) -> tuple[int, int] | None:
        return self.local.find_offset_by_timestamp(timestamp, log_start_offset, self.end_offset)


def offsets_in(records: FileSlice | None) -> list[int]:
    return [] if records is None else [b.base_offset for b in iter_batches(records.read())]


@pytest.fixture
def tiered(tmp_path: Path, clock: ManualClock) -> tuple[PartitionLog, SegmentsTier]:
    uploaded = load_log(tmp_path / "remote" / "t-0", "t", 0, TopicConfig(), clock)
    for i in range(0, UPLOADED, 2):
        uploaded.append_as_leader(make_batch(2, ts=T0 + i))
    tier = SegmentsTier(uploaded.local, UPLOADED)
    plog = load_log(tmp_path / "t-0", "t", 0, TopicConfig(), clock)
    plog.truncate_fully_and_start_at(UPLOADED)  # the local segments begin where the upload ended
    for i in range(UPLOADED, UPLOADED + 4, 2):
        plog.append_as_leader(make_batch(2, ts=T0 + 100 + i))
    plog.remote = tier
    plog.log_start_offset = 0  # as a tiered log's checkpoint would say
    return plog, tier


def test_without_a_remote_tier_every_offset_is_local(open_log: OpenLog) -> None:
    plog = open_log()
    for _ in range(3):
        plog.append_as_leader(make_batch(1))
    plog.delete_records_before(1)
    assert plog.remote is None
    assert plog.local_log_start_offset == plog.log_start_offset == 1
    with pytest.raises(KafkaError) as e:
        plog.read(0, 1000)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert offsets_in(plog.read(1, 1000).records) == [1, 2]


def test_reads_below_the_local_log_start_go_to_the_remote_tier(tiered: tuple[PartitionLog, SegmentsTier]) -> None:
    plog, tier = tiered
    assert (plog.log_start_offset, plog.local_log_start_offset, plog.log_end_offset) == (0, UPLOADED, UPLOADED + 4)
    assert offsets_in(plog.read(2, 1 << 20).records) == [2, 4]
    assert tier.reads == [2]
    assert offsets_in(plog.read(UPLOADED, 1 << 20).records) == [UPLOADED, UPLOADED + 2]
    assert tier.reads == [2]  # the local tier answered
    assert plog.read(0, 1 << 20).log_start_offset == 0


def test_a_timestamp_search_asks_the_remote_tier_first(tiered: tuple[PartitionLog, SegmentsTier]) -> None:
    plog, _ = tiered
    assert plog.offset_for_timestamp(T0 + 3) == (T0 + 3, 3)  # uploaded
    assert plog.offset_for_timestamp(T0 + 50) == (T0 + 100 + UPLOADED, UPLOADED)  # local
    assert plog.offset_for_timestamp(T0 + 10_000) is None
