"""Fixtures of the TubeMQ tests: the Java client (built once per session) and a broker with its TubeMQ
listeners on free ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oracle import maven
from tests.tubemq import driver
from tests.tubemq.driver import JavaTube
from tidelog.testing import BrokerProcess
from tidelog.testing.tubemq import TUBEMQ_OVERRIDES, tubemq_endpoints

#: TubeMQ listeners on, and KIP-848 sessions and heartbeats short enough that rebalances after a
#: killed member take seconds, not the default 45 s.
OVERRIDES = {
    **TUBEMQ_OVERRIDES,
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
}


@pytest.fixture(scope="session")
def tubemq_classpath() -> str:
    maven.require_toolchain()
    try:
        return driver.build()
    except maven.BuildError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker"), overrides=OVERRIDES) as b:
        yield b


@pytest.fixture(scope="module")
def endpoints(broker: BrokerProcess) -> tuple[str, str]:
    return tubemq_endpoints(broker)


@pytest.fixture
def tube(tubemq_classpath: str, endpoints: tuple[str, str]) -> JavaTube:
    return JavaTube(tubemq_classpath, endpoints[0])
