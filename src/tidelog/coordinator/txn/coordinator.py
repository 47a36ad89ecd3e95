"""The transaction coordinator: every transactional id of the broker and the operations on them.

A transactional id lives in partition ``abs(java_string_hash(id)) % partitions`` of
``__transaction_state``; its whole state is one record there (:mod:`tidelog.coordinator.txn.records`).
Public API (what the transaction coordinator service, the produce path's verification and tests call;
clients' requests reach it through :class:`~tidelog.coordinator.txn.service.TransactionCoordinatorService`,
which answers once the writes are committed: runtime rule 6)::

    coordinator = TransactionCoordinator(TxnConfig.from_broker_config(cfg), clock, writer, next_producer_id,
                                          write_marker, schedule)
    coordinator.load(partitions)                   # replay __transaction_state; resume decided transactions
    init_producer_id / add_partitions / verify_partitions / end_txn        the producer's APIs
    describe_transactions / list_transactions                              admin
    abort_timed_out_transactions() / remove_expired_transactional_ids()    also on their own timers
    close()

Rules:

1. **Records, then memory** (Kafka's ``appendTransactionToLog``): an operation prepares a transition
   (:mod:`~tidelog.coordinator.txn.metadata`, rule 1), writes it as a record, and applies it only once
   the record is in the log; a failed write resets ``pending_state`` and answers the write's error
   (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR ...). Loading replays the records into fresh metadata.
2. **Ownership.** Only loaded partitions are served (NOT_COORDINATOR otherwise); a partition's
   coordinator epoch is its leader epoch, written into every marker.
3. **InitProducerId** creates the id's metadata on first use (a new producer id; epoch 0 once
   written), bumps the epoch after that, rotates the producer id when the epoch is exhausted, and
   answers CONCURRENT_TRANSACTIONS while a transaction is being completed. An open (Ongoing)
   transaction is aborted first: its epoch is fenced, PrepareAbort written, and the client told
   CONCURRENT_TRANSACTIONS; its retry then gets the next epoch.
4. **EndTxn** follows :mod:`~tidelog.coordinator.txn.end_txn`; after PrepareCommit/PrepareAbort is
   written the markers are written (:mod:`~tidelog.coordinator.txn.markers`) and the transaction
   completes. Version 5 (transaction version 2) answers with the producer id and epoch to use next.
5. **Timeouts.** Every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` an Ongoing
   transaction open longer than its timeout is aborted with a fenced epoch (the producer gets
   PRODUCER_FENCED / INVALID_PRODUCER_EPOCH next); every
   ``transaction.remove.expired.transaction.cleanup.interval.ms`` an id idle for
   ``transactional.id.expiration.ms`` in Empty/CompleteCommit/CompleteAbort gets a tombstone.

Concurrency: loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tidelog.clock import Clock
from tidelog.config import BrokerConfig
from tidelog.coordinator.runtime import CoordinatorRuntime, PartitionWriter, Result, partition_for
from tidelog.coordinator.txn.end_txn import Prepare, Reply, decide_v1, decide_v2
from tidelog.coordinator.txn.markers import (
    MarkerConfirmFn,
    MarkerWriteFn,
    PendingCompletion,
    TxnMarkerChannel,
)
from tidelog.coordinator.txn.metadata import TopicPartition, TransactionMetadata, TxnTransitMetadata
from tidelog.coordinator.txn.records import TxnLogRecord, TxnLogSerde
from tidelog.coordinator.txn.state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionState,
    TransactionVersion,
    is_epoch_exhausted,
)
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import DescribeTransactionsResponse, ListTransactionsResponse

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
ABORT_TIMER = "transaction-abort"
EXPIRATION_TIMER = "transactional-id-expiration"
S = TransactionState


@dataclass(frozen=True)
class TxnConfig:
    """The broker settings the coordinator uses (Kafka names in ``from_broker_config``)."""

    num_partitions: int = 50
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_transactions_interval_ms: int = 10_000
    remove_expired_transactional_ids_interval_ms: int = 3_600_000
    #: The finalized ``transaction.version`` feature: the protocol of the coordinator's own aborts
    #: and the version of the values written.
    transaction_version: TransactionVersion = TransactionVersion.TV_2

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> TxnConfig:
        return cls(
            num_partitions=config["transaction.state.log.num.partitions"],
            transaction_max_timeout_ms=config["transaction.max.timeout.ms"],
            transactional_id_expiration_ms=config["transactional.id.expiration.ms"],
            abort_timed_out_transactions_interval_ms=config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            remove_expired_transactional_ids_interval_ms=config[
                "transaction.remove.expired.transaction.cleanup.interval.ms"],
            transaction_version=TransactionVersion(config["transaction.version"]),
        )


@dataclass(slots=True)
class TxnPartition:
    """A loaded partition of ``__transaction_state``: its coordinator epoch and its ids."""

    coordinator_epoch: int
    metadata: dict[str, TransactionMetadata] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, clock: Clock, writer: PartitionWriter, next_producer_id: Callable[[], int],
                 write_marker: MarkerWriteFn, schedule: Callable[[float, Callable[[], None]], Any] | None = None, *,
                 coordinator_epoch: Callable[[int], int] = lambda partition: 0,
                 confirm_marker: MarkerConfirmFn | None = None) -> None:
        """``next_producer_id()`` hands out a fresh producer id (KafkaError when it cannot);
        ``write_marker`` writes one marker (:data:`~tidelog.coordinator.txn.markers.MarkerWriteFn`);
        ``coordinator_epoch(partition)`` is the leader epoch of a ``__transaction_state`` partition;
        ``confirm_marker`` says when a written marker is committed (cluster mode; markers.py)."""
        self.config = config
        self.clock = clock
        self.num_partitions = config.num_partitions
        self.next_producer_id = next_producer_id
        self.coordinator_epoch = coordinator_epoch
        self.serde = TxnLogSerde(config.transaction_version)
        # Kafka's TransactionStateManager waits request.timeout.ms (30 s) for the ISR.
        self.runtime = CoordinatorRuntime(clock, writer, self.replay, self.serde.serialize, self.serde.deserialize,
                                          schedule, write_timeout_ms=30_000)
        self.markers = TxnMarkerChannel(write_marker, self._write_completion, self.runtime.timers,
                                        confirm=confirm_marker)
        self.partitions: dict[int, TxnPartition] = {}
        self._loading: dict[int, TxnPartition] = {}  # partitions loading in the background (runtime rule 3)
        self.active = False

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    # ------------------------------------------------------------------------------ load, replay

    def replay(self, partition: int, offset: int, producer_id: int, record: TxnLogRecord) -> None:
        """One record read back at load (rule 1): the id's whole state, or its tombstone."""
        cache = self.partitions.get(partition) or self._loading.get(partition)
        if cache is None:
            return
        if record.value is None:
            cache.metadata.pop(record.transactional_id, None)
        else:
            cache.metadata[record.transactional_id] = TransactionMetadata.from_transit(record.transactional_id,
                                                                                       record.value)

    def load(self, partitions: Iterable[int], *, num_partitions: int | None = None, read: bool = True,
             background: bool = False) -> int:
        """Take over these partitions: replay them (``read=False``: the topic does not exist yet,
        they are empty), resume the decided transactions, start the timers. Returns records replayed.
        ``background``: each partition loads in a task (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and
        joins the served ones, its transactions resumed, when done."""
        if num_partitions is not None:
            self.num_partitions = num_partitions
        count = 0
        self.active = True
        for p in list(partitions):
            self.partitions.pop(p, None)
            self._loading[p] = TxnPartition(self.coordinator_epoch(p))
            if read and background:
                self.runtime.start_load(p, self._partition_loaded)
                continue
            if read:
                count += self.runtime.load(p)
            self._partition_loaded(p, 0)
        if ABORT_TIMER in self.runtime.timers and background:
            return count
        self._schedule(ABORT_TIMER, self.config.abort_timed_out_transactions_interval_ms,
                       self.abort_timed_out_transactions)
        self._schedule(EXPIRATION_TIMER, self.config.remove_expired_transactional_ids_interval_ms,
                       self.remove_expired_transactional_ids)
        log.info("loaded %d transactional ids from %d records",
                 sum(len(c.metadata) for c in self.partitions.values()), count)
        return count

    def _partition_loaded(self, partition: int, records: int) -> None:
        """The partition is replayed: serve it, and resume the transactions it had decided."""
        cache = self.partitions[partition] = self._loading.pop(partition)
        for md in list(cache.metadata.values()):
            if md.state.is_prepare:
                log.info("resuming the markers of %s (%s) after loading", md.transactional_id, md.state.value)
                self.markers.add(PendingCompletion(md.transactional_id, cache.coordinator_epoch,
                                                   md.state is S.PREPARE_COMMIT, md,
                                                   md.prepare_complete(self.clock.wall_ms())))
        if records:
            log.info("loaded %d transactional ids of partition %d from %d records", len(cache.metadata), partition,
                     records)

    def unload(self, partitions: Iterable[int]) -> None:
        """This broker no longer leads these partitions of ``__transaction_state``: their
        transactional ids are dropped (NOT_COORDINATOR from now on, rule 2), their markers stop
        being sent (the new coordinator resumes them after its load) and their timers stop."""
        count = 0
        for p in set(partitions):
            self._loading.pop(p, None)
            cache = self.partitions.pop(p, None)
            if cache is not None:
                count += len(cache.metadata)
                for txn_id in cache.metadata:
                    self.markers.remove(txn_id)
            self.runtime.unload(p)
        log.info("unloaded %d transactional ids of __transaction_state partitions %s", count, sorted(set(partitions)))

    def close(self) -> None:
        self.active = False
        self.markers.clear()
        self.runtime.close()
        self.partitions.clear()
        self._loading.clear()

    def poll(self) -> int:
        """Run due timers (tests with a ManualClock call this; the broker's loop timer does too)."""
        return self.runtime.poll()

    def _schedule(self, key: str, interval_ms: int, job: Callable[[], object]) -> None:
        def tick() -> None:
            try:
                job()
            finally:
                if self.active:
                    self._schedule(key, interval_ms, job)
        self.runtime.timers.schedule(key, interval_ms, tick)

    # --------------------------------------------------------------------------------- helpers

    def _cache(self, transactional_id: str) -> TxnPartition:
        if not self.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the transaction coordinator is not active")
        partition = self.partition_for(transactional_id)
        if partition in self._loading and self.runtime.is_loading(partition):
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"partition {partition} is being loaded")
        cache = self.partitions.get(partition)
        if cache is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"not the coordinator of {transactional_id}")
        return cache

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        cache = self.partitions.get(self.partition_for(transactional_id))
        return None if cache is None else cache.metadata.get(transactional_id)

    def _write_transit(self, md: TransactionMetadata, transit: TxnTransitMetadata,
                       keep_pending_on: frozenset[ErrorCode] = frozenset()) -> ErrorCode:
        """Rule 1: write, then apply; a failed write resets the pending state (unless told not to)."""
        partition = self.partition_for(md.transactional_id)
        try:
            self.runtime.check_owned(partition)
            self.runtime.write(partition, Result([TxnLogRecord(md.transactional_id, transit)], replay=False))
        except KafkaError as e:
            if e.code not in keep_pending_on:
                md.pending_state = None
            log.info("%s: writing %s failed: %s", md.transactional_id, transit.state.value, e)
            return e.code
        md.complete_transition_to(transit)
        return ErrorCode.NONE

    # ------------------------------------------------------------------------- InitProducerId

    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> InitProducerIdResult:
        """InitProducerId with a transactional id (rule 3). ``expected`` is the (producer id, epoch)
        of a client recovering with KIP-360 (InitProducerId v3+), or None."""
        if not transactional_id:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        try:
            cache = self._cache(transactional_id)
            md = cache.metadata.get(transactional_id)
            if md is None:
                md = TransactionMetadata(transactional_id, self.next_producer_id(), txn_timeout_ms=timeout_ms,
                                         txn_last_update_timestamp=self.clock.wall_ms())
                cache.metadata[transactional_id] = md
            transit = self._prepare_init(md, timeout_ms, expected)
        except KafkaError as e:
            return InitProducerIdResult(e.code)
        if transit.state is S.PREPARE_EPOCH_FENCE:
            reply = self._end_transaction(md, transit.producer_id, transit.producer_epoch, False, from_client=False,
                                          client_version=self.config.transaction_version)
            return InitProducerIdResult(reply.error if reply.error != ErrorCode.NONE
                                        else ErrorCode.CONCURRENT_TRANSACTIONS)
        code = self._write_transit(md, transit)
        if code != ErrorCode.NONE:
            return InitProducerIdResult(code)
        log.info("initialized %s with producer id %d, epoch %d", transactional_id, transit.producer_id,
                 transit.producer_epoch)
        return InitProducerIdResult(ErrorCode.NONE, transit.producer_id, transit.producer_epoch)

    def _prepare_init(self, md: TransactionMetadata, timeout_ms: int,
                      expected: tuple[int, int] | None) -> TxnTransitMetadata:
        if md.pending_transition_in_progress:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"{md.transactional_id} is being updated")
        if expected is not None:
            expected_id, expected_epoch = expected
            # A fresh id (epoch -1), the current producer id, or a retry across an epoch exhaustion.
            if not (md.producer_epoch == NO_PRODUCER_EPOCH or expected_id == md.producer_id
                    or (expected_id == md.prev_producer_id and is_epoch_exhausted(expected_epoch))):
                raise KafkaError(ErrorCode.PRODUCER_FENCED, f"producer {expected_id} is not the current producer")
        state = md.state
        now = self.clock.wall_ms()
        if state.is_prepare:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"{md.transactional_id} is being completed")
        if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                return md.prepare_producer_id_rotation(self.next_producer_id(), timeout_ms, now, expected is not None)
            return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
        if state is S.ONGOING:
            return md.prepare_fence_producer_epoch()
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{md.transactional_id} is in state {state.value}")

    # ------------------------------------------------------------------- AddPartitions, verify

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition],
                       client_version: TransactionVersion = TransactionVersion.TV_0) -> ErrorCode:
        """AddPartitionsToTxn / AddOffsetsToTxn, or a partition a KIP-890 v2 request adds."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        added = frozenset(partitions)
        try:
            md = self._cache(transactional_id).metadata.get(transactional_id)
        except KafkaError as e:
            return e.code
        if md is None or md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if md.pending_transition_in_progress or md.state.is_prepare:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state is S.ONGOING and added <= md.topic_partitions:
            return ErrorCode.NONE
        return self._write_transit(md, md.prepare_add_partitions(added, self.clock.wall_ms(), client_version))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """KIP-890 part 1 (AddPartitionsToTxn v4+ ``verify_only``): is each partition in the open
        transaction? TRANSACTION_ABORTABLE for one that is not."""
        parts = list(partitions)
        if not transactional_id:
            return dict.fromkeys(parts, ErrorCode.INVALID_REQUEST)
        try:
            md = self._cache(transactional_id).metadata.get(transactional_id)
        except KafkaError as e:
            return dict.fromkeys(parts, e.code)
        if md is None or md.producer_id != producer_id:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif md.producer_epoch != producer_epoch:
            error = ErrorCode.PRODUCER_FENCED
        elif md.state.is_prepare:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        else:
            return {tp: ErrorCode.NONE if tp in md.topic_partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in parts}
        return dict.fromkeys(parts, error)

    # ---------------------------------------------------------------------------------- EndTxn

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                client_version: TransactionVersion = TransactionVersion.TV_0) -> Reply:
        """EndTxn (rule 4). The reply's producer id and epoch matter from EndTxn v5 on."""
        if not transactional_id:
            return Reply(ErrorCode.INVALID_REQUEST)
        try:
            md = self._cache(transactional_id).metadata.get(transactional_id)
        except KafkaError as e:
            return Reply(e.code)
        if md is None:
            return Reply(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        return self._end_transaction(md, producer_id, producer_epoch, commit, from_client=True,
                                     client_version=client_version)

    def _end_transaction(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool, *,
                         from_client: bool, client_version: TransactionVersion) -> Reply:
        now = self.clock.wall_ms()
        try:
            if client_version.supports_epoch_bump:
                decision = decide_v2(md, producer_id, producer_epoch, commit, from_client=from_client,
                                     client_version=client_version, now_ms=now, new_producer_id=self.next_producer_id)
            else:
                decision = decide_v1(md, producer_id, producer_epoch, commit, from_client=from_client, now_ms=now)
        except KafkaError as e:  # no producer id left for an exhausted epoch
            return Reply(e.code)
        if isinstance(decision, Reply):
            if md.pending_state is S.PREPARE_EPOCH_FENCE:
                md.pending_state = None  # the fence was not used: nothing is pending
            return decision
        assert isinstance(decision, Prepare)
        code = self._write_transit(md, decision.transit)
        if code != ErrorCode.NONE:
            if decision.is_epoch_fence:
                md.has_failed_epoch_fence = True
                log.warning("%s: the epoch fence could not be written (%s); epoch %d was not handed out",
                            md.transactional_id, code.name, decision.transit.producer_epoch)
            return Reply(code)
        complete = md.prepare_complete(now)
        cache = self.partitions[self.partition_for(md.transactional_id)]
        self.markers.add(PendingCompletion(md.transactional_id, cache.coordinator_epoch,
                                           md.state is S.PREPARE_COMMIT, md, complete))
        return Reply(ErrorCode.NONE, complete.producer_id, complete.producer_epoch)

    def _write_completion(self, pending: PendingCompletion) -> ErrorCode:
        md = pending.metadata
        if self.metadata(md.transactional_id) is not md or md.pending_state is not pending.complete.state:
            log.info("%s changed while its markers were written; not completing it", md.transactional_id)
            return ErrorCode.NOT_COORDINATOR
        code = self._write_transit(md, pending.complete, keep_pending_on=frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE}))
        if code == ErrorCode.NONE:
            log.debug("%s completed: %s", md.transactional_id, md.state.value)
        return code

    # ------------------------------------------------------------------------------ timeouts

    def abort_timed_out_transactions(self) -> int:
        """Abort every Ongoing transaction open longer than its timeout (rule 5). Returns how many."""
        now = self.clock.wall_ms()
        aborted = 0
        for cache in list(self.partitions.values()):
            for md in list(cache.metadata.values()):
                if (md.pending_state is not None or md.state is not S.ONGOING
                        or md.txn_start_timestamp + md.txn_timeout_ms >= now):
                    continue
                log.info("aborting %s (producer %d, epoch %d): open for more than %d ms", md.transactional_id,
                         md.producer_id, md.producer_epoch, md.txn_timeout_ms)
                fence = md.prepare_fence_producer_epoch()
                reply = self._end_transaction(md, fence.producer_id, fence.producer_epoch, False, from_client=False,
                                              client_version=self.config.transaction_version)
                if reply.error == ErrorCode.NONE:
                    aborted += 1
                else:
                    log.warning("aborting the timed-out transaction of %s failed: %s", md.transactional_id,
                                reply.error.name)
        return aborted

    def remove_expired_transactional_ids(self) -> int:
        """Tombstones for ids idle longer than ``transactional.id.expiration.ms`` (rule 5)."""
        now = self.clock.wall_ms()
        removed = 0
        for partition, cache in list(self.partitions.items()):
            expired = [md for md in cache.metadata.values()
                       if md.pending_state is None and md.state.is_expiration_allowed
                       and md.txn_last_update_timestamp <= now - self.config.transactional_id_expiration_ms]
            if not expired:
                continue
            for md in expired:
                md.prepare_dead()
            try:
                self.runtime.write(partition, Result([TxnLogRecord(md.transactional_id) for md in expired],
                                                     replay=False))
            except KafkaError as e:
                log.warning("writing %d expired transactional ids to partition %d failed: %s", len(expired),
                            partition, e)
                for md in expired:
                    md.pending_state = None
                continue
            for md in expired:
                if cache.metadata.get(md.transactional_id) is md:
                    del cache.metadata[md.transactional_id]
            removed += len(expired)
            log.info("expired %d transactional ids of partition %d", len(expired), partition)
        return removed

    # ---------------------------------------------------------------------------------- admin

    def describe_transactions(self, transactional_ids: Iterable[str]) -> list[DescribeTransactionsResponse.TransactionState]:
        out = []
        for txn_id in transactional_ids:
            state = DescribeTransactionsResponse.TransactionState(transactional_id=txn_id)
            out.append(state)
            if not self.active:
                state.error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
                continue
            if not txn_id:
                state.error_code = ErrorCode.INVALID_REQUEST
                continue
            try:
                md = self._cache(txn_id).metadata.get(txn_id)
            except KafkaError as e:
                state.error_code = e.code
                continue
            if md is None or md.state is S.DEAD:
                state.error_code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
                continue
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(md.topic_partitions):
                by_topic.setdefault(topic, []).append(partition)
            state.transaction_state = md.state.value
            state.transaction_timeout_ms = md.txn_timeout_ms
            state.transaction_start_time_ms = md.txn_start_timestamp
            state.producer_id = md.producer_id
            state.producer_epoch = md.producer_epoch
            state.topics = [DescribeTransactionsResponse.TopicData(topic=t, partitions=p) for t, p in by_topic.items()]
        return out

    def list_transactions(self, state_filters: Iterable[str] = (), producer_id_filters: Iterable[int] = (),
                          duration_filter_ms: int = -1, transactional_id_pattern: str | None = None
                          ) -> ListTransactionsResponse:
        if not self.active:
            return ListTransactionsResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._loading:  # as Kafka: any partition still loading
            return ListTransactionsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        response = ListTransactionsResponse(error_code=0)
        states: set[TransactionState] = set()
        names = list(state_filters)
        for name in names:
            state = TransactionState.from_name(name)
            if state is None:
                response.unknown_state_filters.append(name)
            else:
                states.add(state)
        pattern = None
        if transactional_id_pattern:
            try:
                pattern = re.compile(transactional_id_pattern)
            except re.error:
                return ListTransactionsResponse(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
        producer_ids = set(producer_id_filters)
        now = self.clock.wall_ms()
        for cache in self.partitions.values():
            for txn_id, md in cache.metadata.items():
                if md.state is S.DEAD or (producer_ids and md.producer_id not in producer_ids):
                    continue
                if names and md.state not in states:
                    continue
                if duration_filter_ms >= 0 and now - md.txn_start_timestamp <= duration_filter_ms:
                    continue
                if pattern is not None and pattern.fullmatch(txn_id) is None:
                    continue
                response.transaction_states.append(ListTransactionsResponse.TransactionState(
                    transactional_id=txn_id, producer_id=md.producer_id, transaction_state=md.state.value))
        return response


__all__ = [
    "ABORT_TIMER",
    "EXPIRATION_TIMER",
    "TRANSACTION_STATE_TOPIC",
    "InitProducerIdResult",
    "TransactionCoordinator",
    "TxnConfig",
    "TxnPartition",
]
