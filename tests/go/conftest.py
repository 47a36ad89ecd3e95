"""Fixtures of the Go client tests: the driver binary (built once per session) and the clients of the
module's broker. The broker is the shared ``broker`` fixture (tests/fixtures.py), started with each module's
``BROKER_OVERRIDES`` (:data:`tests.go.driver.GO_BROKER_OVERRIDES`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import toolchain
from tests.go import binary
from tests.go.driver import GoClients
from tidelog.testing import BrokerProcess


@pytest.fixture(scope="session")
def go_binary() -> Path:
    toolchain.require_command("go", "go")
    try:
        return binary.build()
    except binary.BuildError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)


@pytest.fixture
def go(go_binary: Path, broker: BrokerProcess) -> GoClients:
    return GoClients(go_binary, broker.bootstrap)
