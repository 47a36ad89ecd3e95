"""The __consumer_offsets record layouts: exact bytes of the versions Kafka writes, every version read
back, tombstones, and hostile input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.coordinator.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordTypeError,
    write_group_value,
    write_offset_value,
)
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.protocol.exceptions import MalformedMessageError


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_commit_bytes_are_kafkas_key_v1_value_v3() -> None:
    key, value = serialize(CoordinatorRecord(OffsetCommitKey("grp", "tp", 7), OffsetCommitValue(42, "md", 1000, 5)))
    assert key == struct.pack(">h", 1) + s16("grp") + s16("tp") + struct.pack(">i", 7)
    assert value == struct.pack(">hqi", 3, 42, 5) + s16("md") + struct.pack(">q", 1000)


def test_offset_commit_with_expiry_is_written_as_value_v1() -> None:
    _, value = serialize(CoordinatorRecord(OffsetCommitKey("g", "t", 0), OffsetCommitValue(1, "", 10, -1, 99)))
    assert value == struct.pack(">hq", 1, 1) + s16("") + struct.pack(">qq", 10, 99)


def test_group_metadata_bytes_are_kafkas_key_v2_value_v3() -> None:
    member = MemberMetadata("m", "cid", "/h", 3000, b"S", b"A", 6000, "inst")
    key, value = serialize(CoordinatorRecord(GroupMetadataKey("grp"), GroupMetadataValue("consumer", 4, "range", "m",
                                                                                         123, (member,))))
    assert key == struct.pack(">h", 2) + s16("grp")
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 4) + s16("range") + s16("m")
                + struct.pack(">qi", 123, 1) + s16("m") + s16("inst") + s16("cid") + s16("/h")
                + struct.pack(">ii", 6000, 3000) + struct.pack(">i", 1) + b"S" + struct.pack(">i", 1) + b"A")
    assert value == expected


def test_tombstones_and_key_version_zero() -> None:
    key, value = serialize(CoordinatorRecord(GroupMetadataKey("g")))
    assert value is None and deserialize(key, None) == CoordinatorRecord(GroupMetadataKey("g"), None)
    legacy = struct.pack(">h", 0) + s16("g") + s16("t") + struct.pack(">i", 1)
    assert deserialize(legacy, None).key == OffsetCommitKey("g", "t", 1)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_offset_value_version_reads_back(version: int) -> None:
    value = OffsetCommitValue(9, "meta", 77, 3 if version >= 3 else -1, 88 if version == 1 else -1)
    key = serialize(CoordinatorRecord(OffsetCommitKey("g", "t", 0)))[0]
    assert deserialize(key, write_offset_value(value, version)).value == value


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_group_value_version_reads_back(version: int) -> None:
    member = MemberMetadata("m", "c", "/h", 10, b"\x00\x01", b"", 20 if version >= 1 else -1,
                            "i" if version >= 3 else None)
    value = GroupMetadataValue("consumer", 2, None, None, 5 if version >= 2 else -1, (member, member))
    key = serialize(CoordinatorRecord(GroupMetadataKey("g")))[0]
    assert deserialize(key, write_group_value(value, version)).value == value


def test_unknown_type_and_malformed_bytes() -> None:
    with pytest.raises(UnknownRecordTypeError):
        deserialize(struct.pack(">h", 32000) + s16("g"), b"")
    key = serialize(CoordinatorRecord(OffsetCommitKey("g", "t", 0)))[0]
    with pytest.raises(MalformedMessageError):
        deserialize(key[:-1], None)
    with pytest.raises(MalformedMessageError):
        deserialize(key, struct.pack(">h", 9) + b"\x00" * 20)
    with pytest.raises(MalformedMessageError):
        deserialize(key + b"x", None)


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_hostile_bytes_raise_only_known_errors(key: bytes, value: bytes) -> None:
    try:
        deserialize(b"\x00\x02" + key, value)
        deserialize(b"\x00\x01" + key, value)
    except (MalformedMessageError, UnknownRecordTypeError):
        pass
