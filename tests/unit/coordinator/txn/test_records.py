"""The __transaction_state record layout: Kafka's bytes, both value versions, tombstones."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest

from tidelog.coordinator.txn.metadata import TxnTransitMetadata
from tidelog.coordinator.txn.records import TxnLogRecord, TxnLogSerde, UnknownRecordTypeError
from tidelog.coordinator.txn.state import TransactionState, TransactionVersion
from tidelog.protocol.exceptions import MalformedMessageError

ONGOING = TxnTransitMetadata(producer_id=7, prev_producer_id=6, next_producer_id=-1, producer_epoch=3,
                             last_producer_epoch=2, txn_timeout_ms=60_000, state=TransactionState.ONGOING,
                             topic_partitions=frozenset({("b", 1), ("a", 0), ("a", 2)}), txn_start_timestamp=111,
                             txn_last_update_timestamp=222, client_transaction_version=TransactionVersion.TV_2)


def test_version_0_is_kafkas_non_flexible_layout() -> None:
    key, value = TxnLogSerde(TransactionVersion.TV_0).serialize(TxnLogRecord("tx", ONGOING))
    assert key == struct.pack(">hh", 0, 2) + b"tx"
    # version, producer id, epoch, timeout, status, [topic, [partition]] (sorted), last update, start
    expected = struct.pack(">hqhibi", 0, 7, 3, 60_000, 1, 2)
    expected += struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 2)
    expected += struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 1)
    expected += struct.pack(">qq", 222, 111)
    assert value == expected


def test_version_1_round_trips_with_its_tagged_fields() -> None:
    serde = TxnLogSerde(TransactionVersion.TV_2)
    key, value = serde.serialize(TxnLogRecord("tx", ONGOING))
    assert value[:2] == b"\x00\x01"
    back = serde.deserialize(key, value)
    assert back.transactional_id == "tx"
    # Everything but last_producer_epoch, which Kafka does not persist either.
    assert back.value == replace(ONGOING, last_producer_epoch=-1)
    v0 = TxnLogSerde(TransactionVersion.TV_0)
    old = v0.deserialize(*v0.serialize(TxnLogRecord("tx", ONGOING)))
    assert (old.value.prev_producer_id, old.value.client_transaction_version) == (-1, TransactionVersion.TV_0)
    assert old.value.topic_partitions == ONGOING.topic_partitions


def test_empty_has_null_partitions_and_a_tombstone_has_no_value() -> None:
    serde = TxnLogSerde(TransactionVersion.TV_0)
    empty = TxnTransitMetadata(7, -1, -1, 0, -1, 60_000, TransactionState.EMPTY, frozenset(), -1, 222)
    _, value = serde.serialize(TxnLogRecord("tx", empty))
    assert value[17:21] == struct.pack(">i", -1)  # the partitions array is null
    assert serde.deserialize(*serde.serialize(TxnLogRecord("tx"))) == TxnLogRecord("tx", None)
    with pytest.raises(ValueError):
        serde.serialize(TxnLogRecord("tx", TxnTransitMetadata(7, -1, -1, 0, -1, 1, TransactionState.EMPTY,
                                                              frozenset({("t", 0)}), -1, 1)))


def test_unknown_and_malformed_records() -> None:
    with pytest.raises(UnknownRecordTypeError):
        TxnLogSerde.deserialize(struct.pack(">hh", 1, 2) + b"tx", None)
    key, value = TxnLogSerde().serialize(TxnLogRecord("tx", ONGOING))
    for bad in (value[:10], b"\x00\x07" + value[2:]):
        with pytest.raises(MalformedMessageError):
            TxnLogSerde.deserialize(key, bad)
    bad_state = bytearray(value)
    bad_state[16] = 9  # transaction_status
    with pytest.raises(MalformedMessageError):
        TxnLogSerde.deserialize(key, bytes(bad_state))
