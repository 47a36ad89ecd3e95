"""An in-memory :class:`~tidelog.coordinator.share.persister.SharePersister` for the tests of the share
partitions and the share-group type, written while the share coordinator is built beside them (issue 27).

It keeps the contract's rules (state epochs, leader-epoch fencing, unknown partitions) so that tests written
against it hold against the share coordinator's service; it is replaced by that service in the tests once it
is merged. Not for production: nothing here is durable.
"""

from __future__ import annotations

import dataclasses

from tidelog.coordinator.share.persister import SharePartitionKey, ShareState, StateBatch, StateWrite
from tidelog.errors import ErrorCode


def merge_batches(stored: tuple[StateBatch, ...], new: tuple[StateBatch, ...]) -> tuple[StateBatch, ...]:
    """``new`` replaces the offsets of ``stored`` it overlaps (what a ShareUpdate does to a snapshot)."""
    out: list[StateBatch] = []
    for b in stored:
        pieces = [b]
        for n in new:
            nxt = []
            for p in pieces:
                if n.last_offset < p.first_offset or n.first_offset > p.last_offset:
                    nxt.append(p)
                    continue
                if p.first_offset < n.first_offset:
                    nxt.append(dataclasses.replace(p, last_offset=n.first_offset - 1))
                if p.last_offset > n.last_offset:
                    nxt.append(dataclasses.replace(p, first_offset=n.last_offset + 1))
            pieces = nxt
        out.extend(pieces)
    out.extend(new)
    return tuple(sorted(out, key=lambda b: b.first_offset))


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
        batches = tuple(b for b in merge_batches(cur.state_batches, write.state_batches) if b.last_offset >= start)
        self.states[key] = ShareState(write.state_epoch, start, batches, write.leader_epoch,
                                      write.delivery_complete_count)
        self.writes.append((key, write))
        return ErrorCode.NONE

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        self.states.pop(key, None)
        return ErrorCode.NONE


__all__ = ["MemorySharePersister", "merge_batches"]
