"""Client telemetry (KIP-714) against Kafka 4.4 itself: the same GetTelemetrySubscriptions and PushTelemetry
requests to a Kafka broker running a ClientTelemetry reporter (tidelog.oracle.TelemetrySink, which drops
what it gets; Kafka serves neither API without one) and to Tidelog with ``telemetry.enable=true``, answers
compared field by field, except what is random or hashed differently (client instance ids, subscription
ids: docs/compat.md "Client telemetry").

The push interval of the subscription is 1 s; steps that must come after it wait 1.2 s on both brokers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from tests.oracle.kafka import KafkaProcess
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    GetTelemetrySubscriptionsRequest,
    IncrementalAlterConfigsRequest,
    PushTelemetryRequest,
)
from tidelog.records.compression import CompressionType, compress
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("telemetry-oracle")]

SHARED = {"telemetry.max.bytes": "4096"}
CLIENT_METRICS, SET = 16, 0
INTERVAL_S = 1.2


@pytest.fixture(scope="module")
def brokers(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with KafkaProcess(tmp_path_factory.mktemp("kafka"), classpath=java_classpath,
                      overrides={**SHARED, "metric.reporters": "tidelog.oracle.TelemetrySink"}) as kafka, \
            BrokerProcess(tmp_path_factory.mktemp("tidelog"), overrides={**SHARED, "telemetry.enable": "true"}) as tl:
        yield {"kafka": kafka.bootstrap, "tidelog": tl.bootstrap}


def _subscribe(bootstrap: str) -> int:
    R = IncrementalAlterConfigsRequest
    with WireClient.connect(bootstrap) as c:
        (r,) = c.request(R(resources=[R.AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name="oracle-sub",
                                                             configs=[
            R.AlterableConfig(name="metrics", config_operation=SET, value="org.apache.kafka.producer."),
            R.AlterableConfig(name="interval.ms", config_operation=SET, value="1000"),
            R.AlterableConfig(name="match", config_operation=SET, value="client_id=oracle-subscribed")])]), 1).responses
    return r.error_code


def _subscription(s) -> tuple:
    return (s.error_code, s.throttle_time_ms, sorted(s.requested_metrics), s.push_interval_ms, s.telemetry_max_bytes,
            s.delta_temporality, list(s.accepted_compression_types), s.client_instance_id != uuid.UUID(int=0))


def _script(bootstrap: str) -> list[tuple]:
    """Every answer of one broker to the scripted conversation, minus its random ids."""
    out: list[tuple] = []
    with WireClient.connect(bootstrap, client_id="oracle-unsubscribed") as c:
        versions = {k.api_key: (k.min_version, k.max_version) for k in c.request(
            ApiVersionsRequest(client_software_name="oracle", client_software_version="1"), 3).api_keys}
        out.append(("versions", versions.get(71), versions.get(72)))
        s = c.request(GetTelemetrySubscriptionsRequest(), 0)
        out.append(("unsubscribed", *_subscription(s)))
        out.append(("asked-again", c.request(GetTelemetrySubscriptionsRequest(client_instance_id=s.client_instance_id),
                                             0).error_code))
        push = PushTelemetryRequest(client_instance_id=s.client_instance_id, subscription_id=s.subscription_id + 1)
        out.append(("stale-subscription", c.request(push, 0).error_code))
        out.append(("pushed-too-early", c.request(PushTelemetryRequest(
            client_instance_id=s.client_instance_id, subscription_id=s.subscription_id), 0).error_code))
        out.append(("zero-instance", c.request(PushTelemetryRequest(), 0).error_code))
    with WireClient.connect(bootstrap, client_id="oracle-subscribed") as c:
        s = c.request(GetTelemetrySubscriptionsRequest(), 0)
        out.append(("subscribed", *_subscription(s)))

        def push(**kw):
            body = dict(client_instance_id=s.client_instance_id, subscription_id=s.subscription_id) | kw
            return c.request(PushTelemetryRequest(**body), 0).error_code

        out.append(("first-push", push(compression_type=int(CompressionType.GZIP),
                                       metrics=compress(CompressionType.GZIP, b"\n\0"))))
        out.append(("again-at-once", push()))
        time.sleep(INTERVAL_S)
        out.append(("unknown-codec", push(compression_type=9)))
        time.sleep(INTERVAL_S)
        out.append(("too-large", push(metrics=b"\0" * 5000)))
        time.sleep(INTERVAL_S)
        out.append(("at-the-limit", push(metrics=b"")))
        out.append(("terminating-at-once", push(terminating=True)))
        out.append(("after-terminating", push()))
    return out


def test_telemetry_answers_as_kafka(brokers: dict[str, str]) -> None:
    assert _subscribe(brokers["kafka"]) == 0 and _subscribe(brokers["tidelog"]) == 0
    time.sleep(1)  # Kafka applies the subscription when its controller's record reaches the broker
    kafka, tidelog = _script(brokers["kafka"]), _script(brokers["tidelog"])
    assert tidelog == kafka
    # what the two agreed on is the conversation meant: the subscription applied, every refusal taken
    assert kafka[0] == ("versions", (0, 0), (0, 0))
    assert kafka[1] == ("unsubscribed", 0, 0, [], 300_000, 4096, True, [4, 3, 1, 2], True)
    assert kafka[6] == ("subscribed", 0, 0, ["org.apache.kafka.producer."], 1000, 4096, True, [4, 3, 1, 2], True)
    assert [step[1] for step in kafka[2:6]] == [89, 117, 89, 42]
    assert [step[1] for step in kafka[7:]] == [0, 89, 76, 118, 0, 0, 42]
