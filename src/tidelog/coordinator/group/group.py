"""The contract every group type fulfils for the group coordinator (classic groups here, KIP-848
``consumer`` groups in :mod:`tidelog.coordinator.group.modern.consumer.group`), and who sent a group request.

Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from tidelog.coordinator.group.records import CoordinatorRecord, group_tombstone
from tidelog.protocol.messages import ListGroupsResponse

CLASSIC = "classic"
CONSUMER = "consumer"
CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""



@dataclass(frozen=True, slots=True)
class RequestInfo:
    """Who sent a group request: the header's client id, the peer (as Kafka shows it, ``/1.2.3.4``)
    and the request's API version (some rules depend on it)."""

    client_id: str = ""
    client_host: str = ""
    api_version: int = 0


# ------------------------------------------------------------------------------- the group contract


class Group:
    """What the coordinator needs from a group of any type (classic here, ``consumer`` in KIP-848).

    The default answers are those of a group that has no members and no state worth keeping.
    Validation methods raise :class:`~tidelog.errors.KafkaError` with the code the response carries.
    """

    group_type: ClassVar[str] = ""
    #: Whether a classic JoinGroup may take the group over once it is empty (share groups: never, Kafka
    #: answers INCONSISTENT_GROUP_PROTOCOL).
    classic_joinable: ClassVar[bool] = True
    group_id: str

    def state_name(self) -> str:
        raise NotImplementedError

    def protocol_type_name(self) -> str:
        """ListGroups/DescribeGroups protocol type ("" when none)."""
        return ""

    def is_empty(self) -> bool:
        raise NotImplementedError

    def is_in_states(self, states: set[str]) -> bool:
        """ListGroups state filter; ``states`` are lower-case."""
        return self.state_name().lower() in states

    def listed_group(self) -> ListGroupsResponse.ListedGroup:
        return ListGroupsResponse.ListedGroup(group_id=self.group_id, protocol_type=self.protocol_type_name(),
                                              group_state=self.state_name(), group_type=self.group_type)

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_or_epoch: int,
                               api_version: int, transactional: bool = False) -> Callable[[str, int], None] | None:
        """OffsetCommit (or TxnOffsetCommit, ``transactional``) validation; raises KafkaError. May return a
        validator of each committed (topic, partition), which raises KafkaError (streams groups)."""
        raise NotImplementedError

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        return None

    def validate_offset_delete(self) -> None:
        return None

    def validate_delete(self) -> None:
        return None

    def is_subscribed_to(self, topic: str) -> bool:
        return False

    def offsets_expire_from(self, commit_timestamp_ms: int) -> int | None:
        """The time from which an offset's retention counts now, or None: do not expire offsets."""
        return commit_timestamp_ms

    def should_expire(self) -> bool:
        """Whether the offset expiry pass deletes the group once it is empty and its offsets expired
        (Kafka's ``Group.shouldExpire``; share groups: never)."""
        return True

    def tombstones(self) -> list[CoordinatorRecord]:
        """Records that delete the group (its offsets are deleted by the coordinator)."""
        return [group_tombstone(self.group_id)]


G = TypeVar("G", bound=Group)


class GroupRegistry(dict[str, Group]):
    """Every group of one group coordinator by id (Kafka's ``GroupMetadataManager.groups``): one group
    id, one group type. The coordinator builds it and hands it to each group type it is built with;
    a group type adds, replaces and removes groups of its own type (and takes over an empty group of
    another type, as Kafka does)."""

    def of_type(self, group_id: str, cls: type[G]) -> G | None:
        """The group ``group_id`` if it is a ``cls``, else None."""
        group = self.get(group_id)
        return group if isinstance(group, cls) else None


__all__ = ["CLASSIC", "CONSUMER", "CONSUMER_PROTOCOL_TYPE", "UNKNOWN_MEMBER_ID", "Group", "GroupRegistry",
           "RequestInfo"]
