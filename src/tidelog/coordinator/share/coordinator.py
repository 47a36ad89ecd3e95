"""The share coordinator: every share partition's state kept in ``__share_group_state`` (KIP-932).

Kafka's ``ShareCoordinatorShard`` over all the partitions this broker leads. A share partition (group,
topic id, partition: :class:`~tidelog.coordinator.share.persister.SharePartitionKey`) lives in
partition ``abs(java_string_hash(key.coordinator_key())) % partitions`` of the topic. Public API (what the
share coordinator's service and tests call; the service answers once the writes are committed, runtime
rule 6)::

    coordinator = ShareCoordinator(ShareCoordinatorConfig.from_broker_config(cfg), clock, writer, schedule,
                                   partition_exists=...)
    coordinator.load(partitions) / unload(partitions) / close()
    initialize / read / read_summary / write / delete        one share partition each, synchronous

Rules:

1. **Records, then memory.** An operation checks the request against memory and returns a
   :class:`~tidelog.coordinator.runtime.Result` whose records the runtime appends and then replays
   (:meth:`ShareCoordinator.replay`); memory is only ever changed by replay, so a partition loaded from
   its log has exactly the state the live coordinator had.
2. **Snapshots and updates** (Kafka's cadence). A share partition's first write, every
   InitializeShareGroupState, and the first write after
   ``share.coordinator.snapshot.update.records.per.snapshot`` updates since the last snapshot write a
   ``ShareSnapshot`` (the whole state, the snapshot epoch one higher); any other write a ``ShareUpdate``
   (only the batches written, folded onto the state at replay, :mod:`~tidelog.coordinator.share.state`).
3. **Fencing.** Each share partition remembers the highest state epoch (from snapshots) and leader epoch
   (from both record types) it has seen. Only an initialize sets the state epoch and only a read sets the
   leader epoch (Kafka 4.2+, KAFKA-19456): a read with a higher leader epoch writes it down (a ShareUpdate
   without batches), so the previous leader of the topic partition is fenced from then on, also after a
   failover; a read at leader epoch -1 neither fences nor sets it. A write with a lower state epoch
   answers FENCED_STATE_EPOCH, a write or read with a lower leader epoch FENCED_LEADER_EPOCH, an
   initialize with a lower state epoch FENCED_STATE_EPOCH; a write with a higher epoch is applied without
   changing the epochs. A negative epoch (other than a read's -1) is INVALID_REQUEST (KAFKA-20743).
4. **Unknown state.** Reading or writing a share partition never initialized (or deleted) answers
   UNKNOWN_TOPIC_OR_PARTITION (KAFKA-19338), as does any call for a topic partition the metadata does not
   have; its summary is no error: start offset -1, state and leader epoch 0 (Kafka's
   ``PartitionFactory`` defaults). A negative partition is INVALID_REQUEST.
5. **Delete** writes a tombstone of the snapshot key; replaying it forgets the share partition (its
   epochs too). Deleting what is not there succeeds and writes nothing.
6. **Ownership.** Calls for a key whose ``__share_group_state`` partition this broker does not lead answer
   NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads), raised as KafkaError.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tidelog.clock import Clock
from tidelog.config import BrokerConfig
from tidelog.coordinator.runtime import CoordinatorRuntime, PartitionWriter, Result, partition_for
from tidelog.coordinator.share.persister import SharePartitionKey, ShareState, StateWrite
from tidelog.coordinator.share.records import ShareRecord, ShareValue, deserialize, serialize
from tidelog.coordinator.share.state import ShareGroupOffset, combine_batches
from tidelog.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

SHARE_GROUP_STATE_TOPIC = "__share_group_state"


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    """The broker settings the share coordinator uses (Kafka's names in ``from_broker_config``)."""

    num_partitions: int = 50
    snapshot_update_records_per_snapshot: int = 500
    write_timeout_ms: int = 5000

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> ShareCoordinatorConfig:
        return cls(
            num_partitions=config["share.coordinator.state.topic.num.partitions"],
            snapshot_update_records_per_snapshot=config["share.coordinator.snapshot.update.records.per.snapshot"],
            write_timeout_ms=config["share.coordinator.write.timeout.ms"],
        )


def _error_state(code: ErrorCode, message: str | None = None) -> ShareState:
    return ShareState(state_epoch=-1, start_offset=-1, error=code, error_message=message)


class ShareCoordinator:
    def __init__(self, config: ShareCoordinatorConfig, clock: Clock, writer: PartitionWriter,
                 schedule: Callable[[float, Callable[[], None]], Any] | None = None, *,
                 partition_exists: Callable[[uuid.UUID, int], bool] = lambda topic_id, partition: True) -> None:
        """``partition_exists(topic_id, partition)``: whether the metadata has that topic partition."""
        self.config = config
        self.clock = clock
        self.num_partitions = config.num_partitions
        self.partition_exists = partition_exists
        self.runtime = CoordinatorRuntime(clock, writer, self.replay, serialize, deserialize, schedule,
                                          write_timeout_ms=config.write_timeout_ms)
        self.states: dict[SharePartitionKey, ShareGroupOffset] = {}
        self.leader_epochs: dict[SharePartitionKey, int] = {}
        self.state_epochs: dict[SharePartitionKey, int] = {}
        #: ShareUpdate records replayed since the share partition's last snapshot (rule 2)
        self.updates_since_snapshot: dict[SharePartitionKey, int] = {}
        self.active = False

    def partition_for(self, key: SharePartitionKey) -> int:
        return partition_for(key.coordinator_key(), self.num_partitions)

    # ------------------------------------------------------------------------------ load, replay

    def replay(self, partition: int, offset: int, producer_id: int, record: ShareRecord) -> None:
        """One record, written now or read back at load (rule 1)."""
        key, value = record.key, record.value
        if value is None:  # rule 5
            self.states.pop(key, None)
            self.leader_epochs.pop(key, None)
            self.state_epochs.pop(key, None)
            self.updates_since_snapshot.pop(key, None)
            return
        if value.leader_epoch > self.leader_epochs.get(key, -1):
            self.leader_epochs[key] = value.leader_epoch
        if record.snapshot:
            if value.state_epoch > self.state_epochs.get(key, -1):
                self.state_epochs[key] = value.state_epoch
            self.states[key] = ShareGroupOffset.from_snapshot(value)
            self.updates_since_snapshot[key] = 0
            return
        current = self.states.get(key)
        if current is None:  # an update without its snapshot (pruned away): what it says is all there is
            current = ShareGroupOffset(value.snapshot_epoch, self.state_epochs.get(key, 0), -1, -1)
        self.states[key] = current.merge(value)
        self.updates_since_snapshot[key] = self.updates_since_snapshot.get(key, 0) + 1

    def load(self, partitions: Iterable[int], *, num_partitions: int | None = None, read: bool = True,
             background: bool = False) -> int:
        """Replay these partitions of ``__share_group_state`` (``background``: in tasks, runtime rule 3)."""
        if num_partitions is not None:
            self.num_partitions = num_partitions
        self.active = True
        count = 0
        for p in list(partitions):
            self._forget(p)
            if not read:
                continue
            if background:
                self.runtime.start_load(p, self._partition_loaded)
            else:
                count += self.runtime.load(p)
        if count:
            log.info("loaded %d share partitions from %d records", len(self.states), count)
        return count

    def _partition_loaded(self, partition: int, records: int) -> None:
        keys = sum(1 for k in self.states if self.partition_for(k) == partition)
        log.info("loaded %d share partitions of __share_group_state partition %d from %d records", keys, partition,
                 records)

    def unload(self, partitions: Iterable[int]) -> None:
        """This broker no longer leads these partitions: their share partitions are forgotten (rule 6)."""
        parts = set(partitions)
        for p in parts:
            self._forget(p)
            self.runtime.unload(p)
        log.info("unloaded __share_group_state partitions %s", sorted(parts))

    def _forget(self, partition: int) -> None:
        for key in [k for k in self.states.keys() | self.leader_epochs.keys() if self.partition_for(k) == partition]:
            self.states.pop(key, None)
            self.leader_epochs.pop(key, None)
            self.state_epochs.pop(key, None)
            self.updates_since_snapshot.pop(key, None)

    def close(self) -> None:
        self.active = False
        self.runtime.close()

    # ------------------------------------------------------------------------------ operations

    def _owned(self, key: SharePartitionKey) -> int:
        if not self.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the share coordinator is not active")
        partition = self.partition_for(key)
        self.runtime.check_owned(partition)
        return partition

    def _invalid(self, key: SharePartitionKey) -> tuple[ErrorCode, str] | None:
        if key.partition < 0:
            return ErrorCode.INVALID_REQUEST, "the partition id must not be negative"
        if not self.partition_exists(key.topic_id, key.partition):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "the topic partition is not in the metadata"
        return None

    def _record(self, key: SharePartitionKey, snapshot: bool, value: ShareValue | None) -> Result[None]:
        return Result(records=[ShareRecord(key, snapshot, value)])

    def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        """A new, empty state at ``state_epoch`` (a ShareSnapshot, rule 2); FENCED_STATE_EPOCH if lower
        than the current one."""
        partition = self._owned(key)
        invalid = self._invalid(key)
        if invalid is not None:
            return invalid[0]
        if state_epoch < 0:
            return ErrorCode.INVALID_REQUEST
        current = self.states.get(key)
        if current is not None and self.state_epochs.get(key, -1) > state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        now = self.clock.wall_ms()
        value = ShareValue(snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
                           leader_epoch=0, start_offset=start_offset, state_epoch=state_epoch,
                           create_timestamp=now, write_timestamp=now)
        self.runtime.apply(partition, lambda: self._record(key, True, value))
        return ErrorCode.NONE

    def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        """A change of the state (rules 2-4)."""
        partition = self._owned(key)
        invalid = self._invalid(key)
        if invalid is not None:
            return invalid[0]
        if write.state_epoch < 0 or write.leader_epoch < 0:
            return ErrorCode.INVALID_REQUEST
        current = self.states.get(key)
        if current is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if self.leader_epochs.get(key, -1) > write.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if self.state_epochs.get(key, -1) > write.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        self.runtime.apply(partition, lambda: self._write_record(key, current, write, current.leader_epoch))
        return ErrorCode.NONE

    def _write_record(self, key: SharePartitionKey, current: ShareGroupOffset, write: StateWrite,
                      leader_epoch: int) -> Result[None]:
        """A snapshot or an update (rule 2) of ``write`` with ``leader_epoch`` (the state epoch never
        changes here: rule 3)."""
        if self.updates_since_snapshot.get(key, 0) >= self.config.snapshot_update_records_per_snapshot:
            start = current.start_offset if write.start_offset == -1 else write.start_offset
            new = dataclasses.replace(
                current, snapshot_epoch=current.snapshot_epoch + 1, start_offset=start, leader_epoch=leader_epoch,
                delivery_complete_count=(current.delivery_complete_count if write.delivery_complete_count == -1
                                         else write.delivery_complete_count),
                state_batches=combine_batches(current.state_batches, write.state_batches, start),
                write_timestamp=self.clock.wall_ms())
            return self._record(key, True, new.to_snapshot())
        update = ShareValue(snapshot_epoch=current.snapshot_epoch, leader_epoch=leader_epoch,
                            start_offset=write.start_offset,
                            state_batches=combine_batches((), write.state_batches, write.start_offset),
                            delivery_complete_count=write.delivery_complete_count)
        return self._record(key, False, update)

    def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        """The whole state for the topic partition's leader at ``leader_epoch``; a higher leader epoch
        than the one recorded is written down first (rule 3)."""
        partition = self._owned(key)
        invalid = self._invalid(key)
        if invalid is not None:
            return _error_state(*invalid)
        if leader_epoch < -1:
            return _error_state(ErrorCode.INVALID_REQUEST, "the leader epoch must be -1 or more")
        current = self.states.get(key)
        if current is None:
            return _error_state(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "the share partition has no state")
        if leader_epoch == -1:  # not a partition leader's read: no fencing, nothing written
            return self._state(current, batches=True)
        if self.leader_epochs.get(key, -1) > leader_epoch:
            return _error_state(ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH.message)
        if leader_epoch > self.leader_epochs.get(key, -1):
            self.runtime.apply(partition, lambda: self._write_record(
                key, current, StateWrite(state_epoch=-1, leader_epoch=leader_epoch, start_offset=-1), leader_epoch))
            current = self.states[key]
        return self._state(current, batches=True)

    def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        """The state without its batches (DescribeShareGroupOffsets); never writes, never fences. A share
        partition without state has start offset -1 (rule 4)."""
        self._owned(key)
        invalid = self._invalid(key)
        if invalid is not None:
            return _error_state(*invalid)
        current = self.states.get(key)
        if current is None:
            return ShareState(state_epoch=0, start_offset=-1, leader_epoch=0)
        return self._state(current, batches=False)

    def delete(self, key: SharePartitionKey) -> ErrorCode:
        """Forget the share partition (a tombstone, rule 5)."""
        partition = self._owned(key)
        if key.partition < 0:
            return ErrorCode.INVALID_REQUEST
        if key in self.states:
            self.runtime.apply(partition, lambda: self._record(key, True, None))
        return ErrorCode.NONE

    @staticmethod
    def _state(current: ShareGroupOffset, batches: bool) -> ShareState:
        return ShareState(state_epoch=current.state_epoch, start_offset=current.start_offset,
                          state_batches=current.state_batches if batches else (),
                          leader_epoch=current.leader_epoch,
                          delivery_complete_count=current.delivery_complete_count)

    def poll(self) -> int:
        return self.runtime.poll()


__all__ = ["SHARE_GROUP_STATE_TOPIC", "ShareCoordinator", "ShareCoordinatorConfig"]
