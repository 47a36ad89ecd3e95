"""One log segment: a ``.log`` file of record batches plus its ``.index``, ``.timeindex`` and (when a
transaction aborted in it) ``.txnindex``.

The ``.log`` file holds magic-v2 record batches back to back, exactly as appended (after the broker
assigned their offsets)::

    batch := base_offset int64 | batch_length int32 | (batch_length bytes: leader epoch, magic, crc ...)

so a batch occupies ``12 + batch_length`` bytes and the next batch starts right after it. The segment
is named by its base offset (the first offset it may hold). Every offset in the segment is
``>= base_offset`` and ``< next_offset``.

Reads return :class:`FileSlice` objects (file, position, size) covering whole batches, which the
server sends with ``sendfile`` without copying through Python. A slice keeps the file open
(:class:`SegmentFile`): closing or deleting the segment closes the descriptor only once every slice
read from it is released, so a response built before a deletion is still sent whole.

Concurrency: loop-only, not thread-safe; ``flush()`` may run in an executor while the owner does not
truncate or close the segment.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tidelog.config import TopicConfig
from tidelog.records import RecordBatchView, RecordsError
from tidelog.records.batch import HEADER, LOG_HEADER, LOG_OVERHEAD, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD
from tidelog.storage import files
from tidelog.storage.index import OffsetIndex, TimeIndex
from tidelog.storage.txn_index import TransactionIndex

HEADER_SIZE = RECORD_BATCH_OVERHEAD  # the whole magic-v2 batch header
READ_CHUNK = 4 * 1024 * 1024


class BatchScanError(Exception):
    """A batch length that cannot be, or a batch cut short, at ``position`` of a file."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"{reason} at position {position}")
        self.position = position


def scan_batches(fd: int, position: int, end: int, *, strict: bool = False) -> Iterator[tuple[int, memoryview]]:
    """(position, whole batch bytes) of the batches in ``[position, end)`` of a segment file, read
    with one ``pread`` per 4 MiB (or per batch larger than that). A length that cannot be a batch or
    a batch cut short ends the scan, silently or (``strict``) with :class:`BatchScanError`."""

    def stop(at: int, reason: str) -> None:
        if strict:
            raise BatchScanError(at, reason)

    while position < end:
        chunk = memoryview(os.pread(fd, min(READ_CHUNK, end - position), position))
        pos = 0
        while pos + LOG_OVERHEAD <= len(chunk):
            _, length = LOG_HEADER.unpack_from(chunk, pos)
            if length < MIN_BATCH_LENGTH:
                stop(position + pos, f"invalid batch length {length}")
                return
            size = LOG_OVERHEAD + length
            if pos + size > len(chunk):
                break
            yield position + pos, chunk[pos : pos + size]
            pos += size
        if pos == 0:  # the next batch is larger than a chunk, or torn at the end of the file
            if len(chunk) < LOG_OVERHEAD:
                stop(position, "truncated batch")
                return
            _, length = LOG_HEADER.unpack_from(chunk, 0)
            size = LOG_OVERHEAD + length
            if length < MIN_BATCH_LENGTH or position + size > end:
                stop(position, f"invalid batch length {length}" if length < MIN_BATCH_LENGTH else "truncated batch")
                return
            whole = memoryview(os.pread(fd, size, position))
            if len(whole) < size:
                stop(position, "truncated batch")
                return
            yield position, whole
            pos = size
        position += pos


class SegmentFile:
    """A segment's open ``.log`` file, shared by the segment and the :class:`FileSlice` objects read
    from it: the descriptor is closed once the segment closed it *and* no slice holds it any more.

    A deleted partition's or segment's files are closed when it goes, but a Fetch response built
    before may still be queued or half sent (``sendfile`` reads the descriptor chunk by chunk); the
    file, renamed or unlinked, stays readable until that response is written (Kafka renames deleted
    logs and removes them later for the same reason). Thread-safe (a slice may be dropped anywhere).
    """

    __slots__ = ("_closing", "_holders", "_lock", "file")

    def __init__(self, file: io.FileIO) -> None:
        self.file = file
        self._holders = 0
        self._closing = False
        self._lock = threading.Lock()

    def hold(self) -> None:
        with self._lock:
            if self.file.closed:
                raise ValueError(f"{self.file.name} is closed")
            self._holders += 1

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._closing:
                self.file.close()

    def close(self) -> None:
        """The owner is done with the file: it closes now, or when the last slice is released."""
        with self._lock:
            self._closing = True
            if self._holders == 0 and not self.file.closed:
                self.file.close()

    @property
    def holders(self) -> int:
        return self._holders


