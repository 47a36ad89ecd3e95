"""The KIP-848 ``consumer`` group type as the group coordinator is built with it
(:class:`~tidelog.coordinator.group.group_type.GroupType`): consumer groups
(:class:`~tidelog.coordinator.group.modern.consumer.manager.ConsumerGroupCoordinator`), their records,
and, unless ``classic_members=False``, classic-protocol members of consumer groups and the downgrade of
consumer groups into classic groups (:mod:`~tidelog.coordinator.group.modern.consumer.classic_member`).

    GroupCoordinator(config, clock, writer, group_types=[ConsumerGroupType], image_source=...)

Loop-only, not thread-safe.
"""

from __future__ import annotations

from tidelog.coordinator.group.group import CONSUMER
from tidelog.coordinator.group.group_type import GroupContext
from tidelog.coordinator.group.modern.consumer.classic_member import ClassicGroupAdopter, ClassicMembers
from tidelog.coordinator.group.modern.consumer.config import ConsumerGroupConfig
from tidelog.coordinator.group.modern.consumer.manager import ConsumerGroupCoordinator
from tidelog.coordinator.group.modern.consumer.records import KEY_TYPES, RECORD_TYPES
from tidelog.coordinator.group.modern.group_type import ModernGroupType
from tidelog.coordinator.group.modern.member_timers import RuntimeTimers


class ConsumerGroupType(ModernGroupType):
    """Consumer groups on the coordinator's runtime, registry and metadata image."""

    group_type = CONSUMER
    manager: ConsumerGroupCoordinator

    def __init__(self, context: GroupContext, *, classic_members: bool = True) -> None:
        adopter = (ClassicGroupAdopter(context.groups, context.classic, context.runtime, context.partition_for)
                   if classic_members else None)
        manager = ConsumerGroupCoordinator(
            context.clock, ConsumerGroupConfig.from_broker_config(context.config),
            RuntimeTimers(context.runtime, context.partition_for), context.groups,
            image_source=context.image_source, classic_groups=adopter)
        super().__init__(manager, RECORD_TYPES, KEY_TYPES, ClassicMembers(manager) if classic_members else None)


__all__ = ["ConsumerGroupType"]
