"""The generated internal-topic record schemas (:mod:`tidelog.protocol.coordinator_records`).

* (every (schema, version) round-trips hypothesis values in test_roundtrip.py, with the messages;)
* truncated encodings are malformed;
* golden bytes computed by hand from the layouts Kafka's JSON documents (no ../shared needed);
* a cross-check against an independent codec: kafka-python's spec-driven ``ApiData`` classes built from
  the same JSON files in ``../shared/kafka-protocol/records-4.4`` (skipped when ../shared is absent) decode
  our bytes to the same field values, consume them exactly, and write them back identically.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import json
import re
import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidelog.protocol.coordinator_records as records
from tests.unit.protocol.strategies import struct_value
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.message import Message, in_ranges
from tools.codegen.spec import default_spec_root

ALL_RECORDS = [getattr(records, name) for name in records.__all__]
CASES = [(cls, v) for cls in ALL_RECORDS for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]
IDS = [f"{c.__name__}-v{v}" for c, v in CASES]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def test_record_schemas_are_data_not_messages_of_an_api() -> None:
    assert all(issubclass(cls, Message) and cls.API_KEY is None for cls in ALL_RECORDS)
    # Kafka 4.x: a key schema is version 0; its record type (the int16 in front of it on disk) is RECORD_TYPE.
    assert all(cls.MIN_VERSION == cls.MAX_VERSION == 0 for cls in ALL_RECORDS if cls.__name__.endswith("Key"))
    assert (records.LegacyOffsetCommitKey.RECORD_TYPE, records.OffsetCommitKey.RECORD_TYPE) == (0, 1)
    assert records.GroupMetadataKey.RECORD_TYPE == records.GroupMetadataValue.RECORD_TYPE == 2
    assert records.ConsumerGroupCurrentMemberAssignmentKey.RECORD_TYPE == 8
    assert records.ConsumerGroupRegularExpressionKey.RECORD_TYPE == 16
    assert records.ShareSnapshotKey.RECORD_TYPE == records.TransactionLogKey.RECORD_TYPE == 0
    assert records.TransactionLogValue.FLEXIBLE_FROM == 1
    assert (records.OffsetCommitValue.MAX_VERSION, records.OffsetCommitValue.FLEXIBLE_FROM) == (4, 4)


def test_records_are_frozen() -> None:
    key = records.OffsetCommitKey("g", "t", 0)
    with pytest.raises(AttributeError):
        key.group = "other"  # type: ignore[misc]
    assert hash(key) == hash(records.OffsetCommitKey("g", "t", 0))


@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
def test_truncated_bytes_are_malformed(cls: type[Message], version: int) -> None:
    encoded = cls().encode(version)
    for end in range(len(encoded)):
        with pytest.raises(MalformedMessageError):
            cls.decode(encoded[:end], version, strict=True)


# --------------------------------------------------------------------- golden bytes, computed by hand


def s16(text: str) -> bytes:
    """A classic string: int16 length, UTF-8 bytes."""
    return struct.pack(">h", len(text)) + text.encode()


def compact(data: bytes) -> bytes:
    """A compact string or bytes shorter than 127 bytes: uvarint length + 1, then the bytes."""
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def test_transaction_log_value_v0_golden() -> None:
    # ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32, TransactionStatus int8,
    # TransactionPartitions int32-count array of (Topic string, PartitionIds int32-count array of int32),
    # TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64. v0 has no tagged fields.
    value = records.TransactionLogValue(
        producer_id=4000, producer_epoch=3, transaction_timeout_ms=60_000, transaction_status=2,
        transaction_partitions=[records.TransactionLogValue.PartitionsSchema(topic="orders", partition_ids=[0, 5])],
        transaction_last_update_timestamp_ms=1_700_000_000_123, transaction_start_timestamp_ms=1_700_000_000_000,
    )
    expected = (struct.pack(">qhib", 4000, 3, 60_000, 2) + struct.pack(">i", 1) + s16("orders")
                + struct.pack(">iii", 2, 0, 5) + struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_000))
    assert value.encode(0) == expected
    assert records.TransactionLogValue.decode(expected, 0, strict=True) == value


def test_transaction_log_value_v1_golden_with_tagged_fields() -> None:
    # v1 is flexible: compact array/string lengths (uvarint N+1), a tagged-field section after each struct.
    # PreviousProducerId (tag 0, int64) and ClientTransactionVersion (tag 2, int16) are non-default and
    # written in ascending tag order; NextProducerId (tag 1) keeps its default -1 and is left out.
    value = records.TransactionLogValue(
        producer_id=4000, previous_producer_id=3999, producer_epoch=0, transaction_timeout_ms=1000,
        transaction_status=0, transaction_partitions=None, transaction_last_update_timestamp_ms=7,
        transaction_start_timestamp_ms=-1, client_transaction_version=2,
    )
    expected = (struct.pack(">qhib", 4000, 0, 1000, 0) + b"\x00"  # null compact array
                + struct.pack(">qq", 7, -1)
                + b"\x02" + b"\x00\x08" + struct.pack(">q", 3999) + b"\x02\x02" + struct.pack(">h", 2))
    assert value.encode(1) == expected
    assert records.TransactionLogValue.decode(expected, 1, strict=True) == value


def test_consumer_group_current_member_assignment_value_golden() -> None:
    # MemberEpoch int32, PreviousMemberEpoch int32, State int8, then two compact arrays of
    # TopicPartitions (TopicId uuid, Partitions compact array of int32, tagged fields), tagged fields.
    tps = records.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    value = records.ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=5, previous_member_epoch=4, state=1,
        assigned_partitions=[tps(topic_id=TOPIC_ID, partitions=[1, 2])], partitions_pending_revocation=[],
    )
    expected = (struct.pack(">iib", 5, 4, 1) + b"\x02" + TOPIC_ID.bytes + b"\x03" + struct.pack(">ii", 1, 2)
                + b"\x00" + b"\x01" + b"\x00")
    assert value.encode(0) == expected
    assert records.ConsumerGroupCurrentMemberAssignmentValue.decode(expected, 0, strict=True) == value


def test_group_metadata_value_v4_golden() -> None:
    # v4 (flexible) of GroupMetadataValue: compact strings and bytes, a tagged-field section per member
    # and at the end. currentStateTimestamp exists from v2, groupInstanceId from v3, rebalanceTimeout v1.
    member = records.GroupMetadataValue.MemberMetadata(
        member_id="m-1", group_instance_id=None, client_id="cid", client_host="/10.0.0.1",
        rebalance_timeout=300_000, session_timeout=45_000, subscription=b"\x00\x01", assignment=b"",
    )
    value = records.GroupMetadataValue(protocol_type="consumer", generation=7, protocol="range", leader="m-1",
                                       current_state_timestamp=1_700_000_000_000, members=[member])
    expected = (compact(b"consumer") + struct.pack(">i", 7) + compact(b"range") + compact(b"m-1")
                + struct.pack(">q", 1_700_000_000_000) + b"\x02"
                + compact(b"m-1") + b"\x00" + compact(b"cid") + compact(b"/10.0.0.1")
                + struct.pack(">ii", 300_000, 45_000) + compact(b"\x00\x01") + compact(b"") + b"\x00"
                + b"\x00")
    assert value.encode(4) == expected
    assert records.GroupMetadataValue.decode(expected, 4, strict=True) == value


def test_a_null_tagged_struct_is_written_as_kafka_writes_it() -> None:
    # ClassicMemberMetadata's JSON default is null, which Kafka's generator reads as "no default": the
    # default is the empty struct, so a null value differs from it and is written as tag 0 holding the
    # one-byte null marker, and an absent tag reads back as the empty struct. In a tagged field the
    # marker is an unsigned varint, 0 = null, 1 = present (MessageDataGenerator: writeUnsignedVarint(0)
    # for null; the reader takes readUnsignedVarint() <= 0 as null), not the int8 -1 of an untagged one.
    value = records.ConsumerGroupMemberMetadataValue(client_id="c", client_host="h", classic_member_metadata=None)
    tail = b"\x01" + b"\x00\x01\x00"  # one tagged field: tag 0, 1 byte, null
    assert value.encode(0).endswith(tail)
    assert records.ConsumerGroupMemberMetadataValue.decode(value.encode(0), 0).classic_member_metadata is None
    classic = records.ConsumerGroupMemberMetadataValue.ClassicMemberMetadata(session_timeout_ms=45_000)
    present = records.ConsumerGroupMemberMetadataValue(client_id="c", client_host="h", classic_member_metadata=classic)
    assert present.encode(0).endswith(b"\x01" + b"\x00\x07\x01" + struct.pack(">i", 45_000) + b"\x01\x00")
    assert records.ConsumerGroupMemberMetadataValue.decode(present.encode(0), 0).classic_member_metadata == classic
    without = records.ConsumerGroupMemberMetadataValue(client_id="c", client_host="h")
    assert without.encode(0).endswith(b"\x00")
    assert records.ConsumerGroupMemberMetadataValue.decode(without.encode(0), 0).classic_member_metadata == (
        records.ConsumerGroupMemberMetadataValue.ClassicMemberMetadata())


# ------------------------------------------------------------------------ kafka-python cross-check

SPEC_DIR = default_spec_root() / "records-4.4"
needs_specs = pytest.mark.skipif(
    not SPEC_DIR.is_dir(),
    reason=f"Kafka JSON record schemas not found at {SPEC_DIR} (they live in ../shared, outside the repository): "
    "no kafka-python cross-check",
)
needs_kafka_python = pytest.mark.skipif(
    importlib.util.find_spec("kafka") is None, reason="kafka-python is not installed (the dev extra): no cross-check"
)
_COMMENTS = re.compile(r"(?m)((?:^\s*//.*\n?)+)")  # kafka-python's own comment rule (load_json)


def _with_tagged_versions_as_versions(fields: list[dict]) -> None:
    # Kafka's generator reads a field without "versions" as existing in its "taggedVersions"
    # (TransactionLogValue's tagged fields); kafka-python insists on "versions", so spell it out.
    for f in fields:
        f.setdefault("versions", f.get("taggedVersions"))
        _with_tagged_versions_as_versions(f.get("fields", []))


@functools.cache
def kafka_python_class(name: str) -> type:
    """kafka-python's ``ApiData`` class for ``records/<name>.json``, built as its ``load_json`` would."""
    from kafka.protocol.api_data import ApiData, JsonSchemaData
    from kafka.protocol.schemas import StructField
    from kafka.protocol.schemas.load_json import _resolve_common_structs

    spec = json.loads(_COMMENTS.sub("", (SPEC_DIR / f"{name}.json").read_text()))
    spec["type"] = "data"  # kafka-python knows "data"; Kafka 4.x's coordinator-key/-value have that layout
    _with_tagged_versions_as_versions(spec["fields"])
    _resolve_common_structs(spec["fields"], {s["name"]: s["fields"] for s in spec.get("commonStructs", [])})
    cls = JsonSchemaData(name, (ApiData,), {"_json": spec, "_struct": StructField(spec)}, init=False)
    cls._struct.set_data_class(cls)
    return cls


