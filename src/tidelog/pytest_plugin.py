"""The pytest plugin (entry point ``pytest11``: ``tidelog``): real Kafka-compatible brokers for your tests.

Fixtures (docs/testing-with-tidelog.md has the whole story):

- ``tidelog_broker`` (session): a :class:`tidelog.Broker`; ``.bootstrap_servers``, ``.client_config()``.
- ``kafka_bootstrap`` (session): its ``bootstrap.servers`` string.
- ``tidelog_broker_function`` (function): a fresh broker per test, configured by
  ``@pytest.mark.tidelog(config={...}, security_protocol="SASL_SSL", users={...}, mode=..., http=True)``
  or by indirect parametrization with such a dict.
- ``kafka_topic`` (function): a factory, ``kafka_topic(partitions=3, config={...})`` -> a new topic's name.
- ``kafka_produce`` / ``kafka_consume`` (function): a few records in and out, with confluent-kafka.
- ``kafka_admin`` (session): confluent-kafka's AdminClient on the session broker.
- ``tidelog_cluster`` (function): three brokers and a ZooKeeper for failover tests (needs ``java`` and
  ``mvn``: ZooKeeper comes from Maven Central; skipped with the reason when they are missing).

Configuration: ``tidelog_broker_args`` (ini, ``KEY=VALUE`` ...) or ``--tidelog-broker-arg KEY=VALUE``
for every broker; ``tidelog_mode`` / ``--tidelog-mode`` (``thread``, the default, or ``subprocess``).
Data lives in pytest's temporary directories; every broker is stopped at the end of its scope, also when
the test fails or the run is interrupted. Under pytest-xdist each worker has its own session broker.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tidelog.embedded import MODES, Broker

_MARKER = ("tidelog(config=None, security_protocol='PLAINTEXT', users=None, mode=None, http=False): "
           "how tidelog_broker_function starts its broker (config: server.properties keys)")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tidelog", "Tidelog brokers for Kafka tests")
    group.addoption("--tidelog-broker-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting (server.properties key) for every Tidelog broker (repeatable)")
    group.addoption("--tidelog-mode", choices=MODES, default=None,
                    help="run brokers in a thread of the test process (default) or as subprocesses")
    parser.addini("tidelog_broker_args", "broker settings (KEY=VALUE ...) for every Tidelog broker",
                  type="args", default=[])
    parser.addini("tidelog_mode", "thread (default) or subprocess", default="thread")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER)


def _settings(config: pytest.Config) -> tuple[str, dict[str, str]]:
    mode = config.getoption("tidelog_mode") or config.getini("tidelog_mode") or "thread"
    if mode not in MODES:
        raise pytest.UsageError(f"tidelog_mode must be one of {', '.join(MODES)}, not {mode!r}")
    props: dict[str, str] = {}
    for item in [*config.getini("tidelog_broker_args"), *config.getoption("tidelog_broker_arg")]:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"tidelog broker settings are KEY=VALUE, got {item!r}")
        props[key.strip()] = value.strip()
    return mode, props


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The marker's keyword arguments (closest wins), then an indirect parameter's dict."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("tidelog"))):
        options.update(marker.kwargs)
    param = getattr(request, "param", None)
    if isinstance(param, dict):
        options.update(param)
    return options


def _broker(config: pytest.Config, data_dir: Path, options: dict[str, Any]) -> Broker:
    mode, props = _settings(config)
    options = dict(options)
    props.update({k: str(v) for k, v in (options.pop("config", None) or {}).items()})
    return Broker(mode=options.pop("mode", None) or mode, data_dir=data_dir, config=props, **options)


# ----------------------------------------------------------------------------------------- brokers

@pytest.fixture(scope="session")
def tidelog_broker(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One broker for the whole session (per xdist worker)."""
    with _broker(pytestconfig, tmp_path_factory.mktemp("tidelog-broker"), {}) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_bootstrap(tidelog_broker: Broker) -> str:
    """``bootstrap.servers`` of the session broker."""
    return tidelog_broker.bootstrap_servers


