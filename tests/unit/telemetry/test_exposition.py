"""What clients pushed, in Prometheus' text format: one family per metric, labelled per client."""

from __future__ import annotations

import uuid

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from tidelog.telemetry.otlp import decode
from tidelog.telemetry.pushed import PushedMetrics
from tidelog.web.metrics import client_telemetry_metrics

from .otlp_payloads import CUMULATIVE, counter, gauge, payload


class _Collector:
    def __init__(self, pushed: PushedMetrics) -> None:
        self.pushed = pushed

    def collect(self):
        return client_telemetry_metrics(self.pushed)


def _scrape(pushed: PushedMetrics) -> dict[str, list]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(pushed))
    text = generate_latest(registry).decode()
    return {f.name: [(s.name, s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def test_two_clients_share_a_family_each_with_its_labels() -> None:
    now = [1000]
    pushed = PushedMetrics(lambda: now[0])
    a, b = uuid.uuid4(), uuid.uuid4()
    pushed.record(a, "orders", "librdkafka/2.12.0", "127.0.0.1:5000", decode(0, payload(
        gauge("org.apache.kafka.producer.record.queue.time.avg", 2.5),
        counter("org.apache.kafka.producer.record.send.total", 7, CUMULATIVE, topic="t1")), 1 << 20), 60_000)
    pushed.record(b, "billing", "", "127.0.0.1:5001", decode(0, payload(
        gauge("org.apache.kafka.producer.record.queue.time.avg", 4.0), gauge("tidelog.connections", 9.0)),
        1 << 20), 60_000)
    families = _scrape(pushed)
    queue = families["org_apache_kafka_producer_record_queue_time_avg"]
    assert sorted((s[1]["client_id"], s[1]["client_instance_id"], s[2]) for s in queue) == sorted(
        [("orders", str(a), 2.5), ("billing", str(b), 4.0)])
    (sent,) = families["org_apache_kafka_producer_record_send"]
    assert sent[0] == "org_apache_kafka_producer_record_send_total"
    assert sent[1] == {"client_id": "orders", "client_instance_id": str(a), "topic": "t1"} and sent[2] == 7
    assert "tidelog_connections" not in families  # a client cannot take the broker's own names
    pushes = {s[1]["client_id"]: s[2] for s in families["tidelog_client_telemetry_pushes"]}
    assert pushes == {"orders": 1, "billing": 1}
    now[0] += 60_000  # both gone: their series go too
    assert "org_apache_kafka_producer_record_queue_time_avg" not in _scrape(pushed)
