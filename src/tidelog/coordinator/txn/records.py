"""The records of ``__transaction_state``: one per transactional id, the latest wins (compacted).

Every key and value starts with an ``int16`` version; the bytes after it are Kafka's
``TransactionLogKey`` / ``TransactionLogValue`` (generated into
:mod:`tidelog.protocol.coordinator_records`, where the field layouts are documented)::

    key     record type 0, then (schema version 0) transactional_id
    value   version 0   producer_id, producer_epoch, transaction_timeout_ms, transaction_status (state id),
                        transaction_partitions (null in Empty, else [topic, [partition]]),
                        transaction_last_update_timestamp_ms, transaction_start_timestamp_ms
            version 1   the same, flexible, with tagged previous_producer_id (0), next_producer_id (1),
                        client_transaction_version (2) and next_producer_epoch (3, Kafka 4.4; not kept)
    null value          a tombstone: the id expired

The value version written follows the coordinator's transaction version (0 at level 0, else 1), as
Kafka's ``TransactionLog.valueToBytes``; both are read. A key version other than 0 is an unknown
record type (:class:`UnknownRecordTypeError`, which the loader logs and skips, as Kafka's does).

Pure functions and immutable values; safe from any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tidelog.coordinator.txn.metadata import TxnTransitMetadata
from tidelog.coordinator.txn.state import NO_PRODUCER_EPOCH, TransactionState, TransactionVersion
from tidelog.protocol.coordinator_records import TransactionLogKey, TransactionLogValue
from tidelog.protocol.exceptions import MalformedMessageError, ProtocolError
from tidelog.protocol.primitives import INT16

KEY_VERSION = TransactionLogKey.RECORD_TYPE  # 0: the record type in front of the key
Partitions = TransactionLogValue.PartitionsSchema


class UnknownRecordTypeError(LookupError):
    """A key version this coordinator does not know."""


@dataclass(frozen=True, slots=True)
class TxnLogRecord:
    """One record of the topic: a transactional id and its state, or ``None`` for a tombstone."""

    transactional_id: str
    value: TxnTransitMetadata | None = None


def _to_schema(t: TxnTransitMetadata) -> TransactionLogValue:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(t.topic_partitions):
        by_topic.setdefault(topic, []).append(partition)
    partitions = None if t.state is TransactionState.EMPTY else [Partitions(topic=k, partition_ids=v)
                                                                   for k, v in by_topic.items()]
    return TransactionLogValue(
        producer_id=t.producer_id, previous_producer_id=t.prev_producer_id, next_producer_id=t.next_producer_id,
        producer_epoch=t.producer_epoch, transaction_timeout_ms=t.txn_timeout_ms, transaction_status=t.state.id,
        transaction_partitions=partitions, transaction_last_update_timestamp_ms=t.txn_last_update_timestamp,
        transaction_start_timestamp_ms=t.txn_start_timestamp,
        client_transaction_version=int(t.client_transaction_version))


def _from_schema(v: TransactionLogValue) -> TxnTransitMetadata:
    try:
        state = TransactionState.from_id(v.transaction_status)
        client_version = TransactionVersion(v.client_transaction_version)
    except ValueError as e:
        raise MalformedMessageError(str(e)) from None
    partitions = frozenset() if state is TransactionState.EMPTY or v.transaction_partitions is None else frozenset(
        (p.topic, i) for p in v.transaction_partitions for i in p.partition_ids)
    return TxnTransitMetadata(v.producer_id, v.previous_producer_id, v.next_producer_id, v.producer_epoch,
                              NO_PRODUCER_EPOCH, v.transaction_timeout_ms, state, partitions,
                              v.transaction_start_timestamp_ms, v.transaction_last_update_timestamp_ms, client_version)


class TxnLogSerde:
    """Writes values in the version of ``transaction_version``; reads every version."""

    def __init__(self, transaction_version: TransactionVersion = TransactionVersion.TV_2) -> None:
        self.value_version = transaction_version.log_value_version

    def serialize(self, record: TxnLogRecord) -> tuple[bytes, bytes | None]:
        if record.value is not None and record.value.state is TransactionState.EMPTY and record.value.topic_partitions:
            raise ValueError(f"{record.transactional_id}: an Empty transaction has no partitions")
        key = INT16.pack(KEY_VERSION) + TransactionLogKey(record.transactional_id).encode(0)
        if record.value is None:
            return key, None
        return key, INT16.pack(self.value_version) + _to_schema(record.value).encode(self.value_version)

    @staticmethod
    def deserialize(key: bytes | memoryview, value: bytes | memoryview | None) -> TxnLogRecord:
        """Raises UnknownRecordTypeError (a LookupError) or MalformedMessageError."""
        try:
            (version,) = INT16.unpack_from(key, 0)
            if version != KEY_VERSION:
                raise UnknownRecordTypeError(f"unknown __transaction_state key version {version}")
            k, _ = TransactionLogKey.decode_from(memoryview(key), 2, 0)
            if value is None:
                return TxnLogRecord(k.transactional_id)
            (value_version,) = INT16.unpack_from(value, 0)
            if not TransactionLogValue.MIN_VERSION <= value_version <= TransactionLogValue.MAX_VERSION:
                raise MalformedMessageError(f"unknown TransactionLogValue version {value_version}")
            v, _ = TransactionLogValue.decode_from(memoryview(value), 2, value_version)
        except (struct.error, IndexError):
            raise MalformedMessageError("__transaction_state record truncated") from None
        except ProtocolError as e:
            if isinstance(e, MalformedMessageError):
                raise
            raise MalformedMessageError(str(e)) from None
        return TxnLogRecord(k.transactional_id, _from_schema(v))


__all__ = ["KEY_VERSION", "TxnLogRecord", "TxnLogSerde", "UnknownRecordTypeError"]
