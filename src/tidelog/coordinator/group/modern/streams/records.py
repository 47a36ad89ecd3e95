"""Kafka's StreamsGroup* records in ``__consumer_offsets`` (streams groups' state, records-4.4 layouts).

Keys and values are the generated classes of :mod:`tidelog.protocol.coordinator_records` themselves (frozen
messages); the group model converts them at replay::

    record type  key                                        value
    17           StreamsGroupMetadataKey                    StreamsGroupMetadataValue (epoch, metadata hash)
    19           StreamsGroupMemberMetadataKey              StreamsGroupMemberMetadataValue
    20           StreamsGroupTargetAssignmentMetadataKey    StreamsGroupTargetAssignmentMetadataValue
    21           StreamsGroupTargetAssignmentMemberKey      StreamsGroupTargetAssignmentMemberValue
    22           StreamsGroupCurrentMemberAssignmentKey     StreamsGroupCurrentMemberAssignmentValue
    23           StreamsGroupTopologyKey                    StreamsGroupTopologyValue

Record type 18 (StreamsGroupPartitionMetadata, before Kafka 4.1) is not written. Every value is version 0.
Pure functions.
"""

from __future__ import annotations

from tidelog.coordinator.group.records import RecordType, schema_record_type
from tidelog.protocol.coordinator_records.streams_group_current_member_assignment import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
)
from tidelog.protocol.coordinator_records.streams_group_member_metadata import (
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
)
from tidelog.protocol.coordinator_records.streams_group_metadata import (
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
)
from tidelog.protocol.coordinator_records.streams_group_target_assignment_member import (
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
)
from tidelog.protocol.coordinator_records.streams_group_target_assignment_metadata import (
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
)
from tidelog.protocol.coordinator_records.streams_group_topology import (
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
)

KEY_TYPES = (StreamsGroupMetadataKey, StreamsGroupMemberMetadataKey, StreamsGroupTargetAssignmentMetadataKey,
             StreamsGroupTargetAssignmentMemberKey, StreamsGroupCurrentMemberAssignmentKey, StreamsGroupTopologyKey)


def _identity(value: object) -> object:
    return value


#: The record types of streams groups (the streams group type's ``record_types``).
RECORD_TYPES: tuple[RecordType, ...] = tuple(
    schema_record_type(key_cls, value_cls, _identity, _identity, lambda _: 0)  # type: ignore[arg-type]
    for key_cls, value_cls in (
        (StreamsGroupMetadataKey, StreamsGroupMetadataValue),
        (StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue),
        (StreamsGroupTargetAssignmentMetadataKey, StreamsGroupTargetAssignmentMetadataValue),
        (StreamsGroupTargetAssignmentMemberKey, StreamsGroupTargetAssignmentMemberValue),
        (StreamsGroupCurrentMemberAssignmentKey, StreamsGroupCurrentMemberAssignmentValue),
        (StreamsGroupTopologyKey, StreamsGroupTopologyValue),
    ))


__all__ = [
    "KEY_TYPES",
    "RECORD_TYPES",
    "StreamsGroupCurrentMemberAssignmentKey",
    "StreamsGroupCurrentMemberAssignmentValue",
    "StreamsGroupMemberMetadataKey",
    "StreamsGroupMemberMetadataValue",
    "StreamsGroupMetadataKey",
    "StreamsGroupMetadataValue",
    "StreamsGroupTargetAssignmentMemberKey",
    "StreamsGroupTargetAssignmentMemberValue",
    "StreamsGroupTargetAssignmentMetadataKey",
    "StreamsGroupTargetAssignmentMetadataValue",
    "StreamsGroupTopologyKey",
    "StreamsGroupTopologyValue",
]
