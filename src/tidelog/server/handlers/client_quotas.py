"""DescribeClientQuotas and AlterClientQuotas (KIP-546), every version. Thin: filtering and validation
are :mod:`tidelog.cluster.client_quota`'s, the change is the controller's; the quota managers hear of
it through the metadata store (every broker of a cluster, ZooKeeper's watches included)."""

from __future__ import annotations

from tidelog.cluster import client_quota
from tidelog.cluster.controller import Controller
from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles


def describe_error_response(_request: DescribeClientQuotasRequest, code: ErrorCode,
                            message: str | None) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(error_code=int(code), error_message=message or code.message, entries=None)


def alter_error_response(request: AlterClientQuotasRequest, code: ErrorCode,
                         message: str | None) -> AlterClientQuotasResponse:
    return AlterClientQuotasResponse(entries=[
        AlterClientQuotasResponse.EntryData(
            error_code=int(code), error_message=message or code.message,
            entity=[AlterClientQuotasResponse.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity])
        for entry in request.entries])


_CLUSTER_REFUSED = "Cluster authorization failed."


class ClientQuotaHandlers:
    def __init__(self, store: MetadataStore, controller: Controller, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.store = store
        self.controller = controller
        self.authorizer = authorizer

    @handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, describe_error_response)
    def describe_client_quotas(self, ctx: RequestContext, request: DescribeClientQuotasRequest,
                               ) -> DescribeClientQuotasResponse:
        if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
            return describe_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED)
        components = [(c.entity_type, c.match_type, c.match) for c in request.components]
        try:
            found = client_quota.describe(self.store.image.client_quotas, components, request.strict)
        except KafkaError as e:
            return describe_error_response(request, e.code, e.message)
        return DescribeClientQuotasResponse(error_code=0, error_message=None, entries=[
            DescribeClientQuotasResponse.EntryData(
                entity=[DescribeClientQuotasResponse.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                values=[DescribeClientQuotasResponse.ValueData(key=k, value=v) for k, v in values.items()])
            for entity, values in found])

    @handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, alter_error_response)
    def alter_client_quotas(self, ctx: RequestContext, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
        if not self.authorizer.authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
            return alter_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED)
        alterations = [
            ([(e.entity_type, e.entity_name) for e in entry.entity],
             [client_quota.QuotaOp(op.key, None if op.remove else op.value) for op in entry.ops])
            for entry in request.entries]
        results = self.controller.alter_client_quotas(alterations, request.validate_only)
        return AlterClientQuotasResponse(entries=[
            AlterClientQuotasResponse.EntryData(
                error_code=int(r.error.code) if r.error else 0, error_message=r.error.message if r.error else None,
                entity=[AlterClientQuotasResponse.EntityData(entity_type=t, entity_name=n) for t, n in r.entity])
            for r in results])


__all__ = ["ClientQuotaHandlers"]
