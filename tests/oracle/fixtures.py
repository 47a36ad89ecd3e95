"""Fixtures for tests that run against Apache Kafka, Tidelog, or both (a pytest plugin: tests/conftest.py).

- ``java_classpath`` (session): builds tests/java once (tests/oracle/maven.py) and gives ``java -cp``.
  Skips the test without java 17+ and mvn (fails instead under TIDELOG_REQUIRE_TOOLCHAINS=1).
- ``kafka_broker`` (module): a real Apache Kafka broker (:class:`tests.oracle.kafka.KafkaProcess`).
- ``tidelog_broker`` (module): ``tidelog serve`` (:class:`tidelog.testing.BrokerProcess`).
- ``any_broker`` (module, parametrized ``kafka`` / ``tidelog``): the same test against each.

Both brokers get :data:`SHARED_OVERRIDES`, so they differ only where Tidelog differs from Kafka.
A module needing other properties overrides ``broker_overrides``::

    @pytest.fixture(scope="module")
    def broker_overrides():
        return {**SHARED_OVERRIDES, "log.retention.check.interval.ms": "200"}
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oracle import maven
from tests.oracle.kafka import KafkaProcess
from tidelog.testing import BrokerProcess

#: Properties both brokers get: Kafka's quickstart drops the first-rebalance delay of a classic group
#: (3 s by default), and KIP-848 heartbeats every second instead of every five, so group tests don't
#: spend their time waiting.
SHARED_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}

BROKERS = ("kafka", "tidelog")


@pytest.fixture(scope="session")
def java_classpath() -> str:
    maven.require_toolchain()
    return maven.build()


@pytest.fixture(scope="module")
def broker_overrides() -> dict[str, str]:
    return dict(SHARED_OVERRIDES)


@pytest.fixture(scope="module")
def kafka_broker(java_classpath: str, broker_overrides: dict[str, str],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaProcess]:
    with KafkaProcess(tmp_path_factory.mktemp("kafka"), classpath=java_classpath,
                      overrides=broker_overrides) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def tidelog_broker(broker_overrides: dict[str, str],
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("tidelog"), overrides=broker_overrides) as broker:
        yield broker


@pytest.fixture(scope="module", params=BROKERS)
def any_broker(request: pytest.FixtureRequest) -> KafkaProcess | BrokerProcess:
    """Apache Kafka, then Tidelog: tests using it run once against each."""
    return request.getfixturevalue(f"{request.param}_broker")


__all__ = ["BROKERS", "SHARED_OVERRIDES", "any_broker", "broker_overrides", "java_classpath", "kafka_broker",
           "tidelog_broker"]
