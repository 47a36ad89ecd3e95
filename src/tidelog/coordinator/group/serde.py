"""Every record type Tidelog writes to ``__consumer_offsets``, in one table: classic groups and
offsets (:data:`~tidelog.coordinator.group.records.CLASSIC_RECORD_TYPES`), consumer groups
(:data:`~tidelog.coordinator.group.modern.consumer.records.RECORD_TYPES`), share groups
(:data:`~tidelog.coordinator.group.modern.share.records.RECORD_TYPES`) and streams groups
(:data:`~tidelog.coordinator.group.modern.streams.records.RECORD_TYPES`). For readers of the topic
outside a coordinator (tools, tests); a coordinator builds its own table from the group types it is
built with. Immutable."""

from __future__ import annotations

from tidelog.coordinator.group.modern.consumer.records import RECORD_TYPES as CONSUMER_RECORD_TYPES
from tidelog.coordinator.group.modern.share.records import RECORD_TYPES as SHARE_RECORD_TYPES
from tidelog.coordinator.group.modern.streams.records import RECORD_TYPES as STREAMS_RECORD_TYPES
from tidelog.coordinator.group.records import CLASSIC_RECORD_TYPES, RecordSerde, RecordType

GROUP_RECORD_TYPES: tuple[RecordType, ...] = (*CLASSIC_RECORD_TYPES, *CONSUMER_RECORD_TYPES, *SHARE_RECORD_TYPES,
                                             *STREAMS_RECORD_TYPES)
SERDE = RecordSerde(GROUP_RECORD_TYPES)
serialize = SERDE.serialize
deserialize = SERDE.deserialize

__all__ = ["GROUP_RECORD_TYPES", "SERDE", "deserialize", "serialize"]
