"""What compaction does with transactions (Kafka's ``CleanedTransactionMetadata``).

A compaction pass reads batches in offset order and, with the aborted transactions collected from the
aborted-transaction indexes over its range, keeps track of the transactions it is inside of:

1. **Aborted data goes.** A transactional batch of a producer whose aborted transaction has started
   (by the index's first offset) and not yet reached its ABORT marker is aborted: its records are
   removed whatever their keys, and it never enters the offset map. Committed transactional
   records are compacted like any other.
2. **Markers stay while their data does.** An ABORT marker is kept, and its index entry written to
   the cleaned segment, while this pass saw batches of its transaction; a COMMIT marker while this
   pass saw batches of its producer since the previous marker. Otherwise the marker *may be
   discarded*: like a tombstone it first gets a delete horizon (``now + delete.retention.ms``), and a
   pass after the horizon removes it (keeping an empty batch only where the producer's state needs
   it). A control batch already emptied may be discarded at once.

Loop-free, pure bookkeeping; one instance per pass (and one for building its offset map). Not
thread-safe.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from tidelog.records import RecordBatchView, RecordsError
from tidelog.records.control import ControlRecordType, parse_control_record_type
from tidelog.storage.txn_index import AbortedTxn


@dataclass(slots=True)
class _OpenAborted:
    txn: AbortedTxn
    seen_data: bool = False


class CleanedTransactions:
    def __init__(self, aborted: tuple[AbortedTxn, ...] | list[AbortedTxn] = ()) -> None:
        self._pending = [(t.first_offset, i, t) for i, t in enumerate(aborted)]
        heapq.heapify(self._pending)
        self._aborted: dict[int, _OpenAborted] = {}  # producer id -> its aborted transaction in progress
        self._committed: set[int] = set()  # producers with transactional data seen since their last marker
        #: Aborted transactions whose ABORT marker was kept, in marker order (rule 2): the cleaned index.
        self.kept_index: list[AbortedTxn] = []

    def _start_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, _, txn = heapq.heappop(self._pending)
            self._aborted.setdefault(txn.producer_id, _OpenAborted(txn))

    def on_batch(self, view: RecordBatchView) -> bool:
        """A data batch was read; True if it belongs to an aborted transaction (rule 1)."""
        self._start_up_to(view.last_offset)
        if not view.is_transactional:
            return False
        open_aborted = self._aborted.get(view.producer_id)
        if open_aborted is not None:
            open_aborted.seen_data = True
            return True
        self._committed.add(view.producer_id)
        return False

    def on_control_batch(self, view: RecordBatchView) -> bool:
        """A control batch was read; True if it may be discarded (rule 2)."""
        self._start_up_to(view.last_offset)
        try:
            record = next(iter(view.records()), None)
        except RecordsError:
            return False
        if record is None:
            return True  # emptied by an earlier pass
        try:
            control_type = parse_control_record_type(record.key)
        except RecordsError:
            return False
        producer_id = view.producer_id
        if control_type is ControlRecordType.ABORT:
            open_aborted = self._aborted.pop(producer_id, None)
            if open_aborted is not None and open_aborted.seen_data:
                self.kept_index.append(open_aborted.txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if producer_id in self._committed:
                self._committed.discard(producer_id)
                return False
            return True
        return False


__all__ = ["CleanedTransactions"]
