"""``tidelog perf produce`` / ``tidelog perf consume``: throughput and latency of a broker, measured
with confluent-kafka (the roles of kafka-producer-perf-test and kafka-consumer-perf-test).

Figures, one summary line on stdout:

* records/s and MB/s (MB = 1024 * 1024 bytes, as Kafka's tools count) over the measured interval;
* produce latency: from ``produce()`` to the delivery report, per record (librdkafka's
  ``Message.latency()``), so it includes batching (linger.ms) and the broker's acknowledgement;
* consume latency: end to end, the time a record arrives minus its timestamp. It is meaningful when
  the records were produced just now (run ``perf consume`` while ``perf produce`` runs); for older
  records it is their age.

A progress bar is drawn on stderr when stderr is a terminal. Ctrl-C (or SIGTERM) stops a run early: the
summary of what was measured so far is printed and the exit code is 130. A broker lost mid-run is
reported (``lost the broker at HOST:PORT``) with the partial summary, exit 1.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from tidelog.cli.argument import bounded_int, key_value, positive_int, topic_name
from tidelog.cli.client import (
    BrokerLost,
    CliError,
    Cluster,
    Interrupt,
    Progress,
    close_consumer,
    command,
    deferred_interrupts,
    describe_error,
    percentile,
    require_topic,
)

MB = 1024 * 1024
MESSAGE_TIMEOUT_MS = 60_000
#: librdkafka's largest message.max.bytes; a bigger record could never be sent.
MAX_RECORD_SIZE = 1_000_000_000
#: Exit code of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
INTERRUPTED = 130
#: How long an interrupted ``perf produce`` waits for the records already sent.
_INTERRUPTED_FLUSH_S = 2.0
#: Maps every byte to one of A..Z (random bytes through it make the random letters Kafka's tool sends).
_LETTERS = bytes(ord("A") + i % 26 for i in range(256))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("perf", help="measure produce or consume throughput and latency",
                       description="Benchmarks in the manner of kafka-producer-perf-test and "
                       "kafka-consumer-perf-test, using confluent-kafka.")
    kinds = p.add_subparsers(dest="perf_command", metavar="KIND", required=True)

    prod = kinds.add_parser(
        "produce", help="send N records of B bytes and report throughput and latency",
        description="Send --num-records records of --record-size random bytes to --topic (created if the "
        "broker auto-creates topics) and print records/s, MB/s and delivery latency avg/p50/p95/p99/max. "
        "Exits 1 if any record failed, 130 if interrupted (after printing the figures so far).",
    )
    prod.add_argument("--topic", type=topic_name, required=True, help="topic to write to")
    prod.add_argument("--num-records", type=positive_int, required=True, metavar="N", help="records to send")
    prod.add_argument("--record-size", type=bounded_int(1, MAX_RECORD_SIZE), required=True, metavar="B",
                      help="bytes per record value")
    prod.add_argument("--throughput", type=_throughput, default=-1, metavar="RPS",
                      help="cap the send rate at RPS records/s; -1 = unlimited (default)")
    prod.add_argument("--producer-prop", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                      help="any librdkafka producer property, e.g. acks=1 or linger.ms=10 (repeatable)")
    command(prod, run_produce)

    cons = kinds.add_parser(
        "consume", help="read N records and report throughput and end-to-end latency",
        description="Read --messages records from --topic, from the beginning of every partition (or with "
        "--group, from the group's committed offsets), and print records/s, MB/s and end-to-end latency "
        "avg/p50/p95/p99/max. Exits 1 if fewer records arrived before --timeout-ms passed without one, 130 if "
        "interrupted (after printing the figures so far).",
    )
    cons.add_argument("--topic", type=topic_name, required=True, help="topic to read")
    cons.add_argument("--messages", type=positive_int, required=True, metavar="N", help="records to read")
    cons.add_argument("--timeout-ms", type=positive_int, default=10_000, metavar="T",
                      help="give up when no record arrived for T milliseconds (default 10000)")
    cons.add_argument("--group", metavar="G", help="subscribe with this consumer group instead of assigning")
    cons.add_argument("--consumer-prop", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                      help="any librdkafka consumer property, e.g. fetch.max.bytes=1048576 (repeatable)")
    command(cons, run_consume)


def _throughput(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected records per second or -1, got {text!r}") from None
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError("expected a positive rate, or -1 for unlimited")
    return value


def summary(records: int, total_bytes: int, elapsed_s: float, latencies_ms: Sequence[float],
            verb: str = "sent") -> str:
    """The one-line report: ``N records sent, R records/s (M MB/s), latency avg ... ms``."""
    elapsed_s = max(elapsed_s, 1e-9)
    lat = sorted(latencies_ms)
    avg = sum(lat) / len(lat) if lat else 0.0
    return (
        f"{records} records {verb} in {elapsed_s:.2f} s, {records / elapsed_s:.1f} records/s "
        f"({total_bytes / MB / elapsed_s:.2f} MB/s), latency avg {avg:.2f} ms, "
        f"p50 {percentile(lat, 0.50):.2f} ms, p95 {percentile(lat, 0.95):.2f} ms, "
        f"p99 {percentile(lat, 0.99):.2f} ms, max {(lat[-1] if lat else 0.0):.2f} ms"
    )


# ------------------------------------------------------------------------------------------ produce


class _ProduceStats:
    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.latencies_ms: list[float] = []
        self.failed = 0
        self.first_error: str | None = None
        self.last_delivery: float | None = None

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.latencies_ms.append((message.latency() or 0.0) * 1000)
            self.last_delivery = time.monotonic()
        else:
            self.failed += 1
            if self.first_error is None:
                self.first_error = describe_error(error)

    @property
    def done(self) -> int:
        return len(self.latencies_ms) + self.failed


def run_produce(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    config: dict[str, Any] = {"message.timeout.ms": MESSAGE_TIMEOUT_MS}
    config.update(dict(args.producer_prop))
    try:
        producer = Producer(cluster.config(config))
    except (KafkaException, ValueError, TypeError) as e:
        raise CliError(f"invalid producer configuration: {e}", exit_code=2) from None
    require_topic(cluster.metadata(producer, args.topic), args.topic)
    payload = random.Random().randbytes(args.record_size).translate(_LETTERS)  # as Kafka's tool sends
    stats = _ProduceStats(args.prog)
    progress = Progress(args.num_records)
    start = time.monotonic()
    stopped: str | None = None
    with deferred_interrupts() as interrupt:
        try:
            _send_all(producer, cluster, args, payload, stats, progress, start, interrupt)
            deadline = time.monotonic() + MESSAGE_TIMEOUT_MS / 1000 + 5
            while producer.flush(0.25) > 0 and time.monotonic() < deadline:
                interrupt.check()
                progress.update(stats.done)
                cluster.check_connection(producer)
        except KeyboardInterrupt:
            stopped = "interrupted"
            producer.flush(_INTERRUPTED_FLUSH_S)  # what is in flight still counts
            # The rest is dropped, so that closing the producer never waits for it.
            producer.purge(in_queue=True, in_flight=True, blocking=False)
        except BrokerLost as e:
            stopped = str(e)
    # A lost broker's grace period measured nothing: a stopped run counts up to its last delivery.
    end = stats.last_delivery if stopped is not None and stats.last_delivery is not None else time.monotonic()
    elapsed = end - start
    progress.close()
    delivered = len(stats.latencies_ms)
    print(summary(delivered, delivered * args.record_size, elapsed, stats.latencies_ms))
    if stopped is not None:
        print(f"{args.prog}: {stopped} after {delivered} of {args.num_records} records", file=sys.stderr)
        return INTERRUPTED if stopped == "interrupted" else 1
    failed = args.num_records - delivered
    if failed:
        reason = f" (first error: {stats.first_error})" if stats.first_error else ""
        print(f"{args.prog}: {failed} of {args.num_records} records failed{reason}", file=sys.stderr)
        return 1
    return 0


def _send_all(producer: Producer, cluster: Cluster, args: argparse.Namespace, payload: bytes,
              stats: _ProduceStats, progress: Progress, start: float, interrupt: Interrupt) -> None:
    for i in range(args.num_records):
        interrupt.check()
        if args.throughput > 0:
            ahead = start + i / args.throughput - time.monotonic()
            if ahead > 0:
                producer.poll(ahead)
        while True:
            try:
                producer.produce(args.topic, payload, on_delivery=stats.on_delivery)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                interrupt.check()
                producer.poll(0.05)
                cluster.check_connection(producer)
        if i % 1000 == 0:
            producer.poll(0)
            cluster.check_connection(producer)
        progress.update(stats.done)


# ------------------------------------------------------------------------------------------ consume


def run_consume(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    config: dict[str, Any] = {
        "group.id": args.group or "tidelog-perf-consumer",
        "enable.auto.commit": args.group is not None,
        "auto.offset.reset": "earliest",
    }
    config.update(dict(args.consumer_prop))
    try:
        consumer = Consumer(cluster.config(config))
    except (KafkaException, ValueError, TypeError) as e:
        raise CliError(f"invalid consumer configuration: {e}", exit_code=2) from None
    run = _ConsumeRun(args.messages)
    with deferred_interrupts() as interrupt:
        _consume_until_stopped(consumer, cluster, args, run, interrupt)
    print(summary(run.count, run.total_bytes, run.last - run.start, run.latencies, verb="consumed"))
    if run.stopped is not None:
        print(f"{args.prog}: {run.stopped} after {run.count} of {args.messages} records", file=sys.stderr)
        return INTERRUPTED if run.stopped == "interrupted" else 1
    if run.count < args.messages:
        print(f"{args.prog}: only {run.count} of {args.messages} records arrived before {args.timeout_ms} ms "
              "passed without one", file=sys.stderr)
        return 1
    return 0


def _consume_until_stopped(consumer: Consumer, cluster: Cluster, args: argparse.Namespace, run: _ConsumeRun,
                           interrupt: Interrupt) -> None:
    try:
        _, metadata = cluster.connect()
        partition_count = require_topic(metadata, args.topic)
        run.restart_clock()
        run.connected = True
        if args.group is not None:
            consumer.subscribe([args.topic])
        else:
            consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(partition_count)])
        _consume(consumer, cluster, args, run, interrupt)
    except KeyboardInterrupt:
        run.stopped = "interrupted"
    except BrokerLost as e:
        run.stopped = str(e)
    finally:
        run.progress.close()
        lost = run.stopped not in (None, "interrupted") or not run.connected
        close_consumer(consumer, args.prog, timeout_s=0.5 if lost else 10.0)


class _ConsumeRun:
    """What ``perf consume`` measured so far (kept when the run is interrupted)."""

    def __init__(self, messages: int) -> None:
        self.progress = Progress(messages)
        self.latencies: list[float] = []
        self.count = 0
        self.total_bytes = 0
        self.start = self.last = time.monotonic()
        self.stopped: str | None = None
        self.connected = False

    def restart_clock(self) -> None:
        self.start = self.last = time.monotonic()


def _consume(consumer: Consumer, cluster: Cluster, args: argparse.Namespace, run: _ConsumeRun,
             interrupt: Interrupt) -> None:
    idle_s = args.timeout_ms / 1000
    while run.count < args.messages:
        interrupt.check()
        batch = consumer.consume(num_messages=min(1000, args.messages - run.count), timeout=0.2)
        now_ms = time.time() * 1000
        got = 0
        for m in batch:
            error = m.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if error.fatal() or error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                    raise CliError(describe_error(error))
                continue
            got += 1
            run.total_bytes += len(m.value() or b"") + len(m.key() or b"")
            ts_type, ts = m.timestamp()
            if ts_type != TIMESTAMP_NOT_AVAILABLE:
                run.latencies.append(max(now_ms - ts, 0.0))
        if got:
            run.count += got
            run.last = time.monotonic()
            run.progress.update(run.count)
        elif time.monotonic() - run.last >= idle_s:
            break
        else:
            cluster.check_connection(consumer)


__all__ = ["add_parser", "run_consume", "run_produce", "summary"]
