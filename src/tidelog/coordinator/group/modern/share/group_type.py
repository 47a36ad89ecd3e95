"""The ``share`` group type as the group coordinator is built with it
(:class:`~tidelog.coordinator.group.group_type.GroupType`): share groups
(:class:`~tidelog.coordinator.group.modern.share.manager.ShareGroupCoordinator`) and their records. Share
groups have no classic-protocol members.

    GroupCoordinator(config, clock, writer, group_types=[ConsumerGroupType, ShareGroupType], image_source=...)

Loop-only, not thread-safe.
"""

from __future__ import annotations

from tidelog.coordinator.group.group_type import GroupContext
from tidelog.coordinator.group.modern.group_type import ModernGroupType
from tidelog.coordinator.group.modern.member_timers import RuntimeTimers
from tidelog.coordinator.group.modern.share.config import ShareGroupConfig
from tidelog.coordinator.group.modern.share.group import SHARE
from tidelog.coordinator.group.modern.share.manager import ShareGroupCoordinator
from tidelog.coordinator.group.modern.share.records import KEY_TYPES, RECORD_TYPES


class ShareGroupType(ModernGroupType):
    """Share groups on the coordinator's runtime, registry and metadata image."""

    group_type = SHARE
    manager: ShareGroupCoordinator

    def __init__(self, context: GroupContext) -> None:
        super().__init__(ShareGroupCoordinator(
            context.clock, ShareGroupConfig.from_broker_config(context.config),
            RuntimeTimers(context.runtime, context.partition_for), context.groups, image_source=context.image_source),
            RECORD_TYPES, KEY_TYPES)


__all__ = ["ShareGroupType"]
