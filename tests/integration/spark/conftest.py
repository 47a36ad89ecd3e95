"""Spark fixtures: one local SparkSession for the whole pytest session, and helpers around a real broker.

The session is ``local[2,4]`` (two cores; a failed task is retried up to four times, as on a cluster)
with the Spark UI off, and runs its Python workers on this interpreter, so they import this checkout's
``tidelog`` and ``pyspark_tidelog``. Java comes from ``JAVA_HOME`` or ``java`` on PATH; without either
(or without pyspark installed) the Spark tests are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests import toolchain
from tidelog.testing import BrokerProcess


def _java_home() -> str | None:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        return None
    return str(Path(os.path.realpath(java)).parent.parent)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    java_home = _java_home()
    toolchain.require("java", java_home is not None, "no Java runtime (JAVA_HOME or java on PATH) for Spark")
    assert java_home is not None
    os.environ["JAVA_HOME"] = java_home
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2,4]").appName("tidelog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker per test module; retention checks every 200 ms so retention tests are quick."""
    overrides = {"log.retention.check.interval.ms": "200", "num.partitions": "1"}
    with BrokerProcess(tmp_path_factory.mktemp("spark-broker"), overrides=overrides) as b:
        yield b


@pytest.fixture
def topic_name() -> Callable[[str], str]:
    """Unique topic names, so tests sharing a broker never see each other's records."""
    return lambda prefix="t": f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1, config=config or {})]).values():
        future.result(30)


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    from confluent_kafka.admin import NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(name, total)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, values: list[bytes], *, partition: int | None = None,
            key: bytes | None = None, timestamp_ms: int | None = None,
            headers: list[tuple[str, bytes]] | None = None, batch_records: int = 10_000) -> None:
    """Produce ``values`` and wait for every acknowledgement (``batch_records``: records per batch at most)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": batch_records})
    kwargs: dict[str, object] = {}
    if partition is not None:
        kwargs["partition"] = partition
    if key is not None:
        kwargs["key"] = key
    if timestamp_ms is not None:
        kwargs["timestamp"] = timestamp_ms
    if headers is not None:
        kwargs["headers"] = headers
    for v in values:
        p.produce(topic, v, **kwargs)
    assert p.flush(30) == 0


def consume_all(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> list:
    """Every record of ``topic`` from offset 0 to the end, read with a plain confluent-kafka consumer."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, done = [], set()
    deadline = time.monotonic() + timeout_s
    while len(done) < partitions and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error() is None:
                out.append(m)
            elif m.error().code() == KafkaError._PARTITION_EOF:
                done.add(m.partition())
    c.close()
    assert len(done) == partitions, "timed out reading back"
    return out


def source(spark: object, bootstrap: str, *, stream: bool = False, **options: object):
    """``spark.read`` / ``spark.readStream`` of the tidelog format with options (``_`` in names allowed)."""
    reader = (spark.readStream if stream else spark.read).format("tidelog")  # type: ignore[attr-defined]
    reader = reader.option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value).lower() if isinstance(value, bool) else str(value))
    return reader.load()
