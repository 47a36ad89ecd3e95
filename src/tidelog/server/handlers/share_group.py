"""Share groups (KIP-932): ShareGroupHeartbeat (v1), ShareGroupDescribe (v1), DescribeShareGroupOffsets (v0-v1),
AlterShareGroupOffsets (v0), DeleteShareGroupOffsets (v0).

Thin: the group coordinator service and its share group type own every rule. Registered only when the
broker's ``share.version`` is 1 or more; otherwise these APIs are not in ApiVersions and answer
UNSUPPORTED_VERSION, as Kafka with share groups disabled. ACLs as Kafka checks them: READ on the group for
a heartbeat (and DESCRIBE on every subscribed topic), DESCRIBE on the group to describe it or its offsets,
READ on the group and on each topic to alter or delete its offsets.

DescribeShareGroupOffsets v1 answers each partition's lag (KIP-1226): the partition's high watermark less
the share partition's start offset and its delivery-complete count (the records from the start offset on
already acknowledged or archived), from the share state summary; -1 (unknown) while the share partition has
no start offset or no delivery-complete count yet, or when this broker has no replica of the partition.
"""

from __future__ import annotations

from collections.abc import Callable

from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.modern_groups import check_active, describe_groups, require_describable_topics

DO = DescribeShareGroupOffsetsResponse
AO = AlterShareGroupOffsetsResponse
XO = DeleteShareGroupOffsetsResponse

#: a partition's high watermark as this broker's replica knows it, None without a replica
HighWatermarks = Callable[[str, int], "int | None"]


def share_partition_lag(start_offset: int, delivery_complete_count: int, high_watermark: int | None) -> int:
    """KIP-1226's lag of a share partition; -1 when it cannot be known."""
    if start_offset < 0 or delivery_complete_count < 0 or high_watermark is None or high_watermark < 0:
        return -1
    return max(0, high_watermark - start_offset - delivery_complete_count)


def _heartbeat_error(request: ShareGroupHeartbeatRequest, code: ErrorCode, message: str | None
                     ) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(error_code=int(code), error_message=message)


def _describe_error(request: ShareGroupDescribeRequest, code: ErrorCode, message: str | None
                    ) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(groups=[ShareGroupDescribeResponse.DescribedGroup(
        group_id=g, error_code=int(code), error_message=message) for g in request.group_ids])


def _offsets_error(request: DescribeShareGroupOffsetsRequest, code: ErrorCode, message: str | None
                   ) -> DescribeShareGroupOffsetsResponse:
    return DO(groups=[DO.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, error_code=int(code),
                                                                error_message=message) for g in request.groups])


def _alter_error(request: AlterShareGroupOffsetsRequest, code: ErrorCode, message: str | None
                 ) -> AlterShareGroupOffsetsResponse:
    return AO(error_code=int(code), error_message=message)


def _delete_error(request: DeleteShareGroupOffsetsRequest, code: ErrorCode, message: str | None
                  ) -> DeleteShareGroupOffsetsResponse:
    return XO(error_code=int(code), error_message=message)


