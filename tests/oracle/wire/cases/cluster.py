"""ApiVersions, DescribeCluster, DescribeLogDirs, FindCoordinator and ElectLeaders."""

from __future__ import annotations

from tests.oracle.wire.program import Program
from tests.oracle.wire.setup import batch, create_topics, produce
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    DescribeLogDirsRequest,
    ElectLeadersRequest,
    FindCoordinatorRequest,
)

API_VERSIONS = ApiVersionsRequest.API_KEY
LOG_DIRS_TOPIC = "diff-logdirs"
ELECT_TOPIC = "diff-elect"


def add(program: Program) -> None:
    _api_versions(program)
    _describe_cluster(program)
    _describe_log_dirs(program)
    _find_coordinator(program)
    _elect_leaders(program)


def _api_versions(program: Program) -> None:
    for v in program.versions(API_VERSIONS):
        program.request("client-named", v, ApiVersionsRequest(client_software_name="tidelog-diff",
                                                             client_software_version="1.0.0-rc.1"))
        if v >= 3:
            for case, name, version in (("invalid-software-name", "bad name!", "1.0"),
                                        ("invalid-software-version", "tidelog-diff", "1.0 beta"),
                                        ("empty-software-version", "tidelog-diff", ""),
                                        ("software-name-ends-with-dot", "tidelog.", "1.0"),
                                        ("software-name-with-dots-and-dashes", "a.b-c", "1-2.3")):
                program.request(case, v, ApiVersionsRequest(client_software_name=name,
                                                            client_software_version=version))
        if v >= 5:  # KIP-1242: the cluster and node the client means (both single-node brokers are node 0)
            for case, cluster_id, node_id in (("another-cluster", "not-this-cluster-id", 0),
                                              ("another-node", "not-this-cluster-id", 7),
                                              ("cluster-id-without-node-id", "not-this-cluster-id", -1),
                                              ("node-id-without-cluster-id", None, 0),
                                              ("negative-node-id", None, -5)):
                program.request(case, v, ApiVersionsRequest(client_software_name="tidelog-diff",
                                                            client_software_version="1", cluster_id=cluster_id,
                                                            node_id=node_id))


def _describe_cluster(program: Program) -> None:
    api = DescribeClusterRequest.API_KEY
    program.each_version(api, "plain", lambda v: DescribeClusterRequest(endpoint_type=1))
    program.each_version(api, "authorized-operations", lambda v: DescribeClusterRequest(
        include_cluster_authorized_operations=True, endpoint_type=1))
    for v in program.versions(api):
        if v >= 1:
            program.request("controller-endpoints", v, DescribeClusterRequest(endpoint_type=2))
            program.request("unknown-endpoint-type", v, DescribeClusterRequest(endpoint_type=7))
        if v >= 2:
            program.request("fenced-brokers", v, DescribeClusterRequest(endpoint_type=1, include_fenced_brokers=True))


def _describe_log_dirs(program: Program) -> None:
    api = DescribeLogDirsRequest.API_KEY
    create_topics(program, "logdirs", {LOG_DIRS_TOPIC: (2, {})})
    produce(program, "logdirs", LOG_DIRS_TOPIC, 0, [batch(program.now_ms, [b"a" * 100, b"b" * 50])])
    Topic = DescribeLogDirsRequest.DescribableLogDirTopic
    program.each_version(api, "topic", lambda v: DescribeLogDirsRequest(topics=[Topic(topic=LOG_DIRS_TOPIC,
                                                                                      partitions=[0, 1])]))
    program.each_version(api, "unknown-partition", lambda v: DescribeLogDirsRequest(
        topics=[Topic(topic=LOG_DIRS_TOPIC, partitions=[0, 9])]))
    program.each_version(api, "unknown-topic", lambda v: DescribeLogDirsRequest(
        topics=[Topic(topic="diff-no-such-topic", partitions=[0])]))
    program.each_version(api, "no-topics", lambda v: DescribeLogDirsRequest(topics=[]))


def _find_coordinator(program: Program) -> None:
    api = FindCoordinatorRequest.API_KEY
    for v in program.versions(api):
        batched = v >= 4

        def request(key: str, key_type: int = 0, *, batched=batched) -> FindCoordinatorRequest:
            if batched:
                return FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
            return FindCoordinatorRequest(key=key, key_type=key_type)

        # The first request for a group creates __consumer_offsets; its answer depends on how long
        # loading takes (Kafka: COORDINATOR_NOT_AVAILABLE until loaded), so the set-up waits first.
        if v == program.versions(api)[0]:
            from tests.oracle.wire.setup import wait_for_coordinator
            wait_for_coordinator(program, "find-coordinator", "diff-fc-group")
        program.request("group", v, request("diff-fc-group"))
        program.request("empty-group-id", v, request(""))
        if v >= 1:
            program.request("unknown-key-type", v, request("diff-fc-group", 5))
        if batched:
            program.request("several-groups", v, FindCoordinatorRequest(
                key_type=0, coordinator_keys=["diff-fc-a", "diff-fc-b", ""]))
            program.request("no-keys", v, FindCoordinatorRequest(key_type=0, coordinator_keys=[]))


__all__ = ["add"]


def _elect_leaders(program: Program) -> None:
    """The deterministic answers of one broker: every partition is led by its preferred (only)
    replica, so nothing needs electing; unknown topics and partitions. (A null topic list is left
    out: KRaft's answer lists every topic, internal ones included, with no partitions.)"""
    api = ElectLeadersRequest.API_KEY
    create_topics(program, "elect", {ELECT_TOPIC: (2, {})})
    Topic = ElectLeadersRequest.TopicPartitions
    for election_type, name in ((0, "preferred"), (1, "unclean")):
        program.each_version(api, f"{name}-not-needed", lambda v, t=election_type: ElectLeadersRequest(
            election_type=t, topic_partitions=[Topic(topic=ELECT_TOPIC, partitions=[0, 1])], timeout_ms=10_000))
    program.each_version(api, "unknown-topic", lambda v: ElectLeadersRequest(
        topic_partitions=[Topic(topic="diff-no-such-topic", partitions=[0])], timeout_ms=10_000))
    program.each_version(api, "unknown-partition", lambda v: ElectLeadersRequest(
        topic_partitions=[Topic(topic=ELECT_TOPIC, partitions=[0, 7])], timeout_ms=10_000))
