"""Cluster mode: three Tidelog brokers (ZooKeeper) against three Apache Kafka nodes (KRaft) on this
machine: throughput by replication factor and acks, failover after kill -9 of a leader, and a
restarted broker catching up.

Run from the repository root::

    .venv/bin/python bench/cluster.py            # everything (about 12 minutes on an idle machine)
    .venv/bin/python bench/cluster.py --quick    # a smoke run (about 2 minutes)

Targets. ``tidelog``: :class:`tidelog.testing.cluster.LocalCluster`, a ZooKeeper (fetched from Maven
Central; tickTime 2 s, ZooKeeper's default, so sessions up to 40 s are honoured) and brokers 1..3 (``tidelog serve``) on loopback. ``kafka``: :class:`tests.oracle.kafka_cluster.
KafkaCluster`, three KRaft nodes 1..3, each broker and controller (a static quorum), the release
tests/java/pom.xml pins, 512 MiB heap each (``--kafka-heap``). Both get ``offsets.topic.num.partitions=3``;
everything else is each broker's default. Both are driven by the same client (confluent-kafka) with the
same settings and record size.

Phases (``--phases``):

* ``throughput``: for each workload, RF=1 (acks=1), RF=3 acks=1 and RF=3 acks=all (topic
  ``min.insync.replicas=2``), after an untimed warm-up (``--warmup-records`` produced with acks=all and
  consumed: Kafka's JIT compiler needs it), ``--repeats`` rounds on a fresh topic of ``--partitions`` (3) partitions:
  a producer (linger.ms=20, batch.size=1 MiB, no compression) sends ``--records`` records of
  ``--record-size`` bytes round robin over the partitions and flushes, then a consumer reads them from
  offset 0 (assign(), no commits). Records/s and MB/s, best round (median beside).
* ``failover``: a one-partition topic, RF=3, min.insync.replicas=2. A producer (acks=all) sends one
  record every 5 ms; once records are acknowledged, the partition's leader is killed with SIGKILL.
  Reported per run: seconds until the metadata (asked of a live broker) names another leader, and until
  the first acknowledged record sent after the kill (only the new leader can acknowledge it). The
  killed broker is then restarted and the next run waits until it is back in the ISR. Tidelog runs
  with each ``--sessions`` value as ``zookeeper.session.timeout.ms`` (the default 18000 and a short
  4000): the controller only learns of a dead broker when its session expires. Kafka runs with its
  defaults (``broker.session.timeout.ms`` 9000).
* ``recovery``: a topic of ``--partitions`` partitions, RF=3, min.insync.replicas=2. One broker that
  leads none of them is stopped (SIGTERM), ``--catch-up-bytes`` (1 GiB) are produced with acks=all in
  65,000-byte records, the broker is started again, and the clock runs from its process start until
  it is back in the ISR of every partition. MB/s is the bytes it missed over that time. CPU seconds
  (Linux): the restarted broker's over that time, and the other brokers' meanwhile (steadier than the
  clock on a shared machine). ``--recovery-runs`` repeats it, each run on a fresh topic; the table
  shows the median and the range.

Before/after a change: ``--baseline SRC`` adds the target ``tidelog-baseline``, brokers importing
Tidelog from another source tree (a checkout's ``src``). Its recovery phase runs with this tree's: both
clusters up at once, one run of each in turn (ABBA), so that the machine's load, which drifts over the
minutes on a shared machine, weighs on both alike (measured one target after the other, the same two
trees came out 0.89 and 1.25 apart in ISR time depending on which ran first); use several
``--recovery-runs``. The other phases run one target after the other, in ``--targets`` order.

Figures are one run's, printed as they come and in closing tables with tidelog/kafka ratios. Nothing
fails when a number gets worse; the machine may be shared (the load average is printed at the start
and the end), so read the ratios, and several runs before drawing conclusions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.oracle: the Kafka nodes

from perf.target import baseline_source
from perf.workload import CONSUMER_CONF, PRODUCER_CONF, consume, warm_up_consumer

from tidelog.cli.zookeeper import ZooKeeperProcess
from tidelog.testing.cluster import LocalCluster, wait_for

NODES = (1, 2, 3)
WORKLOADS = (("RF=1", 1, "1"), ("RF=3 acks=1", 3, "1"), ("RF=3 acks=all", 3, "all"))
COMMON = {"offsets.topic.num.partitions": "3"}
RF3_CONFIG = {"min.insync.replicas": "2"}
CATCH_UP_VALUE = 65_000


# --- the two clusters, behind one face ------------------------------------------------------------

class Target:
    name = ""

    def bootstrap(self, *ids: int) -> str:
        raise NotImplementedError

    def kill(self, node: int) -> None:
        raise NotImplementedError

    def stop_node(self, node: int) -> None:
        raise NotImplementedError

    def restart(self, node: int) -> None:
        raise NotImplementedError

    def alive(self, node: int) -> bool:
        raise NotImplementedError

    def pid(self, node: int) -> int | None:
        """The process id of a live node (for its CPU seconds), None if it has none."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def live(self) -> list[int]:
        return [i for i in NODES if self.alive(i)]

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap(*self.live())})

    def create_topic(self, topic: str, partitions: int, rf: int, config: dict[str, str]) -> None:
        admin = self.admin()
        admin.create_topics([NewTopic(topic, partitions, rf, config=config)])[topic].result(30)
        wait_for(lambda: all(leader >= 0 and len(isr) == rf
                             for leader, isr in partition_states(admin, topic).values())
                 and len(partition_states(admin, topic)) == partitions, 60, f"leaders of {topic}")