class ShareGroupHandlers:
    def __init__(self, groups: GroupCoordinatorService, store: MetadataStore,
                 authorizer: Authorizer = NO_AUTHORIZER, high_watermarks: HighWatermarks | None = None) -> None:
        self.groups = groups
        self.store = store
        self.authorizer = authorizer
        self.high_watermarks: HighWatermarks = high_watermarks or (lambda topic, partition: None)

    def _allowed(self, ctx: RequestContext, operation: AclOperation, resource: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(ctx, operation, resource, name)

    @handles(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, _heartbeat_error)
    async def handle_share_group_heartbeat(self, ctx: RequestContext, request: ShareGroupHeartbeatRequest
                                           ) -> ShareGroupHeartbeatResponse:
        if not self._allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        require_describable_topics(ctx, self.authorizer, request.subscribed_topic_names or ())
        check_active(self.groups)
        return await self.groups.share_group_heartbeat(request, api_version=ctx.api_version, image=self.store.image,
                                                       client_id=ctx.client_id, client_host="/" + ctx.client_host)

    @handles(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, _describe_error)
    async def handle_share_group_describe(self, ctx: RequestContext, request: ShareGroupDescribeRequest
                                          ) -> ShareGroupDescribeResponse:
        check_active(self.groups)
        R = ShareGroupDescribeResponse
        return R(groups=await describe_groups(
            ctx, self.authorizer, request.group_ids, request.include_authorized_operations,
            lambda valid: self.groups.share_group_describe(valid, self.store.image), R.DescribedGroup))

    @handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, _offsets_error)
    async def handle_describe_share_group_offsets(self, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
                                                  ) -> DescribeShareGroupOffsetsResponse:
        check_active(self.groups)
        image = self.store.image
        groups = []
        for g in request.groups:
            if not self._allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):
                groups.append(DO.DescribeShareGroupOffsetsResponseGroup(
                    group_id=g.group_id, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED)))
                continue
            asked = None
            if g.topics is not None:
                asked = [(image.topics[t.topic_name].topic_id, list(t.partitions)) for t in g.topics
                         if t.topic_name in image.topics]
            try:
                summaries = await self.groups.share_group_offsets(g.group_id, asked)
            except KafkaError as e:
                groups.append(DO.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, error_code=int(e.code),
                                                                        error_message=e.message))
                continue
            names = {t.topic_id: t.name for t in image.topics.values()}
            by_topic: dict = {}
            for (topic_id, p), state in summaries.items():
                part = DO.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=-1, leader_epoch=-1)
                if state is not None:
                    part.start_offset, part.leader_epoch = state.start_offset, state.leader_epoch
                    part.error_code = int(state.error)
                    part.error_message = state.error_message
                    if not state.error and topic_id in names:
                        part.lag = share_partition_lag(state.start_offset, state.delivery_complete_count,
                                                       self.high_watermarks(names[topic_id], p))
                by_topic.setdefault(topic_id, []).append(part)
            topics = [DO.DescribeShareGroupOffsetsResponseTopic(topic_name=names.get(t, ""), topic_id=t, partitions=ps)
                      for t, ps in by_topic.items()]
            for t in g.topics or ():
                if t.topic_name not in image.topics:
                    topics.append(DO.DescribeShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
                        DO.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p, start_offset=-1, leader_epoch=-1,
                            error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)) for p in t.partitions]))
            groups.append(DO.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=topics))
        return DO(groups=groups)

    @handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, _alter_error)
    async def handle_alter_share_group_offsets(self, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
                                               ) -> AlterShareGroupOffsetsResponse:
        if not self._allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        check_active(self.groups)
        image = self.store.image
        responses, offsets = [], {}
        for t in request.topics:
            topic = image.topics.get(t.topic_name)
            code = (ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    if not self._allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic is None else ErrorCode.NONE)
            if code != ErrorCode.NONE or topic is None:
                responses.append(AO.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
                    AO.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index, error_code=int(code))
                    for p in t.partitions]))
                continue
            for p in t.partitions:
                offsets[(topic.topic_id, t.topic_name, p.partition_index)] = p.start_offset
        codes = await self.groups.alter_share_group_offsets(request.group_id, offsets)
        by_topic: dict = {}
        for (topic_id, name, p) in offsets:
            by_topic.setdefault((topic_id, name), []).append(AO.AlterShareGroupOffsetsResponsePartition(
                partition_index=p, error_code=int(codes.get((topic_id, p), ErrorCode.NONE))))
        responses += [AO.AlterShareGroupOffsetsResponseTopic(topic_name=name, topic_id=tid, partitions=ps)
                      for (tid, name), ps in by_topic.items()]
        return AO(responses=responses)

    @handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, _delete_error)
    async def handle_delete_share_group_offsets(self, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
                                                ) -> DeleteShareGroupOffsetsResponse:
        if not self._allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        check_active(self.groups)
        image = self.store.image
        refused: dict[str, tuple[ErrorCode, str]] = {}
        wanted = {}
        for t in request.topics:
            topic = image.topics.get(t.topic_name)
            if not self._allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name):
                refused[t.topic_name] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
            elif topic is None:
                refused[t.topic_name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                         "This server does not host this topic-partition.")
            else:
                wanted[topic.topic_id] = t.topic_name
        codes = await self.groups.delete_share_group_offsets(request.group_id, wanted)
        ids = {name: tid for tid, name in wanted.items()}
        responses = []
        for t in request.topics:  # in the request's order, as Kafka answers
            if t.topic_name in refused:
                code, message = refused[t.topic_name]
                responses.append(XO.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name, error_code=int(code),
                                                                         error_message=message))
            elif t.topic_name in ids:
                tid = ids[t.topic_name]
                responses.append(XO.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name, topic_id=tid,
                                                                         error_code=int(codes[tid])))
        return XO(responses=responses)


__all__ = ["ShareGroupHandlers"]