class FileSlice:
    """A byte range of a segment file: the unit the server hands to ``sendfile``. Immutable.

    A slice read from a segment holds the segment's :class:`SegmentFile` open until :meth:`release`
    (the network layer calls it once the bytes are written; dropping the slice releases it too)."""

    __slots__ = ("_data", "_owner", "file", "position", "size")

    def __init__(self, file: io.FileIO, position: int, size: int, owner: SegmentFile | None = None) -> None:
        self.file = file
        self.position = position
        self.size = size
        if owner is not None:
            owner.hold()
        self._owner = owner
        self._data: bytes | None = None

    def __len__(self) -> int:
        return self.size

    def fileno(self) -> int:
        return self.file.fileno()

    def part(self, start: int, size: int, data: bytes | None = None) -> FileSlice:
        """The ``size`` bytes from ``start`` (relative to this slice) as a slice of their own, which
        holds the segment file open as this one does. ``data``: those bytes, already read by the caller;
        :meth:`read` then answers them instead of reading the file again."""
        if start < 0 or size < 0 or start + size > self.size or (data is not None and len(data) != size):
            raise ValueError(f"part {start}+{size} outside a slice of {self.size} bytes")
        part = FileSlice(self.file, self.position + start, size, self._owner)
        part._data = data
        return part

    def read(self) -> bytes:
        """The bytes of the slice (one ``pread``, unless read already), for transports without sendfile."""
        if self._data is not None:
            return self._data
        return os.pread(self.file.fileno(), self.size, self.position)

    def release(self) -> None:
        """Let the file close (if its segment is closed) once this slice is no longer needed. Idempotent."""
        owner, self._owner = self._owner, None
        if owner is not None:
            owner.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    def __repr__(self) -> str:
        return f"FileSlice({self.file.name!r}, position={self.position}, size={self.size})"


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """Where a batch sits in a segment and the header fields storage needs."""

    position: int
    size: int  # bytes on disk, LOG_OVERHEAD included
    base_offset: int
    last_offset: int
    max_timestamp: int


