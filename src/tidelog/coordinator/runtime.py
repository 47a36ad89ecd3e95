"""The coordinator runtime: runs coordinator operations against the partitions of an internal topic.

Kafka's ``CoordinatorRuntime`` for one event loop and a single node. Its rules:

1. **An operation computes, the runtime writes.** An operation is a function without arguments that
   returns a :class:`Result` (records to write, the response, callbacks). It does not change durable
   state; :meth:`CoordinatorRuntime.apply` appends the records to the partition as one batch, then
   replays them into the owner (``replay=True``, the default) and only then returns the response.
   A failed append replays nothing: memory stays exactly as it was, ``on_failed`` runs and the
   (normalised) :class:`~tidelog.errors.KafkaError` propagates.
2. **One operation at a time per partition.** Everything runs on the event loop and an operation is
   synchronous, so operations never interleave. On a single node the leader's high watermark follows
   its log end offset, so an appended batch is committed when the append returns (rule 6).
3. **Load = replay.** :meth:`CoordinatorRuntime.load` reads a partition from its first batch and
   hands every record to the same ``replay`` callback that normal writes use, with the producer id of
   its batch (record types the serde does not know are logged and skipped, as Kafka's loader does).
   Transaction markers (control batches) go to ``replay_marker(partition, offset, producer_id,
   commit)`` when the owner gives one (the group coordinator: transactional offset commits), and are
   skipped otherwise.
   :meth:`CoordinatorRuntime.start_load` does the same in the background, a chunk at a time
   (:mod:`tidelog.coordinator.loader`); while it runs, :meth:`check_owned` (so :meth:`apply`)
   answers COORDINATOR_LOAD_IN_PROGRESS for the partition, :meth:`write` refuses it and its timers
   do not fire; a failed load answers NOT_COORDINATOR until the partition is unloaded.
4. **Timers.** ``schedule(key, delay_ms, partition, op)`` writes ``op``'s result once the
   injected clock's monotonic time passes the deadline; scheduling an existing key replaces it,
   ``cancel(key)`` forgets it. :meth:`poll` fires what is due: the broker arms one timer for the
   next deadline through the injected ``schedule(delay_ms, callback)`` (the purgatory's shape), its
   clock's :meth:`~tidelog.clock.Clock.call_later`, so the wake-up too is the clock's (a ``ManualClock``
   wakes it when advanced); unit tests without an event loop advance a ``ManualClock`` and call :meth:`poll`.
5. **Transactional writes.** A :class:`Result` with a ``producer_id`` is appended as a transactional
   batch of that producer and epoch (no sequence: a coordinator's write); its records are replayed
   with that producer id. The transaction's marker, written later through the replica manager, is
   handed to :meth:`CoordinatorRuntime.replay_marker` by whoever wrote it.
6. **Committed before answered** (Kafka's ``scheduleWriteOperation`` future). Each write records the
   partition's last written offset. ``await runtime.run(partition, fn)`` runs ``fn`` now (the
   partition's operations: their Results are appended and replayed at once through :meth:`apply` /
   :meth:`write`) and returns its value once the high watermark passes the partition's *last* write
   as of that moment (the writer's ``wait_committed``: acks=all's purgatory, bounded by
   ``write_timeout_ms``); a read of state that writes built (``fn`` reads) waits the same way. An
   answer parked until another request's write (a JoinGroup completed by the leader's SyncGroup)
   waits again with :meth:`wait_committed` when it is given, so it waits for that write too: memory may run ahead of the high watermark, a client's
   view never does. A commit that fails or times out raises the coordinator's error
   (:func:`normalize_append_error`: NOT_LEADER_OR_FOLLOWER -> NOT_COORDINATOR, REQUEST_TIMED_OUT /
   NOT_ENOUGH_REPLICAS(_AFTER_APPEND) -> COORDINATOR_NOT_AVAILABLE). The write stays in memory: it
   is in the leader's log and becomes committed later, or the partition's leadership moves and the
   partition is unloaded (:meth:`CoordinatorRuntime.unload`), its state dropped with it. On a single
   node (no replication) every write is committed when it is appended and the future is done at once.
7. **Ownership.** :meth:`apply` and :meth:`check_owned` refuse a partition the writer does not own
   (``owns``: this broker leads it) with NOT_COORDINATOR.

Also here: :func:`java_string_hash` and :func:`partition_for`, the ``abs(hash(key)) % partitions``
routing Kafka uses for ``__consumer_offsets`` (group ids) and ``__transaction_state`` (transactional ids).

Concurrency: loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from tidelog.clock import Clock
from tidelog.coordinator.loader import LoadedFn, PartitionLoads
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordBatchBuilder, RecordBatchView, RecordsError, decode_control_batch
from tidelog.replica.manager import ReplicaManager
from tidelog.storage.log import PartitionLog

log = logging.getLogger(__name__)

T = TypeVar("T")

_INT32_MIN = -(1 << 31)


# ------------------------------------------------------------------------------------- routing


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()``: ``h = 31*h + c`` over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if n == _INT32_MIN else abs(n)


def partition_for(key: str, num_partitions: int) -> int:
    """The internal-topic partition that owns ``key`` (a group id or a transactional id)."""
    return java_abs(java_string_hash(key)) % num_partitions


# -------------------------------------------------------------------------------------- results


@dataclass(slots=True)
class Result(Generic[T]):
    """What an operation asks for: records to append (in order, as one batch) and its response.

    ``replay=False`` means the operation already applied its in-memory change itself and the records
    only persist it (Kafka writes classic-group metadata that way); they are still replayed at load.
    ``on_appended`` runs after a successful append (and replay); ``on_failed(error)`` after a failed
    one, with the error already normalised for a coordinator response.
    """

    records: list[Any] = field(default_factory=list)
    response: T | None = None
    replay: bool = True
    on_appended: Callable[[], None] | None = None
    on_failed: Callable[[KafkaError], None] | None = None
    #: A transactional write (rule 5): the producer id and epoch of the batch; -1 = not transactional.
    producer_id: int = -1
    producer_epoch: int = -1


# Append errors as a coordinator reports them (Kafka's GroupCoordinatorService.handleOperationException
# and GroupMetadataManager.appendGroupMetadataErrorToResponseError).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.CORRUPT_MESSAGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_RECORD: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def normalize_append_error(code: ErrorCode) -> ErrorCode:
    return _APPEND_ERRORS.get(code, code)


# -------------------------------------------------------------------------------------- storage


class PartitionWriter(Protocol):
    """The narrow storage interface of the runtime: one internal topic, by partition."""

    def append(self, partition: int, batch: bytes) -> int:
        """Append a magic-v2 batch as leader; returns the offset of its first record. Raises KafkaError."""
        ...

    def batches(self, partition: int, start_offset: int = -1) -> Iterator[RecordBatchView]:
        """Every batch of the partition from ``start_offset`` (-1: its log start offset), in order."""
        ...

    def owns(self, partition: int) -> bool:
        """Whether this broker may coordinate the partition (it leads it)."""
        ...

    def is_committed(self, partition: int, offset: int) -> bool:
        """Whether the high watermark has passed ``offset`` (the end of a write) on a partition led here."""
        ...

    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> ErrorCode:
        """Wait until the high watermark reaches ``offset``; NONE, or the acks=all error."""
        ...


class ReplicaWriter:
    """:class:`PartitionWriter` through the replica manager (the broker's one door to partition data),
    for one internal topic. ``ensure_topic()`` creates the topic on first use (Kafka creates
    ``__consumer_offsets`` on the first FindCoordinator); appends are acks=all writes as leader."""

    def __init__(self, replicas: ReplicaManager, topic: str, ensure_topic: Callable[[], object]) -> None:
        self.replicas = replicas
        self.topic = topic
        self.ensure_topic = ensure_topic

    def append(self, partition: int, batch: bytes) -> int:
        self.ensure_topic()
        return self.replicas.append_records(self.topic, partition, bytearray(batch), acks=-1,
                                            from_client=False).first_offset

    def batches(self, partition: int, start_offset: int = -1) -> Iterator[RecordBatchView]:
        yield from self.replicas.batches(self.topic, partition, start_offset)

    def owns(self, partition: int) -> bool:
        topic = self.replicas.image.topics.get(self.topic)
        if topic is None:
            return True  # created on first use, led here on a single node (elsewhere the append says so)
        if not 0 <= partition < len(topic.partitions):
            return False
        return topic.partitions[partition].leader == self.replicas.broker_id and self.replicas.may_lead()

    def is_committed(self, partition: int, offset: int) -> bool:
        return self.replicas.is_committed(self.topic, partition, offset)

    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> ErrorCode:
        if self.replicas.replication is None:
            return ErrorCode.NONE
        return await self.replicas.wait_for_acks(self.topic, partition, offset, timeout_ms)


class LogWriter:
    """:class:`PartitionWriter` straight over partition logs (coordinator unit tests, tools).

    ``log_for(partition)`` returns the partition's log or raises KafkaError; ``after_append(plog,
    partition)``, if given, runs after each append.
    """

    def __init__(self, log_for: Callable[[int], PartitionLog],
                 after_append: Callable[[PartitionLog, int], None] | None = None) -> None:
        self.log_for = log_for
        self.after_append = after_append

    def append(self, partition: int, batch: bytes) -> int:
        plog = self.log_for(partition)
        result = plog.append_as_leader(bytearray(batch), from_client=False)
        if self.after_append is not None:
            self.after_append(plog, partition)
        return result.first_offset

    def batches(self, partition: int, start_offset: int = -1) -> Iterator[RecordBatchView]:
        plog = self.log_for(partition)
        yield from plog.batches(max(start_offset, plog.log_start_offset))

    def owns(self, partition: int) -> bool:
        return True

    def is_committed(self, partition: int, offset: int) -> bool:
        return True

    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> ErrorCode:
        return ErrorCode.NONE


# --------------------------------------------------------------------------------------- timers


@dataclass(slots=True)
class _Timer:
    deadline_ms: int
    seq: int
    fn: Callable[[], None]


class Timers:
    """Keyed one-shot timers on the injected clock. Loop-only, not thread-safe."""

    def __init__(self, clock: Clock, schedule: Callable[[float, Callable[[], None]], Any] | None = None) -> None:
        self.clock = clock
        self._schedule = schedule
        self._timers: dict[str, _Timer] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._armed: tuple[int, Any] | None = None  # (deadline, handle) of the loop timer
        self.closed = False

    def __len__(self) -> int:
        return len(self._timers)

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def deadline(self, key: str) -> int | None:
        t = self._timers.get(key)
        return t.deadline_ms if t else None

    def schedule(self, key: str, delay_ms: int, fn: Callable[[], None]) -> None:
        deadline = self.clock.monotonic_ms() + max(0, int(delay_ms))
        t = _Timer(deadline, next(self._seq), fn)
        self._timers[key] = t
        heapq.heappush(self._heap, (deadline, t.seq, key))
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._timers):
            self._heap = [(t.deadline_ms, t.seq, k) for k, t in self._timers.items()]
            heapq.heapify(self._heap)
        self._arm()

    def cancel(self, key: str) -> None:
        self._timers.pop(key, None)

    def cancel_all(self) -> None:
        self._timers.clear()
        self._heap.clear()
        if self._armed is not None:
            self._armed[1].cancel()
            self._armed = None

    def next_deadline(self) -> int | None:
        while self._heap:
            deadline, seq, key = self._heap[0]
            t = self._timers.get(key)
            if t is not None and t.seq == seq:
                return deadline
            heapq.heappop(self._heap)
        return None

    def poll(self) -> int:
        """Run every timer due now (scheduled before this call); returns how many ran."""
        now = self.clock.monotonic_ms()
        limit = next(self._seq)
        fired = 0
        while self._heap and self._heap[0][0] <= now:
            _, seq, key = self._heap[0]
            t = self._timers.get(key)
            if t is None or t.seq != seq:
                heapq.heappop(self._heap)
                continue
            if seq > limit:
                break
            heapq.heappop(self._heap)
            del self._timers[key]
            fired += 1
            try:
                t.fn()
            except Exception:
                log.exception("coordinator timer %s failed", key)
        self._arm()
        return fired

    def _arm(self) -> None:
        if self._schedule is None or self.closed:
            return
        deadline = self.next_deadline()
        if self._armed is not None:
            if deadline is not None and self._armed[0] <= deadline:
                return
            self._armed[1].cancel()
            self._armed = None
        if deadline is None:
            return
        delay = max(0, deadline - self.clock.monotonic_ms())
        self._armed = (deadline, self._schedule(delay, self._on_wakeup))

    def _on_wakeup(self) -> None:
        self._armed = None
        self.poll()


# -------------------------------------------------------------------------------------- runtime

ReplayFn = Callable[[int, int, int, Any], None]  # (partition, record offset, producer id, record)
MarkerFn = Callable[[int, int, int, bool], None]  # (partition, marker offset, producer id, commit)


class CoordinatorRuntime:
    """Writes operation results to an internal topic and replays them; loads partitions; timers.

    ``serialize(record) -> (key bytes, value bytes | None)`` and ``deserialize(key, value) -> record``
    are the topic's record serde; ``deserialize`` raises ``LookupError`` for unknown record types.
    """

    def __init__(self, clock: Clock, writer: PartitionWriter, replay: ReplayFn,
                 serialize: Callable[[Any], tuple[bytes, bytes | None]],
                 deserialize: Callable[[bytes, bytes | None], Any],
                 schedule: Callable[[float, Callable[[], None]], Any] | None = None,
                 replay_marker: MarkerFn | None = None, write_timeout_ms: int = 5000) -> None:
        self.clock = clock
        self.write_timeout_ms = write_timeout_ms
        #: partition -> the offset after the last write to it (rule 6)
        self._last_written: dict[int, int] = {}
        self._timer_partitions: dict[str, int] = {}  # timer key -> partition (rule 4; unload cancels them)
        self.writer = writer
        self._replay = replay
        self._replay_marker = replay_marker
        self._serialize = serialize
        self._deserialize = deserialize
        self.timers = Timers(clock, schedule)
        self.loads = PartitionLoads(self.writer.batches, self._replay_batch)

    # ---------------------------------------------------------------------------------- writes

    def apply(self, partition: int, op: Callable[[], Result[T]]) -> T | None:
        """Run ``op`` and write its result now (rule 1); the partition's operations call this. Returns
        the response; raises KafkaError (NOT_COORDINATOR for a partition this broker does not lead,
        rule 7). The write may not be committed yet: callers answering a client await :meth:`run`."""
        self.check_owned(partition)
        return self.write(partition, op())

    async def run(self, partition: int, fn: Callable[[], T]) -> T:
        """Rule 6: run ``fn`` now on ``partition`` (its writes go through :meth:`apply` / :meth:`write`)
        and return its value once the high watermark passes the partition's last write. Raises the
        coordinator's KafkaError when that write is not committed in time."""
        value = fn()
        await self.wait_committed(partition)
        return value

    def check_owned(self, partition: int) -> None:
        if not self.writer.owns(partition) or partition in self.loads.failed:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"partition {partition} is not coordinated here")
        if self.loads.is_loading(partition):
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"partition {partition} is being loaded")

    def is_loading(self, partition: int) -> bool:
        return self.loads.is_loading(partition)

    def is_committed(self, partition: int) -> bool:
        offset = self._last_written.get(partition)
        return offset is None or self.writer.is_committed(partition, offset)

    async def committed(self, partition: int) -> ErrorCode:
        """Rule 6: wait until the last write to ``partition`` is committed; NONE or a coordinator error."""
        offset = self._last_written.get(partition)
        if offset is None or self.writer.is_committed(partition, offset):
            return ErrorCode.NONE
        code = await self.writer.wait_committed(partition, offset, self.write_timeout_ms)
        if code != ErrorCode.NONE:
            log.info("coordinator partition %d: write ending at %d not committed: %s", partition, offset, code.name)
        return normalize_append_error(code)

    async def wait_committed(self, partition: int) -> None:
        """:meth:`committed`, raising its error as a KafkaError."""
        code = await self.committed(partition)
        if code != ErrorCode.NONE:
            raise KafkaError(code, f"the write to coordinator partition {partition} was not committed")

    def unload(self, partition: int) -> None:
        """The partition is no longer coordinated here: its load stops, its timers stop, its writes are
        forgotten."""
        self.loads.cancel(partition)
        self._last_written.pop(partition, None)
        for key in [k for k, p in self._timer_partitions.items() if p == partition]:
            del self._timer_partitions[key]
            self.timers.cancel(key)

    def write(self, partition: int, result: Result[T]) -> T | None:
        if result.records and self.loads.is_loading(partition):
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"partition {partition} is being loaded")
        if result.records:
            try:
                base = self.writer.append(partition, self._build_batch(result.records, result.producer_id,
                                                                       result.producer_epoch))
            except KafkaError as e:
                error = KafkaError(normalize_append_error(e.code), e.message)
                if e.code is not ErrorCode.KAFKA_STORAGE_ERROR:  # a full disk is logged once, by its log dir
                    log.warning("append to coordinator partition %d failed: %s", partition, e)
                if result.on_failed is not None:
                    result.on_failed(error)
                raise error from None
            self._last_written[partition] = base + len(result.records)
            if result.replay:
                for i, record in enumerate(result.records):
                    self._replay(partition, base + i, result.producer_id, record)
        if result.on_appended is not None:
            result.on_appended()
        return result.response

    def _build_batch(self, records: list[Any], producer_id: int = -1, producer_epoch: int = -1) -> bytes:
        now = self.clock.wall_ms()
        if producer_id >= 0:
            builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch,
                                         is_transactional=True)
        else:
            builder = RecordBatchBuilder()
        for record in records:
            key, value = self._serialize(record)
            builder.append(now, key, value)
        return builder.build()

    # ------------------------------------------------------------------------------------ load

    def load(self, partition: int) -> int:
        """Replay every record of ``partition`` now (rule 3); returns how many records were replayed."""
        return self.loads.load_now(partition)

    def start_load(self, partition: int, on_loaded: LoadedFn) -> asyncio.Task[None]:
        """Replay ``partition`` in the background (rule 3); ``on_loaded(partition, records)`` at the end."""
        return self.loads.start(partition, on_loaded)

    def _replay_batch(self, partition: int, batch: RecordBatchView) -> int:
        if batch.is_control_batch:
            self._load_marker(partition, batch)
            return 0
        count = 0
        producer_id = batch.producer_id if batch.is_transactional else -1
        for rec in batch.records():
            if rec.key is None:
                log.warning("record without key at offset %d of partition %d skipped", rec.offset, partition)
                continue
            try:
                record = self._deserialize(rec.key, rec.value)
            except Exception as e:  # unknown record type or undecodable bytes: Kafka skips them too
                log.warning("offset %d of partition %d: %s; skipped", rec.offset, partition, e)
                continue
            self._replay(partition, rec.offset, producer_id, record)
            count += 1
        return count

    def _load_marker(self, partition: int, batch: RecordBatchView) -> None:
        if self._replay_marker is None:
            return
        try:
            marker = decode_control_batch(batch)
        except RecordsError as e:
            log.warning("control batch at offset %d of partition %d: %s; skipped", batch.base_offset, partition, e)
            return
        if marker is not None:
            self._replay_marker(partition, batch.base_offset, batch.producer_id, marker.is_commit)

    def replay_marker(self, partition: int, offset: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written to ``partition`` (rule 5): replay it into the owner."""
        if self._replay_marker is not None:
            self._replay_marker(partition, offset, producer_id, commit)

    # ---------------------------------------------------------------------------------- timers

    def schedule(self, key: str, delay_ms: int, partition: int, op: Callable[[], Result[Any] | None]) -> None:
        """Write ``op``'s result to ``partition`` after ``delay_ms`` (rule 4; nobody awaits its commit)."""
        self._timer_partitions[key] = partition
        self.timers.schedule(key, delay_ms, lambda: self._run_timer(key, partition, op))

    def cancel(self, key: str) -> None:
        self._timer_partitions.pop(key, None)
        self.timers.cancel(key)

    def poll(self) -> int:
        return self.timers.poll()

    def _run_timer(self, key: str, partition: int, op: Callable[[], Result[Any] | None]) -> None:
        if self._timer_partitions.get(key) == partition:
            del self._timer_partitions[key]
        if self.loads.is_loading(partition):
            log.debug("coordinator timer %s dropped: partition %d is being loaded", key, partition)
            return
        result = op()
        if result is None:
            return
        try:
            self.write(partition, result)
        except KafkaError as e:
            log.warning("coordinator timer %s could not write its records: %s", key, e)

    def close(self) -> None:
        self.loads.cancel_all()
        self.timers.closed = True
        self.timers.cancel_all()
        self._timer_partitions.clear()


__all__ = [
    "CoordinatorRuntime",
    "LogWriter",
    "PartitionWriter",
    "ReplicaWriter",
    "Result",
    "Timers",
    "java_abs",
    "java_string_hash",
    "normalize_append_error",
    "partition_for",
]
