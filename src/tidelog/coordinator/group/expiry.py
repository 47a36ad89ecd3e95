"""Offset expiry, one pass at a time (Kafka's ``cleanupGroupMetadata``).

A pass writes tombstones for:

1. the committed offsets of topics that no longer exist (when the coordinator can tell);
2. offsets older than ``offsets.retention.ms`` (:meth:`OffsetStore.expired_records` decides, by group
   type and state), and the group itself when it is left empty without offsets.

Partitions still loading (:mod:`tidelog.coordinator.loader`) are skipped: their state is not all
there yet. Each partition's tombstones are one write; a failed write is logged and retried by the next
pass. Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tidelog.coordinator.group.group import Group
from tidelog.coordinator.group.offsets import OffsetStore
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.runtime import CoordinatorRuntime, Result
from tidelog.errors import KafkaError

log = logging.getLogger(__name__)


def cleanup_group_metadata(groups: dict[str, Group], offsets: OffsetStore, runtime: CoordinatorRuntime,
                           partition_for: Callable[[str], int], now_ms: int, retention_ms: int,
                           topic_exists: Callable[[str], bool] | None) -> int:
    """One expiry pass; returns the number of tombstones written."""
    def served(group_id: str) -> bool:
        return not runtime.is_loading(partition_for(group_id))

    by_partition: dict[int, list[CoordinatorRecord]] = {}
    if topic_exists is not None:
        for group_id in [g for g in offsets.groups() if served(g)]:
            for topic in [t for t in offsets.group_offsets(group_id) if not topic_exists(t)]:
                parts = list(offsets.group_offsets(group_id).get(topic, {}))
                by_partition.setdefault(partition_for(group_id), []).extend(
                    offsets.delete_records(group_id, topic, parts))
    written = _write_by_partition(runtime, by_partition)
    by_partition = {}
    for group_id, group in [(g, group) for g, group in list(groups.items()) if served(g)]:
        records, all_expired = offsets.expired_records(group, now_ms, retention_ms)
        if all_expired and group.is_empty() and group.should_expire():
            records += group.tombstones()
        if records:
            by_partition.setdefault(partition_for(group_id), []).extend(records)
    written += _write_by_partition(runtime, by_partition)
    if written:
        log.info("offset expiry wrote %d tombstones", written)
    return written


def _write_by_partition(runtime: CoordinatorRuntime, by_partition: dict[int, list[CoordinatorRecord]]) -> int:
    written = 0
    for partition, records in by_partition.items():
        try:
            runtime.write(partition, Result(records))
            written += len(records)
        except KafkaError as e:
            log.warning("writing %d tombstones to partition %d failed: %s", len(records), partition, e)
    return written


__all__ = ["cleanup_group_metadata"]
