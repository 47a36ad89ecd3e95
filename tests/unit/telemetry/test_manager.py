"""Client instances, subscriptions and the checks of PushTelemetry, as Kafka's ClientMetricsManager."""

from __future__ import annotations

import uuid

import pytest

from tidelog.errors import ErrorCode, KafkaError
from tidelog.records.compression import CompressionType, compress
from tidelog.telemetry.manager import ClientAttributes, ClientMetricsManager, subscription_id
from tidelog.telemetry.pushed import PushedMetrics
from tidelog.telemetry.subscriptions import DEFAULT_INTERVAL_MS, validate

from .otlp_payloads import counter, gauge, payload

ZERO = uuid.UUID(int=0)
PRODUCER = ClientAttributes("orders-producer", "apache-kafka-java", "4.4.0", "10.0.0.7", "50123")
OTHER = ClientAttributes("billing", "librdkafka", "2.12.0", "10.0.0.8", "50124")


class Broker:
    """The manager with a clock the test moves and the subscriptions it sets."""

    def __init__(self, max_bytes: int = 1 << 20) -> None:
        self.now = 1_700_000_000_000
        self.configs: dict[str, dict[str, str]] = {}
        self.pushed = PushedMetrics(lambda: self.now)
        self.manager = ClientMetricsManager(lambda: self.configs, lambda: self.now, max_bytes, self.pushed)


def test_an_unsubscribed_client_gets_no_metrics_and_the_default_interval() -> None:
    b = Broker()
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    assert s.instance_id != ZERO
    assert s.metrics == [] and s.push_interval_ms == DEFAULT_INTERVAL_MS
    assert s.subscription_id == subscription_id([], DEFAULT_INTERVAL_MS, s.instance_id)


def test_matching_subscriptions_are_merged_lowest_interval_wins() -> None:
    b = Broker()
    b.configs = {
        "producers": {"metrics": "org.apache.kafka.producer.", "interval.ms": "30000",
                      "match": "client_software_name=apache-kafka-java,client_id=orders-.*"},
        "fast": {"metrics": "org.apache.kafka.producer.record", "interval.ms": "1000", "match": "client_id=orders-.*"},
        "billing-only": {"metrics": "*", "interval.ms": "500", "match": "client_id=billing"},
    }
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    assert s.metrics == ["org.apache.kafka.producer.", "org.apache.kafka.producer.record"]
    assert s.push_interval_ms == 1000
    other = b.manager.get_subscriptions(ZERO, OTHER, "c2")
    assert other.metrics == ["*"] and other.push_interval_ms == 500


def test_asking_again_too_early_is_throttled_unless_the_subscriptions_changed() -> None:
    b = Broker()
    b.configs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    with pytest.raises(KafkaError) as e:
        b.manager.get_subscriptions(s.instance_id, PRODUCER, "c1")
    assert e.value.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    b.configs = {"all": {"metrics": "org.apache.kafka.", "interval.ms": "2000"}}
    again = b.manager.get_subscriptions(s.instance_id, PRODUCER, "c1")
    assert again.instance_id == s.instance_id
    assert again.subscription_id != s.subscription_id and again.push_interval_ms == 2000


