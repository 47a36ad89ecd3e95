"""A broker's life outside the hot path: start-up, idle memory with many partitions, recovery after SIGKILL.

On a fresh broker (a new data dir): the time from starting its process to the first produce it
acknowledges (the topic created the target's usual way); then its resident memory after it has held
``--idle-partitions`` partitions (10 topics) idle for a few seconds; then, where the data survives a
restart (Tidelog and Kafka), ``--recovery-mib`` written in 1 MiB batches, SIGKILL, a restart on the
same data dir, and the time from the new process's start to the first produce acknowledged on the
partition that was written (which the broker must have recovered to serve).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from perf.measurement import high_watermark, rss_bytes
from perf.target import Endpoint, baseline_source, open_target, wait_for_topic
from perf.workload import BIG_PRODUCER_CONF, BIG_VALUE_BYTES, produce

#: librdkafka backs off reconnecting up to 10 s by default, which would be counted as the broker's time.
PROBE_CONF = {"acks": 1, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 100,
              "message.timeout.ms": 10_000, "retry.backoff.ms": 20, "retry.backoff.max.ms": 100}
IDLE_TOPICS = 10
#: The targets whose data is in memory or thrown away on restart, and those without CreateTopics.
NO_RECOVERY = {"tansu": "memory storage: nothing to recover", "null": "keeps nothing across restarts",
               "mock": "in this process"}
NO_RSS = {"null": "no CreateTopics", "mock": "in this process"}


@dataclass
class Lifecycle:
    target: str
    startup_s: float | None = None
    rss_idle: int | None = None  # bytes
    recovery_s: float | None = None
    recovery_note: str = ""
    rss_note: str = ""
    error: str = ""


def first_produce(bootstrap: str, topic: str, partition: int = 0, timeout: float = 600.0) -> float:
    """Produce one record until the broker acknowledges one; the time.monotonic() of that ack."""
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        acks: list = []
        p = Producer({"bootstrap.servers": bootstrap, **PROBE_CONF})
        p.produce(topic, b"probe", partition=partition, on_delivery=lambda err, _msg, acks=acks: acks.append(err))
        while not acks and time.monotonic() < deadline:
            p.poll(0.005)
        if acks and acks[0] is None:
            return time.monotonic()
        last = str(acks[0]) if acks else "no answer"
        time.sleep(0.01)
    raise RuntimeError(f"no produce acknowledged within {timeout:.0f} s ({last})")


def create_partitions(bootstrap: str, total: int) -> None:
    """``total`` partitions in IDLE_TOPICS topics, with CreateTopics."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    each = total // IDLE_TOPICS
    topics = [NewTopic(f"idle-{i}", each, 1) for i in range(IDLE_TOPICS)]
    for future in admin.create_topics(topics, request_timeout=60).values():
        future.result(120)
    for topic in topics:
        wait_for_topic(bootstrap, topic.topic, each, timeout=120)


def run_lifecycle(name: str, tmp: Path, partitions: int, idle_s: float, recovery_bytes: int) -> Lifecycle:
    result = Lifecycle(name)
    with open_target(name, tmp) as ep:
        ep.create_topic("startup", 1)
        result.startup_s = first_produce(ep.bootstrap, "startup") - ep.launched
        if name in NO_RSS:
            result.rss_note = NO_RSS[name]
        else:
            create_partitions(ep.bootstrap, partitions)
            time.sleep(idle_s)
            result.rss_idle = rss_bytes(ep.pids)
        if ep.broker is None:
            result.recovery_note = NO_RECOVERY.get(name, "cannot restart")
        else:
            recover(result, ep, recovery_bytes)
    return result


def recover(result: Lifecycle, ep: Endpoint, recovery_bytes: int) -> None:
    topic = "recovery"
    ep.create_topic(topic, 1)
    records = -(-recovery_bytes // BIG_VALUE_BYTES)
    produce(ep.bootstrap, topic, records, os.urandom(BIG_VALUE_BYTES), conf=BIG_PRODUCER_CONF)
    ep.broker.kill()
    began = time.monotonic()
    with baseline_source(ep.source):
        ep.broker.start()
    result.recovery_s = first_produce(ep.bootstrap, topic) - began
    try:
        kept = high_watermark(ep.bootstrap, topic)
    except KafkaException as e:
        result.recovery_note = f"high watermark unknown: {e}"
        return
    result.recovery_note = f"{records * BIG_VALUE_BYTES / 2**20:,.0f} MiB written; {kept:,} of {records + 1:,} records there"
