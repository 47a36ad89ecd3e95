"""A member's acknowledgements checked against a share partition's records and turned into the changes
they make (:meth:`tidelog.share.partition.SharePartition.acknowledge`'s pure part; rule 2 there).

:func:`check` says whether a request may be applied at all: batches in order and not overlapping, valid
types (RENEW only where allowed), nothing before the window's start, and every record ACQUIRED by the
member and not in an acknowledgement being written; otherwise nothing of it is applied.
:func:`changes_of` gives each acknowledged offset its new state and delivery count: ACCEPT ->
ACKNOWLEDGED, RELEASE -> AVAILABLE (or ``dead`` at the delivery limit), REJECT -> ``dead``, GAP ->
ARCHIVED; RENEW offsets are listed apart (their lock starts again). ``dead`` is ARCHIVING when the group
has a dead-letter queue, else ARCHIVED. An ACCEPT of records acquired whole (one entry for all) gets one
change object for the whole range, made in C loops, which the partition then applies in C loops too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tidelog.errors import ErrorCode
from tidelog.share.deliveries import AckBatch, AckType
from tidelog.share.inflight import (
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    ARCHIVING,
    AVAILABLE,
    AcquisitionLock,
    InFlight,
    RecordState,
    held_by,
)
from tidelog.share.stats import ShareStats

Change = tuple[RecordState, int]


def check(records: Mapping[int, InFlight], member_id: str, batches: list[AckBatch], start_offset: int,
          allow_renew: bool, being_acked: Callable[[range | tuple[int]], bool],
          ) -> ErrorCode | list[AcquisitionLock | None]:
    """The error of an acknowledgement that may not be applied, or per batch the one lock holding all its
    records (None: they are held, by several locks)."""
    previous_last = -1
    held: list[AcquisitionLock | None] = []
    for b in batches:
        if b.first_offset <= previous_last:  # Kafka's rule: batches in order, not overlapping
            return ErrorCode.INVALID_REQUEST
        previous_last = b.last_offset
        if b.last_offset < b.first_offset or not b.types or (
                len(b.types) != 1 and len(b.types) != b.last_offset - b.first_offset + 1):
            return ErrorCode.INVALID_REQUEST
        if any(t < AckType.GAP or t > (AckType.RENEW if allow_renew else AckType.REJECT) for t in b.types):
            return ErrorCode.INVALID_REQUEST
        if b.first_offset < start_offset:
            return ErrorCode.INVALID_RECORD_STATE
        if held_by(records, member_id, b.first_offset, b.last_offset) and not being_acked(
                range(b.first_offset, b.last_offset + 1)):
            held.append(records[b.first_offset].lock)
            continue  # the common case: one acquisition of the member holds the whole range, none being written
        held.append(None)
        for offset in range(b.first_offset, b.last_offset + 1):
            rec = records.get(offset)
            if (rec is None or rec.state != ACQUIRED or rec.lock is None
                    or rec.lock.member_id != member_id or being_acked((offset,))):
                return ErrorCode.INVALID_RECORD_STATE
    return held


@dataclass(slots=True)
class Changes:
    """What an acknowledgement changes: ``changes`` by offset, the ``renewed`` offsets, and whether it is
    one change object for records acquired whole (``whole``: the partition applies it in C loops)."""

    changes: dict[int, Change] = field(default_factory=dict)
    renewed: list[int] = field(default_factory=list)
    whole: bool = True


def changes_of(records: Mapping[int, InFlight], batches: list[AckBatch], held: list[AcquisitionLock | None],
               limit: int, dead: RecordState) -> Changes:
    """The changes of a checked acknowledgement (``held`` from :func:`check`; ``limit`` the delivery count
    limit; ``dead`` ARCHIVING with a dead-letter queue, else ARCHIVED)."""
    out = Changes()
    changes = out.changes
    shared: dict[Change, Change] = {}
    for b, lock in zip(batches, held, strict=True):
        if len(b.types) == 1 and b.types[0] == AckType.ACCEPT:  # the common case
            span = range(b.first_offset, b.last_offset + 1)
            if lock is not None and lock.entry is not None:  # acquired whole: every offset it holds has it
                entries = {lock.entry}
            else:
                entries = set(map(records.__getitem__, span))
                out.whole = False
            if len(entries) == 1:  # one change object for all (C loops from here on)
                change = (ACKNOWLEDGED, entries.pop().delivery_count)
                changes.update(dict.fromkeys(span, shared.setdefault(change, change)))
                continue
            out.whole = False
            for offset in span:
                changes[offset] = (ACKNOWLEDGED, records[offset].delivery_count)
            continue
        out.whole = False
        for offset in range(b.first_offset, b.last_offset + 1):
            t = b.type_of(offset)
            count = records[offset].delivery_count
            if t == AckType.RENEW:
                out.renewed.append(offset)
            elif t == AckType.ACCEPT:
                changes[offset] = (ACKNOWLEDGED, count)
            elif t == AckType.RELEASE:
                changes[offset] = (dead if count >= limit else AVAILABLE, count)
            elif t == AckType.REJECT:
                changes[offset] = (dead, count)
            else:  # GAP
                changes[offset] = (ARCHIVED, count)
    out.whole = out.whole and len(shared) == 1
    return out


def count_acks(stats: ShareStats, batches: list[AckBatch], applied: Mapping[int, Change], everything: bool) -> None:
    """Count the acknowledgements applied (``everything``: all those asked for but renewals)."""
    for b in batches:
        if everything and len(b.types) == 1 and b.types[0] == AckType.ACCEPT:  # the common case
            stats.acknowledged[AckType.ACCEPT] += b.last_offset - b.first_offset + 1
            continue
        for offset in range(b.first_offset, b.last_offset + 1):
            change = applied.get(offset)
            if change is None:
                continue
            t = b.type_of(offset)
            if t in stats.acknowledged:
                stats.acknowledged[t] += 1
            if change[0] in (ARCHIVED, ARCHIVING):
                reason = ("rejected" if t == AckType.REJECT else
                          "not_deliverable" if t == AckType.GAP else "delivery_count_limit")
                stats.archived[reason] += 1


__all__ = ["Change", "Changes", "changes_of", "check", "count_acks"]
