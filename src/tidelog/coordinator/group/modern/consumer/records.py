"""Kafka's ConsumerGroup* records in ``__consumer_offsets`` (the KIP-848 group state).

Their serdes are :data:`RECORD_TYPES`, the consumer group type's ``record_types``: the group coordinator
built with that type writes and replays them. Keys are not flexible; values are (version 0: compact
strings and arrays, a tagged-field section per struct). Keys are the generated key classes; values are
this module's frozen dataclasses (the coordinator's view: tuples, and ``TopicPartitions`` maps of topic
id to partitions), converted to and from the generated classes of
:mod:`tidelog.protocol.coordinator_records`, which hold the byte layouts::

    record type  key (generated)                           value
    3            ConsumerGroupMetadataKey                  ConsumerGroupMetadataValue
    5            ConsumerGroupMemberMetadataKey            ConsumerGroupMemberMetadataValue
    6            ConsumerGroupTargetAssignmentMetadataKey  ConsumerGroupTargetAssignmentMetadataValue
    7            ConsumerGroupTargetAssignmentMemberKey    ConsumerGroupTargetAssignmentMemberValue
    8            ConsumerGroupCurrentMemberAssignmentKey   ConsumerGroupCurrentMemberAssignmentValue
    16           ConsumerGroupRegularExpressionKey         ConsumerGroupRegularExpressionValue (by hand)

Record type 4 (ConsumerGroupPartitionMetadata, before 4.1) is not written; 4.1 replaced it by the
metadata hash, ``ConsumerGroupMetadataValue.MetadataHash`` (KIP-1101: tagged field 0, int64, default 0;
written, as Kafka writes it, only when it is not 0). The ConsumerGroupRegularExpression record (Kafka
4.0) keeps its own key class here (its field ``regex``; Kafka's schema calls it ``RegularExpression``),
written by hand in the same layout as Kafka 4.4's schema::

      key    int16 record type 16, group_id string, regex string
      value  int16 version 0, topics compact array of compact string, version int64,
             timestamp int64, tagged fields

``ConsumerGroupTargetAssignmentMetadataValue.AssignmentTimestamp`` (tagged, ignorable) is not kept.

A member's ClassicMemberMetadata (tag 0 of the member metadata) is its classic-protocol session
timeout and protocols (name, metadata) for a member that joined with JoinGroup (online migration),
null for a consumer-protocol member (the tag then holds the null marker, as Kafka writes it). A
TopicPartitions entry's tags (KIP-1251 AssignmentEpochs) are ignored when read and not written. Pure
functions, immutable value classes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from tidelog.coordinator.group.modern.assignors import TopicPartitions
from tidelog.coordinator.group.records import (
    RecordType,
    same_fields,
    schema_record_type,
    skip_tags,
)
from tidelog.protocol import coordinator_records as schema
from tidelog.protocol.coordinator_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.primitives import (
    INT16,
    INT64,
    read_compact_array_len,
    read_compact_string,
    read_string,
    write_compact_array_len,
    write_compact_string,
    write_string,
)

REGULAR_EXPRESSION_KEY_VERSION = 16


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member that uses the classic protocol joined with: its session timeout and its protocols
    (name, embedded subscription) in its order of preference."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState
    assigned_partitions: TopicPartitions
    partitions_pending_revocation: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regex: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


#: Every key type of this module (the coordinator routes their replay here).
KEY_TYPES = (ConsumerGroupMetadataKey, ConsumerGroupMemberMetadataKey, ConsumerGroupTargetAssignmentMetadataKey,
             ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupCurrentMemberAssignmentKey,
             ConsumerGroupRegularExpressionKey)


# ------------------------------------------------------------------------ TopicPartitions <-> schema


def _topic_partitions(items: list) -> TopicPartitions:
    """A map of topic id to partitions, from a schema's TopicPartitions array (repeated ids merge)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for item in items or ():
        out[item.topic_id] = out.get(item.topic_id, frozenset()) | frozenset(item.partitions)
    return out


def _topic_partitions_schema(cls: type, tps: TopicPartitions) -> list:
    """A schema's TopicPartitions array: topics and partitions sorted, topics without partitions left out."""
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(tps.items()) if ps]


# -------------------------------------------------------------------------------- the value classes


def _group_value(obj: schema.ConsumerGroupMetadataValue) -> ConsumerGroupMetadataValue:
    return ConsumerGroupMetadataValue(obj.epoch, obj.metadata_hash)


def _group_value_schema(value: ConsumerGroupMetadataValue) -> schema.ConsumerGroupMetadataValue:
    return schema.ConsumerGroupMetadataValue(epoch=value.epoch, metadata_hash=value.metadata_hash)


def _member_value(obj: schema.ConsumerGroupMemberMetadataValue) -> ConsumerGroupMemberMetadataValue:
    classic = obj.classic_member_metadata
    if classic is not None and classic != schema.ConsumerGroupMemberMetadataValue.ClassicMemberMetadata():
        classic = ClassicMemberMetadata(classic.session_timeout_ms, tuple(
            (p.name, bytes(p.metadata)) for p in classic.supported_protocols))
    else:  # null, or no tag at all (Kafka's default: the empty struct), is a consumer-protocol member
        classic = None
    return same_fields(ConsumerGroupMemberMetadataValue, obj, subscribed_topic_names=tuple(obj.subscribed_topic_names),
                       classic_member_metadata=classic)


