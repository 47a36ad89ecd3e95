"""The throughput workload: a confluent-kafka Producer sends records and flushes, a Consumer reads them back."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer, TopicPartition

from perf.measurement import Phase, measured
from perf.target import Endpoint

TOPIC = "bench"

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


#: The "1 MiB batches" workload: values of 65,000 bytes, 16 to a batch of batch.size = 1 MiB (librdkafka
#: caps a batch at its message.max.bytes, 1,000,000 by default: raised so that the batch is the 1 MiB;
#: Kafka's broker takes batches up to its message.max.bytes of 1,048,588).
BIG_VALUE_BYTES = 65_000
BIG_PRODUCER_CONF = {"message.max.bytes": 1_100_000}


def produce(bootstrap: str, topic: str, records: int, value: bytes, partitions: int = 1,
            conf: dict | None = None) -> tuple[float, int]:
    """Send ``records`` copies of ``value`` (spread evenly over ``partitions``, one after the other)
    and flush; returns (seconds, records)."""
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONF, **(conf or {})})
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
            stall_s: float = 20.0, conf: dict | None = None) -> tuple[float, int]:
    """Read ``records`` records from offset 0 of each partition; returns (seconds, records read)."""
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF, **(conf or {})})
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


def warm_up_consumer(bootstrap: str, seconds: float = 1.5, conf: dict | None = None) -> None:
    """Start a consumer and let it run briefly. confluent-kafka wants a group.id even for assign(), and
    librdkafka then looks up the group's coordinator: a broker with groups creates __consumer_offsets
    (50 partitions) at that moment, which would otherwise land in the first measured round."""
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONF, **(conf or {})})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.poll(0.1)
    c.close()


def run_round(result: Throughput, ep: Endpoint, topic: str, records: int, value: bytes,
              conf: dict | None = None) -> bool:
    """One round on a new topic: produce, then consume from the beginning; adds both phases to
    ``result``. False (and ``result.error`` set) when the consumer did not get every record."""
    ep.create_topic(topic, 1)
    conf = {**ep.client_conf, **(conf or {})}
    result.produce.append(measured(ep, lambda: produce(ep.bootstrap, topic, records, value, conf=conf)))
    partitions = 1
    if ep.keeps_partition_bytes is not None:
        partitions = -(-records * (len(value) + 12) // ep.keeps_partition_bytes)
        topic += "-wide"
        ep.create_topic(topic, partitions)
        produce(ep.bootstrap, topic, records, value, partitions, conf=conf)
        result.note = (f"consume from a {partitions}-partition topic (the mock keeps the last 5 MiB of a "
                       "partition); broker CPU not measured (in this process)")
    phase = measured(ep, lambda: consume(ep.bootstrap, topic, partitions, records, len(value), conf=ep.client_conf))
    result.consume.append(phase)
    if phase.records != records:
        result.error = f"read {phase.records} of {records} records"
        return False
    return True


def run_throughput(name: str, ep: Endpoint, records: int, value: bytes, repeats: int) -> Throughput:
    """``repeats`` rounds, each on a new topic: produce, then consume from the beginning."""
    result = Throughput(name, ep.describe)
    warm_up_consumer(ep.bootstrap)
    for i in range(repeats):
        if not run_round(result, ep, f"{TOPIC}-{i}", records, value):
            break
    return result
