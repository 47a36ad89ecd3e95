"""Consumer groups on Tidelog: how fast a group rebalances, and how many offset commits per second.

Run from the repository root::

    .venv/bin/python bench/groups.py            # 3 rounds per protocol (about 3 minutes)
    .venv/bin/python bench/groups.py --quick    # 1 round, fewer commits (about 1 minute)

Rebalances. A fresh ``tidelog serve`` (:class:`tidelog.testing.BrokerProcess`) per protocol, one topic of
``--partitions`` (100) partitions and a group of ``--members`` (10) confluent-kafka consumers, each in its
own process (``bench/groups.py --member``), polling every 20 ms and reporting each change of its
assignment with the CLOCK_MONOTONIC time of the rebalance callback that caused it. The group counts as
stable when every live member has reported an assignment and those assignments split the topic's
partitions exactly (each partition owned by exactly one live member): every member then consumes its new
share. Measured, from the event to that moment:

* ``start``: the 10 members subscribe at once (after each has built its client) until the first stable
  state;
* ``join``: an 11th member subscribes (timed from its ``subscribe()``);
* ``leave``: a member closes cleanly (LeaveGroup / a heartbeat with epoch -1);
* ``kill``: a member gets SIGKILL; nothing tells the broker, so the time is dominated by the session
  timeout, printed next to it.

Each round does join, leave, join, kill (two join samples per round), each event after a random pause
of 0.2 s to 0.2 s + one heartbeat interval: a stable state is reached right after a heartbeat, so an
event fired at once would always fall at the same point of the members' heartbeat cycle. The classic protocol uses the
client's ``session.timeout.ms`` / ``heartbeat.interval.ms`` (``--session-timeout-ms`` 6000, Kafka's
``group.min.session.timeout.ms``; ``--heartbeat-interval-ms`` 2000) and ``--assignor`` (range, eager).
The KIP-848 protocol (``group.protocol=consumer``, skipped when the broker does not advertise
ConsumerGroupHeartbeat) takes both from the broker, so the broker is started with
``group.consumer.session.timeout.ms`` and ``group.consumer.heartbeat.interval.ms`` set to the same values
(and their minimums lowered to allow them); the broker's first server-side assignor (uniform) assigns.
``group.initial.rebalance.delay.ms`` is 0 so that ``start`` measures the protocol, not the delay.

Offset commits. One member alone in a group subscribed to the topic (so it owns every partition) commits
explicit offsets: ``--commits`` synchronous commits of one partition (each waits for its answer), the
same number of asynchronous ones (all issued, then the time until every ``on_commit`` callback arrived)
and synchronous commits of all partitions at once (offsets/s = commits/s x partitions). Every commit is
written to ``__consumer_offsets`` before it is acknowledged; the last committed offset is checked at
the end.

Nothing fails when a number gets worse. The machine may be shared: the load average is printed first.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

TOPIC = "bench-groups"
GROUP = "bench-group"
CONSUMER_GROUP_HEARTBEAT = 68
_QUIET = logging.getLogger("bench.groups.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


# ---------------------------------------------------------------------------------------- member process


def member_main(spec: dict) -> int:
    """A group member: build the consumer, say "ready", subscribe on "go", report assignments as JSON
    lines on stdout, close cleanly on "close" (or when stdin ends)."""
    conf = dict(spec["conf"], logger=_QUIET)
    changed_at: list[float] = []

    def on_change(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        changed_at.append(time.monotonic())

    consumer = Consumer(conf)
    go, stop = threading.Event(), threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "go":
                go.set()
            elif line.strip() == "close":
                break
        stop.set()
        go.set()

    threading.Thread(target=read_commands, daemon=True).start()
    emit({"event": "ready"})
    go.wait()
    if stop.is_set():
        consumer.close()
        return 0
    consumer.subscribe([spec["topic"]], on_assign=on_change, on_revoke=on_change, on_lost=on_change)
    emit({"event": "subscribed", "t": time.monotonic()})
    last: list[int] | None = None
    while not stop.is_set():
        consumer.poll(0.02)
        if changed_at:
            at = changed_at[-1]
            changed_at.clear()
            current = sorted(tp.partition for tp in consumer.assignment())
            if current != last:
                emit({"event": "assignment", "t": at, "partitions": current})
                last = current
    consumer.close()
    emit({"event": "closed", "t": time.monotonic()})
    return 0


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------- driving members


@dataclass
class Member:
    name: str
    proc: subprocess.Popen
    ready: threading.Event = field(default_factory=threading.Event)
    subscribed_at: float | None = None
    assignment: list[int] | None = None
    assigned_at: float = 0.0
    alive: bool = True
    stderr: list[str] = field(default_factory=list)


class Group:
    """The member processes of one group and what they reported."""

    def __init__(self, bootstrap: str, partitions: int, conf: dict) -> None:
        self.bootstrap, self.partitions, self.conf = bootstrap, partitions, conf
        self.members: list[Member] = []
        self.cond = threading.Condition()
        self._serial = 0

    def spawn(self) -> Member:
        self._serial += 1
        name = f"member-{self._serial}"
        spec = {"topic": TOPIC, "conf": dict(self.conf, **{"bootstrap.servers": self.bootstrap, "client.id": name})}
        proc = subprocess.Popen([sys.executable, __file__, "--member", json.dumps(spec)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        member = Member(name, proc)
        threading.Thread(target=self._read, args=(member,), daemon=True).start()
        threading.Thread(target=self._drain, args=(member,), daemon=True).start()
        self.members.append(member)
        return member

    def _read(self, member: Member) -> None:
        assert member.proc.stdout is not None
        for line in member.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                if event["event"] == "ready":
                    member.ready.set()
                elif event["event"] == "subscribed":
                    member.subscribed_at = event["t"]
                elif event["event"] == "assignment":
                    member.assignment, member.assigned_at = event["partitions"], event["t"]
                elif event["event"] == "closed":
                    member.alive = False
                self.cond.notify_all()
        with self.cond:
            member.alive = False
            self.cond.notify_all()

    def _drain(self, member: Member) -> None:
        assert member.proc.stderr is not None
        for line in member.proc.stderr:
            member.stderr = [*member.stderr, line][-20:]

    def command(self, members: list[Member], line: str) -> None:
        for m in members:
            assert m.proc.stdin is not None
            m.proc.stdin.write(line + "\n")
            m.proc.stdin.flush()

    def start(self, count: int, timeout: float = 60.0) -> list[Member]:
        """Spawn ``count`` members, wait until each has built its client, then let them subscribe together."""
        new = [self.spawn() for _ in range(count)]
        deadline = time.monotonic() + timeout
        for m in new:
            if not m.ready.wait(max(deadline - time.monotonic(), 0.1)):
                raise RuntimeError(f"{m.name} did not start:\n{''.join(m.stderr)}")
        self.command(new, "go")
        with self.cond:
            self.cond.wait_for(lambda: all(m.subscribed_at is not None for m in new), timeout)
        return new

    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive]

    def wait_stable(self, since: float, timeout: float = 90.0) -> float:
        """Seconds from ``since`` until the live members' assignments split every partition exactly."""
        def stable() -> bool:
            live = self.live()
            seen: list[int] = []
            for m in live:
                if not m.assignment:
                    return False
                seen += m.assignment
            return len(seen) == self.partitions and set(seen) == set(range(self.partitions))

        with self.cond:
            if not self.cond.wait_for(stable, timeout):
                states = {m.name: (m.alive, len(m.assignment or ())) for m in self.members}
                raise RuntimeError(f"group not stable after {timeout} s: {states}")
            return max(m.assigned_at for m in self.live()) - since

    def close(self, member: Member) -> float:
        """Ask ``member`` to close cleanly; returns when the request was sent."""
        at = time.monotonic()
        self.command([member], "close")
        member.alive = False  # it owns nothing from now on (its revocation comes before LeaveGroup)
        return at

    def kill(self, member: Member) -> float:
        at = time.monotonic()
        member.proc.send_signal(signal.SIGKILL)
        with self.cond:
            member.alive = False
        member.proc.wait()
        return at

    def shutdown(self) -> None:
        for m in self.members:
            if m.proc.poll() is None:
                try:
                    self.command([m], "close")
                except (BrokenPipeError, OSError):
                    pass
        for m in self.members:
            try:
                m.proc.wait(30)
            except subprocess.TimeoutExpired:
                m.proc.kill()
                m.proc.wait()


