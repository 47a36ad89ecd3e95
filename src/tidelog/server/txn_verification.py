"""KIP-890 on the partition leader: a transactional write is checked against the transaction.

Before the first transactional batch of a producer (id and epoch) is appended to a partition, the
leader asks the transaction coordinator (Kafka's ``AddPartitionsToTxnManager``):

* **verify** (Produce v0-v11, TxnOffsetCommit v0-v4): is the partition in the open transaction? A
  partition that is not is refused, so no write can open a transaction the coordinator does not know
  of, and no transaction can hang;
* **add** (Produce v12+, TxnOffsetCommit v5+, transaction version 2): put it in the transaction (the
  client no longer sends AddPartitionsToTxn / AddOffsetsToTxn). CONCURRENT_TRANSACTIONS (the previous
  transaction still completing) is retried every ``add.partitions.to.txn.retry.backoff.ms`` for up to
  ``add.partitions.to.txn.retry.backoff.max.ms``.

In a cluster the transactional id's coordinator may be another broker (the leader of its
``__transaction_state`` partition): the check is then AddPartitionsToTxn v5 sent to it
(:mod:`tidelog.coordinator.txn.inter_broker`), ``verify_only`` unless adding.

Later batches of the same transaction need no check: the partition's producer state shows it open.
``transaction.partition.verification.enable=false`` turns verification (not adding) off.

Errors, per partition, as the clients of each version expect them: PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE before Produce v11 /
TxnOffsetCommit v4. A Produce answer further turns the coordinator's retriable errors into
NOT_ENOUGH_REPLICAS (which old clients retry without refreshing metadata), and so
CONCURRENT_TRANSACTIONS too unless the request added the partition (:func:`produce_error`).

Loop-only; :meth:`TransactionVerifier.verify` is a coroutine only because of the retry backoff (a wait on
the injected clock).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from tidelog.clock import Clock
from tidelog.coordinator.runtime import partition_for
from tidelog.coordinator.txn import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TransactionVersion
from tidelog.coordinator.txn.inter_broker import InterBrokerClient
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordBatchView, RecordsError
from tidelog.records.batch import iter_batches
from tidelog.replica.manager import ReplicaManager

TopicPartition = tuple[str, int]


class TransactionSupportedOperation(Enum):
    """What a request version lets the leader do (Kafka's enum of the same name)."""

    DEFAULT_ERROR = "default"  # verify; the client knows INVALID_TXN_STATE, not TRANSACTION_ABORTABLE
    GENERIC_ERROR_SUPPORTED = "generic"  # verify; the client handles TRANSACTION_ABORTABLE
    ADD_PARTITION = "add"  # add the partition to the transaction (transaction version 2)

    @classmethod
    def for_produce(cls, version: int) -> TransactionSupportedOperation:
        return cls.ADD_PARTITION if version > 11 else cls.GENERIC_ERROR_SUPPORTED if version > 10 else cls.DEFAULT_ERROR

    @classmethod
    def for_txn_offset_commit(cls, version: int) -> TransactionSupportedOperation:
        return cls.ADD_PARTITION if version > 4 else cls.GENERIC_ERROR_SUPPORTED if version > 3 else cls.DEFAULT_ERROR


_RETRIABLE_TO_NOT_ENOUGH_REPLICAS = frozenset({ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                               ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


def produce_error(code: ErrorCode, operation: TransactionSupportedOperation) -> tuple[ErrorCode, str | None]:
    """A verification error as a Produce response carries it (code, message)."""
    if code == ErrorCode.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if code in _RETRIABLE_TO_NOT_ENOUGH_REPLICAS or (
            code == ErrorCode.CONCURRENT_TRANSACTIONS and operation is not TransactionSupportedOperation.ADD_PARTITION):
        return ErrorCode.NOT_ENOUGH_REPLICAS, ("Unable to verify the partition has been added to the transaction. "
                                               f"Underlying error: {code.name}")
    return code, None


def transactional_producers(records) -> set[tuple[int, int]]:
    """(producer id, epoch) of every transactional batch of a records blob (legacy or malformed
    data has none: the log refuses what is malformed)."""
    found: set[tuple[int, int]] = set()
    if records is None:
        return found
    try:
        for view in iter_batches(records):
            if isinstance(view, RecordBatchView) and view.is_transactional and view.has_producer_id:
                found.add((view.producer_id, view.producer_epoch))
    except RecordsError:
        pass
    return found


class TransactionVerifier:
    def __init__(self, coordinator: TransactionCoordinator, replicas: ReplicaManager, clock: Clock, *,
                 enabled: bool = True, retry_backoff_ms: int = 20, retry_backoff_max_ms: int = 100,
                 remote: InterBrokerClient | None = None) -> None:
        """``remote``: cluster mode, where the transactional id's coordinator may be another broker."""
        self.coordinator = coordinator
        self.remote = remote
        self.replicas = replicas
        self.clock = clock
        self.enabled = enabled
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms

    def needs_check(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                    operation: TransactionSupportedOperation) -> bool:
        """Whether this write must be checked first: verification is on (or the request adds), and
        the partition (which this broker leads) has no open transaction of this producer and epoch."""
        if not self.enabled and operation is not TransactionSupportedOperation.ADD_PARTITION:
            return False
        try:
            return not self.replicas.has_ongoing_transaction(topic, partition, producer_id, producer_epoch)
        except KafkaError:
            return False  # the append itself reports the partition's error

    def check(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition],
              operation: TransactionSupportedOperation) -> dict[TopicPartition, ErrorCode]:
        """One round with the coordinator: the partitions that failed, with their errors."""
        parts = list(partitions)
        if operation is TransactionSupportedOperation.ADD_PARTITION:
            code = self.coordinator.add_partitions(transactional_id, producer_id, producer_epoch, parts,
                                                   TransactionVersion.TV_2)
            results = dict.fromkeys(parts, code)
        else:
            results = self.coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, parts)
        return self._errors(results, operation)

    def _errors(self, results: dict[TopicPartition, ErrorCode],
                operation: TransactionSupportedOperation) -> dict[TopicPartition, ErrorCode]:
        errors = {}
        for tp, code in results.items():
            if code == ErrorCode.NONE:
                continue
            if code == ErrorCode.PRODUCER_FENCED:
                code = ErrorCode.INVALID_PRODUCER_EPOCH
            elif code == ErrorCode.TRANSACTION_ABORTABLE and operation is TransactionSupportedOperation.DEFAULT_ERROR:
                code = ErrorCode.INVALID_TXN_STATE
            errors[tp] = code
        return errors

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Iterable[TopicPartition],
                     operation: TransactionSupportedOperation) -> dict[TopicPartition, ErrorCode]:
        """:meth:`check`, retried on CONCURRENT_TRANSACTIONS when adding (see the module docstring)."""
        parts = list(partitions)
        started = self.clock.monotonic_ms()
        coordinator = self._remote_coordinator(transactional_id)
        while True:
            if coordinator is None:
                errors = self.check(transactional_id, producer_id, producer_epoch, parts, operation)
            else:
                assert self.remote is not None
                errors = self._errors(await self.remote.add_partitions(
                    coordinator, transactional_id, producer_id, producer_epoch, parts,
                    verify_only=operation is not TransactionSupportedOperation.ADD_PARTITION), operation)
            if (operation is not TransactionSupportedOperation.ADD_PARTITION
                    or ErrorCode.CONCURRENT_TRANSACTIONS not in errors.values()
                    or self.clock.monotonic_ms() - started >= self.retry_backoff_max_ms):
                return errors
            await self.clock.sleep(self.retry_backoff_ms)

    def _remote_coordinator(self, transactional_id: str) -> int | None:
        """Cluster mode: the broker coordinating ``transactional_id`` when it is another one (the
        leader of its ``__transaction_state`` partition), else None (asked here)."""
        if self.remote is None:
            return None
        topic = self.replicas.image.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None or not topic.partitions:
            return None
        leader = topic.partitions[partition_for(transactional_id, len(topic.partitions))].leader
        return None if leader < 0 or leader == self.replicas.broker_id else leader


__all__ = ["TransactionSupportedOperation", "TransactionVerifier", "produce_error", "transactional_producers"]
