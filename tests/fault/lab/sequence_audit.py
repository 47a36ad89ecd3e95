"""What the producers' sequence numbers on disk say about duplicates (a fault run's checker, part 2).

The history checker (:mod:`tests.fault.lab.history`) sees values; the log's batches also carry who
wrote each record: producer id, producer epoch and sequence number. Two facts follow from them:

* The broker's promise (idempotence): a batch retried with the same producer id, epoch and sequence
  is written once. :func:`repeated_sequences` finds any (producer id, epoch, sequence) that the log
  holds twice: a retry the broker failed to recognise, always a violation.
* A value written twice under *different epochs of one producer id* was sent again by the client
  after it bumped its epoch and renumbered what it still held. The broker cannot recognise such a
  send (its sequence starts again at 0 in the new epoch). librdkafka does this when a pipelined
  request fails with OUT_OF_ORDER_SEQUENCE_NUMBER because the one before it failed: the bump
  renumbers messages of other partitions that were possibly written (e.g. answered
  NOT_ENOUGH_REPLICAS_AFTER_APPEND) -- https://github.com/confluentinc/librdkafka/issues/4953, open
  in librdkafka 2.16; Apache Kafka's brokers see the same. :func:`locate` tells these apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tidelog.records.batch import RecordBatchView


@dataclass(frozen=True)
class Copy:
    """One record of a value as it lies in the log."""

    partition: int
    offset: int
    producer_id: int
    producer_epoch: int
    sequence: int
    leader_epoch: int

    def describe(self) -> str:
        return (f"p{self.partition}@{self.offset} (producer {self.producer_id} epoch {self.producer_epoch} "
                f"seq {self.sequence}, leader epoch {self.leader_epoch})")


def records(partition: int, batches: Iterable[bytes]) -> Iterable[tuple[Copy, bytes | None]]:
    """Every data record of a partition's batches with its value (control batches skipped)."""
    for data in batches:
        batch = RecordBatchView(data)
        if batch.is_control_batch:
            continue
        for i, record in enumerate(batch.records()):
            sequence = batch.base_sequence + i if batch.producer_id >= 0 else -1
            yield Copy(partition, record.offset, batch.producer_id, batch.producer_epoch, sequence,
                       batch.partition_leader_epoch), record.value


def repeated_sequences(partition: int, batches: Iterable[bytes]) -> list[str]:
    """(producer id, epoch, sequence) triples the partition's log holds more than once."""
    seen: dict[tuple[int, int, int], int] = {}
    problems = []
    for copy, _ in records(partition, batches):
        if copy.producer_id < 0:
            continue
        key = (copy.producer_id, copy.producer_epoch, copy.sequence)
        first = seen.setdefault(key, copy.offset)
        if first != copy.offset:
            problems.append(f"p{partition}: producer {key[0]} epoch {key[1]} seq {key[2]} written twice, "
                            f"at offsets {first} and {copy.offset} (a retry the broker did not recognise)")
    return problems


def locate(values: Iterable[str], logs: dict[int, list[bytes]]) -> dict[str, list[Copy]]:
    """Where each of ``values`` lies: partition -> its batches in ``logs``."""
    wanted = {v.encode(): v for v in values}
    found: dict[str, list[Copy]] = {v: [] for v in wanted.values()}
    for partition, batches in sorted(logs.items()):
        for copy, value in records(partition, batches):
            if value is not None and bytes(value) in wanted:
                found[wanted[bytes(value)]].append(copy)
    return found


def resent_after_epoch_bump(copies: list[Copy]) -> bool:
    """Whether the copies of a value are one producer's sends under different epochs (the client's
    re-send after an epoch bump, see the module docstring), not a retry the broker let through."""
    return (len(copies) > 1 and len({c.producer_id for c in copies}) == 1 and copies[0].producer_id >= 0
            and len({c.producer_epoch for c in copies}) == len(copies))


__all__ = ["Copy", "locate", "records", "repeated_sequences", "resent_after_epoch_bump"]
