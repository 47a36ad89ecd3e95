"""The aborted-transaction index of one segment (Kafka's ``TransactionIndex``, ``.txnindex``).

A read_committed consumer must skip the records of aborted transactions. Every transaction whose ABORT
marker lands in a segment gets an entry in that segment's index; a fetch collects the entries that
overlap what it returns and sends them as ``aborted_transactions``.

File layout (big-endian, 34 bytes per entry, appended as markers are written; Kafka's format)::

    version              int16   0
    producer_id          int64
    first_offset         int64   the transaction's first offset in this partition
    last_offset          int64   the offset of its ABORT marker
    last_stable_offset   int64   the partition's last stable offset once the marker was written

The file is created with the first entry (most segments have none). A partial entry at the end (a torn
write) is dropped when the file is opened; entries are kept in memory too (an index is small).
Loop-only, not thread-safe; :meth:`flush` may run in an executor.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from pathlib import Path

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._file: io.FileIO | None = None
        if path.exists():
            self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        whole = len(data) - len(data) % ENTRY_SIZE
        for pos in range(0, whole, ENTRY_SIZE):
            version, producer_id, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version != VERSION:
                whole = pos  # unreadable from here on: keep what came before
                break
            self.entries.append(AbortedTxn(producer_id, first, last, lso))
        if whole != len(data):
            with open(self.path, "r+b") as f:
                f.truncate(whole)

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction (markers arrive in offset order)."""
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {txn.last_offset} is not after "
                             f"{self.entries[-1].last_offset}")
        if self._file is None:
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - kept open while the segment is
        self._file.write(_ENTRY.pack(VERSION, txn.producer_id, txn.first_offset, txn.last_offset,
                                     txn.last_stable_offset))
        self.entries.append(txn)

    def contains(self, txn: AbortedTxn) -> bool:
        return any(e.producer_id == txn.producer_id and e.last_offset == txn.last_offset for e in self.entries)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound): ``last_offset >= fetch_offset`` and
        ``first_offset < upper_bound``. The flag says the search is complete (an entry ends at or past
        ``upper_bound``: later segments cannot add any)."""
        found = [e for e in self.entries if e.last_offset >= fetch_offset and e.first_offset < upper_bound]
        complete = any(e.last_offset >= upper_bound for e in self.entries)
        return found, complete

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (the log is cut there)."""
        kept = [e for e in self.entries if e.last_offset < offset]
        if len(kept) == len(self.entries):
            return
        self.entries = kept
        self.close()
        if kept:
            with open(self.path, "r+b") as f:
                f.truncate(len(kept) * ENTRY_SIZE)
        else:
            self.path.unlink(missing_ok=True)

    def reset(self) -> None:
        """Forget every entry and the file (recovery rebuilds the index)."""
        self.entries = []
        self.close()
        self.path.unlink(missing_ok=True)

    def flush(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def rename(self, path: Path) -> None:
        self.close()
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path


__all__ = ["ENTRY_SIZE", "AbortedTxn", "TransactionIndex"]
