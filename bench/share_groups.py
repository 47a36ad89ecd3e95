"""Share groups (KIP-932): records/s through 1, 2 and 4 share consumers, and redelivery after a lock
expiry, on Tidelog and on Apache Kafka 4.4 in one run.

Run from the repository root::

    .venv/bin/python bench/share_groups.py          # 200,000 records, 3 rounds, 3 redeliveries (~10 min)
    .venv/bin/python bench/share_groups.py --quick  # 50,000 records, 1 round, 1 redelivery (~2 min)

Both targets run at once, each a fresh broker: ``tidelog serve`` with ``share.version=1``
(:class:`tidelog.testing.BrokerProcess`) and a one-node KRaft Kafka from the oracle harness
(:class:`tests.oracle.kafka.KafkaProcess`, the release pinned in tests/java/pom.xml, formatted with
``--feature share.version=1``; skipped with the reason when java 17+ or mvn are missing). The rounds are
interleaved: for each consumer count, each round measures one target and then the other (the order flips
from round to round), so a slow stretch of a shared machine falls on both rather than deciding a ratio.
The table gives each target's median over the rounds with the spread of the rounds around it (lowest and
highest, in % of the median), the ratio of the medians, and each round's own ratio.

Throughput. For 1, 2 and 4 consumers, a fresh one-partition topic and a fresh share group
(``share.auto.offset.reset=earliest``, set with IncrementalAlterConfigs on the GROUP resource): each
consumer is a confluent-kafka ``ShareConsumer`` (implicit acknowledgement: each poll acknowledges the
previous batch as ACCEPT) in its own process (``--consumer``), polling the empty topic until
ShareGroupDescribe shows every member with the partition assigned; then a producer writes ``--records``
records of 100 bytes (acks=1, linger.ms=20) while the consumers are paused (they end their poll and
do not poll again until told), so that the producer does not compete with them for the CPU. The rate is
the records over the time from the consumers being told to poll again to the moment all records were
received (the join and the writes are not counted); "per cons." is that rate divided by the consumers. Records
delivered more than once (a duplicate offset) are reported, and how the records were split among the
consumers (a fair split gives each about the same).

Redelivery. A share group with ``share.record.lock.duration.ms`` = ``--lock-ms`` (15,000, Kafka 4.4's
minimum ``group.share.min.record.lock.duration.ms``; the same value on both targets) and a topic of 10
records: a holder process (explicit acknowledgement) polls until it has records and then never
acknowledges nor polls again (it stays connected and heartbeating); a second consumer process then joins
and polls. The latency is from the holder's poll returning to the second consumer receiving the held
records, against the lock duration (target: within 10% above it).

Each broker first gets one unmeasured 1-consumer round (``--no-warmup`` skips it): a fresh JVM's first
round measured Kafka at a fifth of its later rate.

``--request-log DIR`` logs every ShareFetch on both brokers (Kafka's ``kafka.request.logger`` and
Tidelog's ``tidelog.share.requests`` at DEBUG) into ``DIR/kafka.log`` and ``DIR/tidelog.log``: what each
answer acquired, its acknowledgements and how long it waited, to compare the two brokers request by
request (the logging slows both, so those figures are not for comparing).

Ratios are "tidelog / kafka" (above 1 favours Tidelog for rates). Nothing fails when a number gets worse;
the machine may be shared, so the load average is printed first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.oracle: the Kafka broker

from tidelog.protocol.messages import IncrementalAlterConfigsRequest, ShareGroupDescribeRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

VALUE = b"x" * 100
GROUP_RESOURCE = 32
BROKER_LOGGER_RESOURCE = 8
CONSUMER_COUNTS = (1, 2, 4)
HELD = 10  # records of the redelivery topic
_QUIET = logging.getLogger("bench.share_groups.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


# ---------------------------------------------------------------------------------------- consumer processes


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def consumer_main(spec: dict) -> int:
    """A share consumer: build and subscribe, say "ready", poll on "go" and report progress as JSON lines
    (offsets seen, first/last record times) until "stop" or stdin ends; on "pause" it ends its poll, says
    "paused" and polls again on the next "go".  With ``hold`` it reports the offsets of its first non-empty
    poll and then neither polls nor acknowledges again."""
    from confluent_kafka import ShareConsumer

    conf = dict(spec["conf"], logger=_QUIET)
    consumer = ShareConsumer(conf)
    consumer.subscribe([spec["topic"]])
    go, stop = threading.Event(), threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "go":
                go.set()
            elif line.strip() == "pause":
                go.clear()
            elif line.strip() == "stop":
                break
        stop.set()
        go.set()

    threading.Thread(target=read_commands, daemon=True).start()
    emit({"event": "ready"})
    go.wait()
    if spec.get("hold"):
        while not stop.is_set():
            got = [m.offset() for m in consumer.poll(1.0) if m.error() is None]
            if got:
                emit({"event": "held", "t": time.monotonic(), "offsets": got})
                break
        stop.wait()
        consumer.close()
        return 0
    first = last = 0.0
    offsets: list[int] = []
    reported = 0
    next_report = time.monotonic() + 0.2
    while not stop.is_set():
        if not go.is_set():
            emit({"event": "paused"})
            go.wait()
            continue
        batch = consumer.poll(0.5)
        now = time.monotonic()
        for m in batch:
            if m.error() is None:
                offsets.append(m.offset())
        if batch:
            first = first or now
            last = now
        if now >= next_report and len(offsets) > reported:
            emit({"event": "progress", "first": first, "last": last, "offsets": offsets[reported:]})
            reported = len(offsets)
            next_report = now + 0.2
    if len(offsets) > reported:
        emit({"event": "progress", "first": first, "last": last, "offsets": offsets[reported:]})
    consumer.close()
    emit({"event": "closed"})
    return 0


@dataclass
class Proc:
    popen: subprocess.Popen
    ready: threading.Event = field(default_factory=threading.Event)
    paused: bool = False
    first: float = 0.0
    last: float = 0.0
    offsets: list[int] = field(default_factory=list)
    held_at: float = 0.0
    held: list[int] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


class Consumers:
    """Share-consumer processes and what they reported."""

    def __init__(self) -> None:
        self.procs: list[Proc] = []
        self.cond = threading.Condition()

    def spawn(self, bootstrap: str, group: str, topic: str, *, hold: bool = False, **conf: str) -> Proc:
        spec = {"topic": topic, "hold": hold,
                "conf": {"bootstrap.servers": bootstrap, "group.id": group, **conf}}
        popen = subprocess.Popen([sys.executable, __file__, "--consumer", json.dumps(spec)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, PYTHONUNBUFFERED="1"))
        proc = Proc(popen)
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()
        threading.Thread(target=self._drain, args=(proc,), daemon=True).start()
        self.procs.append(proc)
        return proc

    def _read(self, proc: Proc) -> None:
        assert proc.popen.stdout is not None
        for line in proc.popen.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                if event["event"] == "ready":
                    proc.ready.set()
                elif event["event"] == "paused":
                    proc.paused = True
                elif event["event"] == "progress":
                    proc.first = proc.first or event["first"]
                    proc.last = event["last"]
                    proc.offsets += event["offsets"]
                elif event["event"] == "held":
                    proc.held_at, proc.held = event["t"], event["offsets"]
                self.cond.notify_all()

    def _drain(self, proc: Proc) -> None:
        assert proc.popen.stderr is not None
        for line in proc.popen.stderr:
            proc.stderr = [*proc.stderr, line][-20:]

    def command(self, procs: list[Proc], line: str) -> None:
        for p in procs:
            if p.popen.poll() is None and p.popen.stdin is not None:
                try:
                    p.popen.stdin.write(line + "\n")
                    p.popen.stdin.flush()
                except BrokenPipeError:
                    pass

    def wait_ready(self, procs: list[Proc], timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        for p in procs:
            if not p.ready.wait(max(0.0, deadline - time.monotonic())):
                raise RuntimeError("a consumer did not start:\n" + "".join(p.stderr))

    def wait(self, predicate, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def close(self) -> None:
        self.command(self.procs, "stop")
        for p in self.procs:
            try:
                p.popen.wait(30)
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait()
        self.procs.clear()


# ---------------------------------------------------------------------------------------- measurements


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=GROUP_RESOURCE, resource_name=group, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=0, value=v)
                for k, v in configs.items()])]), 1)
        res = r.responses[0]
        if res.error_code != 0:
            raise RuntimeError(f"IncrementalAlterConfigs on group {group}: error {res.error_code} {res.error_message}")


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=30)[topic].result(60)


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20, "acks": 1})
    for _ in range(n):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(60) != 0:
        raise RuntimeError(f"produce to {topic}: records left unsent")


@dataclass
class Throughput:
    target: str
    consumers: int
    records: int
    seconds: float
    duplicates: int
    per_consumer: list[int]

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def assigned_members(bootstrap: str, group: str) -> int:
    """Members of the share group that have the partition assigned (ShareGroupDescribe; one broker is the
    coordinator)."""
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(ShareGroupDescribeRequest(group_ids=[group]), 1)
    g = r.groups[0]
    if g.error_code:
        return 0
    return sum(1 for m in g.members if any(tp.partitions for tp in m.assignment.topic_partitions))


def measure_throughput(target: str, bootstrap: str, records: int, count: int, serial: int,
                       timeout: float) -> Throughput:
    """``count`` consumers join a share group on an empty topic; once each has the partition, ``records``
    records are produced (much faster than they are consumed) and consumed."""
    group = topic = f"bench-share-{serial if serial >= 0 else 'warmup'}-{count}"
    create_topic(bootstrap, topic)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    consumers = Consumers()
    try:
        procs = [consumers.spawn(bootstrap, group, topic) for _ in range(count)]
        consumers.wait_ready(procs)
        consumers.command(procs, "go")
        deadline = time.monotonic() + 120
        while (joined := assigned_members(bootstrap, group)) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{target}: {joined} of {count} share consumers assigned after 120 s")
            time.sleep(0.2)
        time.sleep(0.5)  # a heartbeat answered with the assignment (the pause below lets them poll up to 0.5 s more)
        # The records are written while the consumers do not poll, and read once all are written: the
        # producer (in this process) does not compete with the consumers and brokers for the CPU meanwhile.
        consumers.command(procs, "pause")
        if not consumers.wait(lambda: all(p.paused for p in procs), 60):
            raise RuntimeError(f"{target}: a consumer did not pause")
        produce(bootstrap, topic, records)
        started = time.monotonic()
        consumers.command(procs, "go")

        def distinct() -> int:
            return len({o for p in procs for o in p.offsets})

        if not consumers.wait(lambda: distinct() >= records, timeout):
            raise RuntimeError(f"{target}, {count} consumers: {distinct():,} of {records:,} records in {timeout:.0f} s")
        with consumers.cond:
            last = max(p.last for p in procs)
            total = sum(len(p.offsets) for p in procs)
            per = [len(p.offsets) for p in procs]
        return Throughput(target, count, records, last - started, total - records, per)
    finally:
        consumers.close()


def measure_redelivery(bootstrap: str, lock_ms: int, serial: int, timeout: float) -> float:
    """Seconds from the holder's poll returning to another consumer receiving the held records."""
    group, topic = f"bench-share-lock-{serial}", f"bench-share-lock-{serial}"
    create_topic(bootstrap, topic)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest",
                                         "share.record.lock.duration.ms": str(lock_ms)})
    produce(bootstrap, topic, HELD)
    consumers = Consumers()
    try:
        holder = consumers.spawn(bootstrap, group, topic, hold=True, **{"share.acknowledgement.mode": "explicit"})
        consumers.wait_ready([holder])
        consumers.command([holder], "go")
        if not consumers.wait(lambda: bool(holder.held), 120):
            raise RuntimeError("the holder got no records:\n" + "".join(holder.stderr))
        held = set(holder.held)
        other = consumers.spawn(bootstrap, group, topic)
        consumers.wait_ready([other])
        consumers.command([other], "go")
        if not consumers.wait(lambda: held <= set(other.offsets), timeout):
            raise RuntimeError(f"the held records were not redelivered within {timeout:.0f} s")
        return other.last - holder.held_at
    finally:
        consumers.close()


