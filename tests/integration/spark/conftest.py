"""Spark fixtures: one local SparkSession for the whole pytest session, and helpers around a real broker.

The session is ``local[2,4]`` (two cores; a failed task is retried up to four times, as on a cluster)
with the Spark UI off, and runs its Python workers on this interpreter, so they import this checkout's
``tidelog`` and ``pyspark_tidelog``. Java comes from ``JAVA_HOME`` or ``java`` on PATH; without either
(or without pyspark installed) the Spark tests are skipped with the reason (failed in CI).

When a selected test is marked ``kafka_connector`` the session also carries Spark's own JVM Kafka
connector for the installed PySpark (``tidelog.spark.kafka_connector``), which Spark downloads from
Maven Central into its Ivy cache (``~/.ivy2.5.2``) the first time: about 21 MB. If it cannot be had,
the session starts without it and only those tests fail, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from tests import toolchain
from tests.integration import kafka_io


def _java_home() -> str | None:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        return None
    return str(Path(os.path.realpath(java)).parent.parent)


KAFKA_CONNECTOR_MARKER = "kafka_connector"
#: Why Spark's Kafka connector is not in the session, when it is not ("" when it is or was not wanted).
kafka_connector_problem: list[str] = []


def _kafka_connector_wanted(session: pytest.Session) -> bool:
    return any(item.get_closest_marker(KAFKA_CONNECTOR_MARKER) for item in session.items)


def _kafka_connector_settings() -> tuple[dict[str, str], str]:
    """The connector's session settings, or why it cannot be fetched (checked before Spark tries, whose
    own failure is an Ivy report and "Java gateway process exited")."""
    from tidelog.spark.kafka_connector import (
        ivy_jar_name,
        kafka_connector_conf,
        kafka_connector_coordinate,
        maven_central_url,
    )

    coordinate = kafka_connector_coordinate()
    cached = [Path.home() / d / "jars" / ivy_jar_name(coordinate) for d in (".ivy2.5.2", ".ivy2")]
    if any(p.exists() for p in cached):
        return kafka_connector_conf(), ""
    url = maven_central_url(coordinate, "pom")
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=30):
            pass
    except urllib.error.HTTPError as e:
        return {}, (f"Spark's Kafka connector {coordinate} (for the installed pyspark) is not on Maven Central: "
                    f"HTTP {e.code} for {url}. Install a PySpark release whose JVM artifacts are published "
                    "(pyproject.toml's dev extra pins one).")
    except OSError as e:
        return {}, f"cannot reach Maven Central for Spark's Kafka connector {coordinate} ({url}): {e}"
    return kafka_connector_conf(), ""


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[object]:
    java_home = _java_home()
    toolchain.require("java", java_home is not None, "no Java runtime (JAVA_HOME or java on PATH) for Spark")
    assert java_home is not None
    os.environ["JAVA_HOME"] = java_home
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    def builder(extra: dict[str, str]):
        b = (SparkSession.builder.master("local[2,4]").appName("tidelog-tests")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.streaming.stopTimeout", "30s"))
        for key, value in extra.items():
            b = b.config(key, value)
        return b

    kafka_connector_problem.clear()
    extra: dict[str, str] = {}
    if _kafka_connector_wanted(request.session):
        extra, problem = _kafka_connector_settings()
        if problem:
            kafka_connector_problem.append(problem)
    try:
        session = builder(extra).getOrCreate()
    except Exception as e:
        if not extra:
            raise
        kafka_connector_problem.append(f"Spark did not start with {extra} (the Ivy report is in the captured "
                                       f"stderr): {e}")
        session = builder({k: "" for k in extra}).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def kafka_spark(spark: object) -> object:
    """The session, for tests of ``format("kafka")``: fails the test when the connector is missing."""
    if kafka_connector_problem:
        pytest.fail("; ".join(kafka_connector_problem), pytrace=False)
    return spark


#: The broker of every Spark test module (its ``BROKER_OVERRIDES``: the shared ``broker`` of tests/fixtures.py):
#: retention checks every 200 ms so retention tests are quick, one partition per auto-created topic.
SPARK_BROKER_OVERRIDES = {"log.retention.check.interval.ms": "200", "num.partitions": "1"}


@pytest.fixture
def topic_name() -> Callable[[str], str]:
    """Unique topic names, so tests sharing a broker never see each other's records."""
    return lambda prefix="t": f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    kafka_io.create_topic(bootstrap, name, partitions, config, timeout=30)


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    from confluent_kafka.admin import NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(name, total)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, values: list[bytes], *, partition: int | None = None,
            key: bytes | None = None, timestamp_ms: int | None = None,
            headers: list[tuple[str, bytes]] | None = None, batch_records: int = 10_000) -> None:
    """Produce ``values`` and wait for every acknowledgement (``batch_records``: records per batch at most)."""
    kafka_io.produce(bootstrap, topic, values, partition=partition, key=key, timestamp_ms=timestamp_ms,
                     headers=headers, config={"batch.num.messages": batch_records}, timeout=30)


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


def source(spark: object, bootstrap: str, *, stream: bool = False, fmt: str = "tidelog", **options: object):
    """``spark.read`` / ``spark.readStream`` of the tidelog (or ``fmt``) format with options."""
    reader = (spark.readStream if stream else spark.read).format(fmt)  # type: ignore[attr-defined]
    reader = reader.option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value).lower() if isinstance(value, bool) else str(value))
    return reader.load()


class Pipeline:
    """A streaming query from a tidelog (or ``fmt``) source into Parquet, restartable from its checkpoint."""

    def __init__(self, spark, bootstrap: str, tmp: Path, *, fmt: str = "tidelog", **options: object) -> None:
        self.spark, self.bootstrap, self.fmt, self.options = spark, bootstrap, fmt, options
        self.out, self.checkpoint = tmp / "out", tmp / "checkpoint"
        self.query = None

    def start(self, trigger: dict | None = None, **more: object):
        df = source(self.spark, self.bootstrap, stream=True, fmt=self.fmt, **{**self.options, **more})
        writer = (df.select("topic", "partition", "offset", "value").writeStream.format("parquet")
                  .option("path", str(self.out)).option("checkpointLocation", str(self.checkpoint)))
        if trigger:
            writer = writer.trigger(**trigger)
        self.query = writer.start()
        return self.query

    def run_all(self, **more: object) -> list[int]:
        """Start, process everything available, stop; returns the sizes of the data batches."""
        q = self.start(**more)
        try:
            q.processAllAvailable()
        finally:
            q.stop()
        return self.batch_sizes(q)

    @staticmethod
    def batch_sizes(q) -> list[int]:
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    def rows(self) -> list[tuple[str, int, int]]:
        if not self.out.exists():
            return []
        df = self.spark.read.parquet(str(self.out))
        return sorted((r.topic, r.partition, r.offset) for r in df.select("topic", "partition", "offset").collect())

    def offsets(self, batch_id: int) -> dict:
        """The source offset Spark journaled for a batch (the third line of offsets/<id>)."""
        return json.loads((self.checkpoint / "offsets" / str(batch_id)).read_text().splitlines()[2])


def assert_exact(rows: list[tuple[str, int, int]], expected: dict[tuple[str, int], range]) -> None:
    """Every (topic, partition) holds exactly the given offsets, once each."""
    assert len(rows) == len(set(rows)), "duplicate records"
    got: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in rows:
        got.setdefault((topic, partition), []).append(offset)
    assert {k: v for k, v in got.items()} == {k: list(r) for k, r in expected.items() if len(r)}
