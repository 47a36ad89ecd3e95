"""Fixtures of the TubeMQ tests: the Java client (built once per session) and the TubeMQ endpoints of the
module's broker. The broker is the shared ``broker`` fixture (tests/fixtures.py), started with each module's
``BROKER_OVERRIDES`` (:data:`tests.tubemq.driver.TUBE_BROKER_OVERRIDES`: TubeMQ listeners on free ports)."""

from __future__ import annotations

import pytest

from tests.oracle import maven
from tests.tubemq import driver
from tests.tubemq.driver import JavaTube
from tidelog.testing import BrokerProcess
from tidelog.testing.tubemq import tubemq_endpoints


@pytest.fixture(scope="session")
def tubemq_classpath() -> str:
    maven.require_toolchain()
    try:
        return driver.build()
    except maven.BuildError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="module")
def endpoints(broker: BrokerProcess) -> tuple[str, str]:
    """The module's broker's TubeMQ master and broker addresses."""
    return tubemq_endpoints(broker)


@pytest.fixture
def tube(tubemq_classpath: str, endpoints: tuple[str, str]) -> JavaTube:
    return JavaTube(tubemq_classpath, endpoints[0])