# kafka-python's default for a struct whose JSON default is null is None; Kafka's generator's, and ours,
# is the empty struct (see test_a_null_tagged_struct_is_written_as_kafka_writes_it). So a tagged struct
# that is null or empty reads back as None there; the comparison sees both as this marker.
NULL_OR_EMPTY = "<null or empty tagged struct>"


def _null_or_empty_tagged(f: Any, version: int) -> bool:
    return f.struct is not None and in_ranges(version, f.tagged_versions)


def ours_plain(value: Any, version: int) -> Any:
    """A generated value as nested dicts and lists of the fields ``version`` has."""
    if isinstance(value, list):
        return [ours_plain(v, version) for v in value]
    if not hasattr(value, "SCHEMA"):
        return value
    out = {}
    for f in value.SCHEMA:
        if in_ranges(version, f.versions):
            v = getattr(value, f.name)
            empty = _null_or_empty_tagged(f, version) and (v is None or v == f.struct())
            out[f.name] = NULL_OR_EMPTY if empty else ours_plain(v, version)
    return out


def kafka_python_plain(obj: Any, like: Any, version: int) -> Any:
    """A kafka-python value in the shape of our value ``like`` (kafka-python's field names are ours)."""
    if obj is None or not (isinstance(like, list) or hasattr(like, "SCHEMA")):
        return obj
    if isinstance(like, list):
        return [kafka_python_plain(o, v, version) for o, v in zip(obj, like, strict=True)]
    out = {}
    for f in like.SCHEMA:
        if in_ranges(version, f.versions):
            v = getattr(obj, f.name)
            empty = _null_or_empty_tagged(f, version) and v is None
            out[f.name] = NULL_OR_EMPTY if empty else kafka_python_plain(v, getattr(like, f.name), version)
    return out


