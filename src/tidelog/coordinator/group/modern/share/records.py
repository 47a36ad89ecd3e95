"""Kafka's ShareGroup* records in ``__consumer_offsets`` (share groups' state, records-4.4 layouts).

Their serdes are :data:`RECORD_TYPES`, the share group type's ``record_types``. Keys are the generated key
classes of :mod:`tidelog.protocol.coordinator_records`; values are this module's frozen dataclasses (the
coordinator's view: tuples, and ``TopicPartitions`` maps of topic id to partitions), converted to and from the
generated classes at the edge::

    record type  key                                     value
    10           ShareGroupMemberMetadataKey              ShareGroupMemberMetadataValue
    11           ShareGroupMetadataKey                    ShareGroupMetadataValue (epoch, metadata hash)
    12           ShareGroupTargetAssignmentMetadataKey    ShareGroupTargetAssignmentMetadataValue
    13           ShareGroupTargetAssignmentMemberKey      ShareGroupTargetAssignmentMemberValue
    14           ShareGroupCurrentMemberAssignmentKey     ShareGroupCurrentMemberAssignmentValue
    15           ShareGroupStatePartitionMetadataKey      ShareGroupStatePartitionMetadataValue

Key version 9 (ShareGroupPartitionMetadata, before Kafka 4.1) is not written. Every value is version 0.
Pure functions, immutable value classes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog.coordinator.group.modern.assignors import TopicPartitions
from tidelog.coordinator.group.records import RecordType, same_fields, schema_record_type
from tidelog.protocol.coordinator_records import share_group_current_member_assignment as _current
from tidelog.protocol.coordinator_records import share_group_member_metadata as _member
from tidelog.protocol.coordinator_records import share_group_metadata as _metadata
from tidelog.protocol.coordinator_records import share_group_state_partition_metadata as _state
from tidelog.protocol.coordinator_records import share_group_target_assignment_member as _target_member
from tidelog.protocol.coordinator_records import share_group_target_assignment_metadata as _target_metadata
from tidelog.protocol.coordinator_records.share_group_current_member_assignment import (
    ShareGroupCurrentMemberAssignmentKey,
)
from tidelog.protocol.coordinator_records.share_group_member_metadata import ShareGroupMemberMetadataKey
from tidelog.protocol.coordinator_records.share_group_metadata import ShareGroupMetadataKey
from tidelog.protocol.coordinator_records.share_group_state_partition_metadata import (
    ShareGroupStatePartitionMetadataKey,
)
from tidelog.protocol.coordinator_records.share_group_target_assignment_member import (
    ShareGroupTargetAssignmentMemberKey,
)
from tidelog.protocol.coordinator_records.share_group_target_assignment_metadata import (
    ShareGroupTargetAssignmentMetadataKey,
)

#: topic id -> (topic name, partitions): the share-state partitions of a group.
TopicPartitionsInfo = Mapping[uuid.UUID, tuple[str, frozenset[int]]]


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: TopicPartitions


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState
    assigned_partitions: TopicPartitions


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    """Which partitions' share state is being initialized, is initialized, and which topics' is being deleted."""

    initializing: TopicPartitionsInfo = field(default_factory=dict)
    initialized: TopicPartitionsInfo = field(default_factory=dict)
    deleting: Mapping[uuid.UUID, str] = field(default_factory=dict)


KEY_TYPES = (ShareGroupMemberMetadataKey, ShareGroupMetadataKey, ShareGroupTargetAssignmentMetadataKey,
             ShareGroupTargetAssignmentMemberKey, ShareGroupCurrentMemberAssignmentKey,
             ShareGroupStatePartitionMetadataKey)


def _tps(items: list) -> TopicPartitions:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for item in items or ():
        out[item.topic_id] = out.get(item.topic_id, frozenset()) | frozenset(item.partitions)
    return out


def _tps_schema(cls: type, tps: TopicPartitions) -> list:
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(tps.items()) if ps]


def _infos(items: list) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    return {i.topic_id: (i.topic_name, frozenset(i.partitions)) for i in items or ()}


def _infos_schema(infos: TopicPartitionsInfo) -> list:
    cls = _state.ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo
    return [cls(topic_id=t, topic_name=name, partitions=sorted(ps)) for t, (name, ps) in sorted(infos.items())]


def _state_value(obj: _state.ShareGroupStatePartitionMetadataValue) -> ShareGroupStatePartitionMetadataValue:
    return ShareGroupStatePartitionMetadataValue(_infos(obj.initializing_topics), _infos(obj.initialized_topics),
                                                 {i.topic_id: i.topic_name for i in obj.deleting_topics or ()})


def _state_value_schema(value: ShareGroupStatePartitionMetadataValue) -> _state.ShareGroupStatePartitionMetadataValue:
    cls = _state.ShareGroupStatePartitionMetadataValue
    return cls(initializing_topics=_infos_schema(value.initializing), initialized_topics=_infos_schema(value.initialized),
               deleting_topics=[cls.TopicInfo(topic_id=t, topic_name=n) for t, n in sorted(value.deleting.items())])


_C = _current.ShareGroupCurrentMemberAssignmentValue
_T = _target_member.ShareGroupTargetAssignmentMemberValue

#: The record types of share groups (the share group type's ``record_types``); every value is version 0.
RECORD_TYPES: tuple[RecordType, ...] = tuple(
    schema_record_type(key_cls, value_cls, from_schema, to_schema, lambda _: 0)
    for key_cls, value_cls, from_schema, to_schema in (
        (ShareGroupMetadataKey, _metadata.ShareGroupMetadataValue,
         lambda o: same_fields(ShareGroupMetadataValue, o), lambda v: same_fields(_metadata.ShareGroupMetadataValue, v)),
        (ShareGroupMemberMetadataKey, _member.ShareGroupMemberMetadataValue,
         lambda o: same_fields(ShareGroupMemberMetadataValue, o, subscribed_topic_names=tuple(o.subscribed_topic_names)),
         lambda v: same_fields(_member.ShareGroupMemberMetadataValue, v,
                               subscribed_topic_names=list(v.subscribed_topic_names))),
        (ShareGroupTargetAssignmentMetadataKey, _target_metadata.ShareGroupTargetAssignmentMetadataValue,
         lambda o: same_fields(ShareGroupTargetAssignmentMetadataValue, o),
         lambda v: same_fields(_target_metadata.ShareGroupTargetAssignmentMetadataValue, v)),
        (ShareGroupTargetAssignmentMemberKey, _T,
         lambda o: ShareGroupTargetAssignmentMemberValue(_tps(o.topic_partitions)),
         lambda v: _T(topic_partitions=_tps_schema(_T.TopicPartition, v.topic_partitions))),
        (ShareGroupCurrentMemberAssignmentKey, _C,
         lambda o: same_fields(ShareGroupCurrentMemberAssignmentValue, o, assigned_partitions=_tps(o.assigned_partitions)),
         lambda v: same_fields(_C, v, state=int(v.state),
                               assigned_partitions=_tps_schema(_C.TopicPartitions, v.assigned_partitions))),
        (ShareGroupStatePartitionMetadataKey, _state.ShareGroupStatePartitionMetadataValue, _state_value,
         _state_value_schema),
    ))


__all__ = [
    "KEY_TYPES",
    "RECORD_TYPES",
    "ShareGroupCurrentMemberAssignmentKey",
    "ShareGroupCurrentMemberAssignmentValue",
    "ShareGroupMemberMetadataKey",
    "ShareGroupMemberMetadataValue",
    "ShareGroupMetadataKey",
    "ShareGroupMetadataValue",
    "ShareGroupStatePartitionMetadataKey",
    "ShareGroupStatePartitionMetadataValue",
    "ShareGroupTargetAssignmentMemberKey",
    "ShareGroupTargetAssignmentMemberValue",
    "ShareGroupTargetAssignmentMetadataKey",
    "ShareGroupTargetAssignmentMetadataValue",
    "TopicPartitionsInfo",
]