class TidelogTarget(Target):
    name = "tidelog"

    def __init__(self, root: Path, session_ms: int, src: str | None = None, name: str = "tidelog") -> None:
        # tidelog-baseline: every broker it starts or restarts imports tidelog from ``src`` first (PYTHONPATH
        # while it starts, so that another target's brokers are not affected); ``name`` labels its lines.
        self.name = name
        self._src = src
        # ZooKeeper's own default tick (2 s; the test harness's 500 ms caps sessions at 20 ticks = 10 s,
        # which would cut the default 18 s session short).
        zookeeper = ZooKeeperProcess(root / "zk", tick_time_ms=2000)
        with baseline_source(src):
            self.cluster = LocalCluster(root, brokers=len(NODES), session_ms=session_ms, overrides=COMMON,
                                        zookeeper=zookeeper).start()
        self.describe = f"tidelog, zookeeper.session.timeout.ms={session_ms}" + (f", from {src}" if src else "")

    def bootstrap(self, *ids: int) -> str:
        return self.cluster.bootstrap(*ids)

    def kill(self, node: int) -> None:
        self.cluster.kill(node)

    def stop_node(self, node: int) -> None:
        self.cluster.brokers[node].stop()

    def restart(self, node: int) -> None:
        with baseline_source(self._src):
            self.cluster.restart(node)

    def alive(self, node: int) -> bool:
        return self.cluster.brokers[node].alive

    def pid(self, node: int) -> int | None:
        proc = self.cluster.brokers[node].proc
        return proc.pid if proc is not None and self.alive(node) else None

    def close(self) -> None:
        self.cluster.stop()


class KafkaTarget(Target):
    name = "kafka"

    def __init__(self, root: Path, heap: str) -> None:
        from tests.oracle import maven
        from tests.oracle.kafka_cluster import KafkaCluster

        overrides = {**COMMON, "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
                     "transaction.state.log.min.isr": "2"}
        self.cluster = KafkaCluster(root, nodes=len(NODES), classpath=maven.build(), overrides=overrides,
                                    heap=[f"-Xmx{heap}", f"-Xms{heap}"]).start()
        self.describe = f"kafka KRaft, 3 combined nodes, heap {heap} each"

    def bootstrap(self, *ids: int) -> str:
        return self.cluster.bootstrap(*ids)

    def kill(self, node: int) -> None:
        self.cluster.kill(node)

    def stop_node(self, node: int) -> None:
        self.cluster.stop_node(node)

    def restart(self, node: int) -> None:
        self.cluster.restart(node)

    def alive(self, node: int) -> bool:
        return self.cluster.alive(node)

    def pid(self, node: int) -> int | None:
        proc = self.cluster.nodes[node].proc
        return proc.pid if proc is not None and self.alive(node) else None

    def close(self) -> None:
        self.cluster.stop()


