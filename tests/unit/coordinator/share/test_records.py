"""The ShareSnapshot / ShareUpdate codec: records-4.4's layouts, byte for byte where it matters."""

from __future__ import annotations

import uuid

import pytest

from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, StateBatch
from tidelog.coordinator.share.records import (
    ShareRecord,
    ShareValue,
    UnknownRecordTypeError,
    deserialize,
    is_share_coordinator_key,
    parse_coordinator_key,
    serialize,
)
from tidelog.protocol.exceptions import MalformedMessageError

KEY = SharePartitionKey("group-1", uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), 7)
BATCHES = (StateBatch(10, 19, DeliveryState.ACKNOWLEDGED, 1), StateBatch(20, 20, DeliveryState.ARCHIVED, 5))


def test_snapshot_key_layout_is_kafkas():
    key, _ = serialize(ShareRecord(KEY, True, ShareValue(0, 3, 10, state_epoch=1)))
    # int16 key version 0, string group id, 16-byte uuid, int32 partition
    assert key == (b"\x00\x00" + b"\x00\x07group-1" + KEY.topic_id.bytes + b"\x00\x00\x00\x07")


def test_update_key_has_version_1():
    key, _ = serialize(ShareRecord(KEY, False, ShareValue(0, 3, 10)))
    assert key[:2] == b"\x00\x01"


def test_snapshot_value_layout_is_kafkas():
    value = ShareValue(2, 5, 10, BATCHES[:1], state_epoch=1, create_timestamp=100, write_timestamp=200)
    _, raw = serialize(ShareRecord(KEY, True, value))
    assert raw == (b"\x00\x00" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + (5).to_bytes(4, "big")
                   + (10).to_bytes(8, "big") + (100).to_bytes(8, "big") + (200).to_bytes(8, "big")
                   + b"\x02" + (10).to_bytes(8, "big") + (19).to_bytes(8, "big") + b"\x02" + (1).to_bytes(2, "big")
                   + b"\x00" + b"\x00")


@pytest.mark.parametrize("snapshot", [True, False])
@pytest.mark.parametrize("dcc", [-1, 0, 17])
def test_round_trip(snapshot, dcc):
    value = ShareValue(4, 9, 10, BATCHES, dcc, *((3, 111, 222) if snapshot else (-1, -1, -1)))
    record = ShareRecord(KEY, snapshot, value)
    assert deserialize(*serialize(record)) == record


def test_delivery_complete_count_is_tagged_field_0():
    _, without = serialize(ShareRecord(KEY, False, ShareValue(0, 1, 10)))
    _, with_dcc = serialize(ShareRecord(KEY, False, ShareValue(0, 1, 10, delivery_complete_count=5)))
    assert without.endswith(b"\x00")  # no tagged fields
    assert with_dcc.endswith(b"\x01\x00\x04\x00\x00\x00\x05")  # one field: tag 0, 4 bytes


def test_tombstone_round_trip():
    key, value = serialize(ShareRecord(KEY, True))
    assert value is None
    assert deserialize(key, None) == ShareRecord(KEY, True)


def test_unknown_key_version_is_an_unknown_record_type():
    key, value = serialize(ShareRecord(KEY, True, ShareValue(0, 1, 10, state_epoch=0)))
    with pytest.raises(UnknownRecordTypeError):
        deserialize(b"\x00\x05" + key[2:], value)


def test_truncated_value_is_malformed():
    key, value = serialize(ShareRecord(KEY, True, ShareValue(0, 1, 10, BATCHES, state_epoch=0)))
    with pytest.raises(MalformedMessageError):
        deserialize(key, value[:-7])


def test_unknown_delivery_state_is_malformed():
    key, value = serialize(ShareRecord(KEY, False, ShareValue(0, 1, 10, BATCHES[:1])))
    broken = bytearray(value)
    broken[2 + 16 + 1 + 16] = 5  # the batch's delivery state (3 is ARCHIVING, KIP-1191)
    with pytest.raises(MalformedMessageError):
        deserialize(key, bytes(broken))


def test_coordinator_key_parses_back():
    assert parse_coordinator_key(KEY.coordinator_key()) == KEY
    assert parse_coordinator_key(f"a:b:{KEY.topic_id}:3") == SharePartitionKey("a:b", KEY.topic_id, 3)
    for bad in ("g", "g:notauuid:1", f"g:{KEY.topic_id}:x", f":{KEY.topic_id}:1", ""):
        assert not is_share_coordinator_key(bad)
