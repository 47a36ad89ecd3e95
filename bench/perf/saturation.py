"""Broker-bound mode: the broker alone on one core, every client on the other, enough clients to keep it busy.

Each broker is started with this process pinned to core 0 (its process and threads inherit that), then
``taskset -a -p -c 0 PID`` pins every thread it has (and prints the affinity, as a check); the clients
are processes started with this process pinned to core 1. Per workload (100 B records and 65,000 B
records in 1 MiB batches), ``producers`` processes each send to a topic of their own as fast as they can
for ``seconds`` (or until they have sent ``max_bytes / producers``) and flush; then as many consumers read
those topics back from offset 0. Rates are all records over the phase's wall time (first start to last
end); the busy share of each core over the phase and the broker's CPU seconds say whether the broker
was the bottleneck (its core near 100%) or the clients were.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition

from perf.measurement import busy_fraction, core_busy, cpu_seconds, high_watermark
from perf.target import Endpoint
from perf.workload import CONSUMER_CONF, PRODUCER_CONF

BROKER_CORE, CLIENT_CORE = 0, 1


@dataclass
class Saturation:
    target: str
    workload: str
    value_bytes: int
    produce_rate: float = float("nan")
    consume_rate: float = float("nan")
    produce_broker_core: float = float("nan")  # share of the broker's core busy during the phase
    produce_client_core: float = float("nan")
    consume_broker_core: float = float("nan")
    consume_client_core: float = float("nan")
    produce_cpu: float | None = None  # broker CPU seconds in the phase
    consume_cpu: float | None = None
    records: int = 0
    error: str = ""

    @property
    def produce_mb(self) -> float:
        return self.produce_rate * self.value_bytes / 1e6

    @property
    def consume_mb(self) -> float:
        return self.consume_rate * self.value_bytes / 1e6


def pin_broker(ep: Endpoint) -> str:
    """taskset every thread of the broker's processes to BROKER_CORE; taskset's report."""
    out = []
    for pid in ep.pids:
        done = subprocess.run(["taskset", "-a", "-p", "-c", str(BROKER_CORE), str(pid)], capture_output=True,
                              text=True, check=True)
        out.append(done.stdout.strip().splitlines()[-1])
    return "; ".join(out)


def _producer(bootstrap: str, topic: str, value_bytes: int, seconds: float, max_records: int, conf: dict,
              go, out) -> None:
    import os

    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONF, **conf})
    p.list_topics(topic, timeout=30)
    value = os.urandom(value_bytes)
    send, poll = p.produce, p.poll
    go.wait()
    start = time.monotonic()
    stop = start + seconds
    sent = 0
    while sent < max_records and (sent & 1023 or time.monotonic() < stop):
        try:
            send(topic, value, partition=0)
            sent += 1
        except BufferError:
            poll(0.002)
    left = p.flush(120)
    out.put((sent - left, start, time.monotonic()))


def _consumer(bootstrap: str, topic: str, records: int, go, out) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF})
    c.assign([TopicPartition(topic, 0, 0)])
    go.wait()
    start = time.monotonic()
    count, last = 0, start
    while count < records and time.monotonic() - last < 20:
        msgs = c.consume(min(10_000, records - count), 0.5)
        if msgs:
            last = time.monotonic()
            count += sum(1 for m in msgs if m.error() is None)
    end = time.monotonic()
    c.close()
    out.put((count, start, end))


def _phase(ep: Endpoint, target, argsets: list[tuple]) -> tuple[list[tuple], float | None, float, float]:
    """Run ``target`` in one process per argument tuple, released together; (results, broker CPU s,
    broker core busy, client core busy)."""
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, go, out)) for a in argsets]
    for p in procs:
        p.start()
    time.sleep(2.0)  # connected, metadata fetched
    cpu0, cores0 = cpu_seconds(ep.pids), core_busy()
    go.set()
    results = [out.get(timeout=600) for _ in procs]
    cpu1, cores1 = cpu_seconds(ep.pids), core_busy()
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()
    cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    return (results, cpu, busy_fraction(cores0, cores1, BROKER_CORE), busy_fraction(cores0, cores1, CLIENT_CORE))


def produce_phase(ep: Endpoint, topics: list[str], value_bytes: int, seconds: float, max_records: int,
                  conf: dict) -> tuple[int, float, float | None, float]:
    """One producer process per topic (already created), as fast as they can for ``seconds``; returns
    (records the broker kept, wall seconds from first start to last end, broker CPU s, broker core busy).
    Call with this process pinned to CLIENT_CORE."""
    sent, cpu, broker_core, _ = _phase(
        ep, _producer, [(ep.bootstrap, t, value_bytes, seconds, max_records, conf) for t in topics])
    kept = sum(high_watermark(ep.bootstrap, t) for t in topics)
    return kept, max(e for _, _, e in sent) - min(s for _, s, _ in sent), cpu, broker_core


def run_saturation(name: str, ep: Endpoint, workload: str, value_bytes: int, clients: int, seconds: float,
                   max_bytes: int, conf: dict, round_no: int) -> Saturation:
    """Call with this process pinned to CLIENT_CORE (the client processes inherit it)."""
    result = Saturation(name, workload, value_bytes)
    topics = [f"bound-{workload}-{round_no}-{i}" for i in range(clients)]
    for topic in topics:
        ep.create_topic(topic, 1)
    max_records = max_bytes // value_bytes // clients
    sent, cpu, broker_core, client_core = _phase(
        ep, _producer, [(ep.bootstrap, t, value_bytes, seconds, max_records, conf) for t in topics])
    # what the brokers hold (a record whose delivery failed is not counted by flush())
    kept = [high_watermark(ep.bootstrap, t) for t in topics]
    total = sum(kept)
    result.records = total
    result.produce_rate = total / (max(e for _, _, e in sent) - min(s for _, s, _ in sent))
    result.produce_cpu, result.produce_broker_core, result.produce_client_core = cpu, broker_core, client_core
    if total < sum(n for n, _, _ in sent):
        result.error = f"{sum(n for n, _, _ in sent) - total:,} records sent but not kept; "
    got, cpu, broker_core, client_core = _phase(
        ep, _consumer, [(ep.bootstrap, t, n) for t, n in zip(topics, kept, strict=True)])
    read = sum(n for n, _, _ in got)
    result.consume_rate = read / (max(e for _, _, e in got) - min(s for _, s, _ in got))
    result.consume_cpu, result.consume_broker_core, result.consume_client_core = cpu, broker_core, client_core
    if read != total:
        result.error += f"read {read:,} of {total:,} records"
    return result
