"""The ``streams`` group type as the group coordinator is built with it
(:class:`~tidelog.coordinator.group.group_type.GroupType`): streams groups
(:class:`~tidelog.coordinator.group.modern.streams.manager.StreamsGroupCoordinator`) and their records.
Streams groups have no classic-protocol members.

    GroupCoordinator(config, clock, writer, group_types=[ConsumerGroupType, StreamsGroupType], image_source=...)

Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tidelog.coordinator.group.group_type import ClassicProtocol, GroupContext, ReplayerFn
from tidelog.coordinator.group.modern.member_timers import RuntimeTimers
from tidelog.coordinator.group.modern.streams.config import StreamsGroupConfig
from tidelog.coordinator.group.modern.streams.group import STREAMS
from tidelog.coordinator.group.modern.streams.manager import StreamsGroupCoordinator
from tidelog.coordinator.group.modern.streams.records import KEY_TYPES, RECORD_TYPES
from tidelog.coordinator.group.records import CoordinatorRecord, RecordType


class StreamsGroupType:
    """Streams groups on the coordinator's runtime, registry and metadata image."""

    group_type = STREAMS

    def __init__(self, context: GroupContext) -> None:
        self.manager = StreamsGroupCoordinator(
            context.clock, StreamsGroupConfig.from_broker_config(context.config),
            RuntimeTimers(context.runtime, context.partition_for), context.groups, image_source=context.image_source)
        self.classic_protocol: ClassicProtocol | None = None
        self.record_types: Sequence[RecordType] = RECORD_TYPES
        self.replayers: Mapping[type, ReplayerFn] = dict.fromkeys(KEY_TYPES, self._replay)

    def _replay(self, partition: int, offset: int, record: CoordinatorRecord) -> None:
        self.manager.replay(record)

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None:
        self.manager.on_loaded(group_ids)

    def on_unloaded(self) -> None:
        self.manager.on_unloaded()


__all__ = ["StreamsGroupType"]