# ---------------------------------------------------------------------------------------- targets


class ShareKafka:
    """KafkaProcess formatted with share.version=1 (a subclass built lazily: tests.oracle needs java)."""

    @staticmethod
    def make(data_dir: Path, classpath: str, request_log: bool = False):
        from tests.oracle import jvm
        from tests.oracle.kafka import KafkaProcess, random_cluster_id

        class _Kafka(KafkaProcess):
            def _format(self) -> None:
                if (self.log_dir / "meta.properties").exists():
                    return
                self.cluster_id = self.cluster_id or random_cluster_id()
                done = jvm.run_tool(self.classpath, "kafka-storage", "format", "-t", self.cluster_id,
                                    "-c", self.properties_file, "--feature", "share.version=1", timeout=120)
                if done.returncode != 0:
                    raise RuntimeError(f"kafka-storage format failed:\n{done.stdout}{done.stderr}")

        kafka = _Kafka(data_dir, classpath=classpath, start_timeout=600)
        if request_log:  # Kafka's request logger: every request and its answer, at DEBUG
            kafka.jvm_options.append("-Dorg.slf4j.simpleLogger.log.kafka.request.logger=debug")
        return kafka


def enable_tidelog_request_log(bootstrap: str) -> None:
    """``tidelog.share.requests`` at DEBUG (a BROKER_LOGGER config): a line per ShareFetch on stderr."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    node = next(iter(admin.list_topics(timeout=30).brokers))
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=BROKER_LOGGER_RESOURCE, resource_name=str(node), configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name="tidelog.share.requests", config_operation=0,
                                                               value="DEBUG")])]), 1)
    if r.responses[0].error_code:
        raise RuntimeError(f"tidelog.share.requests at DEBUG: error {r.responses[0].error_code}")


def start_targets(stack: contextlib.ExitStack, targets: list[str], tmp: Path, args) -> dict[str, str]:
    """Every target's broker, all running at once (bootstrap by target); Kafka is left out (with the
    reason printed) when java or mvn are missing."""
    up: dict[str, str] = {}
    for target in targets:
        if target == "tidelog":
            broker = stack.enter_context(BrokerProcess(tmp / "tidelog", overrides={"share.version": "1"}))
            if args.request_log:
                enable_tidelog_request_log(broker.bootstrap)
                stack.callback(lambda b=broker: (args.request_log / "tidelog.log").write_text("".join(b.stderr_lines)))
            up[target] = broker.bootstrap
        elif target == "kafka":
            try:
                from tests.oracle import maven
                classpath = maven.build()
            except Exception as e:  # no java/mvn: Kafka is skipped, Tidelog still measured
                print(f"# kafka skipped: {e}", flush=True)
                continue
            kafka = stack.enter_context(ShareKafka.make(tmp / "kafka", classpath, bool(args.request_log)))
            if args.request_log:
                stack.callback(lambda k=kafka: shutil.copyfile(k.log_file, args.request_log / "kafka.log"))
            up[target] = kafka.bootstrap
    return up


def run_rounds(up: dict[str, str], args, results: dict) -> None:
    """The rounds, interleaved: for each consumer count, round r measures every target once, in turn (the
    order flips each round), so a slow minute of the machine falls on both targets rather than on one."""
    targets = list(up)
    serial = 0
    if args.warmup:  # not measured: Kafka's JIT (and both brokers' first share-state writes) warm up
        for target in targets:
            measure_throughput(target, up[target], args.records, 1, -1, args.timeout)
        print(f"# warmed up: {', '.join(targets)}", flush=True)
    for count in args.consumers:
        for r in range(args.repeats):
            for target in (targets if r % 2 == 0 else targets[::-1]):
                row = measure_throughput(target, up[target], args.records, count, serial, args.timeout)
                serial += 1
                results["throughput"].setdefault((target, count), []).append(row)
                print(f"# {count} consumer(s), round {r + 1}, {target}: {row.rate:,.0f} records/s "
                      f"(split {row.per_consumer}, {row.duplicates} duplicates)", flush=True)
    for r in range(args.redeliveries):
        for target in (targets if r % 2 == 0 else targets[::-1]):
            seconds = measure_redelivery(up[target], args.lock_ms, serial, args.lock_ms / 1000 * 4 + 60)
            serial += 1
            results["redelivery"].setdefault(target, []).append(seconds)
            print(f"# redelivery {r + 1}, {target}: {seconds:.2f} s", flush=True)


def _spread(values: list[float]) -> str:
    """min-max as a +/- percentage of the median."""
    med = statistics.median(values)
    if len(values) < 2 or med <= 0:
        return "-"
    return f"-{(med - min(values)) / med:.0%}/+{(max(values) - med) / med:.0%}"


def print_tables(results: dict, targets: list[str], lock_ms: int, counts: list[int]) -> None:
    both = len(targets) == 2
    print("\nShare consumers on one partition (100 B records; the median of the rounds, their spread min/max "
          "around it, and the median per consumer)")
    print(f"{'consumers':>9}  " + "".join(f"{t + ' rec/s':>18}{'spread':>12}{'per cons.':>11}" for t in targets)
          + (f"{'tidelog/kafka':>15}{'per round':>22}" if both else ""))
    for count in counts:
        line = f"{count:>9}  "
        medians = []
        for t in targets:
            rows = results["throughput"].get((t, count))
            if not rows:
                line += f"{'-':>18}{'-':>12}{'-':>11}"
                medians.append(None)
                continue
            rates = [r.rate for r in rows]
            med = statistics.median(rates)
            medians.append(med)
            line += f"{med:>18,.0f}{_spread(rates):>12}{med / count:>11,.0f}"
        if both and all(medians):
            a, b = (results["throughput"][(t, count)] for t in targets)
            paired = [x.rate / y.rate for x, y in zip(a, b) if y.rate > 0]  # each round's own ratio
            line += f"{medians[0] / medians[1]:>15.2f}{'  ' + ' '.join(f'{p:.2f}' for p in paired):>22}"
        print(line)
    print(f"\nRedelivery after a lock expiry (share.record.lock.duration.ms = {lock_ms:,}; target <= 1.10 x lock)")
    print(f"{'target':<10}{'samples s':<28}{'median s':>10}{'/ lock':>8}")
    medians = {}
    for t in targets:
        samples = results["redelivery"].get(t)
        if not samples:
            print(f"{t:<10}-")
            continue
        medians[t] = statistics.median(samples)
        print(f"{t:<10}{', '.join(f'{s:.2f}' for s in samples):<28}{medians[t]:>10.2f}"
              f"{medians[t] / (lock_ms / 1000):>8.3f}")
    if len(medians) == 2:
        a, b = targets
        print(f"{a}/{b} redelivery latency: {medians[a] / medians[b]:.3f}")
    print("\nRecords per consumer (the median round; the share of the busiest consumer)")
    for t in targets:
        for count in counts:
            rows = results["throughput"].get((t, count))
            if count < 2 or not rows:
                continue
            row = sorted(rows, key=lambda r: r.rate)[len(rows) // 2]
            top = max(row.per_consumer) / max(1, sum(row.per_consumer))
            print(f"{t:<10}{count:>2} consumers: {', '.join(f'{n:,}' for n in sorted(row.per_consumer, reverse=True))}"
                  f"  (busiest {top:.0%})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--consumer", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="50,000 records, 1 round, 1 redelivery sample")
    ap.add_argument("--records", type=int, help="records of the topic (default 200,000; --quick 50,000)")
    ap.add_argument("--repeats", type=int, help="rounds per consumer count and target (default 3; --quick 1)")
    ap.add_argument("--redeliveries", type=int, help="redelivery samples per target (default 3; --quick 1)")
    ap.add_argument("--lock-ms", type=int, default=15000,
                    help="share.record.lock.duration.ms of the redelivery group (default 15000, Kafka's minimum)")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="skip the unmeasured 1-consumer round each broker gets first")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a throughput round may take (300)")
    ap.add_argument("--consumers", default="1,2,4",
                    help="the consumer counts measured, comma-separated (default 1,2,4)")
    ap.add_argument("--targets", default="tidelog,kafka", help="tidelog, kafka or both (default)")
    ap.add_argument("--request-log", type=Path, metavar="DIR",
                    help="log every ShareFetch on both brokers (Kafka's kafka.request.logger and Tidelog's "
                         "tidelog.share.requests at DEBUG) into DIR/kafka.log and DIR/tidelog.log; it slows "
                         "the brokers, so its figures are for reading the logs, not for comparing")
    args = ap.parse_args(argv)
    if args.consumer:
        return consumer_main(json.loads(args.consumer))
    args.records = args.records or (50_000 if args.quick else 200_000)
    args.repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    args.redeliveries = args.redeliveries if args.redeliveries is not None else (1 if args.quick else 3)
    args.consumers = [int(c) for c in args.consumers.split(",") if c.strip()]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in ("tidelog", "kafka"):
            ap.error(f"unknown target {t!r}")
    if args.request_log:
        args.request_log.mkdir(parents=True, exist_ok=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; "
          f"{args.records:,} records, {args.repeats} round(s) per target, lock {args.lock_ms} ms", flush=True)
    results: dict = {"throughput": {}, "redelivery": {}}
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-share-") as tmp, contextlib.ExitStack() as stack:
        up = start_targets(stack, targets, Path(tmp), args)
        run_rounds(up, args, results)
    print_tables(results, [t for t in targets if t in up], args.lock_ms, args.consumers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