@pytest.fixture
def tidelog_broker_function(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Broker]:
    """A fresh broker for one test (``@pytest.mark.tidelog(...)`` configures it)."""
    with _broker(request.config, tmp_path / "tidelog-broker", _options(request)) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_admin(tidelog_broker: Broker):
    """confluent-kafka's AdminClient on the session broker."""
    from confluent_kafka.admin import AdminClient

    return AdminClient(tidelog_broker.client_config())


# ------------------------------------------------------------------------------------------ topics

_counter = itertools.count(1)


def _topic_name(request: pytest.FixtureRequest) -> str:
    base = re.sub(r"[^a-zA-Z0-9-]+", "-", request.node.name).strip("-")[:180] or "topic"
    return f"{base}-{next(_counter)}-{uuid.uuid4().hex[:8]}"


def create_topic(broker: Broker | str, name: str, partitions: int = 1, config: dict[str, Any] | None = None,
                 replication_factor: int = 1, timeout: float = 30.0) -> str:
    """Create a topic through AdminClient and wait until it exists."""
    from confluent_kafka.admin import AdminClient, NewTopic

    conf = broker.client_config() if isinstance(broker, Broker) else {"bootstrap.servers": broker}
    admin = AdminClient(conf)
    topic = NewTopic(name, partitions, replication_factor, config={k: str(v) for k, v in (config or {}).items()})
    admin.create_topics([topic], request_timeout=timeout)[name].result(timeout)
    return name


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest) -> Callable[..., str]:
    """``kafka_topic(partitions=1, config=None, name=None, broker=None)``: create a topic with a unique name
    on ``broker`` (default: the session broker; a :class:`tidelog.Broker` or a bootstrap string)."""

    def make(partitions: int = 1, config: dict[str, Any] | None = None, *, name: str | None = None,
             broker: Broker | str | None = None, replication_factor: int = 1) -> str:
        target = broker if broker is not None else request.getfixturevalue("tidelog_broker")
        return create_topic(target, name or _topic_name(request), partitions, config, replication_factor)

    return make


# ---------------------------------------------------------------------------------------- records

@dataclass
class Record:
    """A record read back by ``kafka_consume``."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    timestamp: int = -1


def _client_config(broker: Broker | str | None, request: pytest.FixtureRequest) -> dict[str, Any]:
    target = broker if broker is not None else request.getfixturevalue("tidelog_broker")
    return target.client_config() if isinstance(target, Broker) else {"bootstrap.servers": target}


def _as_bytes(value: Any) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def produce(conf: dict[str, Any], topic: str, records: Iterable[Any], *, partition: int | None = None,
            timeout: float = 30.0) -> list[tuple[int, int]]:
    """Produce each record (a value, a ``(key, value)`` pair, or a dict with ``key``, ``value``,
    ``headers``, ``partition``) with acks=all; returns ``(partition, offset)`` of each, in order."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer({**conf, "acks": "all", "linger.ms": 0})
    results: list[Any] = []
    for i, record in enumerate(records):
        if isinstance(record, dict):
            fields = dict(record)
        elif isinstance(record, tuple):
            fields = {"key": record[0], "value": record[1]}
        else:
            fields = {"value": record}
        results.append(None)

        def done(err: Any, msg: Any, i: int = i) -> None:
            results[i] = err if err is not None else (msg.partition(), msg.offset())

        kwargs: dict[str, Any] = {"key": _as_bytes(fields.get("key")), "value": _as_bytes(fields.get("value")),
                                  "on_delivery": done}
        if fields.get("headers"):
            kwargs["headers"] = [(k, _as_bytes(v)) for k, v in dict(fields["headers"]).items()]
        chosen = fields.get("partition", partition)
        if chosen is not None:
            kwargs["partition"] = chosen
        producer.produce(topic, **kwargs)
    remaining = producer.flush(timeout)
    if remaining:
        raise AssertionError(f"{remaining} records to {topic} were not acknowledged within {timeout:g} s")
    for result in results:
        if not isinstance(result, tuple):
            raise KafkaException(result)
    return results