def broker_view(admin: AdminClient, expected_members: int, timeout: float = 10.0) -> str:
    """The broker's word on the group once the members are stable (a sanity check, not timed)."""
    deadline = time.monotonic() + timeout
    state = "?"
    while time.monotonic() < deadline:
        try:
            d = admin.describe_consumer_groups([GROUP], request_timeout=10)[GROUP].result()
        except KafkaException as e:
            state = str(e)
        else:
            state = f"{d.state.name} with {len(d.members)} members"
            if d.state == ConsumerGroupState.STABLE and len(d.members) == expected_members:
                return "ok"
        time.sleep(0.05)
    return f"broker says {state}, expected STABLE with {expected_members}"


# ---------------------------------------------------------------------------------------- scenarios


@dataclass
class Row:
    protocol: str
    event: str
    samples: list[float] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)


def rebalances(bootstrap: str, protocol: str, args: argparse.Namespace) -> list[Row]:
    if protocol == "classic":
        conf = {"group.id": GROUP, "group.protocol": "classic", "session.timeout.ms": args.session_timeout_ms,
                "heartbeat.interval.ms": args.heartbeat_interval_ms,
                "partition.assignment.strategy": args.assignor}
    else:
        conf = {"group.id": GROUP, "group.protocol": "consumer"}
    conf.update({"enable.auto.commit": False, "auto.offset.reset": "latest"})
    n = args.members
    rows = {e: Row(protocol, e) for e in (f"start: {n} members subscribe", f"join: {n} -> {n + 1}",
                                          f"leave (close): {n + 1} -> {n}", f"kill (SIGKILL): {n + 1} -> {n}")}
    start_row, join_row, leave_row, kill_row = rows.values()
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET})
    group = Group(bootstrap, args.partitions, conf)
    try:
        members = group.start(n)
        start_row.samples.append(group.wait_stable(min(m.subscribed_at or 0.0 for m in members)))
        _check(start_row, broker_view(admin, n))
        rng = random.Random(args.seed)
        for r in range(args.rounds):
            print(f"  {protocol}: round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
            for row, leave in ((join_row, None), (leave_row, "close"), (join_row, None), (kill_row, "kill")):
                # A stable state is reached right after a heartbeat, and the members heartbeat in step:
                # an event right away would always hit the same phase of their heartbeat cycle.
                time.sleep(rng.uniform(0.2, 0.2 + args.heartbeat_interval_ms / 1000))
                if leave is None:
                    [new] = group.start(1)
                    assert new.subscribed_at is not None
                    row.samples.append(group.wait_stable(new.subscribed_at))
                    _check(row, broker_view(admin, n + 1))
                    continue
                victim = group.live()[len(group.live()) // 2]
                at = group.close(victim) if leave == "close" else group.kill(victim)
                row.samples.append(group.wait_stable(at))
                _check(row, broker_view(admin, n))
    finally:
        group.shutdown()
    return list(rows.values())


def _check(row: Row, verdict: str) -> None:
    if verdict != "ok":
        row.notes.add(verdict)


@dataclass
class CommitRow:
    protocol: str
    mode: str
    commits: int
    seconds: float
    partitions: int


def commits(bootstrap: str, protocol: str, args: argparse.Namespace) -> list[CommitRow]:
    done: list[int] = []
    errors: list[str] = []

    def on_commit(err, partitions) -> None:
        if err is not None:
            errors.append(str(err))
        done.append(1)

    conf = {"bootstrap.servers": bootstrap, "group.id": f"committer-{protocol}", "group.protocol": protocol,
            "enable.auto.commit": False, "auto.offset.reset": "latest", "on_commit": on_commit, "logger": _QUIET}
    c = Consumer(conf)
    rows = []
    try:
        c.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while len(c.assignment()) < args.partitions:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the committer got {len(c.assignment())} of {args.partitions} partitions")
            c.poll(0.05)
        n = args.commits
        offset = 0

        start = time.perf_counter()
        for _ in range(n):
            offset += 1
            c.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
        rows.append(CommitRow(protocol, "sync, 1 partition", n, time.perf_counter() - start, 1))

        done.clear()
        start = time.perf_counter()
        for _ in range(n):
            offset += 1
            c.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=True)
            c.poll(0)
        while len(done) < n:
            c.poll(0.01)
            if time.perf_counter() - start > 120:
                raise RuntimeError(f"only {len(done)} of {n} async commits completed")
        rows.append(CommitRow(protocol, "async, 1 partition", n, time.perf_counter() - start, 1))

        many = max(n // 10, 10)
        start = time.perf_counter()
        for _ in range(many):
            offset += 1
            c.commit(offsets=[TopicPartition(TOPIC, p, offset) for p in range(args.partitions)], asynchronous=False)
        rows.append(CommitRow(protocol, f"sync, {args.partitions} partitions", many, time.perf_counter() - start,
                              args.partitions))
        if errors:
            raise RuntimeError(f"{len(errors)} async commits failed, e.g. {errors[0]}")
        [tp] = c.committed([TopicPartition(TOPIC, 0)], timeout=10)
        if tp.offset != offset:
            raise RuntimeError(f"committed offset is {tp.offset}, expected {offset}")
    finally:
        c.close()
    return rows


# ---------------------------------------------------------------------------------------- running


def supports_kip848(bootstrap: str) -> bool:
    with WireClient.connect(bootstrap) as client:
        response = client.request(ApiVersionsRequest(), 0)
    return any(k.api_key == CONSUMER_GROUP_HEARTBEAT for k in response.api_keys)


def run_protocol(protocol: str, args: argparse.Namespace, tmp: Path) -> tuple[list[Row], list[CommitRow], str]:
    overrides = {
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": str(min(6000, args.session_timeout_ms)),
        "group.consumer.session.timeout.ms": str(args.session_timeout_ms),
        "group.consumer.min.session.timeout.ms": str(min(args.session_timeout_ms, 45_000)),
        "group.consumer.heartbeat.interval.ms": str(args.heartbeat_interval_ms),
        "group.consumer.min.heartbeat.interval.ms": str(min(args.heartbeat_interval_ms, 5000)),
    }
    with BrokerProcess(tmp / protocol, overrides=overrides) as broker:
        if protocol == "consumer" and not supports_kip848(broker.bootstrap):
            return [], [], "the broker does not advertise ConsumerGroupHeartbeat (KIP-848): skipped"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "logger": _QUIET})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(30)
        rows = rebalances(broker.bootstrap, protocol, args)
        commit_rows = commits(broker.bootstrap, protocol, args)
    return rows, commit_rows, ""


