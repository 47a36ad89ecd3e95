"""What the modern group types (``consumer``, ``share``, ``streams``) have in common as the group
coordinator is built with them (:class:`~tidelog.coordinator.group.group_type.GroupType`): one manager, the
group type's own coordinator, into which its records replay and which is told when the coordinator's
partitions are loaded and unloaded. Each leaf's ``group_type.py`` builds its manager from the
:class:`~tidelog.coordinator.group.group_type.GroupContext` and names its records.

Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from tidelog.coordinator.group.group_type import ClassicProtocol, ReplayerFn
from tidelog.coordinator.group.records import CoordinatorRecord, RecordType


class GroupManager(Protocol):
    """A modern group type's coordinator, as its group type drives it."""

    def replay(self, record: CoordinatorRecord) -> None: ...

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None: ...

    def on_unloaded(self) -> None: ...


class ModernGroupType:
    """A modern group type: ``manager`` replays ``key_types``' records; no classic-protocol members unless
    ``classic_protocol`` is given."""

    group_type: str

    def __init__(self, manager: GroupManager, record_types: Sequence[RecordType], key_types: Iterable[type],
                 classic_protocol: ClassicProtocol | None = None) -> None:
        self.manager = manager
        self.classic_protocol = classic_protocol
        self.record_types: Sequence[RecordType] = record_types
        self.replayers: Mapping[type, ReplayerFn] = dict.fromkeys(key_types, self._replay)

    def _replay(self, partition: int, offset: int, record: CoordinatorRecord) -> None:
        self.manager.replay(record)

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None:
        self.manager.on_loaded(group_ids)

    def on_unloaded(self) -> None:
        self.manager.on_unloaded()


__all__ = ["GroupManager", "ModernGroupType"]
