"""A share partition's state as the share coordinator keeps it, and how state batches combine.

:class:`ShareGroupOffset` is the state a snapshot holds (Kafka's ``ShareGroupOffset``): the epochs, the
start offset, the delivery-complete count and the state batches. An update is folded onto it with
:meth:`ShareGroupOffset.merge`; the batches combine as Kafka's ``PersisterStateBatchCombiner`` does
(:func:`combine_batches`):

1. a newer batch wins over the offsets of older batches it overlaps (the older ones are cut around it);
2. offsets below the start offset are dropped (a batch straddling it is trimmed);
3. neighbouring batches with the same delivery state and count become one.

The result is sorted by first offset and has no overlaps. Pure; immutable values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from tidelog.coordinator.share.persister import StateBatch
from tidelog.coordinator.share.records import ShareValue


def _cut(existing: list[StateBatch], new: StateBatch) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in existing:
        if b.last_offset < new.first_offset or b.first_offset > new.last_offset:
            out.append(b)
            continue
        if b.first_offset < new.first_offset:
            out.append(dataclasses.replace(b, last_offset=new.first_offset - 1))
        if b.last_offset > new.last_offset:
            out.append(dataclasses.replace(b, first_offset=new.last_offset + 1))
    out.append(new)
    return out


def combine_batches(current: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
                    ) -> tuple[StateBatch, ...]:
    """Rules 1-3 (``start_offset`` -1: nothing is dropped)."""
    batches = list(current)
    for b in new:
        if b.last_offset < b.first_offset:
            continue
        batches = _cut(batches, b)
    if start_offset >= 0:
        batches = [b if b.first_offset >= start_offset else dataclasses.replace(b, first_offset=start_offset)
                   for b in batches if b.last_offset >= start_offset]
    batches.sort(key=lambda b: b.first_offset)
    merged: list[StateBatch] = []
    for b in batches:
        prev = merged[-1] if merged else None
        if (prev is not None and prev.last_offset + 1 == b.first_offset and prev.delivery_state == b.delivery_state
                and prev.delivery_count == b.delivery_count):
            merged[-1] = dataclasses.replace(prev, last_offset=b.last_offset)
        else:
            merged.append(b)
    return tuple(merged)


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """The whole state of one share partition (what a ShareSnapshot holds)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1
    create_timestamp: int = -1
    write_timestamp: int = -1

    @classmethod
    def from_snapshot(cls, v: ShareValue) -> ShareGroupOffset:
        return cls(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset, v.state_batches,
                   v.delivery_complete_count, v.create_timestamp, v.write_timestamp)

    def to_snapshot(self) -> ShareValue:
        return ShareValue(self.snapshot_epoch, self.leader_epoch, self.start_offset, self.state_batches,
                          self.delivery_complete_count, self.state_epoch, self.create_timestamp, self.write_timestamp)

    def merge(self, update: ShareValue) -> ShareGroupOffset:
        """An update folded on (Kafka's ``ShareCoordinatorShard.merge``): -1 start offset, leader epoch or
        delivery-complete count keep the current ones; the state epoch is not in an update."""
        start = self.start_offset if update.start_offset == -1 else update.start_offset
        return dataclasses.replace(
            self, start_offset=start,
            leader_epoch=self.leader_epoch if update.leader_epoch == -1 else update.leader_epoch,
            delivery_complete_count=(self.delivery_complete_count if update.delivery_complete_count == -1
                                     else update.delivery_complete_count),
            state_batches=combine_batches(self.state_batches, update.state_batches, start))


__all__ = ["ShareGroupOffset", "combine_batches"]
