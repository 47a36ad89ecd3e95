"""Committed offsets: the store that replaying ``OffsetCommit`` records builds, and the operations that
produce those records (commit, delete, expire).

Rules (Kafka's ``OffsetMetadataManager``):

1. The store changes only in :meth:`OffsetStore.replay`: a value sets ``(group, topic, partition)``,
   a tombstone removes it. Operations return records; the runtime appends, then replays them.
2. A commit whose metadata is longer than ``offset.metadata.max.bytes`` (counted in UTF-16 units, as
   Java's ``String.length()``) fails for that partition with OFFSET_METADATA_TOO_LARGE; the other
   partitions of the request are still committed.
3. A commit carrying ``retention_time_ms`` (OffsetCommit v2-v4, -1 = broker default) gets an explicit
   expire timestamp ``now + retention``; it expires at that time whatever the group does.
4. Otherwise an offset expires ``offsets.retention.minutes`` after the time the group says
   (:meth:`~tidelog.coordinator.group.state.Group.offsets_expire_from`): the commit time for simple
   groups and for topics a Stable consumer group no longer subscribes to, the time an Empty group
   became empty (Kafka 2.1+, KIP-211), never while a group with members still subscribes to the topic.
   Expiry writes tombstones; a group left with no offsets and no members is deleted too.

Concurrency: loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tidelog.coordinator.group.group import Group
from tidelog.coordinator.group.records import (
    CoordinatorRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    offset_commit_record,
    offset_tombstone,
)

INVALID_OFFSET = -1
NO_METADATA = ""


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int  # -1 = none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1  # -1 = none (rule 3)
    record_offset: int = -1  # where the record sits in __consumer_offsets

    @classmethod
    def from_value(cls, value: OffsetCommitValue, record_offset: int) -> OffsetAndMetadata:
        return cls(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
                   value.expire_timestamp, record_offset)

    def is_expired(self, now_ms: int, base_ms: int, retention_ms: int) -> bool:
        if self.expire_timestamp_ms >= 0:
            return now_ms >= self.expire_timestamp_ms
        return now_ms - base_ms >= retention_ms


def java_length(s: str) -> int:
    """``String.length()`` of Java: UTF-16 code units."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


@dataclass(frozen=True, slots=True)
class PartitionCommit:
    """One partition of an OffsetCommit request, as the coordinator needs it."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    #: OffsetCommit v1 lets the client set the commit time (-1: the broker's clock).
    commit_timestamp: int = -1


class OffsetStore:
    """Committed offsets by group, topic and partition. Loop-only, not thread-safe."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}

    # ---------------------------------------------------------------------------------- reads

    def get(self, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._offsets.get(group, {}).get(topic, {}).get(partition)

    def group_offsets(self, group: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        return self._offsets.get(group, {})

    def has_offsets(self, group: str) -> bool:
        return bool(self._offsets.get(group))

    def groups(self) -> list[str]:
        return list(self._offsets)

    def __len__(self) -> int:
        return sum(len(parts) for topics in self._offsets.values() for parts in topics.values())

    def items(self, group: str) -> Iterator[tuple[str, int, OffsetAndMetadata]]:
        for topic, parts in self._offsets.get(group, {}).items():
            for partition, om in parts.items():
                yield topic, partition, om

    # --------------------------------------------------------------------------------- replay

    def replay(self, record_offset: int, key: OffsetCommitKey, value: OffsetCommitValue | None) -> None:
        """Rule 1."""
        if value is not None:
            topics = self._offsets.setdefault(key.group, {})
            topics.setdefault(key.topic, {})[key.partition] = OffsetAndMetadata.from_value(value, record_offset)
            return
        topics = self._offsets.get(key.group)
        if topics is None:
            return
        parts = topics.get(key.topic)
        if parts is not None:
            parts.pop(key.partition, None)
            if not parts:
                del topics[key.topic]
        if not topics:
            del self._offsets[key.group]

    # ----------------------------------------------------------------------------- operations

    @staticmethod
    def commit_records(group: str, commits: Iterable[PartitionCommit], now_ms: int, retention_time_ms: int,
                       metadata_max_bytes: int) -> tuple[list[CoordinatorRecord], dict[tuple[str, int], bool]]:
        """Records for a commit, and per partition whether it was accepted (rule 2 rejects)."""
        expire = now_ms + retention_time_ms if retention_time_ms >= 0 else -1
        records: list[CoordinatorRecord] = []
        accepted: dict[tuple[str, int], bool] = {}
        for c in commits:
            metadata = c.metadata if c.metadata is not None else NO_METADATA
            if c.metadata is not None and java_length(c.metadata) > metadata_max_bytes:
                accepted[(c.topic, c.partition)] = False
                continue
            accepted[(c.topic, c.partition)] = True
            committed_at = c.commit_timestamp if c.commit_timestamp >= 0 else now_ms
            value = OffsetCommitValue(c.offset, metadata, committed_at, c.leader_epoch, expire)
            records.append(offset_commit_record(group, c.topic, c.partition, value))
        return records, accepted

    def delete_records(self, group: str, topic: str, partitions: Iterable[int]) -> list[CoordinatorRecord]:
        """Tombstones for the partitions that have an offset (OffsetDelete)."""
        return [offset_tombstone(group, topic, p) for p in partitions if self.get(group, topic, p) is not None]

    def delete_all_records(self, group: str) -> list[CoordinatorRecord]:
        """Tombstones for every offset of ``group`` (DeleteGroups)."""
        return [offset_tombstone(group, t, p) for t, p, _ in self.items(group)]

    def expired_records(self, group: Group, now_ms: int, retention_ms: int) -> tuple[list[CoordinatorRecord], bool]:
        """Rule 4: tombstones for expired offsets, and whether every offset of the group expired
        (True also when the group has none: an empty group without offsets is then deleted)."""
        records: list[CoordinatorRecord] = []
        all_expired = True
        for topic, parts in self.group_offsets(group.group_id).items():
            if group.is_subscribed_to(topic):
                all_expired = False
                continue
            for partition, om in parts.items():
                base = group.offsets_expire_from(om.commit_timestamp_ms)
                if base is not None and om.is_expired(now_ms, base, retention_ms):
                    records.append(offset_tombstone(group.group_id, topic, partition))
                else:
                    all_expired = False
        return records, all_expired


__all__ = ["INVALID_OFFSET", "NO_METADATA", "OffsetAndMetadata", "OffsetStore", "PartitionCommit", "java_length"]
