"""The group coordinator: classic groups (and other group types through its hooks), committed
offsets, and their records in ``__consumer_offsets``. See :mod:`tidelog.coordinator.group.coordinator`."""

from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState
from tidelog.coordinator.group.coordinator import (
    OFFSETS_TOPIC,
    ExtensionFactory,
    GroupConfig,
    GroupCoordinator,
    GroupTypeExtension,
)
from tidelog.coordinator.group.group import Group, RequestInfo
from tidelog.coordinator.group.offsets import OffsetAndMetadata, OffsetStore, PartitionCommit

__all__ = [
    "OFFSETS_TOPIC",
    "ClassicGroup",
    "ClassicGroupState",
    "ExtensionFactory",
    "Group",
    "GroupConfig",
    "GroupCoordinator",
    "GroupTypeExtension",
    "OffsetAndMetadata",
    "OffsetStore",
    "PartitionCommit",
    "RequestInfo",
]
