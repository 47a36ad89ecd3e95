"""Reading messages for the console: one partition's records from an offset, filters on key, value and
headers, and several partitions merged into one stream ordered by timestamp.

Records are read from the leader's log through the replica manager, as a read_uncommitted consumer would
see them (up to the high watermark; control records left out). Every scan is bounded: at most
``max_scan`` records (and ``MAX_SCAN_BYTES``) are looked at per request, and the broker's loop is yielded
to every ``YIELD_RECORDS`` records or ``YIELD_BYTES``, so a search over a large topic does not stall the
broker; the answer says when the bound stopped it.
"""

from __future__ import annotations

import asyncio
import heapq
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tidelog.records.batch import iter_batches
from tidelog.replica.fetch import READ_UNCOMMITTED, PartitionFetch
from tidelog.replica.manager import ReplicaManager
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.render import MAX_FIELD_BYTES, render

READ_BYTES = 4 * 1024 * 1024  # per read of the log; a larger batch is still read whole (KIP-74)
#: A page stops early (its cursor says where the rest starts) once its shown fields hold this much.
MAX_PAGE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_SCAN = 10_000
MAX_SCAN = 100_000
#: A request also stops once the records it looked at hold this much (keys, values, headers).
MAX_SCAN_BYTES = 256 * 1024 * 1024
#: The loop is yielded to after this many records or bytes looked at.
YIELD_RECORDS, YIELD_BYTES = 1000, 4 * 1024 * 1024


def record_bytes(record: Any) -> int:
    return sum(len(b) for b in (record.key, record.value, *(h.value for h in record.headers)) if b)


def shown_bytes(record: Any) -> int:
    """How much of a record a page shows (each field cut to MAX_FIELD_BYTES)."""
    return sum(min(len(b), MAX_FIELD_BYTES) for b in (record.key, record.value, *(h.value for h in record.headers))
               if b)


