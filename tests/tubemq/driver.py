"""Run the real TubeMQ Java client (tests/tubemq/java, ``tidelog.tubemq.Driver``) and read what it reports.

``produce`` and ``bench`` run to completion; :class:`Member` is a running consumer (pull or push)
whose consumed partitions and records a reader thread collects, closed cleanly by closing its
stdin or killed with SIGKILL. Not thread-safe (one test at a time).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.fixtures import FAST_GROUPS
from tests.oracle import maven
from tidelog.testing.tubemq import TUBEMQ_OVERRIDES

#: The broker of a TubeMQ test module (its ``BROKER_OVERRIDES``, tests/fixtures.py): TubeMQ listeners on,
#: and KIP-848 sessions and heartbeats short enough that rebalances after a killed member take seconds.
TUBE_BROKER_OVERRIDES = {**TUBEMQ_OVERRIDES, **FAST_GROUPS}

#: The Maven project of the TubeMQ Java client and our driver (built like tests/java, by tests/oracle/maven.py).
JAVA_PROJECT = Path(__file__).resolve().parent / "java"

#: JVM options: the client's threads start fast with C1 only, and a small heap is plenty.
JVM_OPTIONS = ["-XX:TieredStopAtLevel=1", "-Xmx256m", "-XX:+UseSerialGC"]
MAIN = "tidelog.tubemq.Driver"


def build() -> str:
    """Compile tests/tubemq/java if it changed (once across processes); its ``java -cp`` classpath."""
    return maven.build(JAVA_PROJECT)


def command(classpath: str, *args: object, jvm_options: list[str] = JVM_OPTIONS) -> list[str]:
    return ["java", *jvm_options, "-cp", classpath, MAIN, *map(str, args)]


class JavaTube:
    """The Java client's subcommands against one TubeMQ master address."""

    def __init__(self, classpath: str, master: str, *, user: str | None = None, password: str | None = None) -> None:
        self.classpath = classpath
        self.master = master
        #: With ``user``: the clients authenticate (TubeClientConfig.setAuthenticInfo) as user/password.
        self.env = None if user is None else {**os.environ, "TIDELOG_TUBE_USER": user,
                                              "TIDELOG_TUBE_PASSWORD": password or ""}

    def produce(self, topic: str, messages: list[dict], heartbeat_ms: int = 500, timeout: float = 120) -> list[dict]:
        """Send ``messages`` (``{"body", "attributes": [[k, v]], "msgType", "msgTime"}``) in order with a
        synchronous producer; one result per message."""
        proc = self.run_producer(topic, messages, heartbeat_ms, timeout)
        if proc.returncode != 0:
            raise AssertionError(f"produce exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return [json.loads(line) for line in proc.stdout.splitlines()]

    def run_producer(self, topic: str, messages: list[dict], heartbeat_ms: int = 500,
                     timeout: float = 120) -> subprocess.CompletedProcess[str]:
        text = "".join(json.dumps(m) + "\n" for m in messages)
        return subprocess.run(command(self.classpath, "produce", self.master, topic, heartbeat_ms), input=text,
                              capture_output=True, text=True, timeout=timeout, env=self.env)

    def bench(self, topic: str, count: int, size: int, window: int, warmup: int = 0, timeout: float = 600) -> dict:
        """Asynchronous sends of ``count`` messages of ``size`` bytes, ``window`` in flight, after ``warmup``
        untimed ones: ``{"sent", "failed", "seconds"}``."""
        proc = subprocess.run(command(self.classpath, "bench", self.master, topic, count, size, window, warmup,
                                      jvm_options=["-Xmx512m"]),
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"bench exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.splitlines()[-1])

    def drain(self, group: str, topic: str, count: int, timeout: float = 600) -> dict:
        """A pull consumer reads ``count`` messages: ``{"received", "bytes", "seconds"}`` (first to last message)."""
        proc = subprocess.run(command(self.classpath, "drain", self.master, group, topic, count,
                                      jvm_options=["-Xmx512m"]),
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"drain exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.splitlines()[-1])

    def member(self, group: str, topics: list[str], name: str, *, kind: str = "pull", heartbeat_ms: int = 500,
               start: str = "first", msg_types: list[str] | None = None) -> Member:
        """A consumer process; ``msg_types`` subscribes with a $msgType$ filter."""
        filters = [",".join(msg_types)] if msg_types else []
        return Member(command(self.classpath, kind, self.master, group, ",".join(topics), heartbeat_ms, start,
                              *filters), name, self.env)


class Member:
    """A running TubeMQ consumer: ``partitions`` is the latest set of (topic, partition) it consumes,
    ``records`` what it consumed (dicts as the driver prints them), ``events`` everything."""

    def __init__(self, cmd: list[str], name: str, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.partitions: set[tuple[str, int]] = set()
        self.history: list[set[tuple[str, int]]] = []
        self.records: list[dict] = []
        self.events: list[dict] = []
        self.stderr: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._lock:
                self.events.append(event)
                if event["event"] == "partitions":
                    self.partitions = {(t, p) for t, p in event["partitions"]}
                    self.history.append(set(self.partitions))
                elif event["event"] == "record":
                    self.records.append(event)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def wait_for(self, condition: Callable[[Member], bool], timeout: float = 60, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if condition(self):
                    return
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited {self.proc.returncode}:\n{''.join(self.stderr)[-4000:]}")
            time.sleep(0.05)
        raise AssertionError(f"{self.name}: timed out waiting for {what or condition}; partitions {self.partitions}, "
                             f"{len(self.records)} records\n{''.join(self.stderr)[-3000:]}")

    def close(self, timeout: float = 60) -> None:
        """Close cleanly (the client unregisters its partitions and leaves the group)."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.name} did not close in {timeout} s") from None
        if self.proc.returncode != 0:
            raise AssertionError(f"{self.name} exited {self.proc.returncode}:\n{''.join(self.stderr)[-4000:]}")

    def kill(self) -> None:
        """SIGKILL: the client vanishes without unregistering or leaving."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> Member:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()


def wait_until(condition: Callable[[], bool], timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or condition}")


__all__ = ["JAVA_PROJECT", "JavaTube", "Member", "build", "command", "wait_until"]
