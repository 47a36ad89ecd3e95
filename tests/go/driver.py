"""Run the Go client driver's subcommands from tests and parse what they report (JSON lines).

One-shot commands (produce, consume) return their lines; ``Admin`` keeps one ``franz-admin``
process and sends it one request per call; ``Member`` is a running consumer group member whose
assignment and records are collected by a reader thread. Not thread-safe (one test at a time).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.fixtures import FAST_GROUPS

#: The broker of every Go test module (its ``BROKER_OVERRIDES``, tests/fixtures.py): the first rebalance of
#: a classic group after 300 ms, and group sessions and heartbeats short enough that rebalances take seconds.
GO_BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "300", **FAST_GROUPS}


def flags(**options: object) -> list[str]:
    """``acks="all", idempotent=True, fetch_max=3`` -> ``-acks all -idempotent -fetch-max 3``."""
    out: list[str] = []
    for name, value in options.items():
        flag = "-" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not False and value is not None:
            out += [flag, str(value)]
    return out


class GoClients:
    def __init__(self, binary: Path, bootstrap: str) -> None:
        self.binary = binary
        self.bootstrap = bootstrap

    def command(self, subcommand: str, **options: object) -> list[str]:
        return [str(self.binary), subcommand, "-brokers", self.bootstrap, *flags(**options)]

    def run(self, subcommand: str, stdin: Iterable[dict] = (), timeout: float = 90, check: bool = True,
            **options: object) -> tuple[list[dict], subprocess.CompletedProcess]:
        """Run to completion; returns the parsed stdout lines and the process (exit 0 unless ``check=False``)."""
        text = "".join(json.dumps(item) + "\n" for item in stdin)
        proc = subprocess.run(self.command(subcommand, **options), input=text, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{subcommand} exited {proc.returncode}:\n{proc.stderr}")
        return [json.loads(line) for line in proc.stdout.splitlines()], proc

    def produce(self, client: str, topic: str, records: list[dict], **options: object) -> list[dict]:
        """Produce with ``franz`` or ``sarama``; one result per record, in input order."""
        lines, _ = self.run(f"{client}-produce", stdin=records, topic=topic, **options)
        return lines

    def admin(self) -> Admin:
        return Admin(self.command("franz-admin"))

    def member(self, client: str, group: str, topics: list[str], name: str, **options: object) -> Member:
        return Member(self.command(f"{client}-group", group=group, topic=",".join(topics), name=name, **options),
                      name)


class Admin:
    """One ``franz-admin`` (kadm) process; ``call(op, **args)`` returns its answer."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def call(self, op: str, **args: object) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise AssertionError(f"franz-admin exited {self.proc.returncode}:\n{''.join(self.stderr)}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Member:
    """A consumer group member process: ``assignment`` is its latest set of (topic, partition),
    ``records`` what it consumed as (topic, partition, offset, value), ``events`` everything."""

    def __init__(self, command: list[str], name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.assignment: set[tuple[str, int]] = set()
        self.records: list[tuple[str, int, int, str]] = []
        self.events: list[dict] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            self.events.append(event)
            if event["event"] == "assigned":
                self.assignment = {(t, p) for t, p in event["partitions"]}
            elif event["event"] == "record":
                self.records.append((event["topic"], event["partition"], event["offset"], event["value"]))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def errors(self) -> list[dict]:
        return [e for e in self.events if e["event"] in ("error", "commit_error")]

    def close(self, timeout: float = 30) -> None:
        """A clean leave: stdin EOF makes the member commit, leave the group and exit 0."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        assert code == 0, f"member {self.name} exited {code}:\n{''.join(self.stderr)}"
        wait_for(lambda: bool(self.events) and self.events[-1]["event"] == "closed", 5, f"{self.name} closed")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


__all__ = ["Admin", "GoClients", "Member", "flags", "wait_for"]
