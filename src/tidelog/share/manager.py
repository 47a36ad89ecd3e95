"""The share partitions this broker serves, and what ShareFetch and ShareAcknowledge ask of them (Kafka's
``SharePartitionManager``).

A share partition (group, topic id, partition) is built on first use on the broker leading the topic
partition, and initialized from the share-state persister (:class:`~tidelog.share.partition.SharePartition`).
Logs are read only through the replica manager's read API, as the Fetch handler reads them (the records
handed out are whole batches; a consumer keeps the offsets of the acquired ranges only).

Rules:

1. **Fetch.** For each partition: the leadership check (NOT_LEADER_OR_FOLLOWER drops the share partition
   here), initialization if needed, a read from the share partition's next fetch offset (up to the LSO
   under read_committed, whose aborted batches and control batches are archived, never delivered), the
   acquisition of what the read found for the member. ``max_records`` spreads over the partitions in order.
2. **Wait.** When nothing was acquired and ``max_wait_ms`` > 0, the fetch waits for new records in the logs
   or for records released (an acknowledgement, a lock expiry, a member leaving), then tries once more.
   Kafka completes a share fetch once ``min_bytes`` are acquired; here any acquired record ends the wait.
   When the windows asked for are full and hold records of the fetching member itself, it waits at most
   ``OWN_RECORDS_WAIT_MS``: its own acknowledgements would make room, and a client sends them with its next
   request (librdkafka fetches ahead while the application still works through a large acquired batch).
3. **Fairness.** Waiting fetches are woken in the order they started waiting, and a woken fetch of another
   member goes first: a fetch that finds one (typically the fetch whose piggy-backed acknowledgement just
   freed the window) lets it try before it acquires, as Kafka's delayed share fetches waiting on a share
   partition are completed before a new fetch takes its fetch lock. While other members wait on a share
   partition, one fetch acquires at most an equal part of the window (whole batches in
   batch-optimized mode, so a bit more), so a freed window is spread over the waiting members instead of
   going whole to the first of them.
4. **Acknowledge.** Each partition's acknowledgements go to its share partition; the answer per partition
   comes once the persister has the change.
5. **Members leaving.** :meth:`SharePartitionManager.release_member` (called by the group coordinator when a
   share group's member leaves or its session expires) releases what the member holds everywhere and drops
   its share session; :meth:`SharePartitionManager.connection_closed` does the same for the sessions of a
   client connection that closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog.clock import Clock
from tidelog.coordinator.share.persister import SharePartitionKey, SharePersister, ShareState, StateWrite
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordsError, iter_batches
from tidelog.records.batch import RecordBatchView
from tidelog.records.control import ControlRecordType, decode_control_batch
from tidelog.replica.fetch import READ_COMMITTED, PartitionFetch, PartitionRead
from tidelog.replica.manager import ReplicaManager
from tidelog.share.config import AcquireMode, ShareGroupSettings
from tidelog.share.dead_letter import DeadLetterSink
from tidelog.share.deliveries import AckBatch, AcquiredRange, FetchedBatch
from tidelog.share.partition import RecordState, SharePartition
from tidelog.share.session import ShareSessionCache, TopicIdPartition
from tidelog.share.stats import ShareStats
from tidelog.storage.segment import FileSlice


@dataclass(slots=True)
class ShareFetchResult:
    """One partition's answer to a share fetch."""

    error: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    #: whole batches holding the acquired records: a slice of the segment file (sent with sendfile, as
    #: Fetch's records are) when they follow each other in one read, else bytes
    records: bytes | FileSlice = b""
    acquired: list[AcquiredRange] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SharePartitionSnapshot:
    """A read-only view of one share partition's window of in-flight records (for the console)."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    start_offset: int
    end_offset: int
    acquired: int  # handed out, under an acquisition lock
    available: int  # in the window and may be handed out (again): released, lock expired, not yet delivered
    delivery_complete: int  # acknowledged or archived, after the start offset


class SharePartitionManager:
    """Every share partition this broker leads, and the share sessions of their consumers."""

    def __init__(self, replicas: ReplicaManager, persister: SharePersister, clock: Clock,
                 broker_values: Mapping[str, Any], sessions: ShareSessionCache | None = None,
                 group_configs: Callable[[str], Mapping[str, Any] | None] | None = None,
                 dead_letters: DeadLetterSink | None = None) -> None:
        self.replicas = replicas
        self.persister = persister
        self.clock = clock
        self.broker_values = broker_values
        self.sessions = sessions if sessions is not None else ShareSessionCache(
            int(broker_values.get("group.share.max.share.sessions", 2000)))
        self._group_configs = group_configs or (lambda group_id: None)
        #: share groups' dead-letter queues (KIP-1191, share.version 2; None: rejected records are archived)
        self.dead_letters = dead_letters
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        #: each share partition's counters for the metrics, kept for the broker's life (docs/metrics.md)
        self.stats: dict[SharePartitionKey, ShareStats] = {}
        self._loading: dict[SharePartitionKey, asyncio.Future] = {}
        #: fetches waiting for records (rule 2), in the order they started waiting; a woken one stays here
        #: until it has tried again (rule 3)
        self._parked: list[_Parked] = []
        self._closed = False

    def settings(self, group_id: str) -> ShareGroupSettings:
        return ShareGroupSettings.of(self.broker_values, self._group_configs(group_id))

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        found = self.replicas.image.topic_by_id(topic_id)
        return found.name if found else None

    # ------------------------------------------------------------------------- share partitions

    def _wake(self) -> None:
        for parked in self._parked:  # in the order they started waiting (rule 3)
            if not parked.woken.done():
                parked.woken.set_result(None)

    async def share_partition(self, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartition:
        """The share partition, initialized (rule 1); raises KafkaError (not the leader, unknown topic,
        the persister's errors)."""
        topic = self.topic_name(topic_id)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic with id {topic_id}")
        key = SharePartitionKey(group_id, topic_id, partition)
        try:
            offsets = self.replicas.leader_offsets(topic, partition)
        except KafkaError:
            self._drop(key)
            raise
        sp = self.partitions.get(key)
        if sp is not None and sp.leader_epoch != self.replicas.leader_epoch(topic, partition):
            self._drop(key)  # leadership moved away and back: the state is read again
            sp = None
        if sp is not None:
            sp.move_start(offsets.log_start_offset)
            return sp
        loading = self._loading.get(key)
        if loading is not None:
            await asyncio.shield(loading)
            return await self.share_partition(group_id, topic_id, partition)
        settings = self.settings(group_id)
        stats = self.stats.get(key)
        if stats is None or stats.topic != topic:
            stats = self.stats[key] = ShareStats(group_id, topic, partition)
        sp = SharePartition(key, topic, settings, self.persister, self.clock,
                            self.replicas.leader_epoch(topic, partition), on_available=self._wake, stats=stats,
                            on_fenced=lambda fenced: self.forget(fenced.key, fenced), dead_letters=self.dead_letters)
        done = self._loading[key] = asyncio.get_running_loop().create_future()
        try:
            latest = offsets.last_stable_offset if settings.isolation_level == READ_COMMITTED else offsets.high_watermark
            await sp.initialize(offsets.log_start_offset, latest)
            self.partitions[key] = sp
        finally:
            del self._loading[key]
            done.set_result(None)
        return sp

    def forget(self, key: SharePartitionKey, only: SharePartition | None = None) -> None:
        """Drop the share partition of ``key`` (``only``: if it is still that one): its state was initialized
        again or deleted (AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups), or a write of it
        was fenced; the next fetch reads the state again."""
        if only is None or self.partitions.get(key) is only:
            self._drop(key)

    def _drop(self, key: SharePartitionKey) -> None:
        sp = self.partitions.pop(key, None)
        if sp is not None:
            task = asyncio.ensure_future(sp.close())
            task.add_done_callback(lambda t: t.exception())

    def snapshot(self, group_id: str) -> list[SharePartitionSnapshot]:
        """The windows of the group's share partitions this broker holds (it leads their topic partitions),
        read-only: nothing is built, loaded or changed."""
        out = []
        for key, sp in sorted(self.partitions.items(), key=lambda kv: (kv[1].topic, kv[0].partition)):
            if key.group_id != group_id or not sp.initialized:
                continue
            counts = sp.state_counts()
            out.append(SharePartitionSnapshot(
                sp.topic, key.topic_id, key.partition, sp.start_offset, sp.end_offset,
                acquired=counts[RecordState.ACQUIRED], available=counts[RecordState.AVAILABLE],
                delivery_complete=counts[RecordState.ACKNOWLEDGED] + counts[RecordState.ARCHIVED]))
        return out

    # -------------------------------------------------------------------------------- fetch (1, 2)

    async def fetch(self, group_id: str, member_id: str, partitions: list[TopicIdPartition], *, max_wait_ms: int,
                    max_bytes: int, max_records: int, mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
                    ) -> dict[TopicIdPartition, ShareFetchResult]:
        """Acquire records of ``partitions`` for the member (rules 1-3)."""
        deadline = self.clock.monotonic_ms() + max(0, max_wait_ms)
        parked: _Parked | None = None
        try:
            while True:
                if parked is None:
                    await self._after_woken_fetches(group_id, member_id, partitions)
                results = await self._fetch_once(group_id, member_id, partitions, max_bytes, max_records, mode)
                if parked is not None:  # its try after the wake is done: the next fetch may go (rule 3)
                    self._unpark(parked)
                    parked = None
                remaining = deadline - self.clock.monotonic_ms()
                if (self._closed or remaining <= 0 or not partitions
                        or any(r.acquired or r.error for r in results.values())):
                    return results
                if self._full_with_own_records(group_id, member_id, partitions):
                    # rule 2: only the member's own acknowledgements can make room, and it sends them with its
                    # next request: a long wait would hold them back
                    deadline = min(deadline, self.clock.monotonic_ms() + OWN_RECORDS_WAIT_MS)
                    remaining = min(remaining, OWN_RECORDS_WAIT_MS)
                parked = _Parked(group_id, member_id, frozenset(partitions),
                                 asyncio.get_running_loop().create_future())
                self._parked.append(parked)
                await self._wait(parked, remaining)
        finally:
            if parked is not None:
                self._unpark(parked)

    def _full_with_own_records(self, group_id: str, member_id: str, partitions: list[TopicIdPartition]) -> bool:
        """Whether every share partition of ``partitions`` has a full window holding records of the member."""
        for topic_id, p in partitions:
            sp = self.partitions.get(SharePartitionKey(group_id, topic_id, p))
            if sp is None or sp.can_acquire() or not sp.holds_records(member_id):
                return False
        return True

    def _unpark(self, parked: _Parked) -> None:
        with contextlib.suppress(ValueError):
            self._parked.remove(parked)
        if not parked.tried.done():
            parked.tried.set_result(None)

    def _others_waiting(self, group_id: str, member_id: str, tp: TopicIdPartition) -> int:
        """Fetches of other members waiting on the share partition (rule 3)."""
        return sum(1 for p in self._parked
                   if p.member_id != member_id and p.group_id == group_id and tp in p.partitions)

    async def _after_woken_fetches(self, group_id: str, member_id: str, partitions: list[TopicIdPartition]) -> None:
        """Rule 3: the woken fetches of other members on these partitions try before this one acquires
        (bounded: a woken fetch tries at once, unless the event loop is starved)."""
        if not self._parked:
            return
        wanted = set(partitions)
        ahead = [p.tried for p in self._parked
                 if p.woken.done() and p.member_id != member_id and p.group_id == group_id
                 and not wanted.isdisjoint(p.partitions)]
        if ahead:
            await asyncio.wait(ahead, timeout=WOKEN_TURN_S)

    async def _wait(self, parked: _Parked, max_wait_ms: int) -> None:
        """Until records are released anywhere, new records reach a log of ``parked``'s partitions whose
        share partition has room for them, or ``max_wait_ms`` passes."""
        woken = parked.woken
        group_id = parked.group_id
        partitions = sorted(parked.partitions)
        timer = self.clock.call_later(max_wait_ms, lambda: woken.done() or woken.set_result(None))
        fetches = []
        for topic_id, p in partitions:
            sp = self.partitions.get(SharePartitionKey(group_id, topic_id, p))
            if sp is not None and sp.in_flight() < sp.settings.partition_max_record_locks:
                fetches.append(PartitionFetch(sp.topic, topic_id, p, sp.end_offset, 1 << 20))
        waits: set[asyncio.Future] = {woken}
        data = None
        if fetches:
            isolation = self.settings(group_id).isolation_level
            data = asyncio.ensure_future(self.replicas.wait_for_data(fetches, 1, max_wait_ms, isolation))
            waits.add(data)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not woken.done():  # woken by new records: it is in its turn too
                woken.set_result(None)
            if data is not None and not data.done():
                data.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await data

    async def _fetch_once(self, group_id: str, member_id: str, partitions: list[TopicIdPartition], max_bytes: int,
                          max_records: int, mode: AcquireMode) -> dict[TopicIdPartition, ShareFetchResult]:
        out: dict[TopicIdPartition, ShareFetchResult] = {}
        budget = max_bytes
        records_left = max_records if max_records > 0 else 1 << 31
        for tp in partitions:
            topic_id, p = tp
            try:
                sp = await self.share_partition(group_id, topic_id, p)
            except KafkaError as e:
                out[tp] = ShareFetchResult(e.code, e.message)
                continue
            if records_left <= 0 or budget <= 0 or not sp.can_acquire():
                out[tp] = ShareFetchResult()
                continue
            fetch_offset = sp.next_fetch_offset()
            wanted = records_left
            others = self._others_waiting(group_id, member_id, tp) if self._parked else 0
            if others:  # rule 3: an equal part of the window
                wanted = min(wanted, max(1, -(-sp.settings.partition_max_record_locks // (others + 1))))
            pf = PartitionFetch(sp.topic, topic_id, p, fetch_offset, _read_bytes(sp, fetch_offset, budget, wanted))
            (read,) = self.replicas.read_partitions([pf], budget, sp.settings.isolation_level)
            if read.error:
                if read.error == ErrorCode.OFFSET_OUT_OF_RANGE and read.log_start_offset > sp.start_offset:
                    sp.move_start(read.log_start_offset)
                    out[tp] = ShareFetchResult()
                    continue
                out[tp] = ShareFetchResult(read.error, read.error_message)
                continue
            result = _acquire(sp, member_id, read, wanted, mode)
            out[tp] = result
            budget -= len(result.records)
            records_left -= sum(r.last_offset - r.first_offset + 1 for r in result.acquired)
        return out

    # -------------------------------------------------------------------------------- acknowledge (3)

    async def acknowledge(self, group_id: str, member_id: str, acks: dict[TopicIdPartition, list[AckBatch]],
                          *, allow_renew: bool = False) -> dict[TopicIdPartition, ErrorCode]:
        out: dict[TopicIdPartition, ErrorCode] = {}
        for tp, batches in acks.items():
            topic_id, p = tp
            try:
                sp = await self.share_partition(group_id, topic_id, p)
            except KafkaError as e:
                out[tp] = e.code
                continue
            out[tp] = await sp.acknowledge(member_id, batches, allow_renew=allow_renew)
        return out

    # ------------------------------------------------------------------------------- members (4)

    async def release_member(self, group_id: str, member_id: str) -> None:
        """The member left the share group (or its session expired): what it holds is released and its
        share session is gone. Returns once the releases are written."""
        self.sessions.remove(group_id, member_id)
        tasks = [t for key, sp in list(self.partitions.items()) if key.group_id == group_id
                 if (t := sp.release_member(member_id)) is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if not self.sessions.has_group(group_id):
            # The group has no member here any more (Kafka's onGroupEmpty): its share partitions leave the
            # cache, so the next member reads their state again, as AlterShareGroupOffsets or
            # DeleteShareGroupOffsets (only allowed while the group is empty) may have changed it.
            for key in [k for k in self.partitions if k.group_id == group_id]:
                self._drop(key)

    async def connection_closed(self, connection_id: str) -> None:
        """A client connection closed: its share sessions end and their members' records are released
        (Kafka 4.1+; the network layer's hook calls it)."""
        for session in self.sessions.of_connection(connection_id):
            await self.release_member(session.group_id, session.member_id)

    async def close(self) -> None:
        self._closed = True
        for key in list(self.partitions):
            sp = self.partitions.pop(key)
            await sp.close()
        self._wake()


#: What a share partition reads from its log while it has not yet seen how big its records are.
FIRST_READ_BYTES = 1 << 20
#: How long a fetch waits when the windows it asks for are full and hold records of its own member (rule 2):
#: the member's acknowledgements, which would make room, come with its next request.
OWN_RECORDS_WAIT_MS = 20
#: How long a fetch lets woken fetches of other members try first (rule 3): they are runnable already, so
#: this bounds only a starved event loop.
WOKEN_TURN_S = 0.5


@dataclass(eq=False, slots=True)
class _Parked:
    """A fetch waiting for records (rule 2)."""

    group_id: str
    member_id: str
    partitions: frozenset[TopicIdPartition]
    #: set when it may find records (released, new in the log, or its wait is over)
    woken: asyncio.Future
    #: set once it has tried again after its wake (or gave up)
    tried: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def _read_bytes(sp: SharePartition, fetch_offset: int, budget: int, records_left: int) -> int:
    """How much of the log one fetch reads for ``sp``: about what it can acquire from ``fetch_offset`` (the
    in-flight window's room, ``share.partition.max.record.locks``, and the records the request still wants)
    at the record size of its last read, with a margin; never more than ``budget``. A consumer's budget
    (``fetch.max.bytes``, 50 MiB by default) would otherwise make every fetch read and parse megabytes of
    records to acquire a window's worth. The read always returns at least one batch."""
    per_offset = sp.read_bytes_per_offset
    if per_offset <= 0:
        return min(budget, FIRST_READ_BYTES)
    span = max(sp.start_offset + sp.settings.partition_max_record_locks, sp.end_offset) - fetch_offset
    span = max(1, min(span, records_left))
    return min(budget, int(span * per_offset * 1.5) + 16384)


def _acquire(sp: SharePartition, member_id: str, read: PartitionRead, max_records: int,
             mode: AcquireMode) -> ShareFetchResult:
    """The batches of ``read`` offered to ``sp``; the result carries the batches that hold acquired records."""
    raw = b""
    source = read.records
    if source is not None:
        try:
            raw = source.read()
        except BaseException:
            source.release()
            raise
    try:
        return _acquired_from(sp, member_id, raw, source, read, max_records, mode)
    finally:
        if source is not None:
            source.release()  # what the answer sends holds the file open by a slice of its own


def _acquired_from(sp: SharePartition, member_id: str, raw: bytes, source: FileSlice | None, read: PartitionRead,
                   max_records: int, mode: AcquireMode) -> ShareFetchResult:
    batches: list[tuple[FetchedBatch, memoryview]] = []
    aborted = read.aborted or []
    try:
        for entry in iter_batches(raw, allow_partial=True):
            first = getattr(entry, "base_offset", None)
            first = entry.last_offset if first is None else first
            skip = False
            if isinstance(entry, RecordBatchView):
                if entry.is_control_batch:
                    skip = True
                    with contextlib.suppress(RecordsError):
                        marker = decode_control_batch(entry)
                        if marker is not None and marker.control_type == ControlRecordType.ABORT:
                            aborted = [a for a in aborted if a.producer_id != entry.producer_id
                                       or a.last_offset > entry.base_offset]
                elif entry.is_transactional and any(a.producer_id == entry.producer_id
                                                    and a.first_offset <= first <= a.last_offset for a in aborted):
                    skip = True
            batches.append((FetchedBatch(first, entry.last_offset, skip), entry.buffer))
    except RecordsError as e:
        return ShareFetchResult(ErrorCode.CORRUPT_MESSAGE, str(e))
    if batches:  # the record size the next read is sized by
        sp.read_bytes_per_offset = len(raw) / max(1, batches[-1][0].last_offset - batches[0][0].first_offset + 1)
    acquired = sp.acquire(member_id, [b for b, _ in batches], max_records, mode)
    if not acquired:
        return ShareFetchResult()
    # the batches holding acquired records: when they follow each other (the common case: every batch of
    # the read), the part of the segment file they fill, which the network layer sends as Fetch's records
    # (sendfile where Fetch uses it); else their bytes
    chosen = [i for i, (b, _) in enumerate(batches)
              if any(r.first_offset <= b.last_offset and b.first_offset <= r.last_offset for r in acquired)]
    records: bytes | FileSlice
    if chosen == list(range(chosen[0], chosen[-1] + 1)):
        start = sum(len(buf) for _, buf in batches[:chosen[0]])  # iter_batches' views follow each other from 0
        end = start + sum(len(batches[i][1]) for i in chosen)
        data = raw if start == 0 and end == len(raw) else raw[start:end]
        # the bytes read go along: a transport without sendfile (uvloop, TLS) writes them, not read again
        records = source.part(start, end - start, data) if source is not None else data
    else:
        records = b"".join(bytes(batches[i][1]) for i in chosen)
    return ShareFetchResult(records=records, acquired=acquired)


class ResettingPersister:
    """The share-state persister as the group coordinator uses it on this broker: once it has initialized a
    share partition's state again or deleted it (AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups),
    the share partition this broker holds for that key is dropped, so the next fetch reads the new state.
    A share partition led by another broker learns it when its next write is fenced."""

    def __init__(self, persister: SharePersister, manager: Callable[[], SharePartitionManager | None]) -> None:
        self.persister = persister
        self.manager = manager

    def _forget(self, key: SharePartitionKey) -> None:
        manager = self.manager()
        if manager is not None:
            manager.forget(key)

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        code = await self.persister.initialize(key, state_epoch, start_offset)
        if code == ErrorCode.NONE:
            self._forget(key)
        return code

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        return await self.persister.read(key, leader_epoch)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        return await self.persister.read_summary(key, leader_epoch)

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        return await self.persister.write(key, write)

    async def delete(self, key: SharePartitionKey) -> ErrorCode:
        code = await self.persister.delete(key)
        if code == ErrorCode.NONE:
            self._forget(key)
        return code


__all__ = ["ResettingPersister", "ShareFetchResult", "SharePartitionManager", "SharePartitionSnapshot"]
