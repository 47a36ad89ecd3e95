"""How changes to a share partition's in-flight records become one write of its persisted state
(:class:`~tidelog.coordinator.share.persister.StateWrite`): the start offset they lead to, runs of equal
state and delivery count as state batches (as Kafka writes them), and KIP-1226's delivery-complete count.
Pure: it reads the partition's records, never changes them (:mod:`tidelog.share.partition` applies the
changes once the write is answered)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from tidelog.coordinator.share.persister import DeliveryState, StateBatch, StateWrite
from tidelog.share.inflight import run_length

#: A change: the record's new state and delivery count.
Change = tuple[DeliveryState, int]
_DONE = (DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED)


class HasState(Protocol):
    state: DeliveryState


def start_after(records: Mapping[int, HasState], start: int, end: int, changes: Mapping[int, Change]) -> int:
    """Where the start offset will be once ``changes`` apply: past every done record at the window's head
    (an offset with no record and no change is AVAILABLE)."""
    while start < end:
        change = changes.get(start)
        if change is not None:
            if change[0] not in _DONE:
                break
            start += run_length(changes, start, end, change)  # one change object for a run: C loops
            continue
        else:
            rec = records.get(start)
            state = rec.state if rec is not None else DeliveryState.AVAILABLE
        if state not in _DONE:
            break
        start += 1
    return start


def complete_after(records: Mapping[int, HasState], changes: Mapping[int, Change], start: int, end: int) -> int:
    """KIP-1226's delivery-complete count once ``changes`` apply: the records of the window from the start
    offset on (``start``-``end``) whose delivery is complete (ACKNOWLEDGED or ARCHIVED)."""
    n = 0
    for offset in range(start, end):
        change = changes.get(offset)
        if change is not None:
            n += change[0] in _DONE
        else:
            rec = records.get(offset)
            n += rec is not None and rec.state in _DONE
    return n


def state_write(records: Mapping[int, HasState], start: int, end: int, changes: Mapping[int, Change],
                state_epoch: int, leader_epoch: int, persisted_start: int) -> StateWrite:
    """The write of ``changes`` to a partition whose window is ``start``-``end``: its new start offset (-1
    when it is the one already persisted), the changes from there on as state batches, the complete count."""
    new_start = start_after(records, start, end, changes)
    batches: list[StateBatch] = []
    run_first = run_last = -1
    run: Change | None = None
    if not changes or max(changes) < new_start:  # the common case: all done at the head
        ahead: list[int] = []
    elif min(changes) >= new_start:
        ahead = sorted(changes)
    else:
        ahead = sorted(o for o in changes if o >= new_start)
    for offset in ahead:
        change = changes[offset]
        if offset == run_last + 1 and change == run:
            run_last = offset
            continue
        if run is not None:
            batches.append(StateBatch(run_first, run_last, run[0], run[1]))
        run_first = run_last = offset
        run = change
    if run is not None:
        batches.append(StateBatch(run_first, run_last, run[0], run[1]))
    return StateWrite(state_epoch, leader_epoch, new_start if new_start != persisted_start else -1,
                      tuple(batches), complete_after(records, changes, new_start, end))


__all__ = ["Change", "complete_after", "start_after", "state_write"]
