"""AlterPartitionReassignments (v0-v1) and ListPartitionReassignments (v0), on any broker (KIP-455).

Thin: the checks and the change are :mod:`tidelog.cluster.reassignment`'s, decided in the controller's
event queue (:meth:`~tidelog.server.partition_controller.PartitionController.reassign`). The accepted
reassignments are written to the metadata store (in a cluster, ZooKeeper's topic znodes, where the
controller picks them up and completes them); ListPartitionReassignments answers from the metadata
image every broker holds. ALTER on the cluster is needed to alter, DESCRIBE on the cluster to list
(else CLUSTER_AUTHORIZATION_FAILED, at the top and, for Alter, on every partition, as Kafka answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from tidelog.cluster.reassignment import ReassignmentRequest, ongoing
from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

_CLUSTER_REFUSED = "Cluster authorization failed."
#: (requests, allow_replication_factor_change) -> per request, None or why it was refused
Reassign = Callable[[Sequence[ReassignmentRequest], bool], Awaitable[list[KafkaError | None]]]


def alter_error_response(request: AlterPartitionReassignmentsRequest, code: ErrorCode,
                         message: str | None) -> AlterPartitionReassignmentsResponse:
    message = message or code.message
    R = AlterPartitionReassignmentsResponse
    return R(allow_replication_factor_change=request.allow_replication_factor_change, error_code=int(code),
             error_message=message, responses=[
                 R.ReassignableTopicResponse(name=t.name, partitions=[
                     R.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=int(code),
                                                     error_message=message) for p in t.partitions])
                 for t in request.topics])


def list_error_response(request: ListPartitionReassignmentsRequest, code: ErrorCode,
                        message: str | None) -> ListPartitionReassignmentsResponse:
    R = ListPartitionReassignmentsResponse
    return R(error_code=int(code), error_message=message or code.message, topics=[
        R.OngoingTopicReassignment(name=t.name, partitions=[
            R.OngoingPartitionReassignment(partition_index=i) for i in t.partition_indexes])
        for t in request.topics or []])


class ReassignmentHandlers:
    def __init__(self, store: MetadataStore, reassign: Reassign, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.store = store
        self.reassign = reassign
        self.authorizer = authorizer

    @handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, alter_error_response)
    async def alter_partition_reassignments(self, ctx: RequestContext, request: AlterPartitionReassignmentsRequest,
                                      ) -> AlterPartitionReassignmentsResponse:
        if not self.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
            return alter_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED)
        asked = [ReassignmentRequest(t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas))
                 for t in request.topics for p in t.partitions]
        errors = iter(await self.reassign(asked, request.allow_replication_factor_change))
        R = AlterPartitionReassignmentsResponse
        responses = []
        for t in request.topics:
            partitions = []
            for p in t.partitions:
                e = next(errors)
                partitions.append(R.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=int(e.code) if e else 0,
                    error_message=e.message if e else None))
            responses.append(R.ReassignableTopicResponse(name=t.name, partitions=partitions))
        return R(allow_replication_factor_change=request.allow_replication_factor_change, error_code=0,
                 error_message=None, responses=responses)

    @handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, list_error_response)
    def list_partition_reassignments(self, ctx: RequestContext, request: ListPartitionReassignmentsRequest,
                                     ) -> ListPartitionReassignmentsResponse:
        if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return list_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED)
        wanted = (None if request.topics is None
                  else [(t.name, i) for t in request.topics for i in t.partition_indexes])
        by_topic: dict[str, list] = {}
        R = ListPartitionReassignmentsResponse
        for name, p in ongoing(self.store.image, wanted):
            by_topic.setdefault(name, []).append(R.OngoingPartitionReassignment(
                partition_index=p.partition, replicas=list(p.replicas), adding_replicas=list(p.adding_replicas),
                removing_replicas=list(p.removing_replicas)))
        return R(error_code=0, error_message=None,
                 topics=[R.OngoingTopicReassignment(name=n, partitions=ps) for n, ps in by_topic.items()])


__all__ = ["ReassignmentHandlers"]
