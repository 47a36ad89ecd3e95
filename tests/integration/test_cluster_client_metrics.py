"""Client-metrics subscriptions (KIP-714) in cluster mode: kept in ZooKeeper (/config/client-metrics/<name>,
as Kafka's ZooKeeper mode kept them), so every broker sees a subscription made through another, and it
survives a broker's restart; a client that asks any broker gets its subscription from it."""

from __future__ import annotations

import json

import pytest

from tests.integration.kafka_io import wait_for
from tidelog.protocol.messages import (
    DescribeConfigsRequest,
    GetTelemetrySubscriptionsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster_client_metrics")]

CLUSTER = {"brokers": 2, "overrides": {"telemetry.enable": "true"}}
CLIENT_METRICS, SET = 16, 0


def _listed(bootstrap: str) -> list[str]:
    with WireClient.connect(bootstrap) as c:
        return [r.resource_name for r in c.request(ListConfigResourcesRequest(), 0).config_resources]


def test_a_subscription_reaches_every_broker_and_survives_a_restart(cluster: LocalCluster) -> None:
    R = IncrementalAlterConfigsRequest
    with WireClient.connect(cluster.bootstrap(1)) as c:
        (r,) = c.request(R(resources=[R.AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name="zk-sub",
                                                             configs=[
            R.AlterableConfig(name="metrics", config_operation=SET, value="org.apache.kafka.producer."),
            R.AlterableConfig(name="interval.ms", config_operation=SET, value="15000")])]), 1).responses
        assert r.error_code == 0, r.error_message
    wait_for(lambda: _listed(cluster.bootstrap(2)) == ["zk-sub"], 30, "broker 2 to list the subscription")
    raw, _ = cluster.zk.get("/config/client-metrics/zk-sub")
    assert json.loads(raw)["config"] == {"metrics": "org.apache.kafka.producer.", "interval.ms": "15000"}
    with WireClient.connect(cluster.bootstrap(2)) as c:
        s = c.request(GetTelemetrySubscriptionsRequest(), 0)
    assert (s.error_code, s.requested_metrics, s.push_interval_ms) == (0, ["org.apache.kafka.producer."], 15000)
    cluster.restart(2)
    wait_for(lambda: _listed(cluster.bootstrap(2)) == ["zk-sub"], 60, "the restarted broker to list it")
    D = DescribeConfigsRequest
    with WireClient.connect(cluster.bootstrap(2)) as c:
        (result,) = c.request(D(resources=[D.DescribeConfigsResource(
            resource_type=CLIENT_METRICS, resource_name="zk-sub", configuration_keys=["interval.ms"])]), 4).results
    assert [(e.name, e.value) for e in result.configs] == [("interval.ms", "15000")]
