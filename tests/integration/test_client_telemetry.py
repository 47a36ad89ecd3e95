"""Client telemetry (KIP-714) with real clients: an operator subscribes (a CLIENT_METRICS config resource),
librdkafka pushes, and what it pushed shows on /metrics labelled by client id and instance id; a
client no subscription matches gets no metrics and pushes nothing; an oversized push is refused.
Subscriptions survive a restart; the APIs are advertised only with telemetry.enable."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer

from tests.integration.kafka_io import wait_for
from tests.integration.test_metrics import scrape
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    DescribeConfigsRequest,
    GetTelemetrySubscriptionsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
    PushTelemetryRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("telemetry")]

BROKER_OVERRIDES = {"telemetry.enable": "true", "telemetry.max.bytes": "4096"}
CLIENT_METRICS, SET, DELETE = 16, 0, 1
GET_TELEMETRY, PUSH_TELEMETRY, LIST_CONFIG_RESOURCES = 71, 72, 74


def subscribe(bootstrap: str, name: str, **configs: str | None) -> tuple[int, str | None]:
    R = IncrementalAlterConfigsRequest
    with WireClient.connect(bootstrap) as c:
        (r,) = c.request(R(resources=[R.AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name=name, configs=[
            R.AlterableConfig(name=k.replace("_", "."), config_operation=DELETE if v is None else SET, value=v)
            for k, v in configs.items()])]), 1).responses
    return r.error_code, r.error_message


def console_get(broker: BrokerProcess, path: str) -> dict:
    assert broker.http_url is not None
    with urllib.request.urlopen(broker.http_url + "api/v1" + path, timeout=10) as r:
        return json.loads(r.read())


def client_series(broker: BrokerProcess, client_id: str) -> dict[str, float]:
    return {name: v for (name, labels), v in scrape(broker).items()
            if ("client_id", client_id) in labels and not name.startswith("tidelog_")}


def test_librdkafka_pushes_what_it_is_subscribed_to(broker: BrokerProcess) -> None:
    assert subscribe(broker.bootstrap, "producers", metrics="org.apache.kafka.producer.", interval_ms="1000",
                     match="client_id=telemetry-producer") == (0, None)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "telemetry-producer"})
    quiet = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "telemetry-quiet"})
    try:
        def pushed() -> bool:
            for p in (producer, quiet):
                p.produce("telemetry-topic", b"x" * 100)
                p.poll(0.2)
            return bool(client_series(broker, "telemetry-producer"))

        wait_for(pushed, 60, "the producer's telemetry on /metrics")
        series = client_series(broker, "telemetry-producer")
        assert all(name.startswith("org_apache_kafka_producer_") for name in series), sorted(series)
        # the console's page of the client id shows the same series
        overview = console_get(broker, "/client-metrics")
        assert overview["enabled"] is True
        assert [s["name"] for s in overview["subscriptions"]] == ["producers"]
        assert "telemetry-producer" in [c["client_id"] for c in overview["clients"]]
        (instance,) = console_get(broker, "/client-metrics/clients/telemetry-producer")["instances"]
        assert instance["software"].startswith("confluent-kafka-python/")  # from its ApiVersions
        assert all(s["name"].startswith("org.apache.kafka.producer.") for s in instance["series"])
        for p in (producer, quiet):
            assert p.flush(30) == 0
        # the unsubscribed producer works, and pushed nothing
        assert client_series(broker, "telemetry-quiet") == {}
    finally:
        producer.flush(5)
        quiet.flush(5)


def test_unsubscribed_client_gets_an_empty_list_and_oversized_push_is_refused(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap, client_id="wire-telemetry") as c:
        s = c.request(GetTelemetrySubscriptionsRequest(), 0)
        assert s.error_code == 0 and s.requested_metrics == [] and s.push_interval_ms == 300_000
        assert s.telemetry_max_bytes == 4096 and s.delta_temporality is True
        assert s.accepted_compression_types == [4, 3, 1, 2]
        again = c.request(GetTelemetrySubscriptionsRequest(client_instance_id=s.client_instance_id), 0)
        assert again.error_code == 89  # THROTTLING_QUOTA_EXCEEDED: before the push interval
        big = c.request(PushTelemetryRequest(client_instance_id=s.client_instance_id,
                                             subscription_id=s.subscription_id, metrics=b"\0" * 5000), 0)
        assert big.error_code == 118  # TELEMETRY_TOO_LARGE
        stale = c.request(PushTelemetryRequest(client_instance_id=s.client_instance_id,
                                               subscription_id=s.subscription_id + 1), 0)
        assert stale.error_code in (89, 117)
        zero = c.request(PushTelemetryRequest(client_instance_id=uuid.UUID(int=0)), 0)
        assert zero.error_code == 42  # INVALID_REQUEST


def test_subscriptions_are_described_listed_and_kept_across_a_restart(fresh_broker: BrokerProcess) -> None:
    broker = fresh_broker
    assert subscribe(broker.bootstrap, "kept", metrics="org.apache.kafka.consumer.", interval_ms="60000") == (0, None)
    assert subscribe(broker.bootstrap, "bad", interval_ms="5") == (42, "Invalid value 5 for interval.ms, interval "
                                                                      "must be between 100 and 3600000 (1 hour)")
    assert subscribe(broker.bootstrap, "bad", match="colour=red")[0] == 40
    broker.stop()
    broker.start()
    D = DescribeConfigsRequest
    with WireClient.connect(broker.bootstrap) as c:
        listed = c.request(ListConfigResourcesRequest(), 0)
        assert [r.resource_name for r in listed.config_resources] == ["kept"]
        (result,) = c.request(D(resources=[D.DescribeConfigsResource(
            resource_type=CLIENT_METRICS, resource_name="kept", configuration_keys=None)]), 4).results
        assert result.error_code == 0
        assert {e.name: (e.value, e.config_source) for e in result.configs} == {
            "metrics": ("org.apache.kafka.consumer.", 7), "interval.ms": ("60000", 7), "match": ("", 5)}
        # fresh_broker runs with the defaults: telemetry.enable is off, the APIs are not advertised
        keys = {k.api_key for k in c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).api_keys}
        assert GET_TELEMETRY not in keys and PUSH_TELEMETRY not in keys and LIST_CONFIG_RESOURCES in keys
    assert subscribe(broker.bootstrap, "kept", metrics=None, interval_ms=None) == (0, None)
    with WireClient.connect(broker.bootstrap) as c:
        assert c.request(ListConfigResourcesRequest(), 0).config_resources == []


def test_the_apis_are_advertised_with_telemetry_enable(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as c:
        versions = {k.api_key: (k.min_version, k.max_version) for k in c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).api_keys}
    assert versions[GET_TELEMETRY] == (0, 0) and versions[PUSH_TELEMETRY] == (0, 0)
    assert versions[LIST_CONFIG_RESOURCES] == (0, 1)


def tidelog(b: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args, "--bootstrap-server", b.bootstrap],
                          capture_output=True, text=True, timeout=60)


def test_the_client_metrics_cli(broker: BrokerProcess) -> None:
    done = tidelog(broker, "client-metrics", "alter", "--name", "cli-sub", "--metrics", "org.apache.kafka.consumer.",
                   "--interval", "20000", "--match", "client_id=cli-.*")
    assert done.returncode == 0 and "Altered client metrics config for cli-sub." in done.stdout, done.stderr
    assert "cli-sub" in tidelog(broker, "client-metrics", "list").stdout.split()
    described = tidelog(broker, "client-metrics", "describe", "--name", "cli-sub").stdout.splitlines()
    assert described == ["Client metrics configs for cli-sub are:", "  interval.ms=20000", "  match=client_id=cli-.*",
                         "  metrics=org.apache.kafka.consumer."]
    bad = tidelog(broker, "client-metrics", "alter", "--name", "cli-sub", "--interval", "99")
    assert bad.returncode == 1 and "INVALID_REQUEST" in bad.stderr
    assert tidelog(broker, "client-metrics", "delete", "--name", "cli-sub").returncode == 0
    assert "cli-sub" not in tidelog(broker, "client-metrics", "list").stdout.split()
