"""Sparse per-segment indexes: offset -> file position, and timestamp -> offset.

File formats (big-endian, fixed-size entries, no header)::

    .index       relative_offset int32 | position int32           8 bytes per entry
    .timeindex   timestamp int64       | relative_offset int32    12 bytes per entry

``relative_offset`` is the offset minus the segment's base offset. Entries are strictly increasing in
offset (and, for the time index, in timestamp). The offset index gets one entry per
``index.interval.bytes`` of log (the first batch after the interval); a lookup finds the largest entry
at or below a target by binary search and the segment scans forward from that position.

Entries are kept in memory (``array``) for lookups and written to the file (unbuffered) before they
are added there, so a full disk fails the append that adds them and leaves file and memory alike; the
file is flushed (fsync) with its segment. An index that fails its sanity check on load is rebuilt from
the log by the loader. Not thread-safe: owned by its segment (loop-only, except flush/rebuild, which
run in the executor while the log is locked by its owner).
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class CorruptIndexError(Exception):
    """An index file does not pass its sanity check; rebuild it from the log."""


class _IndexFile:
    """Append-only file of fixed-size entries (shared plumbing of both indexes)."""

    ENTRY_SIZE = 0

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY_SIZE)
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the segment

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def __len__(self) -> int:
        raise NotImplementedError

    def _write(self, data: bytes) -> None:
        """Append ``data`` (one entry) to the file, before the entry is added in memory. Unbuffered,
        so a full disk fails here, never later; a partly written entry is cut off again."""
        view = memoryview(data)
        try:
            while view:
                n = self._file.write(view)
                if not n:
                    raise OSError("short write to an index file")
                view = view[n:]
        except OSError:
            os.ftruncate(self._file.fileno(), len(self) * self.ENTRY_SIZE)
            raise

    def drop_entries_from(self, count: int) -> None:
        """Keep only the first ``count`` entries (an append rolled back after a failed write)."""
        if count < len(self):
            self._drop_in_memory(count)
            os.ftruncate(self._file.fileno(), count * self.ENTRY_SIZE)

    def _drop_in_memory(self, count: int) -> None:
        raise NotImplementedError

    def _rewrite(self, entries: bytes) -> None:
        self._file.close()
        with open(self.path, "wb") as f:
            f.write(entries)
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115

    def flush(self) -> None:
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def rename(self, new_path: Path) -> None:
        os.replace(self.path, new_path)
        self.path = new_path

    @classmethod
    def _read_entries(cls, path: Path) -> bytes:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return b""
        if len(data) % cls.ENTRY_SIZE:
            raise CorruptIndexError(f"{path}: size {len(data)} is not a multiple of {cls.ENTRY_SIZE}")
        return data


class OffsetIndex(_IndexFile):
    """Sparse offset -> position index of one segment."""

    ENTRY_SIZE = _OFFSET_ENTRY.size

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int, *, load: bool = True) -> None:
        self._offsets = array("i")  # relative offsets
        self._positions = array("i")
        if load:
            data = self._read_entries(path)
            for rel, pos in _OFFSET_ENTRY.iter_unpack(data):
                self._offsets.append(rel)
                self._positions.append(pos)
        else:
            path.write_bytes(b"")
        super().__init__(path, base_offset, max_index_bytes)

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._offsets[-1] if self._offsets else self.base_offset

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self._offsets and rel <= self._offsets[-1]:
            return  # entries stay strictly increasing
        self._write(_OFFSET_ENTRY.pack(rel, position))
        self._offsets.append(rel)
        self._positions.append(position)

    def _drop_in_memory(self, count: int) -> None:
        del self._offsets[count:]
        del self._positions[count:]

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry at or below ``offset``; (base, 0) if there is none."""
        i = bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def position_floor(self, position: int) -> int:
        """The largest indexed file position at or below ``position`` (0 if none): a batch starts there."""
        i = bisect_right(self._positions, position) - 1
        return self._positions[i] if i >= 0 else 0

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        i = bisect_right(self._offsets, offset - self.base_offset - 1)
        if i == len(self._offsets):
            return
        del self._offsets[i:]
        del self._positions[i:]
        self._rewrite(b"".join(_OFFSET_ENTRY.pack(r, p) for r, p in zip(self._offsets, self._positions)))

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError if entries are not increasing or point past the log."""
        prev_rel, prev_pos = -1, -1
        for rel, pos in zip(self._offsets, self._positions):
            if rel <= prev_rel or pos < prev_pos or pos >= max(log_size, 1) or rel < 0:
                raise CorruptIndexError(f"{self.path}: entry ({rel}, {pos}) out of order or past the log")
            prev_rel, prev_pos = rel, pos


class TimeIndex(_IndexFile):
    """Sparse max-timestamp -> offset index of one segment."""

    ENTRY_SIZE = _TIME_ENTRY.size

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int, *, load: bool = True) -> None:
        self._timestamps = array("q")
        self._offsets = array("i")
        if load:
            data = self._read_entries(path)
            for ts, rel in _TIME_ENTRY.iter_unpack(data):
                self._timestamps.append(ts)
                self._offsets.append(rel)
        else:
            path.write_bytes(b"")
        super().__init__(path, base_offset, max_index_bytes)

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base offset) when empty."""
        if not self._timestamps:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry if ``timestamp`` is larger than the last one."""
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return
        rel = offset - self.base_offset
        if self._offsets and rel < self._offsets[-1]:
            return
        self._write(_TIME_ENTRY.pack(timestamp, rel))
        self._timestamps.append(timestamp)
        self._offsets.append(rel)

    def _drop_in_memory(self, count: int) -> None:
        del self._timestamps[count:]
        del self._offsets[count:]

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target; (-1, base) if none."""
        i = bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        keep = len(self._offsets)
        while keep and self._offsets[keep - 1] >= offset - self.base_offset:
            keep -= 1
        if keep == len(self._offsets):
            return
        del self._timestamps[keep:]
        del self._offsets[keep:]
        self._rewrite(b"".join(_TIME_ENTRY.pack(t, r) for t, r in zip(self._timestamps, self._offsets)))

    def sanity_check(self, next_offset: int) -> None:
        prev_ts, prev_rel = None, -1
        for ts, rel in zip(self._timestamps, self._offsets):
            if (prev_ts is not None and ts <= prev_ts) or rel < prev_rel or self.base_offset + rel >= max(
                next_offset, self.base_offset + 1
            ):
                raise CorruptIndexError(f"{self.path}: entry ({ts}, {rel}) out of order or past the log")
            prev_ts, prev_rel = ts, rel


__all__ = ["CorruptIndexError", "OffsetIndex", "TimeIndex"]