def consume(conf: dict[str, Any], topic: str, count: int, *, timeout: float = 30.0,
            group_id: str | None = None) -> list[Record]:
    """Read ``count`` records of ``topic`` from the beginning of every partition (as a member of
    ``group_id`` when given, committing offsets; else by assignment, without a group)."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({**conf, "group.id": group_id or f"tidelog-pytest-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": group_id is not None,
                         "enable.partition.eof": False})
    try:
        if group_id is None:
            metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        else:
            consumer.subscribe([topic])
        out: list[Record] = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(min(0.5, max(0.0, deadline - time.monotonic())))
            if msg is None:
                continue
            if msg.error():
                if msg.error().retriable():
                    continue
                raise AssertionError(f"consuming {topic}: {msg.error()}")
            out.append(Record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                              list(msg.headers() or []), msg.timestamp()[1]))
        if len(out) < count:
            raise AssertionError(f"read {len(out)} of {count} records from {topic} within {timeout:g} s")
        return out
    finally:
        consumer.close()


@pytest.fixture
def kafka_produce(request: pytest.FixtureRequest) -> Callable[..., list[tuple[int, int]]]:
    """``kafka_produce(topic, records, broker=None, partition=None)`` -> ``[(partition, offset), ...]``."""

    def run(topic: str, records: Iterable[Any], *, broker: Broker | str | None = None,
            partition: int | None = None, timeout: float = 30.0) -> list[tuple[int, int]]:
        return produce(_client_config(broker, request), topic, records, partition=partition, timeout=timeout)

    return run


@pytest.fixture
def kafka_consume(request: pytest.FixtureRequest) -> Callable[..., list[Record]]:
    """``kafka_consume(topic, count, broker=None, timeout=30, group_id=None)`` -> ``[Record, ...]``."""

    def run(topic: str, count: int, *, broker: Broker | str | None = None, timeout: float = 30.0,
            group_id: str | None = None) -> list[Record]:
        return consume(_client_config(broker, request), topic, count, timeout=timeout, group_id=group_id)

    return run


# ----------------------------------------------------------------------------------------- cluster

@pytest.fixture(scope="session")
def tidelog_zookeeper(tmp_path_factory: pytest.TempPathFactory):
    """A ZooKeeper for the session's clusters (each cluster has its own chroot); skips the test when
    java or mvn is missing or Maven cannot fetch ZooKeeper."""
    from tidelog.cli.zookeeper import ZooKeeperProcess, ZooKeeperUnavailable

    zookeeper = ZooKeeperProcess(tmp_path_factory.mktemp("tidelog-zookeeper"))
    try:
        zookeeper.start()
    except ZooKeeperUnavailable as e:
        pytest.skip(f"tidelog_cluster needs ZooKeeper: {e}")
    try:
        yield zookeeper
    finally:
        zookeeper.stop()


@pytest.fixture
def tidelog_cluster(request: pytest.FixtureRequest, tmp_path: Path, tidelog_zookeeper):
    """Three brokers (``broker.id`` 1..3) in one cluster, for failover tests: a
    :class:`tidelog.testing.cluster.LocalCluster` (``.bootstrap_servers``, ``.kill(i)``, ``.restart(i)``,
    ``.create_topic(...)``). ``@pytest.mark.tidelog(config={...}, brokers=N)`` configures it."""
    from tidelog.testing.cluster import LocalCluster

    _, props = _settings(request.config)
    options = _options(request)
    props.update({k: str(v) for k, v in (options.get("config") or {}).items()})
    cluster = LocalCluster(tmp_path / "tidelog-cluster", brokers=int(options.get("brokers", 3)),
                           chroot=f"/tidelog-{uuid.uuid4().hex[:12]}", zookeeper=tidelog_zookeeper,
                           overrides={"group.initial.rebalance.delay.ms": "0", **props})
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop_brokers()


__all__ = ["Record", "consume", "create_topic", "produce"]
