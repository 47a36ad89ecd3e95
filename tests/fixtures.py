"""The one place every test folder gets its brokers from (a pytest plugin, loaded for the whole suite by
tests/conftest.py): a real broker subprocess per test module (or per test when asked), a ZooKeeper cluster
per module, and clients of them. A test module says which broker it needs in module-level names instead of
defining fixtures of its own::

    BROKER_OVERRIDES = {"num.partitions": "2"}           # the module's ``broker``
    FRESH_BROKER_OVERRIDES = {"num.partitions": "4"}     # each test's ``fresh_broker``

    def BROKER_OVERRIDES(certs):                         # overrides that need other fixtures (TLS
        return {"ssl.keystore.location": str(certs.server), ...}   # certificates): they are its parameters

    BROKER_USERS = {"alice": "alice-secret"}             # SCRAM users written into the data dir before
                                                         # the first start (a SASL broker)
    def prepare_broker(data_dir): ...                    # anything else written into the data dir before
                                                         # the first start (TubeMQ secrets)
    def on_broker_started(broker): ...                   # once the module's broker is up: its topics, ACLs

    BROKER = "subject"                                   # the oracle fixtures' ``subject_broker`` (Tidelog,
                                                         # or Apache Kafka under TIDELOG_ORACLE_SUBJECT=kafka),
                                                         # with BROKER_OVERRIDES as its ``broker_overrides``

Without them the broker runs with its defaults. :data:`FAST_GROUPS` are the group settings of modules whose
consumers join, leave and are killed (rebalances in seconds, not minutes).

A module of cluster tests (ZooKeeper mode, three brokers: :class:`~tidelog.testing.cluster.LocalCluster`)
names its cluster the same way, and gets it as ``cluster``::

    CLUSTER = {"chroot": "/tidelog-ops", "session_ms": 6000, "overrides": {...}}  # LocalCluster's arguments
    CLUSTER_CLASS = Cluster        # a LocalCluster subclass with the module's helpers (default: LocalCluster)
    CLUSTER_RESTORED = True        # each test gets it back as the module started it (cluster_guard.py):
                                   # a test that fails (a timeout under load) fails alone
    def prepare_cluster(root, zookeeper): ...   # before the brokers start: users and ACLs written into
                                                # ZooKeeper, certificates into root; returns the broker
                                                # properties to add (their paths), or None

Each cluster has its own ZooKeeper (tests/integration/zookeeper.py) in the module's temporary directory.
What tests then do with a broker through real clients (topics, records, consumers, waiting) is in
:mod:`tests.integration.kafka_io`. A folder's conftest.py keeps only what is its own: the Go driver binary
(tests/go), the TubeMQ Java client and a broker's TubeMQ endpoints (tests/tubemq), the SparkSession
(tests/integration/spark).

Under ``pytest -n 2 --dist loadgroup`` the tests of a module may go to both workers, and then each worker
starts the module's broker (2-4 s on a loaded machine): the module-scoped fixtures are per worker. A
module of a few short tests marks itself ``pytest.mark.xdist_group("<module>")`` so that one worker runs
all of it on one broker (with pytest < 9: see the pin in pyproject.toml).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from tests.integration.cluster_guard import SharedCluster
from tests.integration.console_http import add_user
from tests.integration.zookeeper import start_zookeeper
from tests.oracle.fixtures import SHARED_OVERRIDES
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster

#: Group settings for modules whose consumers join, leave and are killed: KIP-848 heartbeats every 500 ms
#: and sessions of 6 s, so a rebalance after a killed member takes seconds, not the default 45 s.
FAST_GROUPS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
}


def _call_with_fixtures(request: pytest.FixtureRequest, fn: Any) -> Any:
    """``fn(**fixtures)``: each parameter of ``fn`` is the fixture of that name."""
    return fn(**{name: request.getfixturevalue(name) for name in inspect.signature(fn).parameters})


def _overrides(request: pytest.FixtureRequest, name: str) -> dict[str, str]:
    value = getattr(request.module, name, {})
    return dict(_call_with_fixtures(request, value) if callable(value) else value)


@pytest.fixture(scope="module")
def broker_overrides(request: pytest.FixtureRequest) -> dict[str, str]:
    """The properties of the oracle fixtures' brokers (``kafka_broker``, ``tidelog_broker``:
    tests/oracle/fixtures.py): :data:`~tests.oracle.fixtures.SHARED_OVERRIDES`, or the module's
    ``BROKER_OVERRIDES`` in a ``BROKER = "subject"`` module. A module of the oracle's own overrides
    this fixture instead."""
    if getattr(request.module, "BROKER", None) == "subject" and hasattr(request.module, "BROKER_OVERRIDES"):
        return _overrides(request, "BROKER_OVERRIDES")
    return dict(SHARED_OVERRIDES)


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One broker for the whole module, as the module's ``BROKER_OVERRIDES``, ``BROKER_USERS``,
    ``prepare_broker``, ``on_broker_started`` and ``BROKER`` say (module docstring)."""
    module = request.module
    if getattr(module, "BROKER", "tidelog") == "subject":
        yield request.getfixturevalue("subject_broker")
        return
    data = tmp_path_factory.mktemp(module.__name__.rpartition(".")[2])
    for user, password in getattr(module, "BROKER_USERS", {}).items():
        add_user(data, user, password)
    prepare = getattr(module, "prepare_broker", None)
    if prepare is not None:
        prepare(data)
    with BrokerProcess(data, overrides=_overrides(request, "BROKER_OVERRIDES")) as b:
        started = getattr(module, "on_broker_started", None)
        if started is not None:
            started(b)
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


def _start_cluster(module: Any, root: Path) -> LocalCluster:
    cls = getattr(module, "CLUSTER_CLASS", LocalCluster)
    zookeeper = start_zookeeper(root / "zk")
    arguments = dict(module.CLUSTER)
    prepare = getattr(module, "prepare_cluster", None)
    added = prepare(root, zookeeper) if prepare is not None else None
    if added:
        arguments["overrides"] = {**arguments.get("overrides", {}), **added}
    return cls(root, zookeeper=zookeeper, **arguments).start()


@pytest.fixture(scope="module")
def module_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The module's cluster (``CLUSTER``, ``CLUSTER_CLASS``), or with ``CLUSTER_RESTORED`` the
    :class:`~tests.integration.cluster_guard.SharedCluster` that restores it for each test."""
    module = request.module
    root = tmp_path_factory.mktemp(module.__name__.rpartition(".")[2])
    if getattr(module, "CLUSTER_RESTORED", False):
        with SharedCluster(lambda at: _start_cluster(module, at), root) as shared:
            yield shared
        return
    cluster = _start_cluster(module, root)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(module_cluster: Any) -> Iterator[Any]:
    """The module's cluster (see the module docstring)."""
    if isinstance(module_cluster, SharedCluster):
        yield from module_cluster.for_test()
    else:
        yield module_cluster
