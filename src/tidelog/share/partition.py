"""One share partition on the broker leading its topic partition: which records are in flight, to whom.

A share group consumes a topic partition as a queue (KIP-932; Kafka's ``SharePartition``). Its state is
a window of offsets, ``start_offset`` (every record before it is done with) to ``end_offset`` (exclusive:
no record from it on has been fetched yet). Each record of the window is in one state:

* AVAILABLE: may be handed out (never delivered, released, or its lock expired);
* ACQUIRED: handed out to one member, under an acquisition lock (``record_lock_duration_ms``, a timer on
  the broker's clock); when the lock expires the record is AVAILABLE again, or ARCHIVED if its delivery
  count reached ``delivery_count_limit``;
* ACKNOWLEDGED (ACCEPT) or ARCHIVED (REJECT, the delivery limit, a gap, an aborted transaction's record,
  a control record): done with. The start offset moves past done records at the window's head.
* ARCHIVING (KIP-1191, when the group has a dead-letter queue: :mod:`tidelog.share.dead_letter_handoff`):
  a record REJECTed or at its delivery limit, on its way to the DLQ topic; never offered again, not done
  with yet. Once its state is written, its dead-letter write starts; when that ends (written or not) it is
  ARCHIVED. A restart finds it ARCHIVING in the persisted state and writes it to the DLQ then.

The records with a state and their acquisition locks are :mod:`tidelog.share.inflight`'s (a batch of new
records acquired whole shares one entry); an acknowledgement is checked and turned into changes by
:mod:`tidelog.share.acknowledgements`.

Rules:

1. **Acquire.** A fetch reads the log from :meth:`SharePartition.next_fetch_offset` and offers the batches
   it read to :meth:`SharePartition.acquire`: AVAILABLE records are acquired by the member, their delivery
   count goes up by one. New records (at or after ``end_offset``) are acquired only while the window holds
   fewer than ``partition_max_record_locks`` offsets; in batch-optimized mode the batch holding the limit
   offset is acquired whole (as Kafka does), so the window may exceed the limit by less than a batch.
   ``max_records`` is a soft limit in batch-optimized mode (whole batches) and a hard one in record-limit
   mode (KIP-1206).
2. **Acknowledge.** ACCEPT (1), RELEASE (2), REJECT (3), GAP (0, an offset with no record) and RENEW (4,
   KIP-1222: the lock starts again) apply only to records the member holds; otherwise nothing of the
   request is applied and the answer is INVALID_RECORD_STATE. The change is written through the
   share-state persister before it takes effect in memory, so an acknowledgement answered is durable;
   while it is written, its records are neither acknowledged again nor released by a lock's expiry or
   their member leaving (as Kafka's state transition), so one answered is never delivered again.
3. **Expire and release.** A lock expiry or a member leaving (:meth:`SharePartition.release_member`)
   makes the member's records AVAILABLE again (ARCHIVED at the delivery limit), written through the
   persister too.
4. **Restore.** :meth:`SharePartition.initialize` reads the persisted state: its start offset (-1: from
   ``share.auto.offset.reset``) and state batches; persisted AVAILABLE records keep their delivery counts,
   so what was in flight at a crash is delivered again with a count one higher.

Pure but for its timers (the clock's ``call_later``) and the persister's calls; a log read is the
caller's (:mod:`tidelog.share.manager`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable
from itertools import pairwise

from tidelog.clock import Clock
from tidelog.coordinator.share.persister import SharePartitionKey, SharePersister, StateWrite
from tidelog.errors import ErrorCode, KafkaError
from tidelog.share.acknowledgements import changes_of, check, count_acks
from tidelog.share.config import AcquireMode, ShareGroupSettings
from tidelog.share.dead_letter import DeadLetterSink
from tidelog.share.dead_letter_handoff import (
    DeadLetterHandoff,
    reason_by_ack,
    reason_by_count,
    reason_delivery_count,
)
from tidelog.share.deliveries import AckBatch, AckType, AcquiredRange, FetchedBatch, acquired_ranges
from tidelog.share.inflight import (
    ACQUIRED,
    ARCHIVED,
    ARCHIVING,
    AVAILABLE,
    DONE,
    AcquisitionLock,
    InFlight,
    RecordState,
    held_by,
    run_length,
)
from tidelog.share.state_write import state_write
from tidelog.share.stats import ShareStats

log = logging.getLogger(__name__)


class SharePartition:
    """The in-flight state of one share partition (see the module docstring)."""

    def __init__(self, key: SharePartitionKey, topic: str, settings: ShareGroupSettings, persister: SharePersister,
                 clock: Clock, leader_epoch: int = -1, on_available: Callable[[], None] | None = None,
                 stats: ShareStats | None = None, on_fenced: Callable[[SharePartition], None] | None = None,
                 dead_letters: DeadLetterSink | None = None) -> None:
        self.key = key
        #: counters for the metrics (the manager's, kept across rebuilds of this share partition)
        self.stats = stats if stats is not None else ShareStats(key.group_id, topic, key.partition)
        #: the group's dead-letter queue (KIP-1191; records are archived at once when it has none)
        self.dead_letters = DeadLetterHandoff(dead_letters, key, topic, self.stats, self._archive_dead_lettered,
                                              self._spawn)
        self.topic = topic
        self.settings = settings
        self.persister = persister
        self.clock = clock
        self.leader_epoch = leader_epoch
        self.on_available = on_available
        #: called once when a write is fenced (the state was initialized again, AlterShareGroupOffsets, or a
        #: newer leader read it): this window is stale and must be read again (Kafka fences the share partition)
        self.on_fenced = on_fenced
        self.fenced = False
        self.state_epoch = 0
        self.start_offset = -1
        self.end_offset = -1
        self.initialized = False
        #: bytes per offset of the last log read (the manager sizes its next read by it; 0: not known yet)
        self.read_bytes_per_offset = 0.0
        self._persisted_start = -1
        #: offsets of the window with a state; an offset of the window not here is AVAILABLE, never delivered
        self._records: dict[int, InFlight] = {}
        #: no offset of the window before it is AVAILABLE (each has a state, none AVAILABLE): where
        #: :meth:`next_fetch_offset` starts looking, so a fetch does not walk the records in flight again
        self._fetch_from = -1
        #: the acquisition locks that may still hold records (one per acquisition or renewal; those that
        #: hold none any more are dropped when :meth:`holds_records` passes them)
        self._locks: set[AcquisitionLock] = set()
        self._tasks: set[asyncio.Task] = set()
        self._write_lock = asyncio.Lock()
        #: offsets whose acknowledgement is being written: no expiry or release takes them meanwhile (rule 2)
        self._acking: list[dict[int, tuple[RecordState, int]]] = []

    # ------------------------------------------------------------------------------ restore (4)

    async def initialize(self, log_start_offset: int, latest_offset: int) -> None:
        """Read the persisted state; a start offset of -1 becomes ``log_start_offset`` (earliest) or
        ``latest_offset`` (latest: the high watermark, or the last stable offset under read_committed).
        Raises KafkaError with the persister's error."""
        state = await self.persister.read(self.key, self.leader_epoch)
        if state.error:
            raise KafkaError(state.error, state.error_message or f"reading the share state of {self.key}")
        self.state_epoch = state.state_epoch
        start = state.start_offset
        resolved = start < 0
        if resolved:
            start = log_start_offset if self.settings.auto_offset_reset == "earliest" else latest_offset
        start = max(start, log_start_offset)
        self.start_offset = self.end_offset = self._fetch_from = start
        for b in state.state_batches:
            for offset in range(max(b.first_offset, start), b.last_offset + 1):
                st = RecordState.AVAILABLE if b.delivery_state == RecordState.ACQUIRED else b.delivery_state
                self._records[offset] = InFlight(st, b.delivery_count)
            self.end_offset = max(self.end_offset, b.last_offset + 1)
        self._advance_start()
        if resolved or self.start_offset != state.start_offset:
            code = await self.persister.write(self.key, StateWrite(self.state_epoch, self.leader_epoch,
                                                                   self.start_offset))
            if code:
                raise KafkaError(code, f"writing the start offset of {self.key}")
        self._persisted_start = self.start_offset
        self.initialized = True
        # records that were on their way to the DLQ when the state was written: written there now
        archiving = {o: r.delivery_count for o, r in self._records.items() if r.state == ARCHIVING}
        self.dead_letters.start(archiving, reason_by_count(archiving, self.settings.delivery_count_limit))

    # ------------------------------------------------------------------------------ acquire (1)

    def state_of(self, offset: int) -> tuple[RecordState, int]:
        """(state, delivery count) of an offset of the window; before it: ACKNOWLEDGED-or-ARCHIVED is
        reported as ARCHIVED; after it: AVAILABLE with count 0."""
        if offset < self.start_offset:
            return RecordState.ARCHIVED, 0
        rec = self._records.get(offset)
        return (rec.state, rec.delivery_count) if rec is not None else (RecordState.AVAILABLE, 0)

    def holder_of(self, offset: int) -> str | None:
        rec = self._records.get(offset)
        return rec.lock.member_id if rec is not None and rec.lock is not None else None

    def holds_records(self, member_id: str) -> bool:
        """Whether ``member_id`` holds (has acquired) a record of the window: a look at the live locks, not
        at every record in flight (a fetch asks it while the window holds thousands of records)."""
        locks = self._locks
        done = [lock for lock in locks if not lock.offsets]
        locks.difference_update(done)
        return any(lock.member_id == member_id for lock in locks)

    def in_flight(self) -> int:
        """Offsets of the window (Kafka's in-flight records)."""
        return max(0, self.end_offset - self.start_offset)

    def acquired_count(self) -> int:
        return sum(1 for r in self._records.values() if r.state == RecordState.ACQUIRED)

    def state_counts(self) -> dict[RecordState, int]:
        """How many offsets of the window are in each state (read-only; offsets with no entry yet are
        AVAILABLE), for the console."""
        counts = dict.fromkeys((RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED,
                                RecordState.ARCHIVED), 0)  # and ARCHIVING while records are on their way to a DLQ
        for offset in range(self.start_offset, self.end_offset):
            rec = self._records.get(offset)
            state = rec.state if rec is not None else RecordState.AVAILABLE
            counts[state] = counts.get(state, 0) + 1
        return counts

    def next_fetch_offset(self) -> int:
        """The first offset a fetch should read from: the first AVAILABLE one of the window, else its end.
        The search starts where the last one ended (``_fetch_from``; a record made AVAILABLE again moves it
        back): the acquired records before it are not walked again at each fetch."""
        records = self._records
        offset = max(self.start_offset, self._fetch_from)
        end = self.end_offset
        while offset < end:
            rec = records.get(offset)
            if rec is None or rec.state == AVAILABLE:
                break
            offset += 1
        self._fetch_from = offset
        return offset

    def can_acquire(self) -> bool:
        """Whether a fetch may find anything: an AVAILABLE record in the window, or room for new ones."""
        return (self.next_fetch_offset() < self.end_offset
                or self.end_offset - self.start_offset < self.settings.partition_max_record_locks)

    def move_start(self, log_start_offset: int) -> None:
        """The log's start moved past the window's (retention, DeleteRecords): forget what it removed."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            rec = self._records.pop(offset, None)
            if rec is not None and rec.lock is not None:
                self._unlock(rec, offset)
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._advance_start()

    def acquire(self, member_id: str, batches: Iterable[FetchedBatch], max_records: int,
                mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED) -> list[AcquiredRange]:
        """Acquire for ``member_id`` the AVAILABLE records of ``batches`` (ascending, as read from the log
        at :meth:`next_fetch_offset`); returns the acquired ranges. Offsets the log skipped (compacted
        away) and ``skip`` batches are archived."""
        records = self._records
        limit = self.start_offset + self.settings.partition_max_record_locks  # new records end before it
        max_records = max_records if max_records > 0 else 1 << 31
        acquired: list[int | range] = []  # offsets, and ranges of new records acquired whole
        n = 0  # records acquired
        archived_any = False
        stats = self.stats
        redelivered = 0
        expected = fetch_from = self.next_fetch_offset()  # fetch_from: moved past what is acquired from it
        stop = False
        # A per-record loop on the fetch path: attributes and constants in locals.
        start_offset, end = self.start_offset, self.end_offset
        record_limit = mode == AcquireMode.RECORD_LIMIT
        count_limit = self.settings.delivery_count_limit
        lock = AcquisitionLock(member_id, set())  # given to the records acquired; its timer starts if there are any
        entry = InFlight(ACQUIRED, 1, lock)  # the one entry of the new records acquired whole
        for b in batches:
            if b.last_offset < start_offset:
                continue
            if b.first_offset > expected >= end:  # a gap in the log: nothing to deliver there
                for offset in range(expected, min(b.first_offset, limit)):
                    records[offset] = InFlight(ARCHIVED, 0)
                    archived_any = True
                    stats.archived["not_deliverable"] += 1
                end = max(end, min(b.first_offset, limit))
                if fetch_from == expected:
                    fetch_from = end
            first = max(b.first_offset, start_offset)
            skip = b.skip
            if not skip and n >= max_records:
                break
            # Batch-optimized, a batch that starts inside the window is acquired whole even if it runs past
            # the window's limit (Kafka acquires up to the end of the batch holding the limit offset).
            whole = not record_limit and b.first_offset < limit
            last = b.last_offset
            if (not skip and first >= end and (whole or last < limit)
                    and (not record_limit or n + last - first < max_records)):
                # The common case: a batch of new records (none has a state yet), acquired whole: one entry
                # for all its offsets (entries are never changed in place), in C loops.
                span = range(first, last + 1)
                records.update(dict.fromkeys(span, entry))
                acquired.append(span)
                n += len(span)
                if fetch_from == first:
                    fetch_from = last + 1
                end = last + 1
                expected = max(expected, end)
                continue
            for offset in range(first, b.last_offset + 1):
                if offset >= end and offset >= limit and not whole:
                    stop = True
                    break
                if record_limit and not skip and n >= max_records:
                    stop = True
                    break
                rec = records.get(offset)
                if offset >= end:
                    end = offset + 1
                if rec is None:
                    if skip:  # never delivered (a control or aborted record): archived
                        records[offset] = InFlight(ARCHIVED, 0)
                        archived_any = True
                        stats.archived["not_deliverable"] += 1
                        continue
                    records[offset] = InFlight(ACQUIRED, 1, lock)
                    acquired.append(offset)
                    n += 1
                    continue
                if rec.state != AVAILABLE:
                    continue
                if skip or rec.delivery_count >= count_limit:
                    # never delivered (a control or aborted record), or delivered as often as the limit
                    # allows (a limit lowered since): archived
                    records[offset] = InFlight(ARCHIVED, rec.delivery_count)
                    archived_any = True
                    stats.archived["not_deliverable" if skip else "delivery_count_limit"] += 1
                    continue
                if rec.delivery_count:
                    redelivered += 1
                records[offset] = InFlight(ACQUIRED, rec.delivery_count + 1, lock)
                acquired.append(offset)
                n += 1
            expected = max(expected, b.last_offset + 1)
            if stop:
                break
        self.end_offset = end
        self._fetch_from = fetch_from
        if archived_any:
            self._advance_start()
        if not acquired:
            return []
        stats.acquired += n
        stats.redelivered += redelivered
        held = lock.offsets
        whole = True
        for item in acquired:
            if type(item) is range:
                held.update(item)
            else:
                held.add(item)
                whole = False
        if whole:  # every record it holds has the one entry
            lock.entry = entry
        self._locks.add(lock)
        lock.handle = self.clock.call_later(self.settings.record_lock_duration_ms, lambda: self._expire(lock))
        return acquired_ranges(self._records, acquired)

    def _lock(self, member_id: str, offsets: list[int]) -> None:
        lock = AcquisitionLock(member_id, set(offsets))
        records = self._records
        for offset in offsets:
            rec = records[offset]
            records[offset] = InFlight(rec.state, rec.delivery_count, lock)
        self._locks.add(lock)
        lock.handle = self.clock.call_later(self.settings.record_lock_duration_ms, lambda: self._expire(lock))

    def _unlock(self, rec: InFlight, offset: int) -> None:
        """``rec``'s lock lets go of ``offset`` (the caller replaces or drops the entry)."""
        lock = rec.lock
        if lock is not None:
            lock.offsets.discard(offset)
            if not lock.offsets and lock.handle is not None:
                lock.handle.cancel()

    # ------------------------------------------------------------------------- acknowledge (2)

    async def acknowledge(self, member_id: str, batches: list[AckBatch], *, allow_renew: bool = True) -> ErrorCode:
        """Apply ``member_id``'s acknowledgements (rule 2); the answer comes once the persister has them."""
        records = self._records
        held = check(records, member_id, batches, self.start_offset, allow_renew,
                     self._being_acked if self._acking else lambda _offsets: False)
        if isinstance(held, ErrorCode):
            return held
        # with a dead-letter queue, REJECT and RELEASE at the limit go there first (Kafka's ARCHIVING)
        dead = ARCHIVING if self.dead_letters.enabled() else ARCHIVED
        made = changes_of(records, batches, held, self.settings.delivery_count_limit, dead)
        changes, renewed = made.changes, made.renewed
        if renewed:
            for offset in renewed:
                self._unlock(records[offset], offset)
            self._lock(member_id, renewed)
            self.stats.acknowledged[AckType.RENEW] += len(renewed)
        if not changes:
            return ErrorCode.NONE
        # an acknowledgement of whole acquisitions, in one run from the window's start: all of it done, known here
        contiguous = made.whole and all(a.last_offset + 1 == b.first_offset for a, b in pairwise(batches))
        done_head = (batches[-1].last_offset - self.start_offset + 1
                     if contiguous and batches[0].first_offset == self.start_offset else 0)
        self._acking.append(changes)
        try:
            code = await self._send(self._state_write(changes, done_head))
        finally:
            self._acking = [c for c in self._acking if c is not changes]
        if code:  # still held; what a lock running out meanwhile left to this write is released now
            for lock in {r.lock for o in changes if (r := records.get(o)) is not None and r.lock and r.lock.expired}:
                self._expire(lock)
            return code
        # applied once durable, to the records the member still holds (a lock may have expired meanwhile)
        if all(held_by(records, member_id, b.first_offset, b.last_offset) for b in batches):
            applied = changes
            if made.whole:  # what _apply would find out, known here: one change, these locks
                hints = {"locks": set(held), "span": (batches[0].first_offset, batches[-1].last_offset)
                         if contiguous else None}
            else:
                hints = {}
        else:
            applied = {o: c for o, c in changes.items() if (rec := records.get(o)) is not None
                       and rec.lock is not None and rec.lock.member_id == member_id}
            hints = {}
        count_acks(self.stats, batches, applied, len(applied) == len(changes))
        self._apply(applied, **hints)
        if dead == ARCHIVING:
            archiving = {o: c for o, (state, c) in applied.items() if state == ARCHIVING}
            self.dead_letters.start(archiving, reason_by_ack(batches))
        return ErrorCode.NONE

    def _being_acked(self, offsets: range | tuple[int]) -> bool:
        """Whether an acknowledgement being written holds one of ``offsets`` (rule 2)."""
        return any(not changes.keys().isdisjoint(offsets) for changes in self._acking)

    def _apply(self, changes: dict[int, tuple[RecordState, int]], locks: set[AcquisitionLock] | None = None,
               span: tuple[int, int] | None = None) -> None:
        """Apply ``changes`` to the records still in the window: their locks let go of them, each gets a new
        entry, and done records at the window's head leave it. An acknowledgement of acquisitions as a whole
        (the same change object for all their records) takes C loops only."""
        records = self._records
        if locks is None:
            present = changes.keys() & records.keys()  # the window may have lost some meanwhile (move_start)
            if not present:
                return
            locks = {rec.lock for rec in set(map(records.__getitem__, present))}  # few: an acquisition shares one entry
            locks.discard(None)
        else:  # the caller knows: every offset is still held, by one of ``locks``
            present = changes.keys()
        if len(locks) == 1 and len(next(iter(locks)).offsets) == len(present):  # an acquisition let go of whole
            next(iter(locks)).offsets.clear()
        elif len(locks) <= 4:
            for lock in locks:
                lock.offsets.difference_update(present)
        else:
            for offset in present:
                lock = records[offset].lock
                if lock is not None:
                    lock.offsets.discard(offset)
        for lock in locks:
            if not lock.offsets and lock.handle is not None:
                lock.handle.cancel()
        available = False
        start = self.start_offset
        if span is not None or (len(present) == len(changes) and len(set(map(id, changes.values()))) == 1):
            # one change for all
            state, count = changes[next(iter(present))]
            first, last = span if span is not None else (min(present), max(present))
            if state in DONE and first == start and last - start + 1 == len(present):
                # done at the window's head (the oldest acquisition acknowledged whole): they leave it at once
                deque(map(records.pop, range(start, start + len(present))), maxlen=0)
                self.start_offset = start + len(present)
            else:
                records.update(dict.fromkeys(present, InFlight(state, count)))
            if state == AVAILABLE:
                available = True
                self._fetch_from = min(self._fetch_from, min(present))
        else:
            fetch_from = self._fetch_from
            for offset in present:
                state, count = changes[offset]
                records[offset] = InFlight(state, count)
                if state == AVAILABLE:
                    available = True
                    if offset < fetch_from:
                        fetch_from = offset
            self._fetch_from = fetch_from
        self._advance_start()
        # records to offer again, or room in the window for new ones: a parked fetch may find something
        if (available or self.start_offset != start) and self.on_available is not None:
            self.on_available()

    def _advance_start(self) -> None:
        """The start offset moves past the done records at the window's head, which leave ``_records`` (a
        run of offsets sharing one entry at C speed)."""
        records = self._records
        start, end = self.start_offset, self.end_offset
        while start < end:
            rec = records.get(start)
            if rec is None or rec.state not in DONE:
                break
            run = run_length(records, start, end, rec)
            deque(map(records.pop, range(start, start + run)), maxlen=0)
            start += run
        self.start_offset = start

    def _state_write(self, changes: dict[int, tuple[RecordState, int]], done_head: int = 0) -> StateWrite:
        """``done_head``: how many offsets from the window's start the caller knows ``changes`` make done."""
        return state_write(self._records, self.start_offset + done_head, self.end_offset, changes, self.state_epoch,
                           self.leader_epoch, self._persisted_start)

    async def _send(self, write: StateWrite) -> ErrorCode:
        async with self._write_lock:
            try:
                code = await self.persister.write(self.key, write)
            except KafkaError as e:
                code = e.code
        if code in (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_LEADER_EPOCH) and not self.fenced:
            log.info("share partition %s fenced (%s): its state is read again", self.key, code.name)
            self.fenced = True
            if self.on_fenced is not None:
                self.on_fenced(self)
        elif code:
            log.warning("share state write of %s failed: %s", self.key, code.name)
        elif write.start_offset >= 0:
            self._persisted_start = max(self._persisted_start, write.start_offset)
        return code

    # --------------------------------------------------------------------- expire, release (3)

    def _expire(self, lock: AcquisitionLock) -> None:
        lock.expired = True
        if lock.offsets:
            self._release(lock.member_id, sorted(lock.offsets), lambda o: self._records[o].lock is lock,
                          expired=True)

    def release_member(self, member_id: str) -> asyncio.Task | None:
        """Make every record ``member_id`` holds AVAILABLE again (ARCHIVED at the delivery limit); the
        write goes on in a task (returned, None when the member held nothing)."""
        held = sorted(o for o, r in self._records.items()
                      if r.state == RecordState.ACQUIRED and r.lock is not None and r.lock.member_id == member_id)
        if not held:
            return None
        return self._release(member_id, held, lambda o: True, expired=False)

    def _release(self, member_id: str, offsets: list[int], still: Callable[[int], bool], *,
                 expired: bool) -> asyncio.Task | None:
        records = self._records
        limit = self.settings.delivery_count_limit
        dead = ARCHIVING if self.dead_letters.enabled() else ARCHIVED
        changes = {}
        for offset in offsets:
            rec = records.get(offset)
            if rec is None or rec.state != RecordState.ACQUIRED or not still(offset) or (self._acking and self._being_acked((offset,))):
                continue
            changes[offset] = (dead if rec.delivery_count >= limit else RecordState.AVAILABLE, rec.delivery_count)
        if not changes:
            return None
        stats = self.stats
        if expired:
            stats.lock_timeouts += len(changes)
        else:
            stats.released_on_leave += len(changes)
        stats.archived["delivery_count_limit"] += sum(1 for state, _ in changes.values() if state == dead)
        # In memory at once (the records may be offered again now), then written: the persisted state of
        # an acquired record is already AVAILABLE, so a crash before the write redelivers it anyway.
        write = self._state_write(changes)
        self._apply(changes)
        archiving = {o: c for o, (state, c) in changes.items() if state == ARCHIVING}
        return self._spawn(self._send_then_dead_letters(write, archiving))

    async def _send_then_dead_letters(self, write: StateWrite, archiving: dict[int, int]) -> ErrorCode:
        code = await self._send(write)
        # Kafka starts the dead-letter write once the ARCHIVING state's write has ended (also a failed one: the
        # records are ARCHIVING in memory already and must not stay so); a fenced window is read again
        if not self.fenced:
            self.dead_letters.start(archiving, reason_delivery_count)
        return code

    # ------------------------------------------------------------------ dead-letter queue (KIP-1191)

    async def _archive_dead_lettered(self, first: int, last: int) -> None:
        """The DLQ write of ``first``-``last`` has ended (:mod:`tidelog.share.dead_letter_handoff`): their
        ARCHIVING records are ARCHIVED, and that is written."""
        records = self._records
        changes = {o: (ARCHIVED, rec.delivery_count) for o in range(first, last + 1)
                   if (rec := records.get(o)) is not None and rec.state == ARCHIVING}
        if not changes or self.fenced:
            return
        write = self._state_write(changes)
        self._apply(changes)
        await self._send(write)

    def _spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` as one of this share partition's tasks (awaited by :meth:`close`)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        """Stop the timers; wait for writes under way."""
        for rec in self._records.values():
            if rec.lock is not None and rec.lock.handle is not None:
                rec.lock.handle.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


__all__ = ["RecordState", "SharePartition"]
