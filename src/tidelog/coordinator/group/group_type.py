"""What a group type is built with and what the group coordinator asks of it (Kafka's
``GroupMetadataManager`` builds its group types the same way: explicitly, at construction).

The coordinator is built with the group types it serves besides classic groups (``group_types``:
one :data:`GroupTypeFactory` each, for instance
:class:`~tidelog.coordinator.group.modern.consumer.group_type.ConsumerGroupType`). It calls each factory
once with a :class:`GroupContext` (its runtime, its one :class:`~tidelog.coordinator.group.group.GroupRegistry`,
the classic manager, the metadata image) and keeps the :class:`GroupType` it returns:

* ``record_types``: the serdes of the type's records, added to the coordinator's record table;
* ``replayers``: the replay function of each of its record key classes, added to the coordinator's
  replay table (a key class claimed twice is a construction error);
* ``classic_protocol``: the :class:`ClassicProtocol` serving classic-protocol members of its groups
  (JoinGroup on a non-empty group of the type, SyncGroup, Heartbeat, LeaveGroup), or None: those
  requests answer INCONSISTENT_GROUP_PROTOCOL / UNKNOWN_MEMBER_ID;
* ``on_loaded(group_ids)`` after a partition's replay (arm timers), ``on_unloaded()`` at shutdown.

Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.classic.manager import ClassicGroupManager
from tidelog.coordinator.group.config import GroupConfig
from tidelog.coordinator.group.group import GroupRegistry, RequestInfo
from tidelog.coordinator.group.records import CoordinatorRecord, RecordType
from tidelog.coordinator.runtime import CoordinatorRuntime, Result
from tidelog.protocol.messages import JoinGroupRequest, SyncGroupRequest

#: Replays one record of a group type: (partition, record offset, record).
ReplayerFn = Callable[[int, int, CoordinatorRecord], None]


class ClassicProtocol(Protocol):
    """The classic protocol's requests for one group type (ClassicGroupManager's shape): each returns
    the runtime Result to write; join and sync answer through ``respond``."""

    def join_group(self, info: RequestInfo, request: JoinGroupRequest, respond: Callable[[Any], None]) -> Result: ...

    def sync_group(self, info: RequestInfo, request: SyncGroupRequest, respond: Callable[[Any], None]) -> Result: ...

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> Result: ...

    def leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]]) -> Result: ...


@dataclass(frozen=True, slots=True)
class GroupContext:
    """What a group type is built with: the coordinator's parts it shares."""

    config: GroupConfig
    clock: Clock
    runtime: CoordinatorRuntime
    groups: GroupRegistry
    partition_for: Callable[[str], int]
    classic: ClassicGroupManager
    #: The current metadata image (the broker's store), for group types that assign partitions.
    image_source: Callable[[], MetadataImage] | None = None


class GroupType(Protocol):
    """A group type other than classic, as the coordinator uses it (module docstring)."""

    group_type: str
    record_types: Sequence[RecordType]
    replayers: Mapping[type, ReplayerFn]
    classic_protocol: ClassicProtocol | None

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None: ...

    def on_unloaded(self) -> None: ...


GroupTypeFactory = Callable[[GroupContext], GroupType]


__all__ = ["ClassicProtocol", "GroupContext", "GroupType", "GroupTypeFactory", "ReplayerFn"]
