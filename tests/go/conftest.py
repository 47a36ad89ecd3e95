"""Fixtures of the Go client tests: the driver binary (built once per session) and a broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import toolchain
from tests.go import binary
from tests.go.driver import GoClients
from tidelog.testing import BrokerProcess

# Group heartbeats and session timeouts short enough that rebalances take seconds, not minutes.
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "300",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
}


@pytest.fixture(scope="session")
def go_binary() -> Path:
    toolchain.require_command("go", "go")
    try:
        return binary.build()
    except binary.BuildError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker"), overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def go(go_binary: Path, broker: BrokerProcess) -> GoClients:
    return GoClients(go_binary, broker.bootstrap)
