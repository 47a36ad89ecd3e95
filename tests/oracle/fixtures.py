"""Fixtures for tests that run against Apache Kafka, Tidelog, or both (a pytest plugin: tests/conftest.py).

- ``java_classpath`` (session): builds tests/java once (tests/oracle/maven.py) and gives ``java -cp``.
  Skips the test without java 17+ and mvn (fails instead under TIDELOG_REQUIRE_TOOLCHAINS=1).
- ``kafka_broker`` (module): a real Apache Kafka broker (:class:`tests.oracle.kafka.KafkaProcess`).
- ``tidelog_broker`` (module): ``tidelog serve`` (:class:`tidelog.testing.BrokerProcess`).
- ``any_broker`` (module, parametrized ``kafka`` / ``tidelog``): the same test against each.
- ``subject_broker`` (module): the broker a client-compatibility test judges: Tidelog, or Apache Kafka
  when ``TIDELOG_ORACLE_SUBJECT=kafka``. Running such tests against Kafka checks the tests themselves:
  every expectation must hold there, and :func:`broker_bug` xfails apply to Tidelog only.

Both brokers get the ``broker_overrides`` fixture (tests/fixtures.py: :data:`SHARED_OVERRIDES`), so they
differ only where Tidelog differs from Kafka. A module needing other properties overrides it::

    @pytest.fixture(scope="module")
    def broker_overrides():
        return {**SHARED_OVERRIDES, "log.retention.check.interval.ms": "200"}
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.oracle import jvm, maven
from tests.oracle.kafka import KafkaProcess
from tidelog.testing import BrokerProcess

# Every Kafka broker the test suite starts (these fixtures, and the modules and labs that make their own
# KafkaProcess or KafkaCluster) runs with the C1 compiler alone: it starts in less than half the time and
# spends about half the CPU time in a module's life (KafkaProcess.jit_options). bench/ keeps Kafka's JIT.
KafkaProcess.jit_options = tuple(jvm.QUICK_START_OPTS)

#: Properties both brokers get: Kafka's quickstart drops the first-rebalance delay of a classic group
#: (3 s by default), and KIP-848 heartbeats every second instead of every five, so group tests don't
#: spend their time waiting.
SHARED_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}

BROKERS = ("kafka", "tidelog")
SUBJECT_ENV = "TIDELOG_ORACLE_SUBJECT"


def subject() -> str:
    """Which broker ``subject_broker`` gives: "tidelog" unless TIDELOG_ORACLE_SUBJECT names "kafka"."""
    name = os.environ.get(SUBJECT_ENV, "tidelog") or "tidelog"
    if name not in BROKERS:
        raise pytest.UsageError(f"{SUBJECT_ENV} must be one of {', '.join(BROKERS)}, not {name!r}")
    return name


def broker_bug(reason: str) -> pytest.MarkDecorator:
    """``xfail(strict=True)`` for a Tidelog bug or difference from Kafka, when the subject is Tidelog."""
    return pytest.mark.xfail(subject() == "tidelog", strict=True, reason=reason)


@pytest.fixture(scope="session")
def java_classpath() -> str:
    maven.require_toolchain()
    return maven.build()


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


@pytest.fixture(scope="module")
def subject_broker(request: pytest.FixtureRequest) -> KafkaProcess | BrokerProcess:
    """Tidelog (or Apache Kafka under TIDELOG_ORACLE_SUBJECT=kafka): the broker a compatibility test judges."""
    return request.getfixturevalue(f"{subject()}_broker")


@pytest.fixture(scope="module", params=BROKERS)
def any_broker(request: pytest.FixtureRequest) -> KafkaProcess | BrokerProcess:
    """Apache Kafka, then Tidelog: tests using it run once against each."""
    return request.getfixturevalue(f"{request.param}_broker")


__all__ = ["BROKERS", "SHARED_OVERRIDES", "SUBJECT_ENV", "any_broker", "broker_bug", "java_classpath",
           "kafka_broker", "subject", "subject_broker", "tidelog_broker"]
