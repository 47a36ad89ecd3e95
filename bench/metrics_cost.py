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

Workloads:

* ``path-1000`` and ``path-10`` (the default, with the wire ones): the produce path in this process,
  without sockets and without other processes: two brokers built and started here (metrics on and
  off; each has its own registry), the same pre-encoded Produce request (one batch of 1,000 or 10
  records) fed to each broker's connection code (``ClientProtocol.data_received``, a transport that
  drops what it is given) ``--path-requests`` times per round, timed with ``time.process_time()`` (this
  process's CPU only, so other work on the machine disturbs it least). This is the broker's own
  Python work per record from the received frame to the response handed to the transport: dispatch,
  decode, validation, the append, the response, and the metrics;
* ``wire-1000`` and ``wire-10`` (the default): each client process sends the same pre-encoded Produce
  request (v9, acks=1, one batch of 1,000 or 10 records) over a raw socket, keeping 8 in flight,
  ``--requests`` times. The client does almost nothing per request, so the broker is the bottleneck and
  every round asks it for exactly the same work: the steadiest figure of the broker's cost per record
  (the 10-record requests show the per-request costs, such as the request timings, at their heaviest);
* ``batched`` (confluent-kafka, acks=1, linger.ms=20, 1 MiB batches of 100 B records: throughput.py's)
  and ``small`` (linger.ms=0, at most 100 records per batch), for ``--seconds`` each: real clients, but
  their batching varies from run to run with timing, and so does the broker's CPU per record.

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

from perf.measurement import high_watermark, loadavg, pinned
from perf.saturation import BROKER_CORE, CLIENT_CORE, _phase, pin_broker, produce_phase
from perf.target import Endpoint, auto_create

from tidelog.testing import BrokerProcess

WORKLOADS = {
    "path-1000": 1000,
    "path-10": 10,
    "wire-1000": 1000,
    "wire-10": 10,
    "batched": {},
    "small": {"linger.ms": 0, "batch.num.messages": 100},
}
DEFAULT_WORKLOADS = "path-1000,path-10,wire-1000,wire-10"
PATH_WORKLOADS = {"path-1000": 1000, "path-10": 10}
IN_FLIGHT = 8


def _wire_producer(bootstrap: str, topic: str, records: int, value_bytes: int, requests: int, go, out) -> None:
    """Send one pre-encoded Produce request ``requests`` times, IN_FLIGHT at a time."""
    import struct

    from tidelog.protocol import encode_request
    from tidelog.protocol.messages import ProduceRequest
    from tidelog.records import RecordBatchBuilder
    from tidelog.testing.client import WireClient

    builder = RecordBatchBuilder()
    value = os.urandom(value_bytes)
    for i in range(records):
        builder.append(timestamp=1_700_000_000_000 + i, key=None, value=value)
    request = ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    payload = encode_request(request, 9, 1, "metrics-cost")
    frame = struct.pack(">i", len(payload)) + payload
    with WireClient.connect(bootstrap, timeout=120) as client:
        go.wait()
        start = time.monotonic()
        sent = received = 0
        while sent < min(IN_FLIGHT, requests):
            client.send_raw(frame)
            sent += 1
        while received < requests:
            client.receive_frame()
            received += 1
            if sent < requests:
                client.send_raw(frame)
                sent += 1
        out.put((requests * records, start, time.monotonic()))


def produce_frame(topic: str, records: int, value_bytes: int) -> bytes:
    """A size-prefixed Produce v9 request (acks=1) with one batch of ``records`` records."""
    import struct

    from tidelog.protocol import encode_request
    from tidelog.protocol.messages import ProduceRequest
    from tidelog.records import RecordBatchBuilder

    builder = RecordBatchBuilder()
    value = os.urandom(value_bytes)
    for i in range(records):
        builder.append(timestamp=1_700_000_000_000 + i, key=None, value=value)
    request = ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    payload = encode_request(request, 9, 1, "metrics-cost")
    return struct.pack(">i", len(payload)) + payload


class _DroppingTransport:
    """Just enough of an asyncio transport for ClientProtocol: what is written is dropped."""

    def get_extra_info(self, name: str, default=None):
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default

    def writelines(self, buffers) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


def run_path(tmp: Path, workloads: list[str], rounds: int, requests: int | None, value_bytes: int,
             quick: bool, calibrate: bool = False) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    """The in-process produce path of two brokers (metrics on, off), alternating, ``rounds`` times."""
    import asyncio

    from tidelog.config import BrokerConfig
    from tidelog.server.broker import Broker
    from tidelog.server.network import ClientProtocol

    figures: dict[str, dict[str, list[tuple[float, float, float]]]] = {w: {"on": [], "off": []} for w in workloads}

    async def main() -> None:
        brokers = {}
        for name, listener in (("on", "" if calibrate else "http://127.0.0.1:0"), ("off", "")):
            b = Broker(BrokerConfig.from_props({"log.dirs": str(tmp / f"path-{name}"),
                                                "listeners": "PLAINTEXT://127.0.0.1:0", "metrics.listener": listener,
                                                "num.partitions": "1"}))
            await b.start()
            brokers[name] = b
        try:
            for workload in workloads:
                records = PATH_WORKLOADS[workload]
                n = requests or (300 if records >= 100 else 6000) // (4 if quick else 1)
                for b in brokers.values():
                    b.controller.create_topic(workload, 1)
                    await b.partition_controller.await_leaders([workload], 30_000)  # decided in its queue
                frame = produce_frame(workload, records, value_bytes)
                for r in range(rounds):
                    for name in (("on", "off") if r % 2 == 0 else ("off", "on")):
                        b = brokers[name]
                        proto = ClientProtocol(b.network, "PLAINTEXT")
                        proto.connection_made(_DroppingTransport())  # type: ignore[arg-type]
                        before = b.logs.get_log(workload, 0).log_end_offset
                        cpu0, wall0 = time.process_time(), time.perf_counter()
                        for _ in range(n):
                            proto.data_received(frame)
                        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                        written = b.logs.get_log(workload, 0).log_end_offset - before
                        assert written == n * records, f"{written} records written of {n * records}"
                        proto.connection_lost(None)
                        figures[workload][name].append((written / wall, cpu / written * 1e6, float("nan")))
                    on, off = figures[workload]["on"][-1], figures[workload]["off"][-1]
                    print(f"  [{time.strftime('%H:%M:%S')}] round {r + 1} {workload}: on {on[1]:.3f} / off "
                          f"{off[1]:.3f} µs CPU/record ({on[1] / off[1]:.3f})", flush=True)
                    await asyncio.sleep(0)  # let the loop run its housekeeping between rounds
        finally:
            for b in brokers.values():
                await b.stop()

    asyncio.run(main())
    return figures


def wire_phase(ep: Endpoint, topics: list[str], records: int, value_bytes: int,
               requests: int) -> tuple[int, float, float | None, float]:
    """Like :func:`perf.saturation.produce_phase`, with :func:`_wire_producer` clients."""
    sent, cpu, broker_core, _ = _phase(ep, _wire_producer, [(ep.bootstrap, t, records, value_bytes, requests)
                                                            for t in topics])
    kept = sum(high_watermark(ep.bootstrap, t) for t in topics)
    return kept, max(e for _, _, e in sent) - min(s for _, s, _ in sent), cpu, broker_core


@contextlib.contextmanager
def broker(tmp: Path, metrics: bool, name: str = ""):
    overrides = {"num.partitions": "1", "auto.create.topics.enable": "true"}
    if not metrics:
        overrides["metrics.listener"] = ""
    b = BrokerProcess(tmp / (name or ("on" if metrics else "off")), overrides=overrides, start_timeout=120)
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
    ap.add_argument("--workloads", default=DEFAULT_WORKLOADS,
                    help=f"comma-separated, from {','.join(WORKLOADS)} (default {DEFAULT_WORKLOADS})")
    ap.add_argument("--requests", type=int, default=None,
                    help="Produce requests per wire client and round (wire-1000: 400, wire-10: 8,000; --quick: a quarter)")
    ap.add_argument("--scrape-interval", type=float, default=5.0, help="seconds between scrapes of /metrics (5)")
    ap.add_argument("--path-requests", type=int, default=None,
                    help="requests per path round (path-1000: 300, path-10: 6,000; --quick: a quarter)")
    ap.add_argument("--calibrate", action="store_true",
                    help="an A/A run: the 'on' broker runs with metrics off too (the noise floor, and any bias "
                         "between the two brokers)")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 3 s (a quarter of the wire requests)")
    args = ap.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 6)
    path_rounds = args.rounds or (6 if args.quick else 20)
    seconds = args.seconds or (3.0 if args.quick else 8.0)
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workloads: {', '.join(unknown)}")
    if len(os.sched_getaffinity(0)) < 2:
        ap.error("needs two cores (one for the broker, one for the clients)")
    path_workloads = [w for w in workloads if w in PATH_WORKLOADS]
    process_workloads = [w for w in workloads if w not in PATH_WORKLOADS]
    print(f"metrics on vs off; {args.value_bytes} B records; load average {loadavg()}", flush=True)
    # workload -> "on"/"off" -> list of (records/s, broker µs CPU per record, broker core busy), one per round
    figures: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    scrapes = 0
    with tempfile.TemporaryDirectory(prefix="tidelog-metrics-cost-") as tmp, contextlib.ExitStack() as stack:
        if path_workloads:
            print(f"\nIn-process produce path, {path_rounds} rounds (pinned to core {BROKER_CORE})", flush=True)
            with pinned({BROKER_CORE}):
                figures.update(run_path(Path(tmp), path_workloads, path_rounds, args.path_requests, args.value_bytes,
                                        args.quick, args.calibrate))
        if process_workloads:
            print(f"\nBroker processes on core {BROKER_CORE}, {args.clients} client processes on core {CLIENT_CORE}, "
                  f"{rounds} rounds", flush=True)
            figures.update({w: {"on": [], "off": []} for w in process_workloads})
            with pinned({BROKER_CORE}):
                on_broker, on = stack.enter_context(broker(Path(tmp), not args.calibrate, "on"))
                _, off = stack.enter_context(broker(Path(tmp), False))
            for name, ep in (("on", on), ("off", off)):
                print(f"  metrics {name}: taskset: {pin_broker(ep)}", flush=True)
            with pinned({CLIENT_CORE}):
                for r in range(rounds):
                    order = [("on", on), ("off", off)] if r % 2 == 0 else [("off", off), ("on", on)]
                    for workload in process_workloads:
                        conf = WORKLOADS[workload]
                        for name, ep in order:
                            topics = [f"cost-{workload}-{r}-{i}" for i in range(args.clients)]
                            for t in topics:
                                ep.create_topic(t, 1)
                            scraper = (Scraper(on_broker.http_url, args.scrape_interval)
                                       if name == "on" and not args.calibrate else None)
                            if scraper is not None:
                                scraper.start()
                            if workload.startswith("wire-"):
                                requests = args.requests or (400_000 // conf) // (4 if args.quick else 1) // (
                                    1 if conf >= 100 else 5)
                                kept, wall, cpu, core = wire_phase(ep, topics, conf, args.value_bytes, requests)
                            else:
                                kept, wall, cpu, core = produce_phase(ep, topics, args.value_bytes, seconds, 10**9,
                                                                      conf)
                            if scraper is not None:
                                scraper.stop_event.set()
                                scraper.join(30)
                                scrapes += scraper.scrapes
                            us = cpu / kept * 1e6 if cpu is not None and kept else float("nan")
                            figures[workload][name].append((kept / wall, us, core))
                            print(f"  [{time.strftime('%H:%M:%S')}] round {r + 1} {workload} metrics {name}: "
                                  f"{kept / wall:,.0f} records/s, broker {us:.3f} µs CPU/record, "
                                  f"broker core {core:.0%}", flush=True)
            print(f"  {scrapes} scrapes of /metrics during the 'on' phases")
    print(f"\nload average at the end: {loadavg()}")
    print("Medians over the rounds; 'paired' is the median of each round's on/off ratio (the two runs of a round\n"
          "are back to back, so slow phases of the machine hit both). Cost = CPU per record on/off - 1.\n")
    print(f"{'workload':<10} {'metrics':<8} {'records/s':>12} {'µs CPU/record':>14}")
    for workload in workloads:
        rows = figures[workload]
        for name in ("on", "off"):
            rate = statistics.median(x[0] for x in rows[name])
            us = statistics.median(x[1] for x in rows[name])
            print(f"{workload:<10} {name:<8} {rate:>12,.0f} {us:>14.3f}")
        rate_ratio = statistics.median(a[0] / b[0] for a, b in zip(rows["on"], rows["off"]))
        cpu_ratio = statistics.median(a[1] / b[1] for a, b in zip(rows["on"], rows["off"]))
        print(f"{workload:<10} {'paired':<8} {rate_ratio:>12.3f} {cpu_ratio:>14.3f}   -> metrics cost "
              f"{(cpu_ratio - 1) * 100:+.1f}% broker CPU per record (target < 3%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
