"""DescribeCluster and DescribeLogDirs: who is in the cluster, and what each log directory holds.

DescribeCluster (Kafka's ``AuthHelper.computeDescribeClusterResponse``): a broker only answers the
BROKER endpoint type (1); CONTROLLER (2) -> MISMATCHED_ENDPOINT_TYPE and anything else ->
UNSUPPORTED_ENDPOINT_TYPE (both INVALID_REQUEST in v0, which has no endpoint type). When asked,
``cluster_authorized_operations`` is the bit set of the cluster operations the authorizer allows (all of
them without an authorizer; 0 without DESCRIBE on the cluster); when not asked it is -2147483648.
DescribeLogDirs needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED, no results). A single node is never fenced, so ``include_fenced_brokers`` changes nothing.

DescribeLogDirs (Kafka's ``ReplicaManager.describeLogDirs``): every log dir with its absolute path,
the partitions in it (all, or those the request lists; unknown ones are left out) with their size in
bytes, offset lag 0 (a leader's) and ``is_future_key`` false, and from v4 the file system's total and
usable bytes. A log dir that cannot be read answers KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from enum import IntEnum

from tidelog.cluster.store import MetadataStore
from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from tidelog.replica.local_logs import LocalLogs
from tidelog.security.acl import AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles


class EndpointType(IntEnum):
    UNKNOWN = 0
    BROKER = 1
    CONTROLLER = 2


LogDirResult = DescribeLogDirsResponse.DescribeLogDirsResult
LogDirTopic = DescribeLogDirsResponse.DescribeLogDirsTopic
LogDirPartition = DescribeLogDirsResponse.DescribeLogDirsPartition


class ClusterInfoHandlers:
    """DescribeCluster and DescribeLogDirs."""

    def __init__(self, store: MetadataStore, logs: LocalLogs, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.store = store
        self.logs = logs
        self.authorizer = authorizer

    @handles(ApiKey.DESCRIBE_CLUSTER, 0, 2)
    def handle_describe_cluster(self, ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
        v = ctx.api_version
        wanted = EndpointType.BROKER if v == 0 else request.endpoint_type
        if wanted != EndpointType.BROKER:
            if wanted == EndpointType.CONTROLLER:
                code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
                message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
            else:
                code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {wanted}"
            return DescribeClusterResponse(error_code=int(code), error_message=message)
        image = self.store.image
        ops = AUTHORIZED_OPERATIONS_OMITTED
        if request.include_cluster_authorized_operations:  # DESCRIBE on the cluster to see them, else 0
            auth = self.authorizer
            ops = (auth.authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                   if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) else 0)
        return DescribeClusterResponse(
            error_code=0,
            error_message=None,
            endpoint_type=int(EndpointType.BROKER),
            cluster_id=image.cluster_id,
            controller_id=image.controller_id if image.controller_id in image.brokers else -1,
            brokers=[
                DescribeClusterResponse.DescribeClusterBroker(broker_id=b.broker_id, host=host, port=port, rack=b.rack,
                                                              is_fenced=False)
                for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
                for host, port in [b.endpoint(ctx.listener_name)]
            ],
            cluster_authorized_operations=ops,
        )


    @handles(ApiKey.DESCRIBE_LOG_DIRS, 0, 5)  # v5: IsCordoned, false (no cordoned log dirs, KIP-1066)
    def handle_describe_log_dirs(self, ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
        if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return DescribeLogDirsResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), results=[])
        wanted = None if request.topics is None else [(t.topic, p) for t in request.topics for p in t.partitions]
        results = []
        for d in self.logs.describe_dirs(wanted):
            if d.error is not None:
                results.append(LogDirResult(error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), log_dir=d.path, topics=[]))
                continue
            topics = [
                LogDirTopic(name=name, partitions=[
                    LogDirPartition(partition_index=p, partition_size=size, offset_lag=0, is_future_key=False)
                    for p, size in sorted(sizes.items())])
                for name, sizes in sorted(d.partition_sizes.items())
            ]
            results.append(LogDirResult(error_code=0, log_dir=d.path, topics=topics, total_bytes=d.total_bytes,
                                        usable_bytes=d.usable_bytes))
        return DescribeLogDirsResponse(error_code=0, results=results)


__all__ = ["ClusterInfoHandlers", "EndpointType"]
