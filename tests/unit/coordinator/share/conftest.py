"""A share coordinator on real partition logs in tmp_path and a ManualClock.

``ShareHarness.restart()`` builds a new coordinator that loads the same logs, as a broker restart does:
what it replays must equal what the first one had in memory.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tidelog.config import TopicConfig
from tidelog.coordinator.runtime import LogWriter
from tidelog.coordinator.share.coordinator import (
    SHARE_GROUP_STATE_TOPIC,
    ShareCoordinator,
    ShareCoordinatorConfig,
)
from tidelog.coordinator.share.persister import SharePartitionKey
from tidelog.errors import ErrorCode, KafkaError
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.testing import ManualClock

PARTITIONS = 3
TOPIC_ID = uuid.UUID("6f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8")
UNKNOWN_TOPIC_ID = uuid.UUID(int=42)


class ShareWriter(LogWriter):
    """The real log writer; ``fail_with`` makes appends fail as a lost leadership would, ``not_led`` holds the
    partitions this broker does not lead."""

    def __init__(self, logs: dict[int, PartitionLog]) -> None:
        super().__init__(logs.__getitem__)
        self.fail_with: ErrorCode | None = None
        self.not_led: set[int] = set()

    def append(self, partition: int, batch: bytes) -> int:
        if self.fail_with is not None:
            raise KafkaError(self.fail_with, "partition unavailable")
        return super().append(partition, batch)

    def owns(self, partition: int) -> bool:
        return partition not in self.not_led


def key(group: str = "g", partition: int = 0, topic_id: uuid.UUID = TOPIC_ID) -> SharePartitionKey:
    return SharePartitionKey(group, topic_id, partition)


class ShareHarness:
    def __init__(self, tmp_path: Path, per_snapshot: int = 500) -> None:
        self.clock = ManualClock()
        self.config = ShareCoordinatorConfig(num_partitions=PARTITIONS, snapshot_update_records_per_snapshot=per_snapshot)
        self.logs: dict[int, PartitionLog] = {
            p: load_log(tmp_path / f"{SHARE_GROUP_STATE_TOPIC}-{p}", SHARE_GROUP_STATE_TOPIC, p,
                        TopicConfig(cleanup_policy="delete"), self.clock) for p in range(PARTITIONS)}
        self.coordinator = self._new()

    def _new(self) -> ShareCoordinator:
        self.writer = ShareWriter(self.logs)
        c = ShareCoordinator(self.config, self.clock, self.writer,
                             partition_exists=lambda topic_id, p: topic_id == TOPIC_ID and 0 <= p < 8)
        c.load(range(PARTITIONS))
        return c

    def restart(self) -> ShareCoordinator:
        self.coordinator.close()
        self.coordinator = self._new()
        return self.coordinator

    def records(self, k: SharePartitionKey) -> list[tuple[bool, object]]:
        """(snapshot?, value) of every record of ``k``'s partition written for ``k``, in order."""
        from tidelog.coordinator.share.records import deserialize

        out = []
        plog = self.logs[self.coordinator.partition_for(k)]
        for batch in plog.batches(plog.log_start_offset):
            for rec in batch.records():
                r = deserialize(rec.key, rec.value)
                if r.key == k:
                    out.append((r.snapshot, r.value))
        return out


@pytest.fixture
def share(tmp_path: Path) -> ShareHarness:
    return ShareHarness(tmp_path)
