"""The replica manager in process: real logs in a tmp dir, a real metadata store, ManualClock time.

Readers get read results, offsets and figures through it (issue 24 point 6), never a log: leadership
and leader-epoch checks come first, LATEST is the last stable offset for read_committed, v0's
old-style offsets list the segments' starts, the figures match the files, followers' logs show in the
local figures but refuse leader reads, parked fetches wake on an append or time out on the clock.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.replica.node import ME, OTHER, PID, Node
from tests.unit.storage.conftest import T0
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import iter_batches
from tidelog.replica.fetch import READ_COMMITTED, READ_UNCOMMITTED, PartitionFetch
from tidelog.replica.local_logs import LogOffsets
from tidelog.replica.manager import HIGH_WATERMARK
from tidelog.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP


def code_of(call: Callable[[], object]) -> ErrorCode:
    with pytest.raises(KafkaError) as e:
        call()
    return e.value.code


# ------------------------------------------------------------------------------------ offsets


def test_leader_offsets_follow_appends_transactions_and_delete_records(node: Node) -> None:
    node.create("t")
    assert node.replicas.leader_offsets("t", 0) == LogOffsets(0, 0, 0, 0)
    node.produce("t", 3)
    assert node.replicas.leader_offsets("t", 0) == LogOffsets(0, 3, 3, 3)
    first = node.produce_transactional("t", 2, seq=0)
    node.produce("t", 1)
    # an open transaction holds the last stable offset at its first offset; the high watermark goes on
    assert node.replicas.leader_offsets("t", 0) == LogOffsets(0, 6, first, 6)
    node.replicas.write_txn_marker("t", 0, PID, 0, 0, commit=True)
    assert node.replicas.leader_offsets("t", 0) == LogOffsets(0, 7, 7, 7)
    assert node.replicas.delete_records("t", 0, 2) == 2
    assert node.replicas.leader_offsets("t", 0).log_start_offset == 2
    assert node.replicas.delete_records("t", 0, HIGH_WATERMARK) == 7
    assert node.replicas.leader_offsets("t", 0) == LogOffsets(7, 7, 7, 7)


def test_leader_reads_check_leadership_and_the_leader_epoch_first(node: Node) -> None:
    node.create("mine", leader_epoch=5)
    node.create("theirs", leader=OTHER, replicas=(OTHER, ME))
    r = node.replicas
    for read in (r.leader_offsets, r.leader_summary, r.leader_config, r.batches,
                 lambda t, p: r.offset_for_timestamp(t, p, EARLIEST_TIMESTAMP),
                 lambda t, p: r.legacy_offsets(t, p, LATEST_TIMESTAMP, 10)):
        assert code_of(lambda read=read: read("theirs", 0)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert code_of(lambda read=read: read("nope", 0)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert code_of(lambda read=read: read("mine", 1)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code_of(lambda: r.leader_offsets("mine", 0, current_leader_epoch=4)) == ErrorCode.FENCED_LEADER_EPOCH
    assert code_of(lambda: r.leader_offsets("mine", 0, current_leader_epoch=6)) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert code_of(lambda: r.offset_for_timestamp("mine", 0, LATEST_TIMESTAMP, 4)) == ErrorCode.FENCED_LEADER_EPOCH
    assert r.leader_offsets("mine", 0, current_leader_epoch=5) == LogOffsets(0, 0, 0, 0)


def test_a_broker_that_may_not_lead_refuses_leader_reads(tmp_path: Path) -> None:
    node = Node(tmp_path)
    allowed = [True]
    node.replicas.may_lead = lambda: allowed[0]
    node.create("t")
    node.produce("t", 2)
    allowed[0] = False  # its ZooKeeper session expired
    assert code_of(lambda: node.replicas.leader_offsets("t", 0)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert node.replicas.local_logs.offsets("t", 0) == LogOffsets(0, 2, 2, 2)  # the local figures stay
    node.logs.shutdown()


def test_offset_for_timestamp_on_the_leader(node: Node) -> None:
    node.create("t")
    node.produce("t", 2, ts=T0)  # offsets 0, 1 at T0, T0+1
    node.produce("t", 2, ts=T0 + 100)  # offsets 2, 3
    node.produce("t", 1, ts=T0 + 50)  # offset 4
    pending = node.produce_transactional("t", 1, seq=0)  # offset 5, open
    r = node.replicas
    assert r.offset_for_timestamp("t", 0, EARLIEST_TIMESTAMP) == (-1, 0)
    assert r.offset_for_timestamp("t", 0, LATEST_TIMESTAMP) == (-1, 6)
    assert r.offset_for_timestamp("t", 0, LATEST_TIMESTAMP, isolation_level=READ_COMMITTED) == (-1, pending)
    assert r.offset_for_timestamp("t", 0, T0 + 60) == (T0 + 100, 2)
    assert r.offset_for_timestamp("t", 0, T0 + 101) == (T0 + 101, 3)
    assert r.offset_for_timestamp("t", 0, T0 + 1000) is None
    assert r.offset_for_timestamp("t", 0, MAX_TIMESTAMP) == (T0 + 101, 3)


def test_legacy_offsets_list_the_segment_starts_newest_first(node: Node) -> None:
    node.create("t", segment_bytes="200")  # a batch or two per segment
    for i in range(6):
        node.produce("t", 1, ts=T0 + 10 * i, value=b"x" * 60)
    summary = node.replicas.leader_summary("t", 0)
    assert summary.segment_count > 2
    bases = sorted((int(f.name.split(".")[0]) for f in (node.log_dir / "t-0").glob("*.log")), reverse=True)
    listed = node.replicas.legacy_offsets("t", 0, LATEST_TIMESTAMP, 100)
    assert listed == [6, *bases]
    assert node.replicas.legacy_offsets("t", 0, LATEST_TIMESTAMP, 2) == listed[:2]
    assert node.replicas.legacy_offsets("t", 0, LATEST_TIMESTAMP, 0) == [6]  # at least one
    assert node.replicas.legacy_offsets("t", 0, EARLIEST_TIMESTAMP, 5) == [0]
    assert node.replicas.legacy_offsets("t", 0, T0 + 25, 5) == [3]
    assert node.replicas.legacy_offsets("t", 0, T0 + 10_000, 5) == [6]  # nothing that late: the high watermark
    node.replicas.delete_records("t", 0, 3)  # inside a segment: its start shows as the log start offset
    listed = node.replicas.legacy_offsets("t", 0, LATEST_TIMESTAMP, 100)
    assert min(listed) == 3 and listed == sorted(set(listed), reverse=True)


# ------------------------------------------------------------------------------------ figures


def test_the_leader_summary_matches_the_files(node: Node) -> None:
    node.create("t", segment_bytes="300")
    for _ in range(5):
        node.produce("t", 2, value=b"y" * 50)
    summary = node.replicas.leader_summary("t", 0)
    files = list((node.log_dir / "t-0").glob("*.log"))
    assert (summary.topic, summary.partition) == ("t", 0)
    assert summary.segment_count == len(files) > 1
    assert summary.size_bytes == sum(f.stat().st_size for f in files) > 0
    assert summary.offsets == LogOffsets(0, 10, 10, 10)


def test_local_figures_cover_followers_and_leave_deleted_topics(node: Node) -> None:
    node.create("led", 2)
    node.create("followed", leader=OTHER, replicas=(OTHER, ME), min_insync_replicas="2")
    node.create("elsewhere", leader=OTHER, replicas=(OTHER,))
    node.produce("led", 3, partition=1)
    local = node.replicas.local_logs
    assert [(s.topic, s.partition) for s in local.summaries()] == [("followed", 0), ("led", 0), ("led", 1)]
    assert local.offsets("led", 1) == LogOffsets(0, 3, 3, 3)
    assert local.offsets("followed", 0) == LogOffsets(0, 0, 0, 0)
    assert local.offsets("elsewhere", 0) is None
    assert local.min_insync_replicas("followed", 0) == 2
    assert local.min_insync_replicas("led", 0) == 1
    assert local.min_insync_replicas("elsewhere", 0) is None
    node.delete("led")
    assert [(s.topic, s.partition) for s in local.summaries()] == [("followed", 0)]
    assert local.offsets("led", 1) is None


def test_log_dirs_describe_their_partitions_and_space(node: Node) -> None:
    node.create("a", 2)
    node.create("b")
    node.produce("a", 4, partition=1)
    (described,) = node.replicas.local_logs.describe_dirs()
    assert described.path == os.path.abspath(node.log_dir) and described.error is None
    size = sum(f.stat().st_size for f in (node.log_dir / "a-1").glob("*.log"))
    assert described.partition_sizes == {"a": {0: 0, 1: size}, "b": {0: 0}}
    assert described.total_bytes >= described.usable_bytes > 0
    (only,) = node.replicas.local_logs.describe_dirs([("a", 1), ("nope", 0)])
    assert only.partition_sizes == {"a": {1: size}}
    (state,) = node.replicas.local_logs.dir_states()
    assert state.path == str(node.log_dir) and not state.failing and state.free_bytes > 0


def test_config_changes_reach_the_leader_config(node: Node) -> None:
    node.create("t", max_message_bytes="5000")
    assert node.replicas.leader_config("t", 0).max_message_bytes == 5000
    node.alter("t", max_message_bytes="777")
    assert node.replicas.leader_config("t", 0).max_message_bytes == 777
    with pytest.raises(KafkaError) as e:  # and the log applies it
        node.produce("t", 1, value=b"z" * 1000)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE


# --------------------------------------------------------------------------------------- read


def test_batches_from_an_offset_for_a_loading_coordinator(node: Node) -> None:
    node.create("t")
    for i in range(4):
        node.produce("t", 2, ts=T0 + i)
    assert [v.base_offset for v in node.replicas.batches("t", 0)] == [0, 2, 4, 6]
    assert [v.base_offset for v in node.replicas.batches("t", 0, 5)] == [4, 6]  # the batch holding 5 on
    node.replicas.delete_records("t", 0, 4)
    assert [v.base_offset for v in node.replicas.batches("t", 0, 0)] == [4, 6]  # never below the log start
    assert node.replicas.is_committed("t", 0, 8)  # a single node commits every append


def test_reads_stop_at_the_last_stable_offset_for_read_committed(node: Node) -> None:
    node.create("t")
    node.produce("t", 2)
    node.produce_transactional("t", 2, seq=0)

    def read(isolation: int) -> list[int]:
        (result,) = node.replicas.read_partitions(
            [PartitionFetch("t", uuid.UUID(int=0), 0, 0, 1 << 20)], None, isolation)
        assert result.error == ErrorCode.NONE
        return [b.base_offset for b in iter_batches(result.records.read())]

    assert read(READ_UNCOMMITTED) == [0, 2]
    assert read(READ_COMMITTED) == [0]
    node.replicas.write_txn_marker("t", 0, PID, 0, 0, commit=False)
    assert read(READ_COMMITTED) == [0, 2, 4]
    (result,) = node.replicas.read_partitions([PartitionFetch("t", uuid.UUID(int=0), 0, 0, 1 << 20)], None,
                                              READ_COMMITTED)
    assert [(a.producer_id, a.first_offset) for a in result.aborted] == [(PID, 2)]


def test_a_read_out_of_range_names_the_offsets(node: Node) -> None:
    node.create("t")
    node.produce("t", 3)
    (result,) = node.replicas.read_partitions([PartitionFetch("t", uuid.UUID(int=0), 0, 9, 100)], None, 0)
    assert result.error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (result.high_watermark, result.log_start_offset) == (3, 0)


def test_a_parked_fetch_wakes_on_an_append_or_times_out_on_the_clock(node: Node) -> None:
    node.create("t")
    fetch = [PartitionFetch("t", uuid.UUID(int=0), 0, 0, 1 << 20)]

    async def main() -> None:
        waiting = asyncio.ensure_future(node.replicas.wait_for_data(fetch, 1, 5000, READ_UNCOMMITTED))
        await asyncio.sleep(0)
        assert not waiting.done()
        node.produce("t", 1)
        assert await asyncio.wait_for(waiting, 10) is False  # woken, not timed out

        timing_out = asyncio.ensure_future(node.replicas.wait_for_data(
            [PartitionFetch("t", uuid.UUID(int=0), 0, 1, 1 << 20)], 1, 5000, READ_UNCOMMITTED))
        await asyncio.sleep(0)
        node.advance(4999)
        await asyncio.sleep(0)
        assert not timing_out.done()
        node.advance(1)
        assert await asyncio.wait_for(timing_out, 10) is True

    asyncio.run(main())


def test_a_parked_fetch_answers_when_its_topic_is_deleted(node: Node) -> None:
    node.create("t")

    async def main() -> None:
        waiting = asyncio.ensure_future(node.replicas.wait_for_data(
            [PartitionFetch("t", uuid.UUID(int=0), 0, 0, 1 << 20)], 1, 60_000, READ_UNCOMMITTED))
        await asyncio.sleep(0)
        node.delete("t")
        assert await asyncio.wait_for(waiting, 10) is False

    asyncio.run(main())
