"""End-to-end latency: a producer paced at a fixed rate stamps each value, a consumer in another process
records now - sent."""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition

from perf.measurement import cpu_seconds
from perf.target import Endpoint
from perf.workload import CONSUMER_CONF, PRODUCER_CONF, TOPIC

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
