"""The ``streams`` group type as the group coordinator is built with it
(:class:`~tidelog.coordinator.group.group_type.GroupType`): streams groups
(:class:`~tidelog.coordinator.group.modern.streams.manager.StreamsGroupCoordinator`) and their records.
Streams groups have no classic-protocol members.

    GroupCoordinator(config, clock, writer, group_types=[ConsumerGroupType, StreamsGroupType], image_source=...)

Loop-only, not thread-safe.
"""

from __future__ import annotations

from tidelog.coordinator.group.group_type import GroupContext
from tidelog.coordinator.group.modern.group_type import ModernGroupType
from tidelog.coordinator.group.modern.member_timers import RuntimeTimers
from tidelog.coordinator.group.modern.streams.config import StreamsGroupConfig
from tidelog.coordinator.group.modern.streams.group import STREAMS
from tidelog.coordinator.group.modern.streams.manager import StreamsGroupCoordinator
from tidelog.coordinator.group.modern.streams.records import KEY_TYPES, RECORD_TYPES


class StreamsGroupType(ModernGroupType):
    """Streams groups on the coordinator's runtime, registry and metadata image."""

    group_type = STREAMS
    manager: StreamsGroupCoordinator

    def __init__(self, context: GroupContext) -> None:
        super().__init__(StreamsGroupCoordinator(
            context.clock, StreamsGroupConfig.from_broker_config(context.config),
            RuntimeTimers(context.runtime, context.partition_for), context.groups, image_source=context.image_source),
            RECORD_TYPES, KEY_TYPES)


__all__ = ["StreamsGroupType"]