class Segment:
    """A ``.log`` file and its two indexes. See the module docstring for the format."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        created_ms: int,
        new: bool,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = files.log_file(directory, base_offset)
        if new:
            self.log_path.touch(exist_ok=False)
        self.file = io.FileIO(self.log_path, "a+")
        self.shared = SegmentFile(self.file)
        self.size = os.fstat(self.file.fileno()).st_size
        self.offset_index = OffsetIndex(files.index_file(directory, base_offset), base_offset, max_index_bytes, load=not new)
        self.time_index = TimeIndex(files.time_index_file(directory, base_offset), base_offset, max_index_bytes, load=not new)
        self.txn_index = TransactionIndex(files.txn_index_file(directory, base_offset))
        if new:
            self.txn_index.reset()  # a leftover of an earlier segment with this base offset
        self.created_ms = created_ms
        #: Offset after the last batch (base offset when empty). Set by append / recover / load_tail.
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        #: Timestamp of the first batch (drives segment.ms rolls); -1 while empty.
        self.first_batch_timestamp = -1
        self._bytes_since_index_entry = 0
        self.deleted = False

    # ------------------------------------------------------------------------------------ writing

    def append(self, data, first_offset: int, last_offset: int, max_timestamp: int, offset_of_max_timestamp: int) -> int:
        """Append whole batches (already offset-assigned); returns the file position they start at.

        A failed write (OSError: a full disk ...) is rolled back before it is raised: the file is cut
        back to its size before the append and the index entries it added are dropped, so the segment
        holds exactly what it held before."""
        position = self.size
        offset_entries, time_entries = len(self.offset_index), len(self.time_index)
        since_index_entry = self._bytes_since_index_entry
        try:
            if position == 0 or self._bytes_since_index_entry >= self.index_interval_bytes:
                self._add_index_entries(first_offset, position, max_timestamp, offset_of_max_timestamp)
            _write_all(self.file, data)
        except OSError:
            os.ftruncate(self.file.fileno(), position)
            self.offset_index.drop_entries_from(offset_entries)
            self.time_index.drop_entries_from(time_entries)
            self._bytes_since_index_entry = since_index_entry
            raise
        n = _nbytes(data)
        self.size += n
        self._bytes_since_index_entry += n
        if self.first_batch_timestamp < 0:
            self.first_batch_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = offset_of_max_timestamp
        self.next_offset = last_offset + 1
        return position

    def _add_index_entries(self, offset: int, position: int, max_timestamp: int, offset_of_max_timestamp: int) -> None:
        self.offset_index.append(offset, position)
        if max_timestamp > self.max_timestamp:
            self.time_index.maybe_append(max_timestamp, offset_of_max_timestamp)
        elif self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self._bytes_since_index_entry = 0

    def on_roll(self) -> None:
        """The segment stops being active: record its final max timestamp in the time index."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def flush(self) -> None:
        os.fsync(self.file.fileno())
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    # ------------------------------------------------------------------------------------ reading

    def headers(self, position: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
        """Batch headers from ``position`` on, read with one ``pread`` each (no record bytes read).

        Stops at the end or at a header that cannot be a batch (a torn or garbage tail)."""
        end = self.size if end is None else end
        fd = self.file.fileno()
        while position + LOG_OVERHEAD <= end:
            head = os.pread(fd, HEADER_SIZE, position)
            if len(head) < HEADER_SIZE:
                return
            base_offset, length = LOG_HEADER.unpack_from(head)
            size = LOG_OVERHEAD + length
            if length < MIN_BATCH_LENGTH or position + size > end:
                return
            fields = HEADER.unpack_from(head)
            yield BatchHeader(position, size, base_offset, base_offset + fields[6], fields[8])
            position += size

    def batches(self, position: int = 0) -> Iterator[tuple[int, memoryview]]:
        """(position, whole batch bytes) from ``position``, reading the file in large chunks.

        Stops silently at a trailing partial batch or a length that cannot be a batch; callers that
        must validate the content use ``RecordBatchView.validate``."""
        return scan_batches(self.file.fileno(), position, self.size)

    def find_position(self, offset: int) -> BatchHeader | None:
        """The header of the batch holding ``offset`` (or the first batch after it); None if none."""
        _, position = self.offset_index.lookup(offset)
        for header in self.headers(position):
            if header.last_offset >= offset:
                return header
        return None

    def read(self, offset: int, max_bytes: int, max_position: int | None = None, min_one_batch: bool = True) -> FileSlice | None:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` (but at least one batch
        when ``min_one_batch``), ending before ``max_position``. None if there is nothing to read."""
        end = self.size if max_position is None else min(max_position, self.size)
        start = self.find_position(offset)
        if start is None or start.position >= end:
            return None
        # Every batch between the start and the last indexed batch that still begins within max_bytes
        # fits whole (batches are contiguous): jump there with the index instead of reading each header.
        jump = self.offset_index.position_floor(min(end, start.position + max_bytes))
        scan_from = jump if jump > start.position else start.position
        size = scan_from - start.position
        for header in self.headers(scan_from, end):
            if size + header.size > max_bytes and (size or not min_one_batch):
                break
            size += header.size
            if size >= max_bytes:
                break
        if size == 0:
            return None
        return FileSlice(self.file, start.position, size, self.shared)

    def position_of(self, offset: int) -> int:
        """File position of the first batch whose base offset is >= ``offset`` (the size if none)."""
        _, position = self.offset_index.lookup(offset)
        for header in self.headers(position):
            if header.base_offset >= offset or header.last_offset >= offset:
                return header.position
        return self.size

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record with timestamp >= ``timestamp`` at or after
        ``start_offset``, or None if this segment has none."""
        # Entries at or below timestamp-1 bound where records >= timestamp can start.
        _, from_offset = self.time_index.lookup(timestamp - 1)
        _, position = self.offset_index.lookup(max(from_offset, start_offset))
        for _, raw in self.batches(position):
            view = RecordBatchView(raw)
            if view.max_timestamp < timestamp or view.last_offset < start_offset:
                continue
            for record in view.records():
                if record.offset >= start_offset and record.timestamp >= timestamp:
                    return record.timestamp, record.offset
        return None

    # ----------------------------------------------------------------------------- recovery, trim

    def load_tail(self) -> None:
        """After a clean shutdown: derive next offset and max timestamp from the last index entry on."""
        if self.size == 0:
            return
        _, position = self.offset_index.lookup(2**62)
        ts, ts_offset = self.time_index.last_entry
        self.max_timestamp, self.offset_of_max_timestamp = ts, ts_offset
        last = None
        for header in self.headers(position):
            last = header
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        if last is not None:
            self.next_offset = last.last_offset + 1
            self._bytes_since_index_entry = last.position + last.size - position
        first = next(self.headers(0), None)
        self.first_batch_timestamp = first.max_timestamp if first else -1

    def recover(self, max_batch_bytes: int | None = None) -> int:
        """Re-validate every batch (size, magic, CRC), rebuild both indexes, truncate at the first
        invalid byte. Returns the number of bytes truncated. Runs in the executor at start-up. The
        aborted-transaction index loses the entries past the cut; the producer-state replay that
        follows puts back any entry a crash kept from being written."""
        self.offset_index.truncate_to(self.base_offset)
        self.time_index.truncate_to(self.base_offset)
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.first_batch_timestamp = -1
        self._bytes_since_index_entry = 0
        valid_end = 0
        prev_last = self.base_offset - 1
        for position, raw in self.batches(0):
            if position != valid_end:
                break
            try:
                view = RecordBatchView(raw)
                view.validate(allow_compacted=True)  # the cleaner leaves batches with fewer records
            except RecordsError:
                break
            if view.base_offset <= prev_last or view.base_offset < self.base_offset:
                break  # offsets must increase; anything else is garbage
            if max_batch_bytes is not None and len(raw) > max_batch_bytes:
                break
            if valid_end == 0 or self._bytes_since_index_entry >= self.index_interval_bytes:
                self._add_index_entries(view.base_offset, position, view.max_timestamp, view.last_offset)
            self._bytes_since_index_entry += len(raw)
            if self.first_batch_timestamp < 0:
                self.first_batch_timestamp = view.max_timestamp
            if view.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = view.max_timestamp, view.last_offset
            prev_last = view.last_offset
            self.next_offset = view.last_offset + 1
            valid_end = position + len(raw)
        truncated = self.size - valid_end
        if truncated:
            self._truncate_file(valid_end)
        self.txn_index.truncate_to(self.next_offset)
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove every batch at or after ``offset`` (batch granularity); returns bytes removed."""
        if offset >= self.next_offset:
            return 0
        position = self.position_of(offset)
        removed = self.size - position
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self._truncate_file(position)
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        last = None
        for header in self.headers(0):
            last = header
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        if last is not None:
            self.next_offset = last.last_offset + 1
        else:
            self.first_batch_timestamp = -1
        return removed

    def _truncate_file(self, size: int) -> None:
        os.ftruncate(self.file.fileno(), size)
        self.size = size

    # --------------------------------------------------------------------------- files, lifecycle

    def all_paths(self) -> list[Path]:
        return [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def rename_with_suffix(self, suffix: str) -> None:
        """Add ``suffix`` (e.g. ``.deleted``) to every file; open descriptors stay valid for readers."""
        new_log = self.log_path.with_name(self.log_path.name + suffix)
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        self.offset_index.rename(self.offset_index.path.with_name(self.offset_index.path.name + suffix))
        self.time_index.rename(self.time_index.path.with_name(self.time_index.path.name + suffix))
        self.txn_index.rename(self.txn_index.path.with_name(self.txn_index.path.name + suffix))

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.shared.close()  # the descriptor lives on while a FileSlice read from it is unsent

    def delete_files(self) -> None:
        self.close()
        for path in self.all_paths():
            path.unlink(missing_ok=True)
        self.deleted = True

    @classmethod
    def for_config(cls, directory: Path, base_offset: int, config: TopicConfig, now_ms: int, *, new: bool) -> Segment:
        """A segment with the topic's index settings: created empty (``new``) or opened from its files."""
        return cls(
            directory,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            created_ms=now_ms,
            new=new,
        )

    def __repr__(self) -> str:
        return f"Segment({self.log_path.name}, size={self.size}, next_offset={self.next_offset})"


def _nbytes(data) -> int:
    return data.nbytes if type(data) is memoryview else len(data)


def _write_all(file: io.FileIO, data) -> None:
    mv = memoryview(data)
    while mv:
        n = file.write(mv)
        if n is None or n <= 0:
            raise OSError("short write to a segment file")
        mv = mv[n:]


__all__ = ["HEADER_SIZE", "READ_CHUNK", "BatchHeader", "BatchScanError", "FileSlice", "Segment", "SegmentFile", "scan_batches"]
