"""What is exchanged with a share partition (:mod:`tidelog.share.partition`): the batches a log read
offers it, the ranges a member acquired (ShareFetch's AcquiredRecords), and acknowledgements with their
types (ShareFetch / ShareAcknowledge)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


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


__all__ = ["AckBatch", "AckType", "AcquiredRange", "FetchedBatch"]
