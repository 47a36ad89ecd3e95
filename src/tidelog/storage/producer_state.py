"""Producer state of one partition (Kafka's ``ProducerStateManager``): idempotence and transactions.

For every producer id that wrote to the partition the manager keeps a :class:`ProducerStateEntry`:
its current epoch, the metadata of its last 5 data batches (to answer retries with the original
offsets), the timestamp of its last write (for expiry), the epoch of the last transaction coordinator
that wrote a marker for it, and the first offset of its ongoing transaction.

Rules for a batch a client produces (:meth:`ProducerStateManager.prepare`; Kafka's
``ProducerAppendInfo``, origin CLIENT), checked in this order:

  Rule 0  ``producer_id == -1`` (a non-idempotent producer): nothing is checked or recorded.
  Rule 1  Duplicate: the epoch is the entry's epoch and (first seq, last seq) equals one of the last 5
          batches → the append is a duplicate; the log writes nothing and answers with that batch's
          original first/last offsets.
  Rule 2  Epoch older than the entry's → ``INVALID_PRODUCER_EPOCH``. (Kafka answered
          ``PRODUCER_FENCED`` here before 2.7; the produce path now returns ``INVALID_PRODUCER_EPOCH``
          so that a transactional producer can abort and retry.)
  Rule 3  Unknown producer id (no entry, e.g. its state expired or its batches were deleted by
          retention or DeleteRecords): any epoch and any sequence is accepted. This is Kafka since 2.5
          (KIP-360): the broker no longer answers ``UNKNOWN_PRODUCER_ID`` for a non-zero first
          sequence. (Kafka's transactions-v2 check "a verified producer with no state must start at
          0" needs the coordinator's verification state and belongs to the transactions work.)
  Rule 4  Newer epoch (an epoch bump): the first sequence must be 0 → else
          ``OUT_OF_ORDER_SEQUENCE_NUMBER``.
  Rule 5  Same epoch: the first sequence must follow the last one (``last + 1``; after 2147483647
          comes 0; an entry without batches expects 0) → else ``OUT_OF_ORDER_SEQUENCE_NUMBER``. This
          also covers a duplicate older than the last 5 batches: like Kafka, it gets
          ``OUT_OF_ORDER_SEQUENCE_NUMBER`` (not ``DUPLICATE_SEQUENCE_NUMBER``).
  Rule 6  A non-transactional data batch while the producer has an ongoing transaction →
          ``INVALID_TXN_STATE``. A transactional batch with none ongoing starts one at its first offset.
  Rule 7  A control batch (a COMMIT/ABORT marker, written for the transaction coordinator) skips the
          sequence rules: its epoch must not be older than the entry's (``INVALID_PRODUCER_EPOCH``) and
          its coordinator epoch not older than the entry's (``TRANSACTION_COORDINATOR_FENCED``). It ends
          the ongoing transaction. A control batch without records (emptied by compaction) only
          keeps its epoch when read back from the log: compaction keeps a producer's last marker
          (emptied) for that epoch once its data is gone (KIP-890 bumps the epoch in markers).
  Rule 8  A batch a coordinator writes (``from_client=False``: the transactional offset commits of the
          group coordinator, with ``NO_SEQUENCE``) is checked for its epoch only (rules 2 and 6): no
          duplicate detection, no sequence rule, as Kafka's ``AppendOrigin.COORDINATOR``.

Validate, then apply: :meth:`~ProducerStateManager.prepare` reads the state and returns a
:class:`BatchAppend`; only :meth:`~ProducerStateManager.complete`, called once the log append has
succeeded with the offsets the log assigned, changes it. An append that fails leaves the state as it
was. :meth:`~ProducerStateManager.replay` applies batches read back from the log (recovery, follower
appends) without validation: log data is trusted. A new epoch forgets the old epoch's batches.

Snapshot file ``<20-digit offset>.snapshot`` (big-endian; the state after every batch below
``offset``; written atomically)::

    version                     int16    1
    crc                         uint32   CRC32C of every byte after this field
    producer_count              int32
    entry (producer_count times), ordered by producer id:
      producer_id               int64
      producer_epoch            int16
      coordinator_epoch         int32    -1 = none
      last_timestamp            int64    -1 = none
      current_txn_first_offset  int64    -1 = no ongoing transaction
      batch_count               int8     0..5
      batch (batch_count times), oldest first:
        first_seq               int32
        last_seq                int32
        first_offset            int64
        offset_delta            int32    last_offset - first_offset
        max_timestamp           int64

Unlike Kafka's snapshot (which keeps only the last batch of each producer), all retained batches are
written, so duplicate detection survives a restart and a loaded snapshot equals the state it came from.
A snapshot with an unknown version, a wrong CRC or a bad length is corrupt: loading skips and deletes it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    EndTransactionMarker,
    RecordBatchView,
    decode_control_batch,
)
from tidelog.records.crc import crc32c
from tidelog.storage.checkpoints import write_atomically
from tidelog.storage.files import SNAPSHOT_SUFFIX, parse_offset_file, snapshot_file

BATCHES_TO_RETAIN = 5
SNAPSHOT_VERSION = 1
DEFAULT_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms (see tidelog.config)
_INT32_MAX = (1 << 31) - 1
_NO_COORDINATOR_EPOCH = -1
_NO_TIMESTAMP = -1

_HEADER = struct.Struct(">hIi")  # version, crc, producer_count
_CRC_START = 6  # the CRC covers producer_count and the entries
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iiqiq")


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Sequence and offset range of one appended data batch. Immutable."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    """What the partition remembers about one producer id. Immutable: every change makes a new entry."""

    producer_id: int
    producer_epoch: int
    batches: tuple[BatchMetadata, ...] = ()  # the last BATCHES_TO_RETAIN of this epoch, oldest first
    last_timestamp: int = _NO_TIMESTAMP
    coordinator_epoch: int = _NO_COORDINATOR_EPOCH
    current_txn_first_offset: int | None = None

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended: [first_offset, last_offset (the marker)]. Immutable."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class BatchAppend:
    """A validated batch waiting for its log append (or a duplicate that must not be written). Immutable.

    ``previous`` is the entry the batch was validated against; :meth:`ProducerStateManager.complete`
    refuses the append if the producer's entry changed in between.
    """

    producer_id: int
    producer_epoch: int
    first_seq: int
    last_seq: int
    max_timestamp: int
    is_transactional: bool
    is_control: bool = False
    marker: EndTransactionMarker | None = None  # None in a control batch: no marker, nothing to apply
    duplicate: BatchMetadata | None = None
    previous: ProducerStateEntry | None = None

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate is not None


class CorruptSnapshotError(Exception):
    """A producer-state snapshot cannot be read: unknown version, bad CRC or bad length."""


class ProducerStateManager:
    """Producer ids → :class:`ProducerStateEntry` of one partition, plus its snapshot files.

    Loop-only, not thread-safe. Exception: the owner may run :meth:`take_snapshot` in an executor; it
    copies the (immutable) entries in one step before encoding and writing them.
    """

    def __init__(self, directory: Path, *, expiration_ms: int = DEFAULT_EXPIRATION_MS) -> None:
        self.directory = directory
        self.expiration_ms = expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing_txns: dict[int, int] = {}  # producer id -> first offset of its transaction

    # -------------------------------------------------------------------------------- queries

    @property
    def producer_count(self) -> int:
        return len(self._producers)

    @property
    def active_producers(self) -> Mapping[int, ProducerStateEntry]:
        """A read-only live view of producer id → entry."""
        return MappingProxyType(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id → first offset of its ongoing transaction, ordered by that offset."""
        return dict(sorted(self._ongoing_txns.items(), key=lambda item: item[1]))

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The last stable offset once ``completed`` ended (Kafka's ``lastStableOffset``): the first
        offset of another producer's open transaction, else just after the marker."""
        others = [first for pid, first in self._ongoing_txns.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def first_undecided_offset(self) -> int | None:
        """First offset of the oldest transaction without a marker yet (None: no open transaction)."""
        return min(self._ongoing_txns.values(), default=None)

    # ------------------------------------------------------------------------ validate, apply

    def prepare(self, view: RecordBatchView, *, from_client: bool = True) -> BatchAppend:
        """Validate a client's batch against the current state (rules at the top); changes nothing.
        ``from_client=False``: a coordinator's batch (rule 8).

        Raises :class:`KafkaError` with ``INVALID_PRODUCER_EPOCH``, ``OUT_OF_ORDER_SEQUENCE_NUMBER``,
        ``INVALID_TXN_STATE`` or ``TRANSACTION_COORDINATOR_FENCED``. The returned append has
        ``duplicate`` set when the batch was already written: do not append it, answer with
        ``duplicate.first_offset`` / ``duplicate.last_offset``.
        """
        producer_id = view.producer_id
        if producer_id == NO_PRODUCER_ID:
            return _describe(view, None, None)
        entry = self._producers.get(producer_id)
        if view.is_control_batch:
            marker = decode_control_batch(view)
            if entry is not None and marker is not None:
                _check_epoch(entry, view.producer_epoch)
                if marker.coordinator_epoch < entry.coordinator_epoch:
                    raise KafkaError(
                        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                        f"marker for producer {producer_id} has coordinator epoch "
                        f"{marker.coordinator_epoch}, older than {entry.coordinator_epoch}")
            return _describe(view, marker, entry)
        append = _describe(view, None, entry)
        if entry is None:
            return append  # rule 3
        if from_client:
            duplicate = entry.find_duplicate(append.producer_epoch, append.first_seq, append.last_seq)
            if duplicate is not None:
                return replace(append, duplicate=duplicate)
        _check_epoch(entry, append.producer_epoch)
        if from_client:
            _check_sequence(entry, append.producer_epoch, append.first_seq)
        if entry.current_txn_first_offset is not None and not append.is_transactional:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"non-transactional batch from producer {producer_id} during its transaction")
        return append

    def complete(self, append: BatchAppend, first_offset: int, last_offset: int) -> CompletedTxn | None:
        """Apply a prepared append once the log has written it at [first_offset, last_offset].

        Returns the transaction a marker ended (None otherwise). ``ValueError`` for a duplicate, or
        if the producer's state changed since :meth:`prepare` (prepare again).
        """
        if append.producer_id == NO_PRODUCER_ID or (append.is_control and append.marker is None):
            return None
        if append.duplicate is not None:
            raise ValueError(f"batch of producer {append.producer_id} is a duplicate; it was not written")
        if self._producers.get(append.producer_id) is not append.previous:
            raise ValueError(f"state of producer {append.producer_id} changed since the batch was prepared")
        return self._apply(append, first_offset, last_offset)

    def replay(self, view: RecordBatchView) -> CompletedTxn | None:
        """Apply a batch read back from the log (recovery, replication): no checks, control batches too.

        Returns the transaction a marker ended (None otherwise). Only a control batch whose record is
        malformed raises (``InvalidRecordError``, from the record layer).
        """
        if view.producer_id == NO_PRODUCER_ID:
            return None
        marker = None
        if view.is_control_batch:
            marker = decode_control_batch(view)
            if marker is None:
                if view.record_count == 0:
                    self._note_epoch(view.producer_id, view.producer_epoch, view.max_timestamp)
                return None
        append = _describe(view, marker, self._producers.get(view.producer_id))
        return self._apply(append, view.base_offset, view.last_offset)

    def _note_epoch(self, producer_id: int, producer_epoch: int, timestamp: int) -> None:
        """A marker emptied by compaction still carries its producer's epoch (kept for fencing)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            self._put(ProducerStateEntry(producer_id, producer_epoch, last_timestamp=timestamp))
        elif producer_epoch > entry.producer_epoch:
            self._put(replace(entry, producer_epoch=producer_epoch, batches=()))

    def _apply(self, append: BatchAppend, first_offset: int, last_offset: int) -> CompletedTxn | None:
        producer_id = append.producer_id
        previous = self._producers.get(producer_id)
        batches: tuple[BatchMetadata, ...] = ()
        coordinator_epoch, txn_first_offset = _NO_COORDINATOR_EPOCH, None
        if previous is not None:
            if previous.producer_epoch == append.producer_epoch:
                batches = previous.batches
            coordinator_epoch = previous.coordinator_epoch
            txn_first_offset = previous.current_txn_first_offset
        completed = None
        if append.marker is None:
            batch = BatchMetadata(append.first_seq, append.last_seq, first_offset, last_offset,
                                  append.max_timestamp)
            batches = (*batches[1 - BATCHES_TO_RETAIN :], batch)
            if append.is_transactional and txn_first_offset is None:
                txn_first_offset = first_offset
        else:
            if txn_first_offset is not None:
                is_aborted = not append.marker.is_commit
                completed = CompletedTxn(producer_id, txn_first_offset, first_offset, is_aborted)
            coordinator_epoch = append.marker.coordinator_epoch
            txn_first_offset = None
        self._put(ProducerStateEntry(producer_id, append.producer_epoch, batches, append.max_timestamp,
                                     coordinator_epoch, txn_first_offset))
        return completed

    def _put(self, entry: ProducerStateEntry) -> None:
        self._producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is None:
            self._ongoing_txns.pop(entry.producer_id, None)
        else:
            self._ongoing_txns[entry.producer_id] = entry.current_txn_first_offset

    # -------------------------------------------------------------------------------- expiry

    def remove_expired(self, now_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` or more, unless a transaction of theirs is open.

        Returns how many were removed. (Kafka compares the producer's last batch max timestamp, a
        client timestamp, with the broker's clock: so do we.)
        """
        expired = [
            producer_id for producer_id, entry in self._producers.items()
            if entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.expiration_ms
        ]
        for producer_id in expired:
            del self._producers[producer_id]
        return len(expired)

    # ----------------------------------------------------------------------------- snapshots

    def take_snapshot(self, offset: int) -> Path:
        """Write the current state as ``<offset>.snapshot`` (the state after every batch below offset)."""
        entries = tuple(self._producers.values())
        path = snapshot_file(self.directory, offset)
        write_atomically(path, encode_snapshot(entries))
        return path

    def load(self, log_start_offset: int, log_end_offset: int) -> int:
        """Replace the state with the latest readable snapshot in [log_start_offset, log_end_offset].

        Snapshots above ``log_end_offset`` (left by a truncation) or below ``log_start_offset`` (their
        log is gone) and corrupt ones are deleted. Returns the offset from which the caller must
        :meth:`replay` the log: the snapshot's offset, or ``log_start_offset`` when none was usable
        (then the state is empty).
        """
        self._producers.clear()
        self._ongoing_txns.clear()
        for offset in reversed(self.snapshot_offsets()):
            path = snapshot_file(self.directory, offset)
            if offset > log_end_offset or offset < log_start_offset:
                path.unlink(missing_ok=True)
                continue
            try:
                entries = decode_snapshot(path.read_bytes())
            except CorruptSnapshotError:
                path.unlink(missing_ok=True)
                continue
            for entry in entries:
                self._put(entry)
            return offset
        return log_start_offset

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files in the directory, ascending."""
        offsets = []
        for path in self.directory.iterdir():
            parsed = parse_offset_file(path)
            if parsed is not None and parsed[1] == SNAPSHOT_SUFFIX:
                offsets.append(parsed[0])
        return sorted(offsets)

    def latest_snapshot_offset(self) -> int | None:
        offsets = self.snapshot_offsets()
        return offsets[-1] if offsets else None

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete the snapshots below ``offset`` (segments below it were deleted)."""
        for snapshot_offset in self.snapshot_offsets():
            if snapshot_offset < offset:
                snapshot_file(self.directory, snapshot_offset).unlink(missing_ok=True)

    def truncate_after(self, offset: int) -> None:
        """Delete the snapshots above ``offset`` (the log was truncated to it). The in-memory state is
        not touched: follow with :meth:`load` and a replay from the offset it returns."""
        for snapshot_offset in self.snapshot_offsets():
            if snapshot_offset > offset:
                snapshot_file(self.directory, snapshot_offset).unlink(missing_ok=True)


# ------------------------------------------------------------------------------------ helpers


def _describe(view: RecordBatchView, marker: EndTransactionMarker | None,
              previous: ProducerStateEntry | None) -> BatchAppend:
    return BatchAppend(view.producer_id, view.producer_epoch, view.base_sequence, view.last_sequence,
                       view.max_timestamp, view.is_transactional, view.is_control_batch, marker,
                       previous=previous)


def _check_epoch(entry: ProducerStateEntry, producer_epoch: int) -> None:
    if producer_epoch < entry.producer_epoch:
        raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                         f"producer {entry.producer_id} has epoch {producer_epoch}, "
                         f"older than the current {entry.producer_epoch}")


