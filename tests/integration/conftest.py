"""Integration fixtures: a real broker subprocess per test module (or per test when asked), and clients
of it. A module says which broker configs it needs in module-level constants instead of redefining the
fixtures::

    BROKER_OVERRIDES = {"num.partitions": "2"}           # the module's ``broker``
    FRESH_BROKER_OVERRIDES = {"num.partitions": "4"}     # each test's ``fresh_broker``

Without them the broker runs with its defaults.

Under ``pytest -n 2 --dist loadgroup`` the tests of a module may go to both workers, and then each worker
starts the module's broker (2-4 s on a loaded machine). A module of a few short tests marks itself
``pytest.mark.xdist_group("<module>")`` so that one worker runs all of it on one broker (with pytest < 9:
see the pin in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient


def _overrides(request: pytest.FixtureRequest, name: str) -> dict[str, str]:
    return dict(getattr(request.module, name, {}))


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole module, with the module's ``BROKER_OVERRIDES``."""
    data = tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2])
    with BrokerProcess(data, overrides=_overrides(request, "BROKER_OVERRIDES")) as b:
        yield b


@pytest.fixture
def fresh_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, with the module's ``FRESH_BROKER_OVERRIDES``."""
    with BrokerProcess(tmp_path / "data", overrides=_overrides(request, "FRESH_BROKER_OVERRIDES")) as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    """confluent-kafka's admin client of the module's broker."""
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def kp_admin(broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    """kafka-python's admin client of the module's broker."""
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    yield client
    client.close()


@pytest.fixture
def wire(broker: BrokerProcess) -> Iterator[WireClient]:
    """A connection to the module's broker that sends requests in the exact version a test names."""
    with WireClient.connect(broker.bootstrap) as client:
        yield client
