"""Messages/s of 1 KB through Tidelog's TubeMQ front end against the same bytes through its Kafka front end.

Run from the repository root (needs java 17+ and mvn for the real TubeMQ client; builds tests/tubemq/java
once)::

    .venv/bin/python bench/tubemq.py            # 20,000 messages per phase (about a minute on 2 cores)
    .venv/bin/python bench/tubemq.py --quick    # 3,000 messages per phase

One ``tidelog serve`` (uvloop, fresh data dir, TubeMQ listeners on) serves every phase, each on a fresh
one-partition topic, so the two front ends write to and read from the same kind of log:

* **TubeMQ produce**: the real Java client (org.apache.inlong:tubemq-client 1.13.0), asynchronous
  sends of 1 KB messages with ``--window`` in flight, timed after a quarter as many untimed ones (JIT). TubeMQ's protocol carries one message per request,
  so the broker appends one record batch per message.
* **TubeMQ produce, Tidelog's wire client**: the same sends from ``tidelog.testing.tubemq.TubeWireClient``
  in its own process, 500 requests pipelined at a time: what the front end takes when the client is cheap
  (the Java client spends more CPU per message than the broker does).
* **Kafka produce, one record per request**: confluent-kafka with ``linger.ms=0`` and
  ``batch.num.messages=1``, the same unit of work per request as TubeMQ's.
* **Kafka produce, batched**: confluent-kafka as usually configured (``linger.ms=5``), many records per batch.
* **TubeMQ consume**: the Java pull consumer, confirming every pack, timed from its first message to its last.
* **Kafka consume**: a confluent-kafka consumer, timed the same way.

For each: messages/s, MB/s and the broker's CPU microseconds per message (``/proc/PID/task/*/schedstat``),
which is what separates the front ends on 2 cores where the client competes for CPU too.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.tubemq import driver
from tests.tubemq.driver import JavaTube
from tidelog.protocol.tubemq.generated import broker_service_pb2
from tidelog.protocol.tubemq.rpc import Method, Service
from tidelog.testing import BrokerProcess
from tidelog.testing.tubemq import TUBEMQ_OVERRIDES, TubeWireClient, tubemq_endpoints

MESSAGE_BYTES = 1024


def broker_cpu(pid: int) -> float:
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(FileNotFoundError, ValueError):
            total += int(stat.read_text().split()[0])
    return total / 1e9


@dataclass
class Row:
    name: str
    messages: int
    seconds: float
    cpu: float

    def line(self) -> str:
        rate = self.messages / self.seconds
        return (f"{self.name:<38} {rate:>11,.0f} {rate * MESSAGE_BYTES / 1e6:>8.1f} "
                f"{self.cpu / self.messages * 1e6:>10.0f}")


def create(admin: AdminClient, topic: str) -> None:
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)


def wire_produce(address: str, topic: str, count: int) -> None:
    """(In its own process) pipelined sends with Tidelog's TubeMQ wire client; prints the seconds taken."""
    request = broker_service_pb2.SendMessageRequestP2B(clientId="bench", topicName=topic, partitionId=0,
                                                       data=bytes(MESSAGE_BYTES), flag=0, checkSum=-1, sentAddr=1)
    with TubeWireClient.connect(address) as client:
        start = time.perf_counter()
        for done in range(0, count, 500):
            responses = client.pipeline(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, [request] * min(500, count - done))
            assert all(r.success for r in responses)
        print(time.perf_counter() - start)


def kafka_produce(bootstrap: str, topic: str, count: int, **config: object) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **config})
    value = bytes(MESSAGE_BYTES)
    failed = []
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=lambda err, _: err and failed.append(err))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(300)
    seconds = time.perf_counter() - start
    assert not failed, failed[:3]
    return seconds


