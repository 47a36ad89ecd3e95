"""GET /metrics of a real broker, moved by real clients (confluent-kafka, kafka-python): traffic and
request counters, consumer lag, transactions, purgatory, connections; the exposition checked by
promtool; odd requests to the endpoint; the Grafana dashboard's expressions against what the broker
exports."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.kafka_io import create_topic, kp_consume, produce, wait_for
from tests.toolchain import require_command
from tidelog.protocol.messages import FetchRequest, MetadataRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("metrics")]

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "tidelog.json"


def scrape_text(broker: BrokerProcess, query: str = "", headers: dict[str, str] | None = None) -> str:
    assert broker.http_url is not None
    req = urllib.request.Request(broker.http_url + "metrics" + query, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
        return r.read().decode()


def scrape(broker: BrokerProcess) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted label pairs) -> value."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(scrape_text(broker)) for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def requests(samples: dict, request: str) -> float:
    """``tidelog_requests_total`` of one API, summed over its request versions."""
    return sum(v for (name, labels), v in samples.items()
               if name == "tidelog_requests_total" and ("request", request) in labels)


def tp(topic: str, partition: int) -> dict[str, str]:
    return {"topic": topic, "partition": str(partition)}


def test_produce_and_consume_move_the_traffic_counters_by_the_records_sent(broker):
    topic = "metrics-traffic"
    create_topic(broker, topic, 2)
    before = scrape(broker)
    produce(broker, topic, [b"a" * 100] * 30, partition=0)
    produce(broker, topic, [b"b" * 100] * 20, partition=1)
    after = scrape(broker)
    for partition, n in ((0, 30), (1, 20)):
        assert value(after, "tidelog_partition_records_in_total", **tp(topic, partition)) == n
        size = value(after, "tidelog_log_size_bytes", **tp(topic, partition))
        # bytes in are the produce requests' record batches, stored as they came (no recompression)
        assert value(after, "tidelog_partition_bytes_in_total", **tp(topic, partition)) == size > 100 * n
        assert value(after, "tidelog_log_end_offset", **tp(topic, partition)) == n
        assert value(after, "tidelog_log_high_watermark", **tp(topic, partition)) == n
    assert value(after, "tidelog_topic_records_in_total", topic=topic) == 50
    assert value(after, "tidelog_records_in_total") - value(before, "tidelog_records_in_total") == 50
    produced = requests(after, "Produce") - requests(before, "Produce")
    assert produced >= 2  # one producer per call, at least one request each
    assert value(after, "tidelog_request_total_time_seconds_count", request="Produce") == requests(after, "Produce")
    assert value(after, "tidelog_request_total_time_seconds_bucket", request="Produce", le="+Inf") == requests(
        after, "Produce")

    records = kp_consume(broker, topic, [0, 1], 50)
    assert len(records) == 50
    read = scrape(broker)
    for partition, n in ((0, 30), (1, 20)):
        assert value(read, "tidelog_partition_records_out_total", **tp(topic, partition)) == n
        assert value(read, "tidelog_partition_bytes_out_total", **tp(topic, partition)) == value(
            read, "tidelog_log_size_bytes", **tp(topic, partition))
    assert value(read, "tidelog_topic_bytes_out_total", topic=topic) == sum(
        value(read, "tidelog_log_size_bytes", **tp(topic, p)) for p in (0, 1))
    fetches = requests(read, "Fetch") - requests(after, "Fetch")
    assert fetches >= 1


def test_consumer_lag_follows_commits_and_new_records(broker):
    topic, group = "metrics-lag", "metrics-lag-group"
    create_topic(broker, topic, 1)
    produce(broker, topic, [b"x"] * 50, partition=0)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 10)], asynchronous=False)
        got = scrape(broker)
        labels = {"group": group, **tp(topic, 0)}
        assert value(got, "tidelog_consumer_group_committed_offset", **labels) == 10
        assert value(got, "tidelog_consumer_group_lag", **labels) == 40
        assert value(got, "tidelog_consumer_group_total_lag", group=group) == 40
        assert value(got, "tidelog_consumer_groups", type="classic", state="Empty") >= 1

        produce(broker, topic, [b"y"] * 5, partition=0)
        assert value(scrape(broker), "tidelog_consumer_group_lag", **labels) == 45
        c.commit(offsets=[TopicPartition(topic, 0, 55)], asynchronous=False)
        assert value(scrape(broker), "tidelog_consumer_group_lag", **labels) == 0
    finally:
        c.close()


def test_a_consuming_group_shows_as_stable(broker):
    topic, group = "metrics-stable", "metrics-stable-group"
    create_topic(broker, topic, 1)
    produce(broker, topic, [b"x"] * 3, partition=0)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        seen = []
        wait_for(lambda: len(seen) >= 3, 30, "the group's consumer to read 3 records",
                 poll=lambda: seen.extend(m for m in [c.poll(0.2)] if m is not None and not m.error()))
        assert value(scrape(broker), "tidelog_consumer_groups", type="classic", state="Stable") >= 1
    finally:
        c.close()


def test_transactions_are_counted_by_state(broker):
    topic = "metrics-txn"
    create_topic(broker, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "metrics-txn-1"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce(topic, b"in a transaction", partition=0)
    p.flush(15)
    assert value(scrape(broker), "tidelog_transactions", state="Ongoing") == 1
    p.commit_transaction(15)
    wait_for(lambda: value(scrape(broker), "tidelog_transactions", state="Ongoing") == 0, 15,
             "the transaction to leave Ongoing")
    assert value(scrape(broker), "tidelog_transactions", state="CompleteCommit") >= 1


def test_long_poll_fetch_waits_in_the_purgatory_and_counts_as_remote_time(broker):
    topic = "metrics-purgatory"
    create_topic(broker, topic, 1)
    before = scrape(broker)
    request = FetchRequest(replica_id=-1, max_wait_ms=4000, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    with WireClient.connect(broker.bootstrap) as client:
        done = threading.Event()
        worker = threading.Thread(target=lambda: (client.request(request, 11), done.set()))
        worker.start()
        wait_for(lambda: value(scrape(broker), "tidelog_purgatory_delayed_operations", operation="Fetch") == 1, 3.5,
                 "the fetch to wait in the purgatory")
        assert value(scrape(broker), "tidelog_purgatory_size", operation="Fetch") == 1
        worker.join(10)
        assert done.is_set()
    after = scrape(broker)
    assert value(after, "tidelog_purgatory_delayed_operations", operation="Fetch") == 0
    remote = (value(after, "tidelog_request_remote_time_seconds_sum", request="Fetch")
              - value(before, "tidelog_request_remote_time_seconds_sum", request="Fetch"))
    assert remote >= 3.9  # waited for max_wait_ms
    local = (value(after, "tidelog_request_local_time_seconds_sum", request="Fetch")
             - value(before, "tidelog_request_local_time_seconds_sum", request="Fetch"))
    assert local < 1.0


def test_a_response_behind_a_long_poll_on_its_connection_counts_response_queue_time(broker):
    topic = "metrics-response-queue"
    create_topic(broker, topic, 1)
    before = scrape(broker)
    fetch = FetchRequest(replica_id=-1, max_wait_ms=1000, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    with WireClient.connect(broker.bootstrap) as client:
        client.send(fetch, 11)
        client.send(MetadataRequest(topics=[]), 9)  # answered at once, but leaves after the fetch
        client.receive()
        client.receive()
    after = scrape(broker)

    def moved(metric: str, request: str) -> float:
        return value(after, metric, request=request) - value(before, metric, request=request)

    assert moved("tidelog_response_queue_time_seconds_count", "Metadata") == 1
    assert moved("tidelog_response_queue_time_seconds_sum", "Metadata") >= 0.9
    assert moved("tidelog_request_total_time_seconds_sum", "Metadata") >= 0.9
    assert moved("tidelog_request_local_time_seconds_sum", "Metadata") < 0.5
    assert moved("tidelog_request_remote_time_seconds_sum", "Fetch") >= 0.9
    assert moved("tidelog_response_queue_time_seconds_sum", "Fetch") < 0.5


def test_connections_are_counted_per_listener(broker):
    def count() -> float:
        return value(scrape(broker), "tidelog_connections", listener="PLAINTEXT")

    base = count()
    clients = [WireClient.connect(broker.bootstrap) for _ in range(3)]
    try:
        wait_for(lambda: count() >= base + 3, 5, "three more connections")
        opened = count()
    finally:
        for c in clients:
            c.close()
    wait_for(lambda: count() <= opened - 3, 5, "the three connections to close")


def test_kafka_python_producer_requests_are_timed(broker):
    topic = "metrics-kafka-python"
    create_topic(broker, topic, 1)
    before = scrape(broker)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0)
    try:
        for i in range(5):
            p.send(topic, f"r{i}".encode(), partition=0).get(timeout=10)
    finally:
        p.close()
    after = scrape(broker)
    assert value(after, "tidelog_partition_records_in_total", **tp(topic, 0)) == 5
    sent = requests(after, "Produce") - requests(before, "Produce")
    assert sent == 5  # each send waited for its acknowledgement: one request per record
    for metric in ("tidelog_request_total_time_seconds", "tidelog_request_local_time_seconds",
                   "tidelog_response_send_time_seconds"):
        moved = value(after, metric + "_count", request="Produce") - value(before, metric + "_count",
                                                                            request="Produce")
        assert moved == 5, metric


def test_promtool_accepts_a_scrape_with_data_in_it(broker):
    require_command("promtool", "promtool")
    topic = "metrics-promtool"
    create_topic(broker, topic, 1)
    produce(broker, topic, [b"z" * 10] * 10, partition=0)
    kp_consume(broker, topic, [0], 10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "metrics-promtool-group"})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    finally:
        c.close()
    text = scrape_text(broker)
    for needed in ("tidelog_partition_records_out_total{", "tidelog_consumer_group_lag{",
                   'tidelog_request_total_time_seconds_bucket{le="+Inf",request="Produce"}'):
        assert needed in text
    done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_head_query_strings_openmetrics_and_other_methods(broker):
    assert broker.http_url is not None
    url = broker.http_url + "metrics"
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        assert r.read() == b""
    text = scrape_text(broker, "?name[]=x&debug=1&%ff=%00&" + "a" * 2000)
    assert "\ntidelog_records_in_total " in text
    om = scrape_text(broker, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert om.endswith("# EOF\n")
    for method in ("POST", "DELETE"):
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(urllib.request.Request(url, data=b"x", method=method), timeout=10)
        assert info.value.code == 405
    assert "\ntidelog_records_in_total " in scrape_text(broker)  # still serving


def test_every_grafana_expression_names_a_metric_the_broker_exports(broker):
    dashboard = json.loads(DASHBOARD.read_text())
    exported = set()
    for family in text_string_to_metric_families(scrape_text(broker)):
        exported.add(family.name)
        exported.update(s.name for s in family.samples)
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 10
    for expr in exprs:
        names = set(re.findall(r"\btidelog_[a-z_]+\b", expr))
        assert names, f"no tidelog metric in {expr!r}"
        assert names <= exported, f"{expr!r} names {sorted(names - exported)}, not exported"
