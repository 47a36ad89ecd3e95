"""The share coordinator service: :class:`~tidelog.coordinator.share.persister.SharePersister` on the broker
that leads the key's ``__share_group_state`` partition (Kafka's ``ShareCoordinatorService``).

Each method routes to the key's partition, runs the operation there
(:class:`~tidelog.coordinator.share.coordinator.ShareCoordinator` writes its record at once) and returns
once the partition's high watermark passes that write (runtime rule 6:
:meth:`CoordinatorRuntime.run <tidelog.coordinator.runtime.CoordinatorRuntime.run>`), so every answer is
committed (the ISR has it in cluster mode). The coordinator's KafkaErrors (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE when a write is not committed in time) become
the answer's error code: nothing raises.

Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tidelog.coordinator.share.coordinator import ShareCoordinator
from tidelog.coordinator.share.persister import SharePartitionKey, ShareState, StateWrite
from tidelog.errors import ErrorCode, KafkaError

T = TypeVar("T")


class ShareCoordinatorService:
    """The five share-state calls over one :class:`ShareCoordinator`."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self.coordinator = coordinator
        self.runtime = coordinator.runtime

    def partition_for(self, key: SharePartitionKey) -> int:
        """The key's ``__share_group_state`` partition (FindCoordinator routing)."""
        return self.coordinator.partition_for(key)

    def leads(self, key: SharePartitionKey) -> bool:
        """Whether the key's partition is coordinated here now (loaded or loading)."""
        return self.coordinator.active and self.runtime.writer.owns(self.partition_for(key))

    async def _run(self, key: SharePartitionKey, fn: Callable[[], T]) -> T:
        return await self.runtime.run(self.partition_for(key), fn)

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        try:
            return await self._run(key, lambda: self.coordinator.initialize(key, state_epoch, start_offset))
        except KafkaError as e:
            return e.code

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        try:
            return await self._run(key, lambda: self.coordinator.read(key, leader_epoch))
        except KafkaError as e:
            return ShareState(-1, -1, error=e.code, error_message=e.message)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        try:
            return await self._run(key, lambda: self.coordinator.read_summary(key, leader_epoch))
        except KafkaError as e:
            return ShareState(-1, -1, error=e.code, error_message=e.message)

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        try:
            return await self._run(key, lambda: self.coordinator.write(key, write))
        except KafkaError as e:
            return e.code

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        try:
            return await self._run(key, lambda: self.coordinator.delete(key))
        except KafkaError as e:
            return e.code


__all__ = ["ShareCoordinatorService"]
