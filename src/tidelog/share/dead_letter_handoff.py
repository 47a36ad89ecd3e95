"""A share partition's hand-off of records to its group's dead-letter queue (KIP-1191; what
:class:`~tidelog.share.partition.SharePartition` does with ARCHIVING records).

A record REJECTed, or whose delivery count reached the limit (a RELEASE, a lock expiry, its member
leaving), is ARCHIVING once that state is written, when the group has a DLQ (:meth:`DeadLetterHandoff.enabled`).
:meth:`DeadLetterHandoff.start` then sends the ARCHIVING offsets to the DLQ (:mod:`tidelog.share.dead_letter`)
in runs of consecutive offsets with one delivery count and one reason, each in a task of the share
partition; when a run's write ends, written or not (Kafka: "proceeding to ARCHIVED regardless"), the
share partition archives that run (its ``archive`` callback: ARCHIVING -> ARCHIVED, written through the
persister). The reason (``__dlq.errors.message``) is the client's for a REJECT, the delivery count's for
the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from tidelog.coordinator.share.persister import SharePartitionKey
from tidelog.share.dead_letter import (
    CLIENT_REJECT,
    DELIVERY_COUNT_EXCEEDED,
    DeadLetters,
    DeadLetterSink,
    dead_letter_runs,
)
from tidelog.share.deliveries import AckBatch, AckType
from tidelog.share.stats import ShareStats


class DeadLetterHandoff:
    """The DLQ side of one share partition: whether its group has a DLQ, and the writes of its ARCHIVING runs."""

    def __init__(self, sink: DeadLetterSink | None, key: SharePartitionKey, topic: str, stats: ShareStats,
                 archive: Callable[[int, int], Awaitable[None]],
                 spawn: Callable[[Coroutine[Any, Any, None]], None]) -> None:
        #: the broker's DLQ writer (None: no DLQ, records are archived at once)
        self.sink = sink
        self.key = key
        self.topic = topic
        self.stats = stats
        #: archives the ARCHIVING records of an offset range once their DLQ write has ended
        self._archive = archive
        #: runs a coroutine as one of the share partition's tasks (awaited at its close)
        self._spawn = spawn

    def enabled(self) -> bool:
        """Whether REJECTed and over-the-limit records go to a DLQ (ARCHIVING) rather than straight to ARCHIVED."""
        return self.sink is not None and self.sink.enabled(self.key.group_id)

    def start(self, archiving: dict[int, int], reason_of: Callable[[int], str]) -> None:
        """Send the ARCHIVING offsets (with their delivery counts) to the DLQ, a task per run."""
        key = self.key
        for letters in dead_letter_runs(key.group_id, self.topic, key.partition, archiving, reason_of):
            self._spawn(self._hand_off(letters))

    async def _hand_off(self, letters: DeadLetters) -> None:
        if self.sink is not None:
            if await self.sink.send(letters) is None:
                self.stats.dead_lettered += letters.last_offset - letters.first_offset + 1
            else:
                self.stats.dead_letter_failures += 1
        await self._archive(letters.first_offset, letters.last_offset)


def reason_by_count(counts: dict[int, int], limit: int) -> Callable[[int], str]:
    """The reason of records found ARCHIVING (a restart): the delivery count's at the limit, else the client's."""
    return lambda offset: DELIVERY_COUNT_EXCEEDED if counts[offset] >= limit else CLIENT_REJECT


def reason_by_ack(batches: list[AckBatch]) -> Callable[[int], str]:
    """The reason of acknowledged records: a RELEASE that reached the limit is the delivery count's, a
    REJECT the client's (Kafka's causes)."""
    def reason(offset: int) -> str:
        for b in batches:
            if b.first_offset <= offset <= b.last_offset:
                return DELIVERY_COUNT_EXCEEDED if b.type_of(offset) == AckType.RELEASE else CLIENT_REJECT
        return CLIENT_REJECT
    return reason


def reason_delivery_count(_offset: int) -> str:
    """The reason of records released at the limit (a lock expiry, a member leaving)."""
    return DELIVERY_COUNT_EXCEEDED


__all__ = ["DeadLetterHandoff", "reason_by_ack", "reason_by_count", "reason_delivery_count"]