def kafka_consume(bootstrap: str, topic: str, count: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    received, first = 0, None
    deadline = time.monotonic() + 300
    while received < count and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 1.0):
            if msg.error() is None:
                first = first or time.perf_counter()
                received += 1
    seconds = time.perf_counter() - (first or time.perf_counter())
    consumer.close()
    assert received == count, f"consumed {received} of {count}"
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="messages per phase (default 20,000)")
    parser.add_argument("--window", type=int, default=500, help="TubeMQ sends in flight (default 500)")
    parser.add_argument("--quick", action="store_true", help="3,000 messages per phase")
    parser.add_argument("--wire-producer", nargs=3, metavar=("ADDRESS", "TOPIC", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.wire_producer:
        address, topic, n = args.wire_producer
        wire_produce(address, topic, int(n))
        return 0
    count = 3000 if args.quick else args.messages
    missing = [c for c in ("java", "mvn") if shutil.which(c) is None]
    if missing:
        print(f"bench/tubemq.py: needs {' and '.join(missing)} for the TubeMQ Java client (tests/tubemq/java)",
              file=sys.stderr)
        return 1
    classpath = driver.build()
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-tubemq-") as tmp, \
            BrokerProcess(Path(tmp), overrides=TUBEMQ_OVERRIDES) as broker:
        master, broker_service = tubemq_endpoints(broker)
        tube = JavaTube(classpath, master)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        pid = broker.proc.pid  # type: ignore[union-attr]
        rows = []

        def phase(name: str, run) -> float:
            before = broker_cpu(pid)
            seconds = run()
            rows.append(Row(name, count, seconds, broker_cpu(pid) - before))
            return seconds

        for topic in ("bench-tubemq", "bench-tubemq-wire", "bench-kafka-single", "bench-kafka-batched"):
            create(admin, topic)

        def tubemq_produce() -> float:  # the JVM warms up (JIT, connections) on untimed messages first
            result = tube.bench("bench-tubemq", count, MESSAGE_BYTES, args.window, warmup=max(500, count // 4))
            assert result["failed"] == 0, result
            return result["seconds"]

        phase("TubeMQ produce (Java client, async)", tubemq_produce)

        def wire() -> float:
            out = subprocess.run([sys.executable, __file__, "--wire-producer", broker_service, "bench-tubemq-wire",
                                  str(count)], capture_output=True, text=True, check=True, timeout=600)
            return float(out.stdout.strip())

        phase("TubeMQ produce (Tidelog's wire client)", wire)
        phase("Kafka produce, one record per request", lambda: kafka_produce(
            broker.bootstrap, "bench-kafka-single", count, **{"linger.ms": 0, "batch.num.messages": 1,
                                                              "max.in.flight.requests.per.connection": 5}))
        phase("Kafka produce, batched (linger.ms=5)", lambda: kafka_produce(
            broker.bootstrap, "bench-kafka-batched", count, **{"linger.ms": 5}))

        def tubemq_consume() -> float:
            result = tube.drain("bench-group", "bench-tubemq", count)
            assert result["received"] >= count and result["bytes"] >= count * MESSAGE_BYTES, result
            return result["seconds"]

        phase("TubeMQ consume (Java pull consumer)", tubemq_consume)
        phase("Kafka consume (confluent-kafka)", lambda: kafka_consume(broker.bootstrap, "bench-kafka-single", count))

    print(f"{count:,} messages of {MESSAGE_BYTES} bytes per phase, one partition, tidelog serve (uvloop)")
    print(f"{'phase':<38} {'messages/s':>11} {'MB/s':>8} {'broker µs/msg':>10}")
    for row in rows:
        print(row.line())
    tubemq, wire, single, batched, tube_consume, kafka_consume_row = rows
    print(f"TubeMQ produce (Java) / Kafka one-per-request: {single.seconds / tubemq.seconds:.2f}x the rate, "
          f"(wire client) {single.seconds / wire.seconds:.2f}x; / Kafka batched: {batched.seconds / tubemq.seconds:.3f}x")
    print(f"TubeMQ consume / Kafka consume: {kafka_consume_row.seconds / tube_consume.seconds:.2f}x the rate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
