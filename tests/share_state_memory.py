"""An in-memory :class:`~tidelog.coordinator.share.persister.SharePersister` for the tests that have no
broker to run the share coordinator on: the unit tests of one share partition (tests/unit/share) and the
two replica layers of tests/inprocess/test_share_leadership.py; the group coordinator's share tests
(tests/inprocess/test_share_groups.py) read its states directly. The in-process ShareFetch tests use the
broker's own share coordinator.

It keeps the contract's rules (state epochs, leader-epoch fencing, unknown partitions) and stores batches
as the share coordinator does (``combine_batches``). Not for production: nothing here is durable.
"""

from __future__ import annotations

import dataclasses

from tidelog.coordinator.share.persister import SharePartitionKey, ShareState, StateWrite
from tidelog.coordinator.share.state import combine_batches
from tidelog.errors import ErrorCode


class MemorySharePersister:
    """State per share partition in a dict; every call is committed at once."""

    def __init__(self) -> None:
        self.states: dict[SharePartitionKey, ShareState] = {}
        self.writes: list[tuple[SharePartitionKey, StateWrite]] = []

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        cur = self.states.get(key)
        if cur is not None and state_epoch < cur.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        self.states[key] = ShareState(state_epoch=state_epoch, start_offset=start_offset)
        return ErrorCode.NONE

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        cur = self.states.get(key)
        if cur is None:
            return ShareState(-1, -1, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if leader_epoch < cur.leader_epoch:
            return dataclasses.replace(cur, state_batches=(), error=ErrorCode.FENCED_LEADER_EPOCH)
        self.states[key] = cur = dataclasses.replace(cur, leader_epoch=leader_epoch)
        return cur

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        cur = self.states.get(key)
        if cur is None:
            return ShareState(-1, -1, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return dataclasses.replace(cur, state_batches=())

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        cur = self.states.get(key)
        if cur is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if write.state_epoch < cur.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        if write.leader_epoch < cur.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        start = cur.start_offset if write.start_offset == -1 else write.start_offset
        batches = combine_batches(cur.state_batches, write.state_batches, start)
        self.states[key] = ShareState(write.state_epoch, start, batches, write.leader_epoch,
                                      write.delivery_complete_count)
        self.writes.append((key, write))
        return ErrorCode.NONE

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        self.states.pop(key, None)
        return ErrorCode.NONE


__all__ = ["MemorySharePersister"]
