"""What the handlers of the modern group types (KIP-848's consumer groups, KIP-932's share groups, KIP-1071's
streams groups) share.

:func:`check_active`: COORDINATOR_NOT_AVAILABLE while the group coordinator is not running.

:func:`require_describable_topics`: a heartbeat naming topics (a consumer or share member's subscription, a
streams member's source topics) fails with TOPIC_AUTHORIZATION_FAILED, naming them, when the member may not
DESCRIBE some of them (Kafka 4).

:func:`describe_groups`: a ShareGroupDescribe or StreamsGroupDescribe answer. As Kafka's KafkaApis, the
groups the requester may not DESCRIBE come first (GROUP_AUTHORIZATION_FAILED, not asked of the coordinator),
then the others in the request's order: an empty group id INVALID_GROUP_ID, every other group described once
(duplicates answer the same description) and, when asked, with the requester's authorized operations on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, TypeVar

from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import Authorizer
from tidelog.server.context import RequestContext


class DescribedGroup(Protocol):
    group_id: str
    error_code: int
    authorized_operations: int


G = TypeVar("G", bound=DescribedGroup)


def check_active(groups: GroupCoordinatorService) -> None:
    if not groups.active:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not available")


def require_describable_topics(ctx: RequestContext, authorizer: Authorizer, topics: Iterable[str]) -> None:
    hidden = sorted(t for t in set(topics) if not authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t))
    if hidden:
        raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         f"The following topics are not authorized: {', '.join(hidden)}")


async def describe_groups(ctx: RequestContext, authorizer: Authorizer, group_ids: list[str],
                          include_authorized_operations: bool,
                          describe: Callable[[list[str]], Awaitable[Iterable[G]]],
                          described_group: Callable[..., G]) -> list[G]:
    """The described groups of ``group_ids``: ``describe`` asks the coordinator about the valid ones;
    ``described_group(group_id=, error_code=)`` makes an answer for the others."""
    denied = {g for g in group_ids if not authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)}
    valid = list(dict.fromkeys(g for g in group_ids if g and g not in denied))
    described = {d.group_id: d for d in await describe(valid)}
    out = [described_group(group_id=g, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
           for g in group_ids if g in denied]
    for group_id in group_ids:
        if group_id in denied:
            continue
        if not group_id:
            out.append(described_group(group_id=group_id, error_code=int(ErrorCode.INVALID_GROUP_ID)))
        else:
            group = described[group_id]
            if include_authorized_operations and group.error_code == 0:
                group.authorized_operations = authorizer.authorized_operations(ctx, ResourceType.GROUP, group_id)
            out.append(group)
    return out


__all__ = ["check_active", "describe_groups", "require_describable_topics"]
