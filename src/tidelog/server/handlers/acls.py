"""CreateAcls, DescribeAcls, DeleteAcls (Kafka's AclApis).

* Changing ACLs needs ALTER on the cluster, seeing them DESCRIBE on the cluster; otherwise every
  creation / filter (or the DescribeAcls response) answers CLUSTER_AUTHORIZATION_FAILED.
* Without an authorizer (``authorizer.class.name`` empty) they answer SECURITY_DISABLED.
* A binding Kafka would refuse (ANY codes, an empty name, a CLUSTER name other than
  ``kafka-cluster``, a principal without ``Type:``) answers INVALID_REQUEST for that binding only.
  A request Kafka cannot even parse (an UNKNOWN code in a binding or filter; a pattern type version 0
  does not know) closes the connection, as Kafka does. ACLs are written through the controller into the metadata
  store, so every broker of a cluster sees them.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

from tidelog.cluster.controller import Controller
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from tidelog.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from tidelog.security.authorizer import Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import CloseConnection, handles

E = TypeVar("E", bound=IntEnum)


def _code(enum: type[E], value: int) -> E:
    """A wire code as its enum; codes Tidelog does not know are UNKNOWN (0), as Kafka reads them."""
    try:
        return enum(value)
    except ValueError:
        return enum(0)


def _create_error(request: CreateAclsRequest, code: ErrorCode, message: str | None = None) -> CreateAclsResponse:
    return CreateAclsResponse(results=[
        CreateAclsResponse.AclCreationResult(error_code=int(code), error_message=message or code.message)
        for _ in request.creations])


def _describe_error(request: DescribeAclsRequest, code: ErrorCode, message: str | None = None) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=int(code), error_message=message or code.message)


def _delete_error(request: DeleteAclsRequest, code: ErrorCode, message: str | None = None) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[
        DeleteAclsResponse.DeleteAclsFilterResult(error_code=int(code), error_message=message or code.message)
        for _ in request.filters])


def _filter(f) -> AclBindingFilter:
    return AclBindingFilter(
        _code(ResourceType, f.resource_type_filter), f.resource_name_filter, _code(PatternType, f.pattern_type_filter),
        f.principal_filter, f.host_filter, _code(AclOperation, f.operation),
        _code(AclPermissionType, f.permission_type))


class AclHandlers:
    def __init__(self, controller: Controller, authorizer: Authorizer) -> None:
        self.controller = controller
        self.authorizer = authorizer

    def _require_cluster(self, ctx: RequestContext, operation: AclOperation) -> None:
        if not self.authorizer.authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME):
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if not self.authorizer.enabled:  # Kafka's two wordings
            raise KafkaError(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker"
                             if operation == AclOperation.DESCRIBE else "No Authorizer is configured.")

    @handles(ApiKey.CREATE_ACLS, 0, 3, _create_error)
    def handle_create_acls(self, ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
        if ctx.api_version == 0 and any(c.resource_pattern_type != PatternType.LITERAL for c in request.creations):
            raise CloseConnection("CreateAcls v0 only supports literal resource pattern types")
        if any(0 in (c.resource_pattern_type, c.resource_type, c.operation, c.permission_type)
               for c in request.creations):
            raise CloseConnection("CreateAcls with UNKNOWN elements")
        self._require_cluster(ctx, AclOperation.ALTER)
        bindings = [AclBinding(_code(ResourceType, c.resource_type), c.resource_name,
                               _code(PatternType, c.resource_pattern_type), c.principal, c.host,
                               _code(AclOperation, c.operation), _code(AclPermissionType, c.permission_type))
                    for c in request.creations]
        results = self.controller.create_acls(bindings)
        return CreateAclsResponse(results=[
            CreateAclsResponse.AclCreationResult(error_code=int(r.code), error_message=r.message) if r is not None
            else CreateAclsResponse.AclCreationResult(error_code=0, error_message=None)
            for r in results])

    @handles(ApiKey.DESCRIBE_ACLS, 0, 3, _describe_error)
    def handle_describe_acls(self, ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
        acl_filter = _filter(request)
        if ctx.api_version == 0 and request.pattern_type_filter != PatternType.LITERAL:
            raise CloseConnection("DescribeAcls v0 only supports literal resource pattern types")
        if acl_filter.unknown_reason is not None:
            raise CloseConnection(f"DescribeAcls with UNKNOWN elements: {acl_filter.unknown_reason}")
        self._require_cluster(ctx, AclOperation.DESCRIBE)
        by_pattern: dict[tuple[ResourceType, str, PatternType], list[AclBinding]] = {}
        for acl in sorted(self.authorizer.acls(acl_filter), key=str):
            by_pattern.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(acl)
        Resource, Description = DescribeAclsResponse.DescribeAclsResource, DescribeAclsResponse.AclDescription
        return DescribeAclsResponse(error_code=0, error_message=None, resources=[
            Resource(resource_type=int(rtype), resource_name=name, pattern_type=int(ptype), acls=[
                Description(principal=a.principal, host=a.host, operation=int(a.operation),
                            permission_type=int(a.permission))
                for a in acls])
            for (rtype, name, ptype), acls in by_pattern.items()])

    @handles(ApiKey.DELETE_ACLS, 0, 3, _delete_error)
    def handle_delete_acls(self, ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
        filters = [_filter(f) for f in request.filters]
        if ctx.api_version == 0 and any(f.pattern_type not in (PatternType.LITERAL, PatternType.ANY) for f in filters):
            raise CloseConnection("DeleteAcls v0 only supports LITERAL and ANY pattern types")
        if any(f.unknown_reason is not None for f in filters):
            raise CloseConnection("DeleteAcls with UNKNOWN elements")
        self._require_cluster(ctx, AclOperation.ALTER)
        results = self.controller.delete_acls(filters)
        Result, Matching = DeleteAclsResponse.DeleteAclsFilterResult, DeleteAclsResponse.DeleteAclsMatchingAcl
        out = []
        for r in results:
            if isinstance(r, KafkaError):
                out.append(Result(error_code=int(r.code), error_message=r.message))
                continue
            out.append(Result(error_code=0, error_message=None, matching_acls=[
                Matching(error_code=0, error_message=None, resource_type=int(a.resource_type), resource_name=a.name,
                         pattern_type=int(a.pattern_type), principal=a.principal, host=a.host,
                         operation=int(a.operation), permission_type=int(a.permission))
                for a in r]))
        return DeleteAclsResponse(filter_results=out)


__all__ = ["AclHandlers"]
