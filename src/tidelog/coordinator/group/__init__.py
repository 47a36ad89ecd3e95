"""The group coordinator: classic groups (and other group types through its hooks), committed
offsets, and their records in ``__consumer_offsets``. See :mod:`tidelog.coordinator.group.coordinator`."""

from tidelog.coordinator.group.coordinator import (
    EXTENSIONS,
    OFFSETS_TOPIC,
    GroupConfig,
    GroupCoordinator,
    register_extension,
)
from tidelog.coordinator.group.offsets import OffsetAndMetadata, OffsetStore, PartitionCommit
from tidelog.coordinator.group.state import ClassicGroup, ClassicGroupState, Group, RequestInfo

__all__ = [
    "EXTENSIONS",
    "OFFSETS_TOPIC",
    "ClassicGroup",
    "ClassicGroupState",
    "Group",
    "GroupConfig",
    "GroupCoordinator",
    "OffsetAndMetadata",
    "OffsetStore",
    "PartitionCommit",
    "RequestInfo",
    "register_extension",
]
