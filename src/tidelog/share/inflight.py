"""The records of a share partition's window that have a state, and the acquisition locks that hold them
(:mod:`tidelog.share.partition`'s bookkeeping, per record, kept small: thousands are in flight at once).

A record with no entry is AVAILABLE and never delivered. An entry is never changed in place: a change
gives the offset a new one, so one entry may stand for many offsets (a batch of new records acquired
whole, or acknowledged whole, shares one; :func:`run_length` finds such a run at C speed). An acquisition (or a renewal) makes one lock for
every record it took; a lock's ``offsets`` are exactly the ACQUIRED records it still holds, so a member's
acknowledgement of a range one acquisition took is checked with one set operation (:func:`held_by`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from itertools import repeat

from tidelog.clock import TimerHandle
from tidelog.coordinator.share.persister import DeliveryState

RecordState = DeliveryState  # Kafka's RecordState: AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVING 3, ARCHIVED 4

DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
# The states as module constants: the per-record loops compare against them (an enum member looked up on
# its class costs more than a global).
AVAILABLE, ACQUIRED = RecordState.AVAILABLE, RecordState.ACQUIRED
ACKNOWLEDGED, ARCHIVED = RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
ARCHIVING = RecordState.ARCHIVING


class AcquisitionLock:
    """One acquisition's lock: the offsets it still holds and its expiry timer; ``entry``, when the
    acquisition took only new records whole, is the one entry all of them have (an offset leaves
    ``offsets`` before its entry changes, so every offset still held has it)."""

    __slots__ = ("entry", "expired", "handle", "member_id", "offsets")

    def __init__(self, member_id: str, offsets: set[int]) -> None:
        self.member_id = member_id
        self.offsets = offsets
        self.handle: TimerHandle | None = None
        self.expired = False
        self.entry: InFlight | None = None


class InFlight:
    """One record of the window with a state: the state, its delivery count, and the lock holding it."""

    __slots__ = ("delivery_count", "lock", "state")

    def __init__(self, state: RecordState, delivery_count: int, lock: AcquisitionLock | None = None) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.lock = lock


def held_by(records: dict[int, InFlight], member_id: str, first: int, last: int) -> bool:
    """Whether one acquisition lock of ``member_id`` holds every offset of ``first``-``last`` (a lock's
    offsets are exactly the ACQUIRED records it holds): a check in C for the common acknowledgement."""
    rec = records.get(first)
    lock = rec.lock if rec is not None else None
    return (lock is not None and lock.member_id == member_id and len(lock.offsets) > last - first
            and lock.offsets.issuperset(range(first, last + 1)))


def run_length(entries: Mapping[int, object], start: int, end: int, entry: object) -> int:
    """How many offsets from ``start`` (up to ``end``) map to this very ``entry`` (at least 1: ``start``
    does); C loops, a chunk at a time."""
    n = start
    while n < end:
        chunk = range(n, min(end, n + _CHUNK))
        same = list(map(operator.is_, map(entries.get, chunk), repeat(entry)))
        if False in same:
            return n + same.index(False) - start
        n = chunk.stop
    return max(1, end - start)


_CHUNK = 4096

__all__ = ["ACKNOWLEDGED", "ACQUIRED", "ARCHIVED", "ARCHIVING", "AVAILABLE", "DONE", "AcquisitionLock", "InFlight",
           "RecordState", "held_by",
           "run_length"]
