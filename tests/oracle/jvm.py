"""Run Java on the oracle's classpath: Kafka's tools the way its bin/*.sh scripts do, and our programs.

    run_tool(classpath, "kafka-topics", "--bootstrap-server", broker.bootstrap, "--list")
    run_java(classpath, "tidelog.oracle.Clients", broker.bootstrap, "t", "admin")

Both wait for the JVM to exit and return a ``subprocess.CompletedProcess`` (text stdout and stderr).
:class:`JavaProcess` starts one in the background (a consumer that runs while something else
produces) and reads its stdout lines as they come. Logging (slf4j-simple) goes to stderr at WARN.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Sequence

#: bin/<script>.sh of Apache Kafka 4.x -> the main class it runs.
TOOLS = {
    "kafka-server-start": "kafka.Kafka",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
}

#: KAFKA_HEAP_OPTS the scripts set; kafka-run-class.sh's own default is -Xmx256M.
HEAP = {
    "kafka-server-start": ["-Xmx1G", "-Xms1G"],
    "kafka-console-producer": ["-Xmx512M"],
    "kafka-console-consumer": ["-Xmx512M"],
    "kafka-console-share-consumer": ["-Xmx512M"],
    "kafka-producer-perf-test": ["-Xmx512M"],
    "kafka-consumer-perf-test": ["-Xmx512M"],
    "kafka-verifiable-producer": ["-Xmx512M"],
    "kafka-verifiable-consumer": ["-Xmx512M"],
}
DEFAULT_HEAP = ["-Xmx256M"]

#: KAFKA_JVM_PERFORMANCE_OPTS of kafka-run-class.sh.
PERFORMANCE_OPTS = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                    "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"]


#: Added for every JVM but the broker's: short-lived programs spend their first seconds compiling, and
#: the C1 compiler alone halves a tool's start-up on a busy 2-core machine (~1 s instead of ~2 s). The
#: test suite's brokers get it too (KafkaProcess.jit_options, set by tests/oracle/fixtures.py).
QUICK_START_OPTS = ["-XX:TieredStopAtLevel=1"]


def java_command(classpath: str, main_class: str, args: Sequence[str], *,
                 heap: Sequence[str] = DEFAULT_HEAP, jvm_options: Sequence[str] = QUICK_START_OPTS) -> list[str]:
    return ["java", *heap, *PERFORMANCE_OPTS, *jvm_options, "-cp", classpath, main_class, *map(str, args)]


def tool_command(classpath: str, tool: str, args: Sequence[str]) -> list[str]:
    """The command bin/<tool>.sh runs (``tool`` is the script name without .sh). The broker
    (kafka-server-start) runs with the JIT as configured by default; other tools start quick."""
    options = () if tool == "kafka-server-start" else QUICK_START_OPTS
    return java_command(classpath, TOOLS[tool], args, heap=HEAP.get(tool, DEFAULT_HEAP), jvm_options=options)


def run_java(classpath: str, main_class: str, *args: object, timeout: float = 180, stdin: str | None = None,
             heap: Sequence[str] = DEFAULT_HEAP) -> subprocess.CompletedProcess[str]:
    cmd = java_command(classpath, main_class, [str(a) for a in args], heap=heap)
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)


def run_tool(classpath: str, tool: str, *args: object, timeout: float = 120,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run bin/<tool>.sh's main class with ``args`` and wait for it."""
    cmd = tool_command(classpath, tool, [str(a) for a in args])
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)


def json_lines(stdout: str) -> list[dict]:
    """The JSON objects of a program's stdout, one per line (other lines are ignored)."""
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


class JavaProcess:
    """A Java program running in the background; its stdout lines are queued as they arrive.

    Not thread-safe: one test thread drives it. ``stop()`` sends SIGTERM (the JVM runs its shutdown
    hooks, as Ctrl-C would) and waits; ``kill()`` sends SIGKILL.
    """

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self._readers = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr_lines), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @classmethod
    def tool(cls, classpath: str, tool: str, *args: object) -> JavaProcess:
        return cls(tool_command(classpath, tool, [str(a) for a in args]))

    @classmethod
    def program(cls, classpath: str, main_class: str, *args: object) -> JavaProcess:
        return cls(java_command(classpath, main_class, [str(a) for a in args]))

    @staticmethod
    def _pump(stream, lines: queue.Queue[str]) -> None:
        for line in stream:
            lines.put(line)

    @staticmethod
    def _drain(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    def next_line(self, timeout: float) -> str | None:
        """The next stdout line, or None if none came within ``timeout`` seconds (or the JVM ended)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        self.stdout_lines.append(line)
        return line

    def wait_for(self, predicate, timeout: float) -> dict | None:
        """Read JSON stdout lines until one satisfies ``predicate``; that one, or None at the deadline."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            line = self.next_line(min(left, 0.5))
            if line is None:
                if self.proc.poll() is not None and self.lines.empty():
                    return None
                continue
            if line.lstrip().startswith("{") and predicate(event := json.loads(line)):
                return event
        return None

    def drain(self) -> list[str]:
        """Every stdout line read so far plus those still queued."""
        while self.next_line(0) is not None:
            pass
        return self.stdout_lines

    def wait(self, timeout: float) -> int:
        """Wait for the JVM to exit by itself and for its last output lines."""
        code = self.proc.wait(timeout)
        self._finish_reading()
        return code

    def _finish_reading(self) -> None:
        """Wait until the JVM's last output lines are queued (``next_line`` still returns them)."""
        for reader in self._readers:
            reader.join(5)

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._finish_reading()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stderr_tail(self, lines: int = 40) -> str:
        return "".join(self.stderr_lines[-lines:])


__all__ = ["TOOLS", "JavaProcess", "java_command", "json_lines", "run_java", "run_tool", "tool_command"]