def has_null_tagged_struct(value: Any, version: int) -> bool:
    """Whether ``value`` holds a null tagged struct, whose null marker kafka-python reads otherwise."""
    if isinstance(value, list):
        return any(has_null_tagged_struct(v, version) for v in value)
    if not hasattr(value, "SCHEMA"):
        return False
    return any(
        (_null_or_empty_tagged(f, version) and getattr(value, f.name) is None)
        or has_null_tagged_struct(getattr(value, f.name), version)
        for f in value.SCHEMA if in_ranges(version, f.versions)
    )


@needs_specs
@needs_kafka_python
@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_kafka_python_reads_and_rewrites_our_bytes(cls: type[Message], version: int, data: st.DataObject) -> None:
    value = data.draw(struct_value(cls, version))  # no unknown tags: kafka-python keeps them apart
    encoded = value.encode(version)
    if has_null_tagged_struct(value, version):
        # kafka-python 3.0 marks a null tagged struct with the int8 -1 of an untagged one; Kafka's
        # generator (and ours) with the unsigned varint 0 (test_a_null_tagged_struct_is_written_as_kafka_
        # writes_it), so kafka-python cannot read these bytes: nothing to cross-check.
        return
    if cls.__name__ in KAFKA_PYTHON_CANNOT_BUILD:
        pytest.skip(KAFKA_PYTHON_CANNOT_BUILD[cls.__name__])
    stream = io.BytesIO(encoded)
    theirs = kafka_python_class(cls.__name__).decode(stream, version=version, header=False)
    assert stream.tell() == len(encoded), "kafka-python read a different length"
    assert kafka_python_plain(theirs, value, version) == ours_plain(value, version)
    if not tags_out_of_order(cls, version):
        assert theirs.encode(version=version, header=False) == encoded


#: Schemas kafka-python 3.0 cannot build objects of, and why.
KAFKA_PYTHON_CANNOT_BUILD = {
    "ConsumerGroupRegularExpressionValue": "its field Version collides with kafka-python's version argument",
}


def tags_out_of_order(cls: type, version: int) -> bool:
    """Whether ``cls`` (or a struct in it) declares tagged fields out of tag order (TransactionLogValue's
    NextProducerEpoch, tag 3, comes before tag 2 in Kafka 4.4's JSON). Kafka's generator, and ours, write
    tags in ascending order (KIP-482); kafka-python in declaration order, so its bytes differ there."""
    tags = [f.tag for f in cls.SCHEMA if in_ranges(version, f.tagged_versions)]
    return tags != sorted(tags) or any(
        tags_out_of_order(f.struct, version) for f in cls.SCHEMA if f.struct is not None and in_ranges(version, f.versions))
