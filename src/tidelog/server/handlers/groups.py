"""Group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups,
DeleteGroups. Thin: decode, call :class:`~tidelog.coordinator.group.GroupCoordinator`, shape the answer
for the request's version.

* FindCoordinator: this broker coordinates every group; key type GROUP (0) answers the leader of the
  group's ``__consumer_offsets`` partition (creating the topic on first use, as Kafka does), v4+ in the
  batched ``coordinator_keys`` form. TRANSACTION (1) keys answer COORDINATOR_NOT_AVAILABLE until the
  broker has a transaction coordinator; other key types INVALID_REQUEST. An empty key is no error.
* JoinGroup and SyncGroup answers wait until the rebalance gets there: the handler returns a future
  the coordinator completes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tidelog.coordinator.group import OFFSETS_TOPIC, RequestInfo
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
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
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handler

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
NO_NODE = (-1, "", -1)
#: Operations on a group an unrestricted client may perform (READ, DELETE, DESCRIBE bits), for
#: DescribeGroups ``include_authorized_operations`` (no authorizer: everything the resource supports).
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


def request_info(ctx: RequestContext) -> RequestInfo:
    return RequestInfo(ctx.client_id or "", "/" + ctx.client_host, ctx.api_version)


def _future() -> tuple[asyncio.Future, Any]:
    fut = asyncio.get_running_loop().create_future()

    def respond(response: Any) -> None:
        if not fut.done():
            fut.set_result(response)

    return fut, respond


# ------------------------------------------------------------------------------ FindCoordinator


def _coordinator(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, str | None, tuple[int, str, int]]:
    broker = ctx.broker
    if key_type == TRANSACTION_KEY_TYPE:
        txn = getattr(broker, "transaction_coordinator", None)
        if txn is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not available yet", NO_NODE
        topic_name, partition = txn.coordinator_partition(key)
    elif key_type == GROUP_KEY_TYPE:
        broker.ensure_offsets_topic()
        topic_name, partition = OFFSETS_TOPIC, broker.group_coordinator.partition_for(key)
    else:
        return ErrorCode.INVALID_REQUEST, f"unsupported coordinator key type {key_type}", NO_NODE
    image = broker.store.image
    topic = image.topics.get(topic_name)
    if topic is None or partition >= len(topic.partitions):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, NO_NODE
    node = image.brokers.get(topic.partitions[partition].leader)
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, NO_NODE
    return ErrorCode.NONE, None, (node.broker_id, node.host, node.port)


def _find_coordinator_error(request: FindCoordinatorRequest, code: ErrorCode, message: str | None):
    keys = request.coordinator_keys
    if keys:
        return FindCoordinatorResponse(coordinators=[
            FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=int(code),
                                                error_message=message) for k in keys])
    return FindCoordinatorResponse(error_code=int(code), error_message=message or code.message, node_id=-1, host="",
                                   port=-1)


@handler(ApiKey.FIND_COORDINATOR, 0, 6, _find_coordinator_error)
def handle_find_coordinator(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    if ctx.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            code, message, (node_id, host, port) = _coordinator(ctx, request.key_type, key)
            coordinators.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=int(code),
                error_message=message if code != ErrorCode.NONE else None))
        return FindCoordinatorResponse(coordinators=coordinators)
    code, message, (node_id, host, port) = _coordinator(ctx, request.key_type, request.key)
    return FindCoordinatorResponse(error_code=int(code),
                                   error_message=code.name if code == ErrorCode.NONE else message or code.message,
                                   node_id=node_id, host=host, port=port)


# ------------------------------------------------------------------------------------ JoinGroup


def _join_error(request: JoinGroupRequest, code: ErrorCode, message: str | None) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=int(code), member_id="")


def _shape_join(response: JoinGroupResponse, version: int) -> JoinGroupResponse:
    if version < 7 and response.protocol_name is None:
        response.protocol_name = ""
    if version < 9:
        response.skip_assignment = False
    return response


@handler(ApiKey.JOIN_GROUP, 0, 9, _join_error)
def handle_join_group(ctx: RequestContext, request: JoinGroupRequest):
    version = ctx.api_version
    if version == 0:
        request.rebalance_timeout_ms = request.session_timeout_ms  # v0 has no rebalance timeout
    fut, respond = _future()
    ctx.broker.group_coordinator.join_group(request_info(ctx), request, respond)
    return _shaped(fut, lambda r: _shape_join(r, version))


async def _shaped(fut: asyncio.Future, shape) -> Any:
    return shape(await fut)


# ------------------------------------------------------------------------------------ SyncGroup


@handler(ApiKey.SYNC_GROUP, 0, 5)
def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest):
    if ctx.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    fut, respond = _future()
    ctx.broker.group_coordinator.sync_group(request_info(ctx), request, respond)
    return fut


# ------------------------------------------------------------------------------ Heartbeat, Leave


@handler(ApiKey.HEARTBEAT, 0, 4)
def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    return ctx.broker.group_coordinator.heartbeat(request.group_id, request.member_id, request.group_instance_id,
                                                  request.generation_id)


@handler(ApiKey.LEAVE_GROUP, 0, 5)
def handle_leave_group(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    version = ctx.api_version
    if version < 3:
        members = [(request.member_id, None, None)]
    else:
        members = [(m.member_id, m.group_instance_id, m.reason) for m in request.members]
    response = ctx.broker.group_coordinator.leave_group(request.group_id, members)
    if version < 3:  # one member, its error at the top level
        code = response.error_code or (response.members[0].error_code if response.members else 0)
        return LeaveGroupResponse(error_code=code)
    return response


# -------------------------------------------------------------------------------------- admin


@handler(ApiKey.LIST_GROUPS, 0, 5)
def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    groups = ctx.broker.group_coordinator.list_groups(request.states_filter, request.types_filter)
    return ListGroupsResponse(groups=groups)


def _describe_error(request: DescribeGroupsRequest, code: ErrorCode, message: str | None) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(group_id=g, error_code=int(code))
                                          for g in request.groups])


@handler(ApiKey.DESCRIBE_GROUPS, 0, 6, _describe_error)
def handle_describe_groups(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    groups = ctx.broker.group_coordinator.describe_groups(request.groups, ctx.api_version)
    if ctx.api_version >= 3 and request.include_authorized_operations:
        for g in groups:
            if g.error_code == 0:
                g.authorized_operations = GROUP_OPERATIONS
    return DescribeGroupsResponse(groups=groups)


def _delete_error(request: DeleteGroupsRequest, code: ErrorCode, message: str | None) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=[DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(code))
                                         for g in dict.fromkeys(request.groups_names)])


@handler(ApiKey.DELETE_GROUPS, 0, 2, _delete_error)
def handle_delete_groups(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    try:
        results = ctx.broker.group_coordinator.delete_groups(request.groups_names)
    except KafkaError as e:
        return _delete_error(request, e.code, e.message)
    return DeleteGroupsResponse(results=results)


__all__ = [
    "handle_delete_groups",
    "handle_describe_groups",
    "handle_find_coordinator",
    "handle_heartbeat",
    "handle_join_group",
    "handle_leave_group",
    "handle_list_groups",
    "handle_sync_group",
    "request_info",
]
