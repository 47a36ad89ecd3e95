"""The share-state persister: how a share partition's durable state is initialized, read and written.

A share group's partition (a *share partition*: group, topic id, partition) keeps its delivery state in the
share coordinator, which stores it in ``__share_group_state`` (KIP-932; Kafka's ``Persister`` interface in
``server-common`` and its ``DefaultStatePersister``). Three parties use it:

* the group coordinator *initializes* a share partition before it first assigns the partition to a share
  group's members (Kafka 4.1+), *reads a summary* for DescribeShareGroupOffsets, *writes* a new start offset
  for AlterShareGroupOffsets and *deletes* state for DeleteShareGroupOffsets / DeleteGroups;
* the broker leading the topic partition (its share-partition manager) *reads* the state when it first serves
  the share partition and *writes* each change of it (acknowledgements, lock expiries that move delivery
  counts, the start offset moving on);
* the share coordinator *implements* it: on the broker leading the ``__share_group_state`` partition of the
  key directly, elsewhere through the five ``*ShareGroupState`` RPCs to that broker.

Every call answers only once the write is committed (the ISR holds it in cluster mode). Errors are Kafka's:
``COORDINATOR_NOT_AVAILABLE`` / ``NOT_COORDINATOR`` (retriable), ``FENCED_STATE_EPOCH`` (a newer state epoch
was initialized), ``FENCED_LEADER_EPOCH`` (a write from a partition leader older than the last one seen),
``UNKNOWN_TOPIC_OR_PARTITION`` (a read of a share partition never initialized), ``INVALID_REQUEST``.

The share coordinator's key is ``"{group_id}:{topic_id}:{partition}"`` (Kafka's ``SharePartitionKey``),
hashed onto ``__share_group_state``'s partitions like the other coordinators' keys.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from tidelog.errors import ErrorCode


class DeliveryState(IntEnum):
    """A state batch's delivery state as persisted (Kafka's ``RecordState`` persisted values).

    ACQUIRED (1) exists only in a broker's memory: a persisted acquired record reads back as AVAILABLE.
    ARCHIVING (3, KIP-1191, share.version=2) is a record on its way to the group's dead-letter queue: it is
    never offered again and becomes ARCHIVED once the dead-letter write is done."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """One share partition: the unit of share state."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """The key hashed onto ``__share_group_state`` (Kafka's ``SharePartitionKey.asCoordinatorKey``)."""
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Offsets ``first_offset``..``last_offset`` (inclusive) share one delivery state and delivery count."""

    first_offset: int
    last_offset: int
    delivery_state: DeliveryState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareState:
    """What a read returns. ``start_offset`` -1: initialized without a start offset yet (the first fetch
    decides it from ``share.auto.offset.reset``)."""

    state_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    leader_epoch: int = -1
    #: offsets >= start_offset whose delivery is complete (v1 field; -1 when unknown)
    delivery_complete_count: int = -1
    error: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class StateWrite:
    """A write of a share partition's state. ``start_offset`` -1: unchanged. ``state_batches`` replace the
    stored batches they overlap (the coordinator merges them onto its snapshot, Kafka's ``ShareUpdate``)."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = field(default_factory=tuple)
    delivery_complete_count: int = -1


class SharePersister(Protocol):
    """The contract (see the module docstring). Implemented by the share coordinator's service, locally or
    over the wire; every method returns once the change is committed, or with an error."""

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        """Create (or re-create with a higher ``state_epoch``) the share partition's state, empty."""
        ...

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        """The full state, for the broker that will serve the share partition at ``leader_epoch``."""
        ...

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        """The state without its batches (state epoch, start offset, delivery-complete count)."""
        ...

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        """Apply a change; refused with FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH when stale."""
        ...

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        """Forget the share partition's state (DeleteShareGroupOffsets, DeleteGroups)."""
        ...


__all__ = ["DeliveryState", "SharePartitionKey", "SharePersister", "ShareState", "StateBatch", "StateWrite"]