def _member_value_schema(value: ConsumerGroupMemberMetadataValue) -> schema.ConsumerGroupMemberMetadataValue:
    cls = schema.ConsumerGroupMemberMetadataValue
    classic = value.classic_member_metadata
    return same_fields(cls, value, subscribed_topic_names=list(value.subscribed_topic_names),
                       classic_member_metadata=None if classic is None else cls.ClassicMemberMetadata(
                           session_timeout_ms=classic.session_timeout_ms,
                           supported_protocols=[cls.ClassicProtocol(name=n, metadata=m)
                                                for n, m in classic.supported_protocols]))


def _target_member_value(obj: schema.ConsumerGroupTargetAssignmentMemberValue) -> ConsumerGroupTargetAssignmentMemberValue:
    return ConsumerGroupTargetAssignmentMemberValue(_topic_partitions(obj.topic_partitions))


def _target_member_value_schema(
    value: ConsumerGroupTargetAssignmentMemberValue,
) -> schema.ConsumerGroupTargetAssignmentMemberValue:
    cls = schema.ConsumerGroupTargetAssignmentMemberValue
    return cls(topic_partitions=_topic_partitions_schema(cls.TopicPartition, value.topic_partitions))


def _current_value(obj: schema.ConsumerGroupCurrentMemberAssignmentValue) -> ConsumerGroupCurrentMemberAssignmentValue:
    return same_fields(ConsumerGroupCurrentMemberAssignmentValue, obj,
                       assigned_partitions=_topic_partitions(obj.assigned_partitions),
                       partitions_pending_revocation=_topic_partitions(obj.partitions_pending_revocation))


def _current_value_schema(
    value: ConsumerGroupCurrentMemberAssignmentValue,
) -> schema.ConsumerGroupCurrentMemberAssignmentValue:
    cls = schema.ConsumerGroupCurrentMemberAssignmentValue
    return same_fields(cls, value, state=int(value.state),
                       assigned_partitions=_topic_partitions_schema(cls.TopicPartitions, value.assigned_partitions),
                       partitions_pending_revocation=_topic_partitions_schema(
                           cls.TopicPartitions, value.partitions_pending_revocation))


# ------------------------------------------------------------------- the regular expression record


def _read_regex_key(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupRegularExpressionKey, int]:
    group_id, pos = read_string(buf, pos)
    regex, pos = read_string(buf, pos)
    return ConsumerGroupRegularExpressionKey(group_id, regex), pos


def _write_regex_key(key: ConsumerGroupRegularExpressionKey) -> bytes:
    b = bytearray(INT16.pack(REGULAR_EXPRESSION_KEY_VERSION))
    write_string(b, key.group_id)
    write_string(b, key.regex)
    return bytes(b)


def _read_regex(buf: memoryview, pos: int, version: int) -> tuple[ConsumerGroupRegularExpressionValue, int]:
    if version != 0:
        raise MalformedMessageError(f"unknown ConsumerGroupRegularExpressionValue version {version}")
    n, pos = read_compact_array_len(buf, pos)
    topics = []
    for _ in range(max(n, 0)):
        topic, pos = read_compact_string(buf, pos)
        topics.append(topic)
    regex_version, timestamp = INT64.unpack_from(buf, pos)[0], INT64.unpack_from(buf, pos + 8)[0]
    return ConsumerGroupRegularExpressionValue(tuple(topics), regex_version, timestamp), skip_tags(buf, pos + 16)


def _write_regex(v: ConsumerGroupRegularExpressionValue) -> bytes:
    b = bytearray(INT16.pack(0))
    write_compact_array_len(b, len(v.topics))
    for topic in v.topics:
        write_compact_string(b, topic)
    b += INT64.pack(v.version) + INT64.pack(v.timestamp)
    b.append(0)
    return bytes(b)


#: The record types of consumer groups (the consumer group type's ``record_types``).
RECORD_TYPES: tuple[RecordType, ...] = (
    *(schema_record_type(key_cls, value_cls, from_schema, to_schema, lambda _: 0)
      for key_cls, value_cls, from_schema, to_schema in (
          (ConsumerGroupMetadataKey, schema.ConsumerGroupMetadataValue, _group_value, _group_value_schema),
          (ConsumerGroupMemberMetadataKey, schema.ConsumerGroupMemberMetadataValue, _member_value,
           _member_value_schema),
          (ConsumerGroupTargetAssignmentMetadataKey, schema.ConsumerGroupTargetAssignmentMetadataValue,
           lambda obj: same_fields(ConsumerGroupTargetAssignmentMetadataValue, obj),
           lambda value: schema.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=value.assignment_epoch)),
          (ConsumerGroupTargetAssignmentMemberKey, schema.ConsumerGroupTargetAssignmentMemberValue,
           _target_member_value, _target_member_value_schema),
          (ConsumerGroupCurrentMemberAssignmentKey, schema.ConsumerGroupCurrentMemberAssignmentValue, _current_value,
           _current_value_schema),
      )),
    RecordType(REGULAR_EXPRESSION_KEY_VERSION, ConsumerGroupRegularExpressionKey, _read_regex_key, _write_regex_key,
               _read_regex, _write_regex),
)
