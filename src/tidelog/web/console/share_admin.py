"""The console's Kafka requests for share groups (KIP-932) and for deleting a group: ShareGroupDescribe,
DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteGroups, sent to the broker's own handlers as
:class:`~tidelog.web.console.admin.ConsoleAdmin` sends the others (same validation, error codes, ACLs).
"""

from __future__ import annotations

from typing import Any

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteGroupsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
)
from tidelog.security.principal import KafkaPrincipal
from tidelog.web.console.admin import Send
from tidelog.web.console.api_error import ApiError, check


class ShareAdmin:
    def __init__(self, send: Send) -> None:
        self._send = send

    async def describe_share_group(self, principal: KafkaPrincipal, group_id: str) -> Any:
        """ShareGroupDescribe v1: the group, its members and their assignments."""
        response = await self._send(ShareGroupDescribeRequest(group_ids=[group_id],
                                                               include_authorized_operations=False), 1, principal)
        (g,) = response.groups
        check(g.error_code, g.error_message)
        return g

    async def share_start_offsets(self, principal: KafkaPrincipal, group_id: str) -> dict[tuple[str, int], int]:
        """DescribeShareGroupOffsets v0 for every initialized share partition of the group: its start offset
        (-1: not started yet, ``share.auto.offset.reset`` applies at its first fetch)."""
        request = DescribeShareGroupOffsetsRequest(groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=None)])
        response = await self._send(request, 0, principal)
        (g,) = response.groups
        check(g.error_code, g.error_message)
        out = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code == 0:
                    out[(t.topic_name, p.partition_index)] = p.start_offset
        return out

    async def alter_share_start_offsets(self, principal: KafkaPrincipal, group_id: str,
                                        offsets: dict[tuple[str, int], int]) -> None:
        """AlterShareGroupOffsets v0: new start offsets (only while the group is empty: 409 NON_EMPTY_GROUP)."""
        R = AlterShareGroupOffsetsRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(R.AlterShareGroupOffsetsRequestPartition(
                partition_index=partition, start_offset=offset))
        request = R(group_id=group_id, topics=[R.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                                               for t, ps in by_topic.items()])
        response = await self._send(request, 0, principal)
        check(response.error_code, response.error_message)
        for t in response.responses:
            for p in t.partitions:
                check(p.error_code, f"{t.topic_name}-{p.partition_index}: "
                      f"{p.error_message or ApiError.from_kafka(p.error_code).message}" if p.error_code else None)

    async def delete_group(self, principal: KafkaPrincipal, group_id: str) -> None:
        """DeleteGroups v2 (any group type; Kafka refuses a group with members: 409 NON_EMPTY_GROUP)."""
        response = await self._send(DeleteGroupsRequest(groups_names=[group_id]), 2, principal)
        (r,) = response.results
        check(r.error_code, f"Group {group_id}: {ApiError.from_kafka(r.error_code).message}"
              if r.error_code and r.error_code != ErrorCode.GROUP_ID_NOT_FOUND else None)


__all__ = ["ShareAdmin"]