def partition_states(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int]]]:
    """{partition: (leader, isr)} from a Metadata request to one of the admin's brokers; {} on error."""
    try:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
    except KafkaException:
        return {}
    if md is None or md.error is not None:
        return {}
    return {p.id: (p.leader, sorted(p.isrs)) for p in md.partitions.values()}


# --- throughput --------------------------------------------------------------------------------------

@dataclass
class Rates:
    produce: list[float] = field(default_factory=list)  # records/s per round
    consume: list[float] = field(default_factory=list)
    error: str = ""


def produce_round_robin(bootstrap: str, topic: str, records: int, value: bytes, partitions: int,
                        conf: dict) -> float:
    """Send ``records`` values round robin over the partitions and flush; the seconds it took."""
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONF, **conf})
    p.list_topics(topic, timeout=10)
    send, poll = p.produce, p.poll
    start = time.perf_counter()
    for n in range(records):
        try:
            send(topic, value, partition=n % partitions)
        except BufferError:
            poll(0.005)
            send(topic, value, partition=n % partitions)
    left = p.flush(300)
    if left:
        raise RuntimeError(f"{left} records unsent after the flush")
    return time.perf_counter() - start


def wait_high_watermarks(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    """Wait until the high watermarks add up to ``records``: with acks=1 the producer is done before the
    followers have everything, and the consumer's rate should not include that wait."""
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF})
    try:
        wait_for(lambda: sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
                             for p in range(partitions)) >= records, 120, f"high watermarks of {topic}", interval=0.1)
    finally:
        c.close()


def run_throughput(target: Target, args: argparse.Namespace) -> dict[str, Rates]:
    value = b"x" * args.record_size
    warm_up_consumer(target.bootstrap())
    if args.warmup_records:  # untimed: the JVM's JIT compiler (and Python's caches) get their start here
        target.create_topic("warm-up", args.partitions, 3, RF3_CONFIG)
        produce_round_robin(target.bootstrap(), "warm-up", args.warmup_records, value, args.partitions, {"acks": "all"})
        consume(target.bootstrap(), "warm-up", args.partitions, args.warmup_records, len(value))
    out: dict[str, Rates] = {}
    for name, rf, acks in WORKLOADS:
        rates = out[name] = Rates()
        for i in range(args.repeats):
            topic = f"tp-rf{rf}-acks{acks}-{i}"
            try:
                target.create_topic(topic, args.partitions, rf, RF3_CONFIG if rf == 3 else {})
                elapsed = produce_round_robin(target.bootstrap(), topic, args.records, value, args.partitions,
                                              {"acks": acks})
                rates.produce.append(args.records / elapsed)
                wait_high_watermarks(target.bootstrap(), topic, args.partitions, args.records)
                elapsed, got = consume(target.bootstrap(), topic, args.partitions, args.records, len(value))
                if got != args.records:
                    raise RuntimeError(f"read {got} of {args.records} records")
                rates.consume.append(args.records / elapsed)
            except Exception as e:  # reported in the table; the other workloads still run
                rates.error = f"{type(e).__name__}: {e}"
                break
            print(f"  {target.name:<16} {name:<14} round {i + 1}: produce {rates.produce[-1]:>10,.0f} rec/s, "
                  f"consume {rates.consume[-1]:>10,.0f} rec/s", flush=True)
    return out


# --- failover ----------------------------------------------------------------------------------------

