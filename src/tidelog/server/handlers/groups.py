"""Group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups, DeleteGroups
(FindCoordinator: :mod:`tidelog.server.handlers.find_coordinator`). Thin: decode, call
:class:`~tidelog.coordinator.group.service.GroupCoordinatorService` (answers come once the coordinator's
writes are committed), shape the answer for the request's version.

* JoinGroup and SyncGroup answers wait until the rebalance gets there: the service's call returns then.
"""

from __future__ import annotations

from tidelog.coordinator.group import RequestInfo
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles


def request_info(ctx: RequestContext) -> RequestInfo:
    return RequestInfo(ctx.client_id or "", "/" + ctx.client_host, ctx.api_version)




# ------------------------------------------------------------------------- the classic protocol


def _join_error(request: JoinGroupRequest, code: ErrorCode, message: str | None) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=int(code), member_id="")


def _shape_join(response: JoinGroupResponse, version: int) -> JoinGroupResponse:
    if version < 7 and response.protocol_name is None:
        response.protocol_name = ""
    if version >= 7 and response.protocol_name == "":
        response.protocol_name = None  # nullable from v7: Kafka answers null where it has no protocol
    if version < 9:
        response.skip_assignment = False
    return response


def _describe_error(request: DescribeGroupsRequest, code: ErrorCode, message: str | None) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(group_id=g, error_code=int(code))
                                          for g in request.groups])


def _delete_error(request: DeleteGroupsRequest, code: ErrorCode, message: str | None) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=[DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(code))
                                         for g in dict.fromkeys(request.groups_names)])


class GroupHandlers:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups, DeleteGroups."""

    def __init__(self, groups: GroupCoordinatorService, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.groups = groups
        self.authorizer = authorizer

    def _require(self, ctx: RequestContext, operation: AclOperation, group_id: str) -> None:
        if not self.authorizer.authorize(ctx, operation, ResourceType.GROUP, group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)

    @handles(ApiKey.JOIN_GROUP, 0, 9, _join_error)
    async def handle_join_group(self, ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
        self._require(ctx, AclOperation.READ, request.group_id)
        version = ctx.api_version
        if version == 0:
            request.rebalance_timeout_ms = request.session_timeout_ms  # v0 has no rebalance timeout
        return _shape_join(await self.groups.join_group(request_info(ctx), request), version)

    @handles(ApiKey.SYNC_GROUP, 0, 5)
    async def handle_sync_group(self, ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
        self._require(ctx, AclOperation.READ, request.group_id)
        if ctx.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
            return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        return await self.groups.sync_group(request_info(ctx), request)

    @handles(ApiKey.HEARTBEAT, 0, 4)
    async def handle_heartbeat(self, ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
        self._require(ctx, AclOperation.READ, request.group_id)
        return await self.groups.heartbeat(request.group_id, request.member_id, request.group_instance_id,
                                     request.generation_id)

    @handles(ApiKey.LEAVE_GROUP, 0, 5)
    async def handle_leave_group(self, ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
        self._require(ctx, AclOperation.READ, request.group_id)
        version = ctx.api_version
        if version < 3:
            members = [(request.member_id, None, None)]
        else:
            members = [(m.member_id, m.group_instance_id, m.reason) for m in request.members]
        response = await self.groups.leave_group(request.group_id, members)
        if version < 3:  # one member, its error at the top level
            code = response.error_code or (response.members[0].error_code if response.members else 0)
            return LeaveGroupResponse(error_code=code)
        return response

    @handles(ApiKey.LIST_GROUPS, 0, 5)
    async def handle_list_groups(self, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
        try:
            groups = await self.groups.list_groups(request.states_filter, request.types_filter)
        except KafkaError as e:  # COORDINATOR_LOAD_IN_PROGRESS: a partition is loading
            return ListGroupsResponse(error_code=int(e.code))
        auth = self.authorizer
        if not auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            groups = [g for g in groups if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
        return ListGroupsResponse(groups=groups)

    @handles(ApiKey.DESCRIBE_GROUPS, 0, 6, _describe_error)
    async def handle_describe_groups(self, ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
        auth = self.authorizer
        allowed = [g for g in request.groups if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
        denied = [DescribeGroupsResponse.DescribedGroup(group_id=g, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
                  for g in request.groups if g not in allowed]
        groups = await self.groups.describe_groups(allowed, ctx.api_version) if allowed else []
        if ctx.api_version >= 3 and request.include_authorized_operations:
            for g in groups:
                if g.error_code == 0:
                    g.authorized_operations = auth.authorized_operations(ctx, ResourceType.GROUP, g.group_id)
        return DescribeGroupsResponse(groups=denied + groups)

    @handles(ApiKey.DELETE_GROUPS, 0, 3, _delete_error)
    async def handle_delete_groups(self, ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
        names = list(dict.fromkeys(request.groups_names))
        allowed = [g for g in names if self.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, g)]
        denied = [DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
                  for g in names if g not in allowed]
        try:
            results = await self.groups.delete_groups(allowed) if allowed else []
        except KafkaError as e:
            results = [DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(e.code)) for g in allowed]
        # v3's ErrorMessage stays null, as Kafka 4.4 leaves it for GROUP_ID_NOT_FOUND and NOT_COORDINATOR
        # (the spec names GROUP_DELETION_FAILED's cause, an error Tidelog never answers)
        return DeleteGroupsResponse(results=results + denied)


__all__ = ["GroupHandlers", "request_info"]
