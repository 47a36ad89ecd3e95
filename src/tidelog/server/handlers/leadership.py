"""ControlledShutdown and ElectLeaders: moving partition leadership on request
(:class:`~tidelog.server.partition_controller.PartitionController` decides, in the controller's queue).

* ControlledShutdown (v0-v3, cluster mode only; Kafka's ZooKeeper-era brokers served it, KRaft ones
  do not): a broker about to stop asks the controller to move its leaderships away; the answer lists
  the partitions it still leads. Needs CLUSTER_ACTION on the cluster (Kafka's rule for broker-to-broker
  requests). The broker epoch (v2+) is not checked: Tidelog does not track broker epochs.
* ElectLeaders (v0-v2): needs ALTER on the cluster; otherwise every asked partition answers
  CLUSTER_AUTHORIZATION_FAILED, as does the top-level error (v1+). v0 has no election type
  (preferred). An unknown election type is INVALID_REQUEST. A null topic list means every partition,
  and then the partitions that need no election are left out of the answer (Kafka's rule).
"""

from __future__ import annotations

from collections import defaultdict

from tidelog.cluster.leader_election import ElectionType
from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.partition_controller import PartitionController

Remaining = ControlledShutdownResponse.RemainingPartition
ElectionResult = ElectLeadersResponse.ReplicaElectionResult
PartitionResult = ElectLeadersResponse.PartitionResult


class ControlledShutdownHandler:
    def __init__(self, leadership: PartitionController, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.leadership = leadership
        self.authorizer = authorizer

    @handles(ApiKey.CONTROLLED_SHUTDOWN, 0, 3)
    async def handle_controlled_shutdown(self, ctx: RequestContext,
                                         request: ControlledShutdownRequest) -> ControlledShutdownResponse:
        if not self.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            return ControlledShutdownResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        error, remaining = await self.leadership.controlled_shutdown(request.broker_id)
        return ControlledShutdownResponse(
            error_code=int(error),
            remaining_partitions=[Remaining(topic_name=t, partition_index=p) for t, p in remaining])


class ElectLeadersHandler:
    def __init__(self, leadership: PartitionController, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.leadership = leadership
        self.authorizer = authorizer

    @handles(ApiKey.ELECT_LEADERS, 0, 2)
    async def handle_elect_leaders(self, ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
        asked = (None if request.topic_partitions is None else
                 [(t.topic, p) for t in request.topic_partitions for p in t.partitions])
        if not self.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return _response(code, {key: (code, None) for key in asked or []})
        try:
            election_type = ElectionType(request.election_type if ctx.api_version >= 1 else 0)
        except ValueError:
            code = ErrorCode.INVALID_REQUEST
            return _response(code, {key: (code, f"Unknown election type {request.election_type}")
                                    for key in asked or []})
        outcomes = await self.leadership.elect_leaders(election_type, asked, request.timeout_ms)
        return _response(ErrorCode.NONE, {key: (o.error, o.message) for key, o in outcomes.items()})


def _response(code: ErrorCode, results: dict[tuple[str, int], tuple[ErrorCode, str | None]]) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = defaultdict(list)
    for (topic, partition), (error, message) in results.items():
        by_topic[topic].append(PartitionResult(partition_id=partition, error_code=int(error),
                                               error_message=None if error == ErrorCode.NONE else message))
    return ElectLeadersResponse(error_code=int(code), replica_election_results=[
        ElectionResult(topic=topic, partition_result=parts) for topic, parts in by_topic.items()])


__all__ = ["ControlledShutdownHandler", "ElectLeadersHandler"]