@dataclass
class Failover:
    elected: list[float] = field(default_factory=list)  # kill -> metadata names another leader, s
    acked: list[float] = field(default_factory=list)  # kill -> first ack of a record sent after the kill, s
    error: str = ""


def wait_in_isr(target: Target, topic: str, node: int, timeout: float) -> float:
    """Wait until ``node`` is in the ISR of every partition of ``topic``; returns when (monotonic)."""
    admin = target.admin()
    wait_for(lambda: (states := partition_states(admin, topic))
             and all(node in isr for _, isr in states.values()), timeout, f"broker {node} back in the ISR of {topic}",
             interval=0.1)
    return time.monotonic()


def failover_run(target: Target, topic: str, timeout: float) -> tuple[float, float, int]:
    """One kill -9 of the leader under an acks=all producer: (elected s, acked s, the killed broker)."""
    # the broker asked may be another than create_topic's (each learns of the leader from ZooKeeper)
    leader = wait_for(lambda: max(partition_states(target.admin(), topic).get(0, (-1, []))[0], 0), 60,
                      f"a leader of {topic}")
    acked_after: list[float] = []
    acked_before: list[float] = []
    killed_at = [float("inf")]

    def on_delivery(err, msg) -> None:
        if err is None:
            sent = float(msg.value())
            (acked_after if sent > killed_at[0] else acked_before).append(time.monotonic())

    producer = Producer({"bootstrap.servers": target.bootstrap(), "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": int(timeout * 1000) + 30_000})
    elected: list[float] = []
    stop = threading.Event()

    def watch() -> None:  # another thread: the producer loop below must not stall on metadata requests
        while not stop.is_set() and killed_at[0] == float("inf"):
            time.sleep(0.002)
        admin = AdminClient({"bootstrap.servers": target.bootstrap(*[i for i in NODES if i != leader])})
        while not stop.is_set():
            now_leader = partition_states(admin, topic).get(0, (-1, []))[0]
            if now_leader not in (-1, leader):
                elected.append(time.monotonic())
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and (len(acked_before) < 50 or killed_at[0] == float("inf")):
            if len(acked_before) >= 50 and killed_at[0] == float("inf"):
                killed_at[0] = time.monotonic()
                target.kill(leader)
            producer.produce(topic, repr(time.monotonic()).encode(), on_delivery=on_delivery)
            producer.poll(0.005)
        while time.monotonic() < deadline and not acked_after:
            producer.produce(topic, repr(time.monotonic()).encode(), on_delivery=on_delivery)
            producer.poll(0.005)
        if not acked_after:
            raise RuntimeError(f"no record acknowledged {timeout:g} s after the kill")
        watcher.join(timeout)
        if not elected:
            raise RuntimeError("the metadata never named another leader")
    finally:
        stop.set()
        producer.flush(10)
    return elected[0] - killed_at[0], acked_after[0] - killed_at[0], leader


def run_failover(target: Target, args: argparse.Namespace, label: str) -> Failover:
    result = Failover()
    topic = f"failover-{label}"
    try:
        target.create_topic(topic, 1, 3, RF3_CONFIG)
        for i in range(args.failover_runs):
            elected, acked, killed = failover_run(target, topic, args.failover_timeout)
            result.elected.append(elected)
            result.acked.append(acked)
            print(f"  {target.name:<16} {label:<22} run {i + 1}: leader {killed} killed; new leader in metadata "
                  f"after {elected:.2f} s, first acks=all produce acknowledged after {acked:.2f} s", flush=True)
            target.restart(killed)
            wait_in_isr(target, topic, killed, args.failover_timeout + 60)
    except Exception as e:
        result.error = f"{type(e).__name__}: {e}"
        print(f"  {target.name:<16} {label}: failed: {result.error}", flush=True)
    return result


# --- recovery ----------------------------------------------------------------------------------------

