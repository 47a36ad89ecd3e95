"""Offset arithmetic of the source, without Spark: canonical JSON, the rate limit, range splitting."""

from __future__ import annotations

import itertools
import json

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from tidelog.spark.offsets import (
    OffsetRange,
    TopicPartition,
    from_json_offsets,
    rate_limit,
    split_ranges,
    to_json_offsets,
)

pytestmark = pytest.mark.spark

A0, A1, A2, B0 = (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0))


def test_json_offsets_are_canonical_whatever_the_insertion_order() -> None:
    one = {TopicPartition("b", 0): 5, TopicPartition("a", 10): 1, TopicPartition("a", 2): 7}
    two = dict(reversed(list(one.items())))
    assert json.dumps(to_json_offsets(one)) == json.dumps(to_json_offsets(two))
    assert json.dumps(to_json_offsets(one)) == '{"a": {"2": 7, "10": 1}, "b": {"0": 5}}'
    assert from_json_offsets(json.loads(json.dumps(to_json_offsets(one)))) == one


def test_rate_limit_splits_proportionally_and_never_starves_small_partitions() -> None:
    start = {A0: 0, A1: 0, A2: 0}
    latest = {A0: 1000, A1: 500, A2: 1}
    end = rate_limit(100, start, latest, {})
    # shares: 100*1000/1501 = 66.6 -> 66, 100*500/1501 = 33.3 -> 33, 100*1/1501 < 1 -> ceil = 1
    assert end == {A0: 66, A1: 33, A2: 1}


def test_rate_limit_never_passes_latest_and_starts_new_partitions_at_their_earliest() -> None:
    end = rate_limit(1000, {A0: 10}, {A0: 20, B0: 50}, {B0: 40})
    assert end == {A0: 20, B0: 50}
    end = rate_limit(10, {A0: 0}, {A0: 100, B0: 140}, {B0: 40})
    assert end == {A0: 5, B0: 45}


def test_rate_limit_with_nothing_new_returns_latest() -> None:
    assert rate_limit(10, {A0: 5}, {A0: 5}, {}) == {A0: 5}


def test_split_ranges_drops_empty_and_honours_min_partitions() -> None:
    ranges = [OffsetRange(A0, 0, 900), OffsetRange(A1, 0, 100), OffsetRange(A2, 5, 5)]
    assert split_ranges(ranges) == ranges[:2]
    pieces = split_ranges(ranges, min_partitions=10)
    assert len(pieces) == 10
    a0 = [p for p in pieces if p.topic_partition == A0]
    assert a0[0].from_offset == 0 and a0[-1].until_offset == 900
    assert all(x.until_offset == y.from_offset for x, y in itertools.pairwise(a0))
    assert sum(p.size for p in pieces) == 1000


def test_split_ranges_caps_records_per_partition() -> None:
    pieces = split_ranges([OffsetRange(A0, 0, 1001)], max_records_per_partition=250)
    assert [p.size for p in pieces] == [200, 200, 200, 200, 201]
    assert pieces[0].from_offset == 0 and pieces[-1].until_offset == 1001
