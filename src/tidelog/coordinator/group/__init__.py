"""The group coordinator: classic groups (and the group types it is built with), committed offsets,
and their records in ``__consumer_offsets``; clients reach it through its service. See
:mod:`tidelog.coordinator.group.coordinator` and :mod:`tidelog.coordinator.group.service`."""

from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState
from tidelog.coordinator.group.config import GroupConfig
from tidelog.coordinator.group.coordinator import OFFSETS_TOPIC, GroupCoordinator
from tidelog.coordinator.group.group import Group, GroupRegistry, RequestInfo
from tidelog.coordinator.group.offsets import OffsetAndMetadata, OffsetStore, PartitionCommit

__all__ = [
    "OFFSETS_TOPIC",
    "ClassicGroup",
    "ClassicGroupState",
    "Group",
    "GroupConfig",
    "GroupCoordinator",
    "GroupRegistry",
    "OffsetAndMetadata",
    "OffsetStore",
    "PartitionCommit",
    "RequestInfo",
]