def _check_sequence(entry: ProducerStateEntry, producer_epoch: int, first_seq: int) -> None:
    if entry.producer_epoch == NO_PRODUCER_EPOCH:
        return  # no epoch known (state rebuilt from batches without one): accept any sequence
    if producer_epoch != entry.producer_epoch:
        if first_seq != 0:
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {entry.producer_id} starts epoch {producer_epoch} at sequence "
                             f"{first_seq}, expected 0")
    elif not in_sequence(entry.last_seq, first_seq):
        raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                         f"producer {entry.producer_id} sent sequence {first_seq} after {entry.last_seq}")


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether ``next_seq`` directly follows ``last_seq`` (int32 sequences wrap to 0)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The snapshot file's bytes (format at the top of the module)."""
    ordered = sorted(entries, key=lambda e: e.producer_id)
    parts = [struct.pack(">i", len(ordered))]
    for entry in ordered:
        txn = -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
        parts.append(_ENTRY.pack(entry.producer_id, entry.producer_epoch, entry.coordinator_epoch,
                                 entry.last_timestamp, txn, len(entry.batches)))
        parts.extend(_BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.offset_delta, b.max_timestamp)
                     for b in entry.batches)
    body = b"".join(parts)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Entries of a snapshot file; :class:`CorruptSnapshotError` if it is not a valid one."""
    try:
        version, crc, count = _HEADER.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise CorruptSnapshotError(f"unknown snapshot version {version}")
        if crc32c(memoryview(data)[_CRC_START:]) != crc:
            raise CorruptSnapshotError("snapshot CRC does not match")
        pos, entries = _HEADER.size, []
        for _ in range(count):
            producer_id, epoch, coordinator_epoch, last_timestamp, txn, batch_count = _ENTRY.unpack_from(
                data, pos)
            pos += _ENTRY.size
            if not 0 <= batch_count <= BATCHES_TO_RETAIN:
                raise CorruptSnapshotError(f"producer {producer_id} has {batch_count} batches")
            batches = []
            for _ in range(batch_count):
                first_seq, last_seq, first_offset, delta, max_timestamp = _BATCH.unpack_from(data, pos)
                pos += _BATCH.size
                batches.append(BatchMetadata(first_seq, last_seq, first_offset, first_offset + delta,
                                             max_timestamp))
            entries.append(ProducerStateEntry(producer_id, epoch, tuple(batches), last_timestamp,
                                              coordinator_epoch, None if txn < 0 else txn))
    except struct.error as e:
        raise CorruptSnapshotError(f"snapshot is truncated ({e})") from None
    if pos != len(data):
        raise CorruptSnapshotError(f"snapshot has {len(data) - pos} trailing bytes")
    return entries


__all__ = [
    "BATCHES_TO_RETAIN",
    "BatchAppend",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptSnapshotError",
    "ProducerStateEntry",
    "ProducerStateManager",
    "decode_snapshot",
    "encode_snapshot",
    "in_sequence",
]
