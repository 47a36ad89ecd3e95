"""Cluster admin APIs against a real broker: DescribeCluster, authorized operations through Metadata and
DescribeLogDirs, through confluent-kafka's AdminClient, kafka-python's KafkaAdminClient and a wire client
for the versions and fields the libraries do not expose.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient
from kafka.admin import KafkaAdminClient

from tests.integration.kafka_io import produce
from tidelog.protocol.messages import DescribeClusterRequest, DescribeLogDirsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("admin_cluster")]


def test_describe_cluster(admin: AdminClient, wire: WireClient) -> None:
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    metadata = admin.list_topics(timeout=10)
    assert cluster.cluster_id == metadata.cluster_id
    assert cluster.controller.id == 0 and [n.id for n in cluster.nodes] == [0]
    asked = wire.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 0)
    assert asked.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    plain = wire.request(DescribeClusterRequest(include_cluster_authorized_operations=False), 2)
    assert plain.error_code == 0 and plain.cluster_authorized_operations == -(2**31) and plain.endpoint_type == 1
    controller = wire.request(DescribeClusterRequest(endpoint_type=2), 1)
    assert controller.error_code == 114  # MISMATCHED_ENDPOINT_TYPE


def test_authorized_operations_through_metadata(admin: AdminClient, broker: BrokerProcess) -> None:
    """confluent-kafka asks Metadata v8-10 for authorized operations (no authorizer: all supported ones)."""
    produce(broker, "ops-topic", [b"x"], partition=0)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert AclOperation.ALTER_CONFIGS in cluster.authorized_operations
    assert AclOperation.READ not in cluster.authorized_operations  # not a cluster operation
    topic = admin.describe_topics(TopicCollection(["ops-topic"]), include_authorized_operations=True)
    ops = topic["ops-topic"].result(10).authorized_operations
    assert {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE} <= set(ops)
    assert AclOperation.CLUSTER_ACTION not in ops
    plain = admin.describe_cluster().result(10)
    assert not plain.authorized_operations  # not asked for: omitted


def test_kafka_python_cluster_and_log_dirs(kp_admin: KafkaAdminClient, broker: BrokerProcess) -> None:
    cluster = kp_admin.describe_cluster()
    assert cluster["controller_id"] == 0 and [b["broker_id"] for b in cluster["brokers"]] == [0]
    assert "DESCRIBE_CONFIGS" in cluster["authorized_operations"] and not cluster["brokers"][0]["is_fenced"]
    kp_admin.create_topics({"kp-dirs": {"num_partitions": 2, "replication_factor": 1}})
    produce(broker, "kp-dirs", [b"x" * 100] * 5, partition=1)
    (answer,) = kp_admin.describe_log_dirs()
    (log_dir,) = answer["log_dirs"]
    assert log_dir["error_code"] == 0 and Path(log_dir["log_dir"]).is_absolute()
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    parts = {p["partition_index"]: p for t in log_dir["topics"] if t["name"] == "kp-dirs" for p in t["partitions"]}
    assert set(parts) == {0, 1} and parts[1]["partition_size"] > 500 and parts[0]["partition_size"] == 0
    (only,) = kp_admin.describe_log_dirs({"kp-dirs": [1]})
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in only["log_dirs"][0]["topics"]] == \
        [("kp-dirs", [1])]


def test_describe_log_dirs_raw_versions(wire: WireClient) -> None:
    v0 = wire.request(DescribeLogDirsRequest(topics=None), 0)
    v4 = wire.request(DescribeLogDirsRequest(topics=[]), 4)
    assert len(v0.results) == len(v4.results) == 1
    assert v4.error_code == 0 and v4.results[0].topics == [] and v4.results[0].total_bytes > 0
