"""Apache Kafka's own benchmarks, kafka-producer-perf-test and kafka-consumer-perf-test, against a broker.

The tools' main classes (``org.apache.kafka.tools.ProducerPerformance`` / ``ConsumerPerformance``) run
from the oracle's jars (tests/java/pom.xml) with the JVM options their scripts give them (heap -Xmx512M,
kafka-run-class.sh's G1 options, the JIT as configured by default), and the client's default settings:
the producer sends ``records`` records of ``record_size`` random bytes as fast as it can (acks=all,
linger.ms=5, batch.size=16384), then the consumer reads them back in a group of its own. Their own
summary lines are parsed and printed as they report them.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from perf.target import oracle

_PRODUCER = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                       r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


@dataclass
class ToolFigures:
    target: str
    produce_rate: float = float("nan")
    produce_mb: float = float("nan")
    produce_p50_ms: float = float("nan")
    produce_p99_ms: float = float("nan")
    consume_rate: float = float("nan")  # nMsg.sec: over the whole run, group join included
    consume_mb: float = float("nan")
    fetch_rate: float = float("nan")  # fetch.nMsg.sec: from the first record on
    consumed: int = 0
    error: str = ""


def _run(classpath: str, tool: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    jvm, _, _ = oracle()
    cmd = jvm.java_command(classpath, jvm.TOOLS[tool], args, heap=jvm.HEAP[tool], jvm_options=())
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def run_perf_tools(target: str, classpath: str, bootstrap: str, topic: str, records: int,
                   record_size: int = 100) -> ToolFigures:
    result = ToolFigures(target)
    done = _run(classpath, "kafka-producer-perf-test",
                ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
                 "--record-size", str(record_size), "--throughput", "-1"], timeout=600)
    match = None
    for line in done.stdout.splitlines():
        match = _PRODUCER.search(line) or match
    if done.returncode != 0 or match is None:
        result.error = f"producer-perf-test exit {done.returncode}: {(done.stderr or done.stdout)[-300:]}"
        return result
    result.produce_rate, result.produce_mb = float(match.group(2)), float(match.group(3))
    result.produce_p50_ms, result.produce_p99_ms = float(match.group(6)), float(match.group(8))
    done = _run(classpath, "kafka-consumer-perf-test",
                ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
                 "--timeout", "30000"], timeout=600)
    rows = [line.split(",") for line in done.stdout.splitlines() if line.count(",") >= 9]
    data = [r for r in rows if not r[0].strip().startswith("start.time")]
    if done.returncode != 0 or not data:
        result.error = f"consumer-perf-test exit {done.returncode}: {(done.stderr or done.stdout)[-300:]}"
        return result
    fields = [x.strip() for x in data[-1]]
    result.consume_mb, result.consumed = float(fields[3]), int(fields[4])
    result.consume_rate, result.fetch_rate = float(fields[5]), float(fields[9])
    if result.consumed < records:
        result.error = f"consumed {result.consumed} of {records}"
    return result
