"""Client telemetry (KIP-714) with Kafka's own Java pieces: kafka-client-metrics.sh and kafka-configs.sh
manage the subscriptions, and a Java producer (kafka-producer-perf-test, Kafka 4.4's client with
``enable.metrics.push`` on by default) pushes metrics that show on Tidelog's /metrics."""

from __future__ import annotations

import pytest

from tests.integration.kafka_io import wait_for
from tests.integration.test_metrics import scrape
from tests.oracle import jvm
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-tools")]

BROKER_OVERRIDES = {"telemetry.enable": "true"}


@pytest.fixture(scope="module")
def tool(java_classpath, broker):
    def run(name: str, *args: object, check: bool = True):
        done = jvm.run_tool(java_classpath, name, "--bootstrap-server", broker.bootstrap, *args)
        if check:
            assert done.returncode == 0, (f"{name} {' '.join(map(str, args))} exited {done.returncode}:\n"
                                          f"{done.stdout}\n{done.stderr[-3000:]}")
        return done

    return run


def test_kafka_client_metrics_alter_list_describe_delete(tool) -> None:
    altered = tool("kafka-client-metrics", "--alter", "--name", "java-tools", "--metrics",
                   "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.rebalance.latency.max",
                   "--interval", "2000", "--match", "client_id=java-.*")
    assert "java-tools" in altered.stdout, altered.stdout
    assert "java-tools" in tool("kafka-client-metrics", "--list").stdout.split()
    described = tool("kafka-client-metrics", "--describe", "--name", "java-tools").stdout
    assert "interval.ms=2000" in described and "match=client_id=java-.*" in described, described
    assert "org.apache.kafka.producer." in described, described
    configs = tool("kafka-configs", "--describe", "--entity-type", "client-metrics", "--entity-name",
                   "java-tools").stdout
    assert "interval.ms=2000" in configs, configs
    refused = tool("kafka-client-metrics", "--alter", "--name", "java-bad", "--interval", "5", check=False)
    assert refused.returncode != 0 and "interval must be between 100 and 3600000" in refused.stdout + refused.stderr
    tool("kafka-client-metrics", "--delete", "--name", "java-tools")
    assert "java-tools" not in tool("kafka-client-metrics", "--list").stdout.split()


def test_a_java_producer_pushes_its_metrics(tool, java_classpath, broker: BrokerProcess) -> None:
    tool("kafka-client-metrics", "--alter", "--name", "java-producers", "--metrics", "org.apache.kafka.producer.",
         "--interval", "1000", "--match", "client_id=java-telemetry")
    producer = jvm.JavaProcess.tool(
        java_classpath, "kafka-producer-perf-test", "--topic", "java-telemetry", "--num-records", "10000000",
        "--throughput", "200", "--record-size", "100", "--producer-props", f"bootstrap.servers={broker.bootstrap}",
        "client.id=java-telemetry", "linger.ms=5")
    try:
        def pushed() -> dict[str, float]:
            return {name: v for (name, labels), v in scrape(broker).items()
                    if ("client_id", "java-telemetry") in labels and name.startswith("org_apache_kafka_producer_")}

        wait_for(pushed, 120, "the Java producer's telemetry on /metrics", interval=1.0)
        assert producer.proc.poll() is None, "".join(producer.stderr_lines[-40:])
    finally:
        producer.kill()
