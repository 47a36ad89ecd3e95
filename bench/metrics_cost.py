"""What Prometheus metrics cost on the produce path: one Tidelog broker with metrics on, one with
metrics off (``metrics.listener=``, no HTTP listener: nothing is measured), measured in one run.

Run from the repository root::

    .venv/bin/python bench/metrics_cost.py            # 6 rounds of 8 s per broker and workload (~5 minutes)
    .venv/bin/python bench/metrics_cost.py --quick    # 2 rounds of 3 s (about a minute)

Both brokers run side by side (the idle one waits while the other is measured), pinned to core 0
(``taskset``, as ``throughput.py --broker-bound`` does: :mod:`perf.saturation`); the producer processes run
on core 1. Each round sends, per broker, ``--clients`` producers as fast as they can for ``--seconds``
into topics of their own; the rounds alternate which broker goes first, so slow phases of a shared VM
hit both sides. While the "on" broker is measured, a thread scrapes its ``/metrics`` every
``--scrape-interval`` seconds (Prometheus' default is 15 s; the scrape's own CPU is included).

Workloads: ``batched`` (acks=1, linger.ms=20, 1 MiB batches of 100 B records: throughput.py's) and
``small`` (linger.ms=0, at most 100 records per batch: many small Produce requests, where per-request
costs such as the request timings weigh most).

Reported per workload and broker: records/s (median of the rounds) and broker CPU per record (µs,
from /proc schedstat, all threads; median), and the on/off ratio of each: the cost of metrics is the
CPU-per-record ratio minus one. Nothing fails when a figure gets worse.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from perf.measurement import loadavg, pinned
from perf.saturation import BROKER_CORE, CLIENT_CORE, pin_broker, produce_phase
from perf.target import Endpoint, auto_create

from tidelog.testing import BrokerProcess

WORKLOADS = {
    "batched": {},
    "small": {"linger.ms": 0, "batch.num.messages": 100},
}


@contextlib.contextmanager
def broker(tmp: Path, metrics: bool):
    overrides = {"num.partitions": "1", "auto.create.topics.enable": "true"}
    if not metrics:
        overrides["metrics.listener"] = ""
    b = BrokerProcess(tmp / ("on" if metrics else "off"), overrides=overrides, start_timeout=120)
    b.start()
    try:
        assert b.proc is not None
        if metrics:
            assert b.http_url is not None, "the metrics-on broker printed no HTTP listener"
        else:
            assert b.http_url is None, "the metrics-off broker has an HTTP listener"
        yield b, Endpoint(b.bootstrap, auto_create(b.bootstrap), "tidelog serve", pids=[b.proc.pid])
    finally:
        b.stop()


class Scraper(threading.Thread):
    """GET /metrics every ``interval`` seconds until stopped; counts the scrapes and their bytes."""

    def __init__(self, url: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.url, self.interval = url + "metrics", interval
        self.stop_event = threading.Event()
        self.scrapes = 0
        self.bytes = 0

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            with urllib.request.urlopen(self.url, timeout=30) as r:
                self.bytes += len(r.read())
            self.scrapes += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds per broker and workload (6)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds each producer sends per round (8)")
    ap.add_argument("--clients", type=int, default=3, help="producer processes (3)")
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, from {','.join(WORKLOADS)}")
    ap.add_argument("--scrape-interval", type=float, default=5.0, help="seconds between scrapes of /metrics (5)")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 3 s")
    args = ap.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 6)
    seconds = args.seconds or (3.0 if args.quick else 8.0)
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workloads: {', '.join(unknown)}")
    if len(os.sched_getaffinity(0)) < 2:
        ap.error("needs two cores (one for the broker, one for the clients)")
    print(f"metrics on vs off: {rounds} rounds x {seconds:.0f} s, {args.clients} producers, "
          f"{args.value_bytes} B records; load average {loadavg()}", flush=True)
    # workload -> "on"/"off" -> list of (records/s, broker µs per record, broker core busy)
    figures: dict[str, dict[str, list[tuple[float, float, float]]]] = {w: {"on": [], "off": []} for w in workloads}
    with tempfile.TemporaryDirectory(prefix="tidelog-metrics-cost-") as tmp, contextlib.ExitStack() as stack:
        with pinned({BROKER_CORE}):
            on_broker, on = stack.enter_context(broker(Path(tmp), True))
            _, off = stack.enter_context(broker(Path(tmp), False))
        for name, ep in (("on", on), ("off", off)):
            print(f"  metrics {name}: taskset: {pin_broker(ep)}", flush=True)
        scrapes = 0
        with pinned({CLIENT_CORE}):
            for r in range(rounds):
                order = [("on", on), ("off", off)] if r % 2 == 0 else [("off", off), ("on", on)]
                for workload in workloads:
                    conf = WORKLOADS[workload]
                    for name, ep in order:
                        topics = [f"cost-{workload}-{r}-{i}" for i in range(args.clients)]
                        for t in topics:
                            ep.create_topic(t, 1)
                        scraper = Scraper(on_broker.http_url, args.scrape_interval) if name == "on" else None
                        if scraper is not None:
                            scraper.start()
                        kept, wall, cpu, core = produce_phase(ep, topics, args.value_bytes, seconds, 10**9, conf)
                        if scraper is not None:
                            scraper.stop_event.set()
                            scraper.join(30)
                            scrapes += scraper.scrapes
                        us = cpu / kept * 1e6 if cpu is not None and kept else float("nan")
                        figures[workload][name].append((kept / wall, us, core))
                        print(f"  [{time.strftime('%H:%M:%S')}] round {r + 1} {workload} metrics {name}: "
                              f"{kept / wall:,.0f} records/s, broker {us:.3f} µs CPU/record, "
                              f"broker core {core:.0%}", flush=True)
    print(f"\n{scrapes} scrapes of /metrics during the 'on' phases; load average {loadavg()}")
    print(f"\n{'workload':<9} {'metrics':<8} {'records/s':>12} {'µs CPU/record':>14} {'broker core':>12}")
    for workload in workloads:
        medians = {}
        for name in ("on", "off"):
            rows = figures[workload][name]
            rate = statistics.median(x[0] for x in rows)
            us = statistics.median(x[1] for x in rows)
            core = statistics.median(x[2] for x in rows)
            medians[name] = (rate, us)
            print(f"{workload:<9} {name:<8} {rate:>12,.0f} {us:>14.3f} {core:>12.0%}")
        (rate_on, us_on), (rate_off, us_off) = medians["on"], medians["off"]
        print(f"{workload:<9} {'on/off':<8} {rate_on / rate_off:>12.3f} {us_on / us_off:>14.3f}   "
              f"-> metrics cost {(us_on / us_off - 1) * 100:+.1f}% broker CPU per record (target < 3%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