def print_tables(args: argparse.Namespace, rows: list[Row], commit_rows: list[CommitRow], skipped: list[str]) -> None:
    print()
    print(f"Rebalance: time until the live members' assignments split all {args.partitions} partitions "
          "(seconds; median, min, max)")
    header = f"{'protocol':<9} {'event':<26} {'session':>8} {'heartbeat':>9} {'n':>3} {'median':>7} {'min':>7} {'max':>7}"
    print(header)
    print("-" * len(header))
    for row in rows:
        s = sorted(row.samples)
        timeouts = (f"{args.session_timeout_ms / 1000:.0f} s", f"{args.heartbeat_interval_ms / 1000:.0f} s")
        print(f"{row.protocol:<9} {row.event:<26} {timeouts[0]:>8} {timeouts[1]:>9} {len(s):>3} "
              f"{statistics.median(s):>7.2f} {s[0]:>7.2f} {s[-1]:>7.2f}")
        for note in sorted(row.notes):
            print(f"{'':<10}! {note}")
    print("(session / heartbeat: the classic client's session.timeout.ms / heartbeat.interval.ms; for the "
          "consumer protocol the broker's group.consumer.session.timeout.ms / heartbeat.interval.ms)")
    print()
    print("Offset commits (one member committing explicit offsets)")
    header = f"{'protocol':<9} {'mode':<26} {'commits':>8} {'seconds':>8} {'commits/s':>10} {'offsets/s':>10} {'ms each':>8}"
    print(header)
    print("-" * len(header))
    for c in commit_rows:
        rate = c.commits / c.seconds
        print(f"{c.protocol:<9} {c.mode:<26} {c.commits:>8} {c.seconds:>8.2f} {rate:>10,.0f} "
              f"{rate * c.partitions:>10,.0f} {1000 * c.seconds / c.commits:>8.2f}")
    for line in skipped:
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--member", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="1 round per protocol and 300 commits per mode")
    ap.add_argument("--protocols", default="classic,consumer", help="classic and/or consumer (default both)")
    ap.add_argument("--members", type=int, default=10, help="group size before a join (default 10)")
    ap.add_argument("--partitions", type=int, default=100, help="partitions of the topic (default 100)")
    ap.add_argument("--rounds", type=int, help="rounds of join, leave, join, kill (default 3; --quick 1)")
    ap.add_argument("--commits", type=int, help="commits per mode (default 2000; --quick 300)")
    ap.add_argument("--session-timeout-ms", type=int, default=6000, help="default 6000")
    ap.add_argument("--heartbeat-interval-ms", type=int, default=2000, help="default 2000")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random pauses between events (default 1)")
    ap.add_argument("--assignor", default="range", help="classic partition.assignment.strategy (default range)")
    args = ap.parse_args(argv)
    if args.member is not None:
        return member_main(json.loads(args.member))
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.commits = args.commits or (300 if args.quick else 2000)
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    client_version = confluent_kafka.version()
    client_version = client_version[0] if isinstance(client_version, tuple) else client_version
    print(f"Python {platform.python_version()}, confluent-kafka {client_version} "
          f"(librdkafka {confluent_kafka.libversion()[0]}), {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{args.members} members over {args.partitions} partitions, {args.rounds} round(s), "
          f"{args.commits} commits per mode", flush=True)
    rows: list[Row] = []
    commit_rows: list[CommitRow] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-groups-") as tmp:
        for protocol in protocols:
            print(f"{protocol}: running (load average {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
            r, c, skip = run_protocol(protocol, args, Path(tmp))
            rows += r
            commit_rows += c
            if skip:
                skipped.append(f"{protocol}: {skip}")
    print_tables(args, rows, commit_rows, skipped)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
