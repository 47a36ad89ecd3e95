"""How long-running ``tidelog`` client commands end: a broker killed under them (kill -9), SIGTERM to a
group consumer, Ctrl-C during ``perf``. Real ``python -m tidelog`` subprocesses and real brokers; the
group's membership and commits are read back with confluent-kafka's admin client."""

from __future__ import annotations

import logging
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.integration import kafka_io
from tests.integration.kafka_io import wait_for
from tidelog.testing import BrokerProcess

_QUIET = logging.getLogger("test_cli_lifecycle.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_FIGURES = re.compile(r"^(\d+) records (sent|consumed) in [\d.]+ s, [\d.]+ records/s \([\d.]+ MB/s\), latency avg ")
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_leftover_commands() -> Iterator[None]:
    """A failed test must not leave a command running (one that hangs is what some tests look for)."""
    yield
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def start(b: BrokerProcess, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "tidelog", *args, "--bootstrap-server", b.bootstrap],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _started.append(proc)
    return proc


def admin(b: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap, "logger": _QUIET})


def create(b: BrokerProcess, topic: str, partitions: int, records: int = 0) -> None:
    kafka_io.create_topic(admin(b), topic, partitions)
    if records:
        kafka_io.produce(b, topic, [f"r{i}" for i in range(records)], partition=[i % partitions for i in range(records)],
                         config={"logger": _QUIET})


def read_lines(proc: subprocess.Popen[str], count: int, timeout: float = 30.0) -> list[str]:
    """The first ``count`` lines of the command's stdout, without blocking past ``timeout``."""
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout

    def pump() -> None:
        for _ in range(count):
            lines.put(stdout.readline().rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return [lines.get(timeout=timeout) for _ in range(count)]


def wait_while_running(what: str, condition: Callable[[], bool], procs: list[subprocess.Popen[str]],
                       timeout: float = 30.0) -> None:
    """Wait for ``condition``; fails at once when one of ``procs`` exits first."""

    def check() -> bool:
        if condition():
            return True
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"{proc.args} exited {proc.returncode} before {what}: {proc.communicate()}")
        return False

    wait_for(check, timeout, what, interval=0.2)


def members(client: AdminClient, group: str) -> tuple[ConsumerGroupState, int]:
    d = client.describe_consumer_groups([group])[group].result(15)
    assigned = sum(1 for m in d.members if m.assignment.topic_partitions)
    return d.state, assigned


def committed(client: AdminClient, group: str) -> dict[int, int]:
    result = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def high_watermark(client: AdminClient, topic: str) -> int:
    futures = client.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})
    return next(iter(futures.values())).result(15).offset


# ------------------------------------------------------------------------------------------ lost broker


def test_consume_and_perf_report_a_lost_broker_and_exit_1(fresh_broker: BrokerProcess) -> None:
    b = fresh_broker
    create(b, "doomed", 1)
    procs = {
        "tidelog consume": start(b, "consume", "doomed", "--group", "lost-consume"),
        "tidelog perf consume": start(b, "perf", "consume", "--topic", "doomed", "--messages", "100000000",
                                      "--group", "lost-perf", "--timeout-ms", "600000"),
        "tidelog perf produce": start(b, "perf", "produce", "--topic", "doomed", "--num-records", "100000000",
                                      "--record-size", "100", "--throughput", "1000"),
    }
    client = admin(b)
    wait_while_running("running clients", lambda: members(client, "lost-consume")[1] == 1
                       and members(client, "lost-perf")[1] == 1 and high_watermark(client, "doomed") > 0,
                       list(procs.values()))
    address = b.bootstrap
    b.kill()
    killed = time.monotonic()
    for prog, proc in procs.items():
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - killed
        assert proc.returncode == 1, (prog, proc.returncode, err)
        assert f"{prog}: lost the broker at {address}" in err, (prog, err)
        assert "Traceback" not in err, prog
        assert took < 10, (prog, took)
        if prog.startswith("tidelog perf"):
            m = _FIGURES.match(out)
            assert m, (prog, out)  # the figures measured before the broker went


# ------------------------------------------------------------------------------------------ signals


def test_sigterm_stops_a_group_consumer_which_commits_and_leaves_at_once(broker: BrokerProcess) -> None:
    create(broker, "terminated", 2, records=6)
    proc = start(broker, "consume", "terminated", "--group", "term-group", "--from-beginning")
    got = read_lines(proc, 6)
    assert sorted(got) == [f"r{i}" for i in range(6)]
    client = admin(broker)
    assert members(client, "term-group") == (ConsumerGroupState.STABLE, 1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert err.strip() == "Consumed 6 record(s).", err
    # Left the group (LeaveGroup on close), not dropped after its 45 s session timeout.
    d = client.describe_consumer_groups(["term-group"])["term-group"].result(15)
    assert (d.state, len(d.members)) == (ConsumerGroupState.EMPTY, 0)
    assert committed(client, "term-group") == {0: 3, 1: 3}  # what it had read, committed on the way out


def test_ctrl_c_during_perf_prints_the_partial_summary(broker: BrokerProcess) -> None:
    create(broker, "interrupted", 1, records=500)
    client = admin(broker)
    producing = start(broker, "perf", "produce", "--topic", "interrupted", "--num-records", "100000000",
                      "--record-size", "50", "--throughput", "2000")
    consuming = start(broker, "perf", "consume", "--topic", "interrupted", "--messages", "100000000",
                      "--group", "interrupted-perf", "--consumer-prop", "auto.commit.interval.ms=100")
    wait_while_running("progress", lambda: high_watermark(client, "interrupted") > 700
                       and committed(client, "interrupted-perf").get(0, -1) > 0, [producing, consuming])
    for proc, prog, verb in ((producing, "tidelog perf produce", "sent"), (consuming, "tidelog perf consume", "consumed")):
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, (prog, err)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (prog, err)
        m = _FIGURES.match(out)
        assert m and m.group(2) == verb and int(m.group(1)) > 0, (prog, out)
        assert err.strip() == f"{prog}: interrupted after {m.group(1)} of 100000000 records", (prog, err)