@dataclass
class RecoveryRun:
    node: int = 0
    bytes: int = 0
    produce_mb_s: float = 0.0
    listening_s: float = 0.0  # process start -> serving
    in_isr_s: float = 0.0  # process start -> in the ISR of every partition
    cpu_s: float | None = None  # CPU seconds of the restarted broker, process start -> in the ISR
    leaders_cpu_s: float | None = None  # CPU seconds of the other brokers over the same time


@dataclass
class Recovery:
    runs: list[RecoveryRun] = field(default_factory=list)
    error: str = ""


def cpu_seconds(pid: int | None) -> float | None:
    """User plus system CPU seconds of a live process so far (Linux's /proc), None where unknown."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def recovery_run(target: Target, args: argparse.Namespace, topic: str) -> RecoveryRun:
    result = RecoveryRun()
    target.create_topic(topic, args.partitions, 3, RF3_CONFIG)
    admin = target.admin()
    leaders = {leader for leader, _ in partition_states(admin, topic).values()}
    result.node = node = max((i for i in NODES if i not in leaders), default=NODES[-1])
    target.stop_node(node)
    admin = target.admin()
    wait_for(lambda: (states := partition_states(admin, topic)) and all(node not in isr for _, isr in states.values()),
             60, f"broker {node} out of the ISR")
    records = max(1, args.catch_up_bytes // CATCH_UP_VALUE)
    result.bytes = records * CATCH_UP_VALUE
    elapsed = produce_round_robin(target.bootstrap(), topic, records, b"r" * CATCH_UP_VALUE, args.partitions,
                                  {"acks": "all", "message.max.bytes": 1_100_000})
    result.produce_mb_s = result.bytes / elapsed / 1e6
    others = {i: cpu_seconds(target.pid(i)) for i in NODES if i != node}
    began = time.monotonic()
    target.restart(node)
    result.listening_s = time.monotonic() - began
    result.in_isr_s = wait_in_isr(target, topic, node, args.recovery_timeout) - began
    result.cpu_s = cpu_seconds(target.pid(node))
    after = {i: cpu_seconds(target.pid(i)) for i in others}
    if all(v is not None for v in (*others.values(), *after.values())):
        result.leaders_cpu_s = sum(after[i] - others[i] for i in others)  # type: ignore[operator]
    return result


def recovery_step(target: Target, args: argparse.Namespace, i: int, result: Recovery) -> bool:
    """Run ``i`` (from 0) of the recovery phase into ``result``; False once it failed."""
    try:
        r = recovery_run(target, args, "catch-up" if i == 0 else f"catch-up-{i + 1}")
    except Exception as e:
        result.error = f"{type(e).__name__}: {e}"
        print(f"  {target.name:<16} recovery: failed: {result.error}", flush=True)
        return False
    result.runs.append(r)
    cpu = "" if r.cpu_s is None else f"; CPU s: restarted broker {r.cpu_s:.2f}, the others {r.leaders_cpu_s:.2f}"
    print(f"  {target.name:<16} recovery run {i + 1}: broker {r.node} missed {r.bytes / 2**20:,.0f} MiB (produced "
          f"at {r.produce_mb_s:,.1f} MB/s); serving {r.listening_s:.2f} s after its start, in every ISR after "
          f"{r.in_isr_s:.2f} s ({r.bytes / r.in_isr_s / 1e6:,.1f} MB/s){cpu}", flush=True)
    return True


def run_recovery(target: Target, args: argparse.Namespace) -> Recovery:
    result = Recovery()
    for i in range(args.recovery_runs):
        if not recovery_step(target, args, i, result):
            break
    return result


def run_recovery_alternating(targets: list[Target], args: argparse.Namespace) -> dict[str, Recovery]:
    """The recovery phase of several targets, all running, one run of each in turn (ABBA: A B, B A, ...),
    so that a machine whose load drifts over the minutes weighs on each alike."""
    results = {target.name: Recovery() for target in targets}
    failed: set[str] = set()
    for i in range(args.recovery_runs):
        for target in targets if i % 2 == 0 else targets[::-1]:
            if target.name not in failed and not recovery_step(target, args, i, results[target.name]):
                failed.add(target.name)
    return results


# --- report ------------------------------------------------------------------------------------------

def best_median(values: list[float]) -> str:
    if not values:
        return f"{'-':>11} {'':>12}"
    return f"{max(values):>11,.0f} {'(' + format(statistics.median(values), ',.0f') + ')':>12}"


def ratio(a: list[float], b: list[float]) -> str:
    return f"{max(a) / max(b):.2f}" if a and b else "-"


def print_report(args: argparse.Namespace, throughput: dict[str, dict[str, Rates]],
                 failovers: list[tuple[str, str, Failover]], recoveries: dict[str, Recovery]) -> None:
    mb = args.record_size / 1e6
    if throughput:
        print(f"\nThroughput: {args.records:,} records of {args.record_size} B over {args.partitions} partitions, "
              f"best of {args.repeats} round(s) (median in brackets); records/s and MB/s")
        print(f"{'workload':<15}{'target':<17}{'produce rec/s':>24}{'MB/s':>8}{'consume rec/s':>25}{'MB/s':>8}")
        for name, _, _ in WORKLOADS:
            for target, rows in throughput.items():
                r = rows[name]
                p_mb = f"{max(r.produce) * mb:>8.1f}" if r.produce else f"{'-':>8}"
                c_mb = f"{max(r.consume) * mb:>8.1f}" if r.consume else f"{'-':>8}"
                print(f"{name:<15}{target:<17}{best_median(r.produce)}{p_mb} {best_median(r.consume)}{c_mb}"
                      + (f"  {r.error}" if r.error else ""))
        for other in ("kafka", "tidelog-baseline"):
            if {"tidelog", other} <= set(throughput):
                print(f"\ntidelog / {other} (best rounds; above 1 favours this tree's Tidelog)")
                for name, _, _ in WORKLOADS:
                    t, k = throughput["tidelog"][name], throughput[other][name]
                    print(f"{name:<15} produce {ratio(t.produce, k.produce):>5}   "
                          f"consume {ratio(t.consume, k.consume):>5}")
    if failovers:
        print("\nFailover: kill -9 of the leader of a one-partition RF=3 topic (min.insync.replicas=2) under an "
              "acks=all producer; seconds from the kill to ...")
        print(f"{'target':<48}{'runs':>5}  {'new leader in metadata: median (min-max)':<42}"
              f"{'first ack after the kill: median (min-max)'}")
        for target, label, f in failovers:
            print(f"{target + ', ' + label:<48}{len(f.acked):>5}  {span(f.elected):<42}{span(f.acked)}"
                  + (f"  {f.error}" if f.error else ""))
    if recoveries:
        print("\nRecovery: a broker stopped (SIGTERM), bytes produced with acks=all meanwhile, the broker started "
              "again; seconds from its process start; CPU seconds of the restarted broker (its start to in the ISR) "
              "and of the other brokers meanwhile; median of the runs (min-max)")
        print(f"{'target':<17}{'runs':>5}{'missed MiB':>11} {'serving s':>20} {'in ISR s':>20}{'catch-up MB/s':>14}"
              f" {'CPU s restarted':>20} {'CPU s others':>20}")
        for target, r in recoveries.items():
            rate = format(statistics.median(x.bytes / x.in_isr_s / 1e6 for x in r.runs), ".1f") if r.runs else "-"
            print(f"{target:<17}{len(r.runs):>5}{(r.runs[0].bytes / 2**20 if r.runs else 0):>11,.0f}"
                  f" {span([x.listening_s for x in r.runs]):>20} {span([x.in_isr_s for x in r.runs]):>20}{rate:>14}"
                  f" {span([x.cpu_s for x in r.runs if x.cpu_s is not None]):>20}"
                  f" {span([x.leaders_cpu_s for x in r.runs if x.leaders_cpu_s is not None]):>20}"
                  + (f"  {r.error}" if r.error else ""))
        for other in ("kafka", "tidelog-baseline"):
            if {"tidelog", other} <= set(recoveries) and recoveries["tidelog"].runs and recoveries[other].runs:
                t, o = recoveries["tidelog"].runs, recoveries[other].runs

                def med(runs: list[RecoveryRun], what: str) -> float | None:
                    values = [getattr(x, what) for x in runs if getattr(x, what) is not None]
                    return statistics.median(values) if values else None

                ratios = []
                for what, label in (("listening_s", "serving"), ("in_isr_s", "in ISR"), ("cpu_s", "CPU restarted"),
                                    ("leaders_cpu_s", "CPU others")):
                    a, b = med(t, what), med(o, what)
                    ratios.append(f"{label} {a / b:.2f}" if a is not None and b else f"{label} -")
                print(f"tidelog / {other} (medians; below 1 favours this tree's Tidelog): " + ", ".join(ratios))


def span(values: list[float]) -> str:
    """median (min-max), or - without values."""
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def run_paired_recovery(root: Path, names: list[str], session_ms: int,
                        args: argparse.Namespace) -> dict[str, Recovery]:
    """The recovery phase of tidelog and tidelog-baseline, both clusters up, runs alternating."""
    started: list[Target] = []
    try:
        for name in names:
            print(f"# starting {name} (session {session_ms} ms, recovery runs alternating with the other)", flush=True)
            src = str(Path(args.baseline).resolve()) if name == "tidelog-baseline" else None
            try:
                started.append(TidelogTarget(root / f"{name}-recovery", session_ms, src, name))
            except Exception as e:
                print(f"# {name} skipped: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
        results = run_recovery_alternating(started, args)
    finally:
        for target in started:
            target.close()
    return {name: results[name] for name in names if name in results}


# --- main --------------------------------------------------------------------------------------------

def size(text: str) -> int:
    units = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "k": 2**10, "m": 2**20, "g": 2**30}
    lower = text.strip().lower()
    for unit, factor in units.items():
        if lower.endswith(unit):
            return int(float(lower[: -len(unit)]) * factor)
    return int(lower)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: fewer records, one round, one failover run with the short session only, "
                         "32 MiB to catch up")
    ap.add_argument("--targets", default="tidelog,kafka",
                    help="tidelog, kafka, tidelog-baseline, comma-separated (default tidelog,kafka)")
    ap.add_argument("--baseline", metavar="SRC",
                    help="also measure tidelog-baseline: the brokers run from this source tree (a checkout's src/), "
                         "e.g. the commit before a change, side by side with this tree's")
    ap.add_argument("--phases", default="throughput,failover,recovery",
                    help="comma-separated: throughput, failover, recovery (default: all)")
    ap.add_argument("--records", type=int, help="records per throughput round (default 200,000; --quick 20,000)")
    ap.add_argument("--warmup-records", type=int,
                    help="records produced and consumed untimed before the throughput rounds (default: --records)")
    ap.add_argument("--record-size", type=int, default=1000, help="value bytes per record (default 1000)")
    ap.add_argument("--partitions", type=int, default=3, help="partitions of the throughput and recovery topics")
    ap.add_argument("--repeats", type=int, help="throughput rounds per workload (default 2; --quick 1)")
    ap.add_argument("--failover-runs", type=int, help="kills per failover setting (default 3; --quick 1)")
    ap.add_argument("--sessions", help="Tidelog's zookeeper.session.timeout.ms values for the failover phase, "
                                       "comma-separated (default 18000,4000; --quick 4000)")
    ap.add_argument("--failover-timeout", type=float, default=60.0, help="seconds a failover run may take")
    ap.add_argument("--catch-up-bytes", type=size, help="bytes a stopped broker misses in the recovery phase "
                                                        "(default 1GiB; --quick 32MiB; suffixes KiB, MiB, GiB)")
    ap.add_argument("--recovery-runs", type=int, default=1,
                    help="recovery runs per target, each on a fresh topic (default 1)")
    ap.add_argument("--recovery-timeout", type=float, default=600.0, help="seconds the catch-up may take")
    ap.add_argument("--kafka-heap", default="512M", help="-Xmx and -Xms of each Kafka node (default 512M)")
    args = ap.parse_args(argv)
    q = args.quick
    args.records = args.records or (20_000 if q else 200_000)
    args.warmup_records = args.records if args.warmup_records is None else args.warmup_records
    args.repeats = args.repeats or (1 if q else 2)
    args.failover_runs = args.failover_runs or (1 if q else 3)
    args.catch_up_bytes = args.catch_up_bytes or (32 * 2**20 if q else 2**30)
    sessions = [int(s) for s in (args.sessions or ("4000" if q else "18000,4000")).split(",") if s.strip()]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    phases = {p.strip() for p in args.phases.split(",") if p.strip()}
    if args.baseline and "tidelog-baseline" not in targets:
        targets.append("tidelog-baseline")
    for t in targets:
        if t not in ("tidelog", "kafka", "tidelog-baseline"):
            ap.error(f"unknown target {t!r}")
    if "tidelog-baseline" in targets and not args.baseline:
        ap.error("the tidelog-baseline target needs --baseline SRC")
    if not phases or phases - {"throughput", "failover", "recovery"}:
        ap.error(f"unknown phase(s) {sorted(phases - {'throughput', 'failover', 'recovery'})}")
    if not sessions:
        ap.error("--sessions names no value")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; "
          f"{args.records:,} records of {args.record_size} B per round; catch-up {args.catch_up_bytes / 2**20:,.0f} MiB",
          flush=True)
    throughput: dict[str, dict[str, Rates]] = {}
    failovers: list[tuple[str, str, Failover]] = []
    recoveries: dict[str, Recovery] = {}
    # Before/after: both Tidelog clusters run at once for the recovery phase, one run of each in turn.
    paired = [t for t in targets if t in ("tidelog", "tidelog-baseline")] if "recovery" in phases else []
    paired = paired if len(paired) == 2 else []
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-cluster-") as tmp:
        root = Path(tmp)
        if paired:
            recoveries.update(run_paired_recovery(root, paired, sessions[-1], args))
        for name in targets:
            # Tidelog: the first cluster runs with the last (short) session and does every phase; each other
            # session gets a fresh cluster for its failover runs.
            plans: list[tuple[Callable[[], Target], set[str], str]]
            if name in ("tidelog", "tidelog-baseline"):
                src = str(Path(args.baseline).resolve()) if name == "tidelog-baseline" else None
                plans = [(lambda s=sessions[-1], src=src, name=name: TidelogTarget(root / f"{name}-{s}", s, src, name),
                          phases - ({"recovery"} if name in paired else set()), f"session {sessions[-1]} ms")]
                plans += [(lambda s=s, src=src, name=name: TidelogTarget(root / f"{name}-{s}", s, src, name),
                           phases & {"failover"},
                           f"session {s} ms") for s in sessions[:-1]]
            else:
                plans = [(lambda: KafkaTarget(root / "kafka", args.kafka_heap), phases, "KRaft defaults")]
            for make, todo, label in plans:
                if not todo:
                    continue
                print(f"# starting {name} ({label})", flush=True)
                try:
                    target = make()
                except Exception as e:  # no java/mvn, or it did not start: the other target still runs
                    print(f"# {name} skipped: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                          flush=True)
                    continue
                try:
                    if "throughput" in todo:
                        throughput[name] = run_throughput(target, args)
                    if "recovery" in todo:
                        recoveries[name] = run_recovery(target, args)
                    if "failover" in todo:
                        failovers.append((name, label, run_failover(target, args, label.replace(" ", "-"))))
                finally:
                    target.close()
    print_report(args, throughput, failovers, recoveries)
    print(f"\nload average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
