"""What is exchanged with a share partition (:mod:`tidelog.share.partition`): the batches a log read
offers it, the ranges a member acquired (ShareFetch's AcquiredRecords), and acknowledgements with their
types (ShareFetch / ShareAcknowledge)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol


class AckType(IntEnum):
    """An acknowledgement's type as ShareFetch / ShareAcknowledge carry it."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A batch a log read returned: its offsets, and whether its records are never delivered (a control
    batch, or a batch of an aborted transaction under read_committed): those are archived."""

    first_offset: int
    last_offset: int
    skip: bool = False


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """What ShareFetch's AcquiredRecords carries: offsets acquired together, with their delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """An acknowledgement: one type for every offset of the range, or one type per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_of(self, offset: int) -> int:
        return self.types[0] if len(self.types) == 1 else self.types[offset - self.first_offset]


class _Counted(Protocol):
    delivery_count: int


def acquired_ranges(records: Mapping[int, _Counted], acquired: list[int | range]) -> list[AcquiredRange]:
    """What an acquisition answers: runs of consecutive offsets with the same delivery count (one object
    per run, not per record). ``acquired`` holds offsets (their count is their record's) and ranges of new
    records (count 1), ascending."""
    out: list[AcquiredRange] = []
    run_first = run_last = run_count = -1
    for item in acquired:
        if type(item) is range:
            offset, count, last = item.start, 1, item.stop - 1
        else:
            offset = last = item
            count = records[offset].delivery_count
        if offset == run_last + 1 and count == run_count and run_first >= 0:
            run_last = last
            continue
        if run_first >= 0:
            out.append(AcquiredRange(run_first, run_last, run_count))
        run_first, run_last = offset, last
        run_count = count
    if run_first >= 0:
        out.append(AcquiredRange(run_first, run_last, run_count))
    return out


__all__ = ["AckBatch", "AckType", "AcquiredRange", "FetchedBatch", "acquired_ranges"]
