"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (v0-1) and ConsumerGroupDescribe (v0-1).

Thin: the group coordinator service (:class:`~tidelog.coordinator.group.service.GroupCoordinatorService`)
and its consumer group type own every rule; a heartbeat runs as one coordinator operation on the group's
``__consumer_offsets`` partition and is answered once its records are committed. Assignments
travel as topic ids (clients resolve them with Metadata v12+).

librdkafka (confluent-kafka 2.16) asks for ConsumerGroupHeartbeat 1..1 and sends OffsetCommit and
OffsetFetch v9 with its member epoch; both go through the classic handlers, which ask the group.
With ``group.coordinator.rebalance.protocols`` not listing ``consumer``, heartbeats answer
UNSUPPORTED_VERSION (Kafka then leaves the API out of ApiVersions; ours is derived from the registry).
"""

from __future__ import annotations

from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.modern_groups import check_active, require_describable_topics


def _heartbeat_error(request: ConsumerGroupHeartbeatRequest, code: ErrorCode,
                     message: str | None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=int(code), error_message=message)


def _describe_error(request: ConsumerGroupDescribeRequest, code: ErrorCode,
                    message: str | None) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(groups=[
        ConsumerGroupDescribeResponse.DescribedGroup(group_id=g, error_code=int(code), error_message=message)
        for g in request.group_ids])


class ConsumerGroupHandlers:
    def __init__(self, groups: GroupCoordinatorService, store: MetadataStore,
                 rebalance_protocols: tuple[str, ...], authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.authorizer = authorizer
        self.groups = groups
        self.store = store
        self.enabled = "consumer" in rebalance_protocols

    @handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, _heartbeat_error)
    async def handle_consumer_group_heartbeat(self, ctx: RequestContext,
                                              request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        if not self.enabled:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "the consumer rebalance protocol is not enabled")
        if not self.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        require_describable_topics(ctx, self.authorizer, request.subscribed_topic_names or ())
        check_active(self.groups)
        return await self.groups.consumer_group_heartbeat(request, api_version=ctx.api_version, image=self.store.image,
                                                          client_id=ctx.client_id, client_host="/" + ctx.client_host)

    @handles(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, _describe_error)
    async def handle_consumer_group_describe(self, ctx: RequestContext,
                                             request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
        check_active(self.groups)
        auth = self.authorizer
        denied = {g for g in request.group_ids if not auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)}
        valid = list(dict.fromkeys(g for g in request.group_ids if g and g not in denied))
        described = {d.group_id: d for d in await self.groups.consumer_group_describe(valid, self.store.image)}
        groups = [ConsumerGroupDescribeResponse.DescribedGroup(
            group_id=g, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED)) for g in request.group_ids if g in denied]
        for group_id in request.group_ids:
            if group_id in denied:
                continue
            if not group_id:
                groups.append(ConsumerGroupDescribeResponse.DescribedGroup(
                    group_id=group_id, error_code=int(ErrorCode.INVALID_GROUP_ID)))
                continue
            group = described[group_id]
            if request.include_authorized_operations and group.error_code == 0:
                group.authorized_operations = auth.authorized_operations(ctx, ResourceType.GROUP, group_id)
            groups.append(group)
        return ConsumerGroupDescribeResponse(groups=groups)


__all__ = ["ConsumerGroupHandlers"]