def test_push_checks_in_kafkas_order() -> None:
    b = Broker(max_bytes=100)
    b.configs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    body = payload(gauge("org.apache.kafka.producer.record.queue.time.avg", 1.5))

    def push(sub=s.subscription_id, codec=0, metrics=body, terminating=False, instance=s.instance_id):
        b.manager.push(instance, sub, terminating, codec, metrics, PRODUCER, "c1")

    def code_of(**kw) -> ErrorCode:
        with pytest.raises(KafkaError) as e:
            push(**kw)
        return e.value.code

    assert code_of(instance=ZERO) == ErrorCode.INVALID_REQUEST
    assert code_of(sub=s.subscription_id + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    b.now += 1000
    assert code_of(codec=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    b.now += 1000
    assert code_of(metrics=b"x" * 101) == ErrorCode.TELEMETRY_TOO_LARGE
    b.now += 1000
    assert code_of(metrics=b"\xff\xff\xff") == ErrorCode.INVALID_RECORD
    b.now += 1000
    push()
    assert code_of() == ErrorCode.THROTTLING_QUOTA_EXCEEDED  # again at once
    push(terminating=True, metrics=b"")  # a terminating push is taken at any time
    b.now += 1000
    assert code_of() == ErrorCode.INVALID_REQUEST  # nothing after the terminating push


def test_pushed_metrics_are_decoded_and_delta_counters_added_up() -> None:
    b = Broker()
    b.configs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    for n, codec in enumerate([CompressionType.ZSTD, CompressionType.LZ4, CompressionType.GZIP,
                               CompressionType.SNAPPY]):
        raw = payload(counter("org.apache.kafka.producer.record.send", 5, topic="orders"),
                      gauge("org.apache.kafka.producer.record.queue.time.avg", float(n)))
        b.manager.push(s.instance_id, s.subscription_id, False, int(codec), compress(codec, raw), PRODUCER, "c1")
        b.now += 1000
    (client,) = b.pushed.clients()
    assert client.client_id == "orders-producer" and client.pushes == 4
    assert client.software == "apache-kafka-java/4.4.0"
    series = {(name, labels): s.value for (name, labels), s in client.series.items()}
    assert series[("org.apache.kafka.producer.record.send", (("topic", "orders"),))] == 20
    assert series[("org.apache.kafka.producer.record.queue.time.avg", ())] == 3.0


def test_a_client_that_stops_pushing_is_dropped() -> None:
    b = Broker()
    b.configs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    b.manager.push(s.instance_id, s.subscription_id, False, 0, payload(gauge("g", 1)), PRODUCER, "c1")
    assert len(b.pushed.clients()) == 1
    b.now += 59_000
    assert len(b.pushed.clients()) == 1
    b.now += 2_000  # three intervals, at least a minute
    assert b.pushed.clients() == []


def test_a_push_after_a_restart_is_taken_when_the_subscription_is_the_same() -> None:
    """The subscription id is a hash, so a broker that never saw the instance computes the same one."""
    first, second = Broker(), Broker()
    first.configs = second.configs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    s = first.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    second.manager.push(s.instance_id, s.subscription_id, False, 0, payload(gauge("g", 2)), PRODUCER, "c9")
    assert [c.client_instance_id for c in second.pushed.clients()] == [s.instance_id]


def test_a_closed_connection_forgets_its_instance() -> None:
    b = Broker()
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    assert b.manager.instance(s.instance_id) is not None
    b.manager.connection_closed("c1")
    assert b.manager.instance(s.instance_id) is None


@pytest.mark.parametrize(("configs", "code"), [
    ({"nope": "1"}, ErrorCode.INVALID_REQUEST),
    ({"interval.ms": "50"}, ErrorCode.INVALID_REQUEST),
    ({"interval.ms": "3600001"}, ErrorCode.INVALID_REQUEST),
    ({"interval.ms": "soon"}, ErrorCode.INVALID_CONFIG),
    ({"match": "client_colour=red"}, ErrorCode.INVALID_CONFIG),
    ({"match": "client_id"}, ErrorCode.INVALID_CONFIG),
    ({"match": "client_id=("}, ErrorCode.INVALID_CONFIG),
])
def test_invalid_subscriptions_are_refused(configs: dict[str, str], code: ErrorCode) -> None:
    with pytest.raises(KafkaError) as e:
        validate("sub", configs)
    assert e.value.code == code


def test_valid_subscriptions_pass() -> None:
    validate("sub", {"metrics": "org.apache.kafka.producer.", "interval.ms": "100",
                     "match": "client_id=a.*,client_software_name=librdkafka"})
    with pytest.raises(KafkaError):
        validate("", {})


def test_a_push_that_decompresses_to_too_much_is_an_invalid_record() -> None:
    b = Broker(max_bytes=4096)
    b.configs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    s = b.manager.get_subscriptions(ZERO, PRODUCER, "c1")
    bomb = compress(CompressionType.ZSTD, b"\0" * (2 << 20))  # 2 MiB of zeros in a few hundred bytes
    assert len(bomb) < 4096
    with pytest.raises(KafkaError) as e:
        b.manager.push(s.instance_id, s.subscription_id, False, int(CompressionType.ZSTD), bomb, PRODUCER, "c1")
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert b.pushed.clients() == []
