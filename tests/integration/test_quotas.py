"""Client quotas on a real broker: AlterClientQuotas / DescribeClientQuotas on the wire (every version),
persistence across a restart, throttling of real producers and consumers (confluent-kafka and
kafka-python) held within 10% over 30 s, and muting that keeps responses in order and other
connections served.

The rate tests run brokers with ``quota.window.num=2``: with Kafka's default 11 one-second samples, a
client sending as fast as it is let through is admitted in bursts of ~10 s' worth once every ~12 s
(tests/unit/server/test_quota_sensor.py models it), so a 30 s average swings between ~0.8 and ~1.15
times the quota depending on where the bursts fall; two samples make the same mechanism smooth enough
to measure in 30 s. The three 30 s runs are in their own xdist groups (about 35 s each, in parallel
under ``-n 2``); the rest of the module takes ~5 s.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from tests.integration.kafka_io import create_topic
from tidelog.protocol.messages import (
    AlterClientQuotasRequest,
    ApiVersionsRequest,
    DescribeClientQuotasRequest,
    MetadataRequest,
    ProduceRequest,
)
from tidelog.records.builder import build_batch
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

A, D = AlterClientQuotasRequest, DescribeClientQuotasRequest
RATE_OVERRIDES = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
RUN_S = 30.0
QUOTA = 200_000.0  # bytes/s
#: Requests well below quota x window: a request worth more than the whole measuring window empties the
#: sensor while its client waits, and the next one starts a fresh, padded window (docs/security.md).
BATCH_BYTES = 20_000


def alter(client: WireClient, entries, *, version: int = 1, validate_only: bool = False):
    request = A(validate_only=validate_only, entries=[
        A.EntryData(entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                    ops=[A.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()])
        for entity, ops in entries])
    return client.request(request, version)


def describe(client: WireClient, components=(), *, strict: bool = False, version: int = 1):
    response = client.request(D(components=[D.ComponentData(entity_type=t, match_type=m, match=n)
                                            for t, m, n in components], strict=strict), version)
    assert response.error_code == 0, response.error_message
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in response.entries}


def set_quota(broker: BrokerProcess, entity, ops) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        (entry,) = alter(client, [(entity, ops)]).entries
        assert entry.error_code == 0, entry.error_message


# ---------------------------------------------------------------------------------- admin APIs

@pytest.mark.xdist_group("quota-admin")
@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe(tmp_path, version):
    with BrokerProcess(tmp_path / "data") as broker, WireClient.connect(broker.bootstrap) as client:
        response = alter(client, [
            ([("user", "alice"), ("client-id", None)], {"producer_byte_rate": 1024.0, "request_percentage": 12.5}),
            ([("client-id", None)], {"consumer_byte_rate": 4096.0}),
            ([("user", "bob")], {"producer_byte_rate": -1.0}),
            ([("user", "carol"), ("group", "g")], {"producer_byte_rate": 1.0}),
            ([("user", "dave")], {"unknown_rate": 1.0}),
        ], version=version)
        assert [(e.error_code, e.error_message) for e in response.entries] == [
            (0, None), (0, None),
            (42, "Quota producer_byte_rate must be greater than 0"),
            (42, "Unhandled client quota entity type: group"),
            (42, "Invalid configuration key unknown_rate"),
        ]
        assert [[(x.entity_type, x.entity_name) for x in e.entity] for e in response.entries][3] == [
            ("user", "carol"), ("group", "g")]  # the entity as the request named it
        assert describe(client, version=version) == {
            (("client-id", None),): {"consumer_byte_rate": 4096.0},
            (("client-id", None), ("user", "alice")): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        }
        assert describe(client, [("user", 0, "alice")], strict=True, version=version) == {}
        assert list(describe(client, [("client-id", 1, None)], strict=True, version=version)) == [
            (("client-id", None),)]
        # validate_only changes nothing; removing the last key removes the entity
        alter(client, [([("client-id", None)], {"consumer_byte_rate": 1.0})], validate_only=True, version=version)
        assert describe(client, [("client-id", 1, None)], strict=True)[(("client-id", None),)] == {
            "consumer_byte_rate": 4096.0}
        alter(client, [([("client-id", None)], {"consumer_byte_rate": None})], version=version)
        assert describe(client, [("client-id", 2, None)], strict=True) == {}
        bad = client.request(D(components=[D.ComponentData(entity_type="user", match_type=0, match=None)]), version)
        assert (bad.error_code, bad.error_message, bad.entries) == (
            42, "Request specified MATCH_TYPE_EXACT, but set match string to null.", None)


@pytest.mark.xdist_group("quota-admin")
def test_quotas_survive_a_restart(tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        set_quota(broker, [("user", "CN=svc,O=acme")], {"producer_byte_rate": 5000.0})
        broker.restart()
        with WireClient.connect(broker.bootstrap) as client:
            assert describe(client) == {(("user", "CN=svc,O=acme"),): {"producer_byte_rate": 5000.0}}


# ------------------------------------------------------------------------------------- throttling

def _produce_for(broker: BrokerProcess, client_id: str, topic: str, seconds: float) -> tuple[float, list[float]]:
    """confluent-kafka as fast as it is let through; delivered payload bytes/s and the throttle times seen (s)."""
    throttles: list[float] = []
    delivered = [0]
    value = b"v" * 1000
    p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client_id, "linger.ms": 5,
                  "batch.size": BATCH_BYTES, "queue.buffering.max.messages": 2000, "throttle_cb": lambda e: throttles.append(e.throttle_time)})

    def on_delivery(err, msg):
        if err is None and time.monotonic() < deadline:
            delivered[0] += len(msg.value())

    start = time.monotonic()
    deadline = start + seconds
    while time.monotonic() < deadline:
        try:
            p.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.poll(0.5)
    p.purge()
    p.flush(5)
    return delivered[0] / seconds, throttles


@pytest.mark.xdist_group("quota-produce")
def test_producer_byte_rate_for_a_client_id_holds_within_10_percent(tmp_path):
    with BrokerProcess(tmp_path / "data", overrides=RATE_OVERRIDES) as broker:
        create_topic(broker.bootstrap, "q-produce")
        set_quota(broker, [("client-id", "quota-producer")], {"producer_byte_rate": QUOTA})
        rate, throttles = _produce_for(broker, "quota-producer", "q-produce", RUN_S)
        print(f"confluent-kafka producer: {rate:.0f} B/s of {QUOTA:.0f} ({rate / QUOTA:.3f}), "
              f"{len(throttles)} throttles, max {max(throttles, default=0) * 1000:.0f} ms")
        assert QUOTA * 0.9 <= rate <= QUOTA * 1.1, f"{rate:.0f} B/s against a quota of {QUOTA:.0f}"
        assert throttles and max(throttles) > 0


@pytest.mark.xdist_group("quota-consume")
def test_default_client_quota_holds_a_kafka_python_producer_and_a_consumer_within_10_percent(tmp_path):
    """``clients/<default>``: kafka-python's producer (its throttle-time metric) for 15 s, then a
    confluent-kafka consumer capped by consumer_byte_rate for 30 s."""
    with BrokerProcess(tmp_path / "data", overrides=RATE_OVERRIDES) as broker:
        create_topic(broker.bootstrap, "q-consume")
        # enough data for 30 s at 1.5x the quota, written before any quota applies
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "batch.size": BATCH_BYTES})
        for _ in range(int(QUOTA * RUN_S * 1.5 / 1000)):
            while True:
                try:
                    p.produce("q-consume", b"c" * 1000)
                    break
                except BufferError:
                    p.poll(0.1)
        assert p.flush(60) == 0
        set_quota(broker, [("client-id", None)], {"producer_byte_rate": QUOTA, "consumer_byte_rate": QUOTA})

        acked, sent, deadline = [0], [0], time.monotonic() + 15

        def on_ack(_metadata):
            if time.monotonic() < deadline:
                acked[0] += 1000

        kp = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="kp-quota", linger_ms=5,
                           batch_size=BATCH_BYTES)
        while time.monotonic() < deadline:
            if sent[0] - acked[0] > 500_000:  # kafka-python's buffer is unbounded: keep ~2.5 s queued
                time.sleep(0.01)
                continue
            kp.send("q-produce-default", b"k" * 1000).add_callback(on_ack)
            sent[0] += 1000
        throttle_max = max(v for group in kp.metrics().values() for k, v in group.items() if k == "throttle-time-max")
        try:
            kp.close(timeout=1)  # what is still queued stays unsent
        except KafkaTimeoutError:
            pass
        assert throttle_max > 0
        kp_rate = acked[0] / 15
        print(f"kafka-python producer (<default>): {kp_rate:.0f} B/s ({kp_rate / QUOTA:.3f}), "
              f"throttle max {throttle_max:.0f} ms")
        assert QUOTA * 0.9 <= kp_rate <= QUOTA * 1.1, f"kafka-python: {kp_rate:.0f} B/s against {QUOTA:.0f}"

        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "quota", "client.id": "quota-consumer",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "fetch.max.bytes": BATCH_BYTES, "message.max.bytes": BATCH_BYTES,
                      "max.partition.fetch.bytes": BATCH_BYTES})
        c.assign([TopicPartition("q-consume", 0, 0)])
        consumed, start = 0, time.monotonic()
        while time.monotonic() - start < RUN_S:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                consumed += len(msg.value())
        stats_throttled = consumed < QUOTA * RUN_S * 1.5 * 0.95  # it did not simply read everything
        c.close()
        rate = consumed / RUN_S
        print(f"confluent-kafka consumer (<default>): {rate:.0f} B/s ({rate / QUOTA:.3f})")
        assert stats_throttled
        assert QUOTA * 0.9 <= rate <= QUOTA * 1.1, f"{rate:.0f} B/s against a quota of {QUOTA:.0f}"


@pytest.mark.xdist_group("quota-admin")
def test_muting_keeps_responses_in_order_and_other_connections_served(tmp_path):
    with BrokerProcess(tmp_path / "data", overrides=RATE_OVERRIDES) as broker:
        create_topic(broker.bootstrap, "q-mute")
        set_quota(broker, [("client-id", "muted")], {"producer_byte_rate": 10_000.0})
        batch = build_batch([(0, None, b"m" * 20_000)])
        request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="q-mute", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        with WireClient.connect(broker.bootstrap, client_id="muted") as muted, \
                WireClient.connect(broker.bootstrap, client_id="other") as other:
            ids = [muted.send(request, 9) for _ in range(3)]  # pipelined
            started = time.monotonic()
            corr, first = muted.receive()
            assert corr == ids[0] and first.throttle_time_ms > 0
            # the muted connection waits; another one is answered at once
            t0 = time.monotonic()
            other.request(ApiVersionsRequest(), 0)
            assert time.monotonic() - t0 < 0.5
            corr2, _ = muted.receive()
            waited = time.monotonic() - started
            corr3, third = muted.receive()
            assert [corr, corr2, corr3] == ids
            assert waited >= first.throttle_time_ms / 1000 * 0.9
            assert third.throttle_time_ms > 0


# ------------------------------------------------------------------------------------------- CLI

def tidelog(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", "--bootstrap-server", broker.bootstrap, "quotas", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.xdist_group("quota-admin")
def test_cli_alter_and_describe(tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        assert tidelog(broker, "describe").stdout.strip() == "no quotas"
        done = tidelog(broker, "alter", "--user", "CN=svc,O=acme", "--client-default",
                       "--add-config", "producer_byte_rate=1048576,request_percentage=12.5")
        assert done.returncode == 0 and "Updated quotas of user 'CN=svc,O=acme', client-id <default>" in done.stdout
        assert tidelog(broker, "alter", "--client-id", "app", "--add-config", "consumer_byte_rate=2048").returncode == 0
        lines = tidelog(broker, "describe").stdout.splitlines()
        assert [line.split() for line in lines] == [
            ["USER", "CLIENT-ID", "QUOTA", "VALUE"],
            ["CN=svc,O=acme", "<default>", "producer_byte_rate", "1048576"],
            ["CN=svc,O=acme", "<default>", "request_percentage", "12.5"],
            ["-", "app", "consumer_byte_rate", "2048"],
        ]
        only = tidelog(broker, "describe", "--client-id", "app", "--strict").stdout.splitlines()
        assert len(only) == 2 and "consumer_byte_rate" in only[1]
        refused = tidelog(broker, "alter", "--user", "bob", "--add-config", "producer_byte_rate=1.5")
        assert refused.returncode == 1
        assert refused.stderr.strip() == ("tidelog quotas alter: quotas not changed: "
                                          "producer_byte_rate cannot be a fractional value. (INVALID_REQUEST)")
        usage = tidelog(broker, "alter", "--add-config", "producer_byte_rate=1")
        assert usage.returncode == 2 and "name an entity" in usage.stderr
        bad = tidelog(broker, "alter", "--user", "bob", "--add-config", "producer_byte_rate")
        assert bad.returncode == 2 and "expected KEY=NUMBER" in bad.stderr
        assert tidelog(broker, "alter", "--client-id", "app", "--delete-config", "consumer_byte_rate").returncode == 0
        assert tidelog(broker, "describe", "--client-id", "app", "--strict").stdout.strip() == "no quotas"
        assert "Traceback" not in refused.stderr + usage.stderr + bad.stderr


@pytest.mark.xdist_group("quota-admin")
def test_request_percentage_throttles_a_busy_client_only(tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        set_quota(broker, [("user", "ANONYMOUS"), ("client-id", "busy")], {"request_percentage": 0.0001})
        with WireClient.connect(broker.bootstrap, client_id="busy") as busy, \
                WireClient.connect(broker.bootstrap, client_id="calm") as calm:
            throttle = 0
            for _ in range(200):  # until the first throttle (each throttled one mutes for up to 1 s)
                throttle = busy.request(MetadataRequest(topics=None), 12).throttle_time_ms
                if throttle:
                    break
            assert 0 < throttle <= 1000  # request-time throttles stop at one window
            assert calm.request(MetadataRequest(topics=None), 12).throttle_time_ms == 0