def message(record: Any, fmt: str, partition: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {} if partition is None else {"partition": partition}
    out.update(offset=record.offset, timestamp=record.timestamp, key=render(record.key, fmt),
               value=render(record.value, fmt),
               headers=[{"key": h.key, "value": render(h.value, fmt)} for h in record.headers])
    return out


class PartitionReader:
    """The records of one partition from ``position`` on, read from the log a slice at a time."""

    def __init__(self, replicas: ReplicaManager, topic: str, partition: int, position: int) -> None:
        self.replicas = replicas
        self.topic = topic
        self.partition = partition
        self.position = position  # the next offset not yet read from the log
        self._pending: deque = deque()
        self._done = False

    def next(self) -> Any | None:
        """The next record, or None at the high watermark (or where nothing whole can be read)."""
        while not self._pending and not self._done:
            self._fill()
        return self._pending.popleft() if self._pending else None

    def _fill(self) -> None:
        (read,) = self.replicas.read_partitions(
            [PartitionFetch(self.topic, uuid.UUID(int=0), self.partition, self.position, READ_BYTES)], None,
            READ_UNCOMMITTED)
        if read.error:
            raise ApiError.from_kafka(read.error, read.error_message)
        if read.records is None or read.records.size == 0:
            self._done = True
            return
        before = self.position
        for batch in iter_batches(read.records.read(), allow_partial=True):
            if not getattr(batch, "is_control_batch", False):
                self._pending.extend(r for r in batch.records() if r.offset >= before)
            self.position = max(self.position, batch.next_offset)
        if self.position == before:  # nothing whole in the slice: stop rather than spin
            self._done = True


@dataclass(slots=True)
class Filters:
    """Case-insensitive substring filters; a record must match every one given."""
    key: str | None = None
    value: str | None = None
    header_name: str | None = None  # a header of this exact name...
    header_value: str | None = None  # ...whose value contains this
    anywhere: str | None = None  # the key, the value, or a header's name or value
    given: dict[str, str] = field(default_factory=dict)  # as asked, for the answer

    @classmethod
    def of(cls, key: str | None, value: str | None, header: str | None, q: str | None) -> Filters:
        name, _, wanted = (header or "").partition("=")
        given = {k: v for k, v in (("key", key), ("value", value), ("header", header), ("q", q)) if v}
        return cls(key=key.lower() if key else None, value=value.lower() if value else None,
                   header_name=name or None, header_value=wanted.lower() if wanted else None,
                   anywhere=q.lower() if q else None, given=given)

    @property
    def active(self) -> bool:
        return any(f is not None for f in (self.key, self.value, self.header_name, self.anywhere))

    def matches(self, record: Any) -> bool:
        if self.key is not None and not _contains(record.key, self.key):
            return False
        if self.value is not None and not _contains(record.value, self.value):
            return False
        if self.header_name is not None and not any(
                h.key == self.header_name and (self.header_value is None or _contains(h.value, self.header_value))
                for h in record.headers):
            return False
        if self.anywhere is not None:
            q = self.anywhere
            return (_contains(record.key, q) or _contains(record.value, q)
                    or any(q in h.key.lower() or _contains(h.value, q) for h in record.headers))
        return True

    def describe(self) -> dict[str, str]:
        return dict(self.given)


def _contains(data: bytes | None, needle: str) -> bool:
    return data is not None and needle in bytes(data).decode("utf-8", errors="replace").lower()


@dataclass(slots=True)
class ScanResult:
    records: list[tuple[int, Any]] = field(default_factory=list)  # (partition, record), in timestamp order
    positions: dict[int, int] = field(default_factory=dict)  # partition -> next offset to look at
    scanned: int = 0
    scanned_bytes: int = 0
    limited: bool = False  # stopped by max_scan (or MAX_SCAN_BYTES) before the end of every partition


async def scan(readers: Iterable[PartitionReader], filters: Filters, limit: int, max_scan: int, *,
               newest: bool = False) -> ScanResult:
    """Merge the partitions by (timestamp, partition, offset) from their readers' positions and keep the
    records that match: the first ``limit`` (stopping there, or once the page is full), or with ``newest``
    the last ``limit`` before every partition ends (cut from the oldest side to fit the page). Either way
    at most ``max_scan`` records (and ``MAX_SCAN_BYTES``) are looked at."""
    result = ScanResult()
    kept: list[tuple[int, Any]] | deque[tuple[int, Any]] = deque(maxlen=limit) if newest else result.records
    heap: list[tuple[int, int, int, Any, PartitionReader]] = []
    readers = list(readers)
    for reader in readers:
        _push(heap, reader)
    shown = since_yield = 0
    while heap and (newest or (len(kept) < limit and shown < MAX_PAGE_BYTES)):
        if result.scanned >= max_scan or result.scanned_bytes >= MAX_SCAN_BYTES:
            result.limited = True
            break
        _, _, _, record, reader = heapq.heappop(heap)
        result.scanned += 1
        size = record_bytes(record)
        result.scanned_bytes += size
        since_yield += size
        if filters.matches(record):
            kept.append((reader.partition, record))
            shown += 0 if newest else shown_bytes(record)
        _push(heap, reader)
        if result.scanned % YIELD_RECORDS == 0 or since_yield >= YIELD_BYTES:
            since_yield = 0
            await asyncio.sleep(0)  # let the broker serve its clients during a long search
    waiting = {reader.partition: record.offset for _, _, _, record, reader in heap}
    result.positions = {r.partition: waiting.get(r.partition, r.position) for r in readers}
    if newest:
        start = len(kept)
        while start > 0 and shown < MAX_PAGE_BYTES:
            start -= 1
            shown += shown_bytes(kept[start][1])
        result.records = list(kept)[start:]
    return result


def _push(heap: list, reader: PartitionReader) -> None:
    record = reader.next()
    if record is not None:
        heapq.heappush(heap, (record.timestamp, reader.partition, record.offset, record, reader))


__all__ = ["DEFAULT_MAX_SCAN", "MAX_PAGE_BYTES", "MAX_SCAN", "MAX_SCAN_BYTES", "Filters", "PartitionReader", "ScanResult",
           "message", "scan", "shown_bytes"]
