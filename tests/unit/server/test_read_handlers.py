"""ListOffsets and DescribeLogDirs in process, over the replica manager and real logs (tests/unit/replica/node.py).

These handlers read offsets and figures through the replica manager (issue 24 point 6): v0's
old-style offsets (the high watermark and the segments' base offsets, newest first), v1+'s timestamp
and offset with the leader epoch from v4, LATEST as the last stable offset for read_committed, errors
per partition; DescribeLogDirs' partition sizes per log dir.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.replica.node import OTHER, Node
from tests.unit.storage.conftest import T0
from tidelog.errors import ErrorCode
from tidelog.protocol import encode_request
from tidelog.protocol.messages import DescribeLogDirsRequest, ListOffsetsRequest
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.handlers.cluster_info import ClusterInfoHandlers
from tidelog.server.handlers.list_offsets import ListOffsetsHandler

Topic = ListOffsetsRequest.ListOffsetsTopic
Partition = ListOffsetsRequest.ListOffsetsPartition


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.logs.shutdown()


def dispatch(node: Node, request, version: int):
    registry = HandlerRegistry()
    registry.add(ListOffsetsHandler(node.replicas), ClusterInfoHandlers(node.store, node.replicas.local_logs))
    result = registry.dispatch(encode_request(request, version, 1, "test"),
                               lambda header: RequestContext(header, "conn", "127.0.0.1")).result
    assert not hasattr(result, "__await__")
    return result


def list_offsets(node: Node, version: int, *partitions: tuple[str, int, int], isolation: int = 0,
                 max_num_offsets: int = 1, leader_epoch: int = -1) -> list:
    topics: dict[str, list] = {}
    for topic, partition, timestamp in partitions:
        topics.setdefault(topic, []).append(Partition(partition_index=partition, timestamp=timestamp,
                                                      max_num_offsets=max_num_offsets,
                                                      current_leader_epoch=leader_epoch))
    request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation,
                                 topics=[Topic(name=t, partitions=ps) for t, ps in topics.items()])
    response = dispatch(node, request, version)
    return [p for t in response.topics for p in t.partitions]


def test_v0_lists_the_high_watermark_and_the_segment_starts(node: Node) -> None:
    node.create("t", segment_bytes="200")
    for i in range(5):
        node.produce("t", 1, ts=T0 + 10 * i, value=b"x" * 60)
    bases = sorted((int(f.name.split(".")[0]) for f in (node.log_dir / "t-0").glob("*.log")), reverse=True)
    assert len(bases) > 2
    (latest,) = list_offsets(node, 0, ("t", 0, -1), max_num_offsets=100)
    assert (latest.error_code, latest.old_style_offsets) == (0, [5, *bases])
    (two,) = list_offsets(node, 0, ("t", 0, -1), max_num_offsets=2)
    assert two.old_style_offsets == [5, bases[0]]
    (earliest,) = list_offsets(node, 0, ("t", 0, -2), max_num_offsets=9)
    assert earliest.old_style_offsets == [0]
    (at_time,) = list_offsets(node, 0, ("t", 0, T0 + 15))
    assert at_time.old_style_offsets == [2]
    (too_late,) = list_offsets(node, 0, ("t", 0, T0 + 10_000))
    assert too_late.old_style_offsets == [5]


def test_v1_and_later_answer_timestamp_offset_and_the_leader_epoch(node: Node) -> None:
    node.create("t", leader_epoch=3)
    node.produce("t", 2, ts=T0)
    first_open = node.produce_transactional("t", 1, seq=0)
    node.produce("t", 1, ts=T0 + 500)
    by_time, latest, latest_committed = (
        list_offsets(node, 4, ("t", 0, T0 + 1))[0],
        list_offsets(node, 4, ("t", 0, -1))[0],
        list_offsets(node, 4, ("t", 0, -1), isolation=1)[0],
    )
    assert (by_time.timestamp, by_time.offset, by_time.leader_epoch) == (T0 + 1, 1, 3)
    assert (latest.timestamp, latest.offset) == (-1, 4)
    assert (latest_committed.timestamp, latest_committed.offset) == (-1, first_open)
    (old_epoch,) = list_offsets(node, 1, ("t", 0, T0 + 1))
    assert (old_epoch.offset, old_epoch.leader_epoch) == (1, -1)  # v1-v3 carry no leader epoch
    (max_ts,) = list_offsets(node, 7, ("t", 0, -3))
    assert (max_ts.timestamp, max_ts.offset) == (T0 + 500, 3)
    (none,) = list_offsets(node, 4, ("t", 0, T0 + 10_000))
    assert (none.error_code, none.timestamp, none.offset, none.leader_epoch) == (0, -1, -1, -1)


def test_list_offsets_errors_are_per_partition(node: Node) -> None:
    node.create("mine", leader_epoch=2)
    node.create("theirs", leader=OTHER, replicas=(OTHER,))
    node.produce("mine", 1)
    answers = list_offsets(node, 4, ("mine", 0, -1), ("mine", 5, -1), ("theirs", 0, -1), ("nope", 0, -1))
    assert [ErrorCode(p.error_code) for p in answers] == [
        ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    (fenced,) = list_offsets(node, 4, ("mine", 0, -1), leader_epoch=1)
    assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH
    (too_new,) = list_offsets(node, 1, ("mine", 0, -3))  # MAX_TIMESTAMP needs v7
    assert too_new.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_describe_log_dirs_lists_partition_sizes(node: Node) -> None:
    node.create("a", 2)
    node.create("b", leader=OTHER, replicas=(OTHER, 1))  # a follower's log is described too
    node.produce("a", 3, partition=0)
    size = sum(f.stat().st_size for f in (node.log_dir / "a-0").glob("*.log"))
    (result,) = dispatch(node, DescribeLogDirsRequest(topics=None), 4).results
    assert (result.error_code, result.log_dir) == (0, os.path.abspath(node.log_dir))
    assert [(t.name, [(p.partition_index, p.partition_size) for p in t.partitions]) for t in result.topics] == [
        ("a", [(0, size), (1, 0)]), ("b", [(0, 0)])]
    assert result.total_bytes >= result.usable_bytes > 0
    wanted = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic="a", partitions=[1])])
    (only,) = dispatch(node, wanted, 4).results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in only.topics] == [("a", [1])]
