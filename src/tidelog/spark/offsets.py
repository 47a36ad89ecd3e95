"""Source offsets: the canonical JSON form, offset ranges, the rate limit and range splitting.

An offset is what Spark journals in ``<checkpoint>/offsets/<batchId>``: the JSON of the dict that
``initialOffset()``/``latestOffset()`` return. It uses the layout of Spark's Kafka source, with end-exclusive
"next offset to read" values::

    {"clicks": {"0": 1200, "1": 1187}, "orders": {"0": 55}}

Rules (Spark compares offsets as ``json.dumps`` strings, so two equal positions must print the same):

* topics sorted by name, partitions sorted numerically, partition keys are decimal strings;
* values are plain ``int`` (never ``bool``, ``float`` or negative sentinels: those are resolved first);
* :func:`to_json_offsets` is the only way a dict is built; :func:`from_json_offsets` accepts what JSON
  round-trips produce (string keys, any key order).

Everything here is pure (no clients, no Spark) and immutable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple

#: Offsets as the Kafka source names them in its JSON options: -2 = earliest, -1 = latest.
EARLIEST = -2
LATEST = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


PartitionOffsets = dict[TopicPartition, int]


class OffsetRange(NamedTuple):
    """Offsets ``[from_offset, until_offset)`` of one topic-partition."""

    topic_partition: TopicPartition
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def to_json_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The canonical offset dict: topics sorted, partitions sorted numerically, string keys."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json_offsets(obj: Mapping[str, Mapping[str, int]] | None) -> PartitionOffsets:
    """Parse an offset dict (as journaled, or as returned by ``json.loads``)."""
    out: PartitionOffsets = {}
    for topic, partitions in (obj or {}).items():
        for partition, offset in partitions.items():
            out[TopicPartition(topic, int(partition))] = int(offset)
    return out


def format_partitions(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(str(tp) for tp in sorted(tps)) + "]"


def rate_limit(limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               new_partition_start: Mapping[TopicPartition, int]) -> PartitionOffsets:
    """End offsets for at most about ``limit`` records, split across partitions by their backlog.

    As Spark's Kafka source: each partition gets ``limit * backlog / total``, rounded down, except that a
    share below one record is rounded up so small partitions are never starved; never past ``latest``.
    Partitions absent from ``start`` begin at ``new_partition_start`` (their earliest offset).
    """
    sizes: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp, new_partition_start.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        begin = start.get(tp, new_partition_start.get(tp, 0))
        share = limit * (size / total)
        count = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + count)
    return out


def backlog(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """Records between ``start`` and ``latest`` (a partition missing from ``start`` counts from 0)."""
    return sum(end - start.get(tp, 0) for tp, end in latest.items())


def split_ranges(ranges: Iterable[OffsetRange], *, min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Drop empty ranges, then split large ones into more Spark partitions.

    ``min_partitions``: as Spark's ``KafkaOffsetRangeCalculator``; when there are fewer non-empty ranges
    than asked for, each range gets ``round(size / total * min_partitions)`` parts (at least one), the
    one-part ranges being left out of the proportion. ``max_records_per_partition``: afterwards, any range
    still larger is cut into ``ceil(size / max)`` equal parts. Parts keep offset order.
    """
    non_empty = [r for r in ranges if r.size > 0]
    out = non_empty
    if min_partitions is not None and len(non_empty) < min_partitions:
        total = sum(r.size for r in non_empty)

        def parts_for(size: int, of_total: int, wanted: int) -> int:
            return max(round(size / of_total * wanted), 1)

        unsplit = [r for r in non_empty if parts_for(r.size, total, min_partitions) == 1]
        split_total = total - sum(r.size for r in unsplit)
        split_wanted = max(min_partitions - len(unsplit), 1)
        unsplit_set = {r.topic_partition for r in unsplit}
        out = []
        for r in non_empty:
            parts = 1 if r.topic_partition in unsplit_set else parts_for(r.size, split_total, split_wanted)
            out.extend(_split_evenly(r, parts))
    if max_records_per_partition is not None:
        out = [piece for r in out for piece in _split_evenly(r, math.ceil(r.size / max_records_per_partition))]
    return [r for r in out if r.size > 0]


def _split_evenly(r: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1:
        return [r]
    pieces = []
    remaining = r.size
    begin = r.from_offset
    for i in range(parts):
        count = remaining // (parts - i)
        remaining -= count
        pieces.append(OffsetRange(r.topic_partition, begin, begin + count))
        begin += count
    return pieces


__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetRange",
    "PartitionOffsets",
    "TopicPartition",
    "backlog",
    "format_partitions",
    "from_json_offsets",
    "rate_limit",
    "split_ranges",
    "to_json_offsets",
]
