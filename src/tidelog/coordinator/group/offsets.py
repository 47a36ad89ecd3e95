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
   (:meth:`~tidelog.coordinator.group.group.Group.offsets_expire_from`): the commit time for simple
   groups and for topics a Stable consumer group no longer subscribes to, the time an Empty group
   became empty (Kafka 2.1+, KIP-211), never while a group with members still subscribes to the topic.
   Expiry writes tombstones; a group left with no offsets and no members is deleted too.
5. **Transactional offsets** (TxnOffsetCommit): a commit record in a transactional batch is pending,
   kept by producer id, until the transaction's marker reaches the partition: COMMIT makes each one
   the committed offset unless a commit written later in the log is already there (Kafka keeps the
   most recent record), ABORT drops them. A tombstone also drops the pending offsets of its
   partition. A partition with a pending offset is *unstable*: OffsetFetch with ``require_stable``
   answers UNSTABLE_OFFSET_COMMIT for it, expiry skips it, and a group with an open transaction is
   never deleted by expiry.

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
        #: rule 5: producer id -> group -> topic -> partition -> pending offset
        self._pending: dict[int, dict[str, dict[str, dict[int, OffsetAndMetadata]]]] = {}
        self._open_transactions: dict[str, set[int]] = {}  # group -> producer ids with pending offsets

    def drop_group(self, group: str) -> None:
        """Forget a group's offsets, committed and pending (its partition is unloaded)."""
        self._offsets.pop(group, None)
        for pid in self._open_transactions.pop(group, set()):
            pending = self._pending.get(pid)
            if pending is not None:
                pending.pop(group, None)
                if not pending:
                    del self._pending[pid]

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

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """Rule 5: a transaction holds an offset of this partition that is not decided yet."""
        return any(partition in self._pending.get(pid, {}).get(group, {}).get(topic, {})
                   for pid in self._open_transactions.get(group, ()))

    def has_open_transactions(self, group: str) -> bool:
        return bool(self._open_transactions.get(group))

    def pending_partitions(self, group: str) -> set[tuple[str, int]]:
        return {(t, p) for pid in self._open_transactions.get(group, ())
                for t, parts in self._pending.get(pid, {}).get(group, {}).items() for p in parts}

    # --------------------------------------------------------------------------------- replay

    def replay(self, record_offset: int, key: OffsetCommitKey, value: OffsetCommitValue | None,
               producer_id: int = -1) -> None:
        """Rules 1 and 5."""
        if value is not None:
            om = OffsetAndMetadata.from_value(value, record_offset)
            if producer_id >= 0:
                _put(self._pending.setdefault(producer_id, {}), key, om)
                self._open_transactions.setdefault(key.group, set()).add(producer_id)
            else:
                _put(self._offsets, key, om)
            return
        _remove(self._offsets, key)
        for pid in self._open_transactions.get(key.group, ()):
            _remove(self._pending.get(pid, {}), key)

    def replay_end_transaction_marker(self, producer_id: int, commit: bool) -> int:
        """Rule 5: the marker of ``producer_id``'s transaction. Returns the offsets it committed."""
        pending = self._pending.pop(producer_id, None)
        if pending is None:
            return 0
        committed = 0
        for group, topics in pending.items():
            open_txns = self._open_transactions.get(group)
            if open_txns is not None:
                open_txns.discard(producer_id)
                if not open_txns:
                    del self._open_transactions[group]
            if not commit:
                continue
            for topic, parts in topics.items():
                for partition, om in parts.items():
                    current = self.get(group, topic, partition)
                    if current is None or om.record_offset > current.record_offset:
                        _put(self._offsets, OffsetCommitKey(group, topic, partition), om)
                        committed += 1
        return committed

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
        """Tombstones for the partitions that have an offset, committed or pending (OffsetDelete)."""
        return [offset_tombstone(group, topic, p) for p in partitions
                if self.get(group, topic, p) is not None or self.has_pending(group, topic, p)]

    def delete_all_records(self, group: str) -> list[CoordinatorRecord]:
        """Tombstones for every offset of ``group``, committed or pending (DeleteGroups)."""
        committed = {(t, p) for t, p, _ in self.items(group)}
        pending = self.pending_partitions(group) - committed
        return [offset_tombstone(group, t, p) for t, p in [*sorted(committed), *sorted(pending)]]

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
                if (base is not None and om.is_expired(now_ms, base, retention_ms)
                        and not self.has_pending(group.group_id, topic, partition)):
                    records.append(offset_tombstone(group.group_id, topic, partition))
                else:
                    all_expired = False
        return records, all_expired and not self.has_open_transactions(group.group_id)


def _put(store: dict[str, dict[str, dict[int, OffsetAndMetadata]]], key: OffsetCommitKey,
         om: OffsetAndMetadata) -> None:
    store.setdefault(key.group, {}).setdefault(key.topic, {})[key.partition] = om


def _remove(store: dict[str, dict[str, dict[int, OffsetAndMetadata]]], key: OffsetCommitKey) -> None:
    topics = store.get(key.group)
    if topics is None:
        return
    parts = topics.get(key.topic)
    if parts is not None:
        parts.pop(key.partition, None)
        if not parts:
            del topics[key.topic]
    if not topics:
        del store[key.group]


__all__ = ["INVALID_OFFSET", "NO_METADATA", "OffsetAndMetadata", "OffsetStore", "PartitionCommit", "java_length"]
