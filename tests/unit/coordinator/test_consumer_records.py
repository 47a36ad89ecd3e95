"""The KIP-848 ConsumerGroup* records: exact bytes as Kafka writes them, computed by hand from the layouts
of Kafka's record schemas, and what the coordinator's values become on the way back."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.coordinator.group.modern.consumer.records import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
)
from tidelog.coordinator.group.records import CoordinatorRecord, UnknownRecordTypeError
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.protocol.exceptions import MalformedMessageError

A = uuid.UUID("00000000-0000-0000-0000-00000000000a")
B = uuid.UUID("00000000-0000-0000-0000-00000000000b")


def s16(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def c(text: str) -> bytes:
    """A compact string of under 127 bytes: uvarint length + 1, then UTF-8."""
    return bytes([len(text.encode()) + 1]) + text.encode()


def test_group_metadata_hash_is_tag_0_and_only_written_when_not_0() -> None:
    key, value = serialize(CoordinatorRecord(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7, -5)))
    assert key == struct.pack(">h", 3) + s16("g")
    assert value == struct.pack(">hi", 0, 7) + b"\x01" + b"\x00\x08" + struct.pack(">q", -5)
    _, value = serialize(CoordinatorRecord(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7, 0)))
    assert value == struct.pack(">hi", 0, 7) + b"\x00"  # Kafka leaves out a tagged field at its default
    assert deserialize(key, value).value == ConsumerGroupMetadataValue(7, 0)


def test_member_metadata_bytes_mark_a_consumer_protocol_member() -> None:
    record = CoordinatorRecord(ConsumerGroupMemberMetadataKey("g", "m"), ConsumerGroupMemberMetadataValue(
        None, "rack-1", "cid", "/h", ("a", "b"), None, 30_000, "uniform"))
    key, value = serialize(record)
    assert key == struct.pack(">h", 5) + s16("g") + s16("m")
    assert value == (struct.pack(">h", 0) + b"\x00" + c("rack-1") + c("cid") + c("/h") + b"\x03" + c("a") + c("b")
                     + b"\x00" + struct.pack(">i", 30_000) + c("uniform")
                     # tag 0 ClassicMemberMetadata = null (the uvarint marker 0): what Kafka writes for a
                     # consumer-protocol member
                     + b"\x01" + b"\x00\x01\x00")
    assert deserialize(key, value) == record


def test_member_metadata_of_a_classic_member_carries_its_classic_member_metadata() -> None:
    classic = ClassicMemberMetadata(45_000, (("range", b"\x00\x03"), ("roundrobin", b"")))
    record = CoordinatorRecord(ConsumerGroupMemberMetadataKey("g", "m"), ConsumerGroupMemberMetadataValue(
        "i", None, "rdkafka", "/h", ("t",), None, 300_000, None, classic))
    _, value = serialize(record)
    struct_bytes = (b"\x01" + struct.pack(">i", 45_000) + b"\x03"          # present; session; 2 protocols
                    + c("range") + b"\x03\x00\x03" + b"\x00"              # name, compact bytes, no tags
                    + c("roundrobin") + b"\x01" + b"\x00"
                    + b"\x00")                                               # ClassicMemberMetadata's tags
    assert value == (struct.pack(">h", 0) + c("i") + b"\x00" + c("rdkafka") + c("/h") + b"\x02" + c("t") + b"\x00"
                     + struct.pack(">i", 300_000) + b"\x00"
                     + b"\x01" + b"\x00" + bytes([len(struct_bytes)]) + struct_bytes)
    assert deserialize(*serialize(record)) == record


def test_current_assignment_bytes_sort_topics_and_drop_empty_ones() -> None:
    record = CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey("g", "m"), ConsumerGroupCurrentMemberAssignmentValue(
        4, 3, 1, {B: frozenset({2, 0}), A: frozenset({1})}, {A: frozenset()}))
    key, value = serialize(record)
    assert key == struct.pack(">h", 8) + s16("g") + s16("m")
    assert value == (struct.pack(">hiib", 0, 4, 3, 1)
                     + b"\x03" + A.bytes + b"\x02" + struct.pack(">i", 1) + b"\x00"
                     + B.bytes + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"
                     + b"\x01" + b"\x00")
    back = deserialize(key, value).value
    assert back.assigned_partitions == {A: frozenset({1}), B: frozenset({0, 2})}
    assert back.partitions_pending_revocation == {}


def test_repeated_topic_ids_merge_and_entry_tags_are_skipped() -> None:
    # Two entries for topic A, the second carrying an unknown tag (KIP-1251 puts AssignmentEpochs there).
    value = (struct.pack(">h", 0) + b"\x03" + A.bytes + b"\x02" + struct.pack(">i", 1) + b"\x00"
             + A.bytes + b"\x02" + struct.pack(">i", 4) + b"\x01\x00\x02\x07\x07" + b"\x00")
    key = serialize(CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey("g", "m")))[0]
    assert deserialize(key, value).value == ConsumerGroupTargetAssignmentMemberValue({A: frozenset({1, 4})})


def test_regular_expression_record_bytes() -> None:
    record = CoordinatorRecord(ConsumerGroupRegularExpressionKey("g", "x.*"),
                               ConsumerGroupRegularExpressionValue(("xa", "xb"), 12, 1_700_000_000_000))
    key, value = serialize(record)
    assert key == struct.pack(">h", 16) + s16("g") + s16("x.*")
    assert value == struct.pack(">h", 0) + b"\x03" + c("xa") + c("xb") + struct.pack(">qq", 12, 1_700_000_000_000) + b"\x00"
    assert deserialize(key, value) == record


@pytest.mark.parametrize("key", [ConsumerGroupMetadataKey("g"), ConsumerGroupMemberMetadataKey("g", "m"),
                                 ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
                                 ConsumerGroupRegularExpressionKey("g", "r")])
def test_unknown_value_versions_and_truncation_are_malformed(key) -> None:
    raw_key = serialize(CoordinatorRecord(key))[0]
    with pytest.raises(MalformedMessageError):
        deserialize(raw_key, struct.pack(">h", 1) + bytes(40))
    with pytest.raises(MalformedMessageError):
        deserialize(raw_key[:-1], None)


@given(st.sampled_from([3, 4, 5, 6, 7, 8, 16]), st.binary(max_size=48), st.binary(max_size=48))
def test_hostile_bytes_raise_only_known_errors(key_version: int, key: bytes, value: bytes) -> None:
    try:
        deserialize(struct.pack(">h", key_version) + key, value)
    except (MalformedMessageError, UnknownRecordTypeError):
        pass
