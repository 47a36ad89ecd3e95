"""``tidelog produce``: send one record per input line (a console producer on confluent-kafka).

Lines are read as bytes (any encoding passes through); the line ending (``\\n`` or ``\\r\\n``) is not
part of the record. With ``--key-separator`` the text before the first separator is the key. The
summary (records delivered and failed) goes to stderr; the exit code is 1 if any record failed.

Keyed records are partitioned as the Java client and ``kafka-console-producer.sh`` do: murmur2 of the
key bytes, made positive, modulo the partition count (librdkafka's ``murmur2_random``; records without
a key go to a random partition). One key therefore lands in the same partition whichever of these
clients wrote it. ``--producer-prop partitioner=...`` chooses another.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from tidelog.cli.argument import add_topic_argument, key_value, non_negative_int
from tidelog.cli.client import (
    BrokerLost,
    CliError,
    Cluster,
    command,
    describe_error,
    require_partition,
    require_topic,
)

COMPRESSION = ("none", "gzip", "snappy", "lz4", "zstd")
#: Give up on a record after this long (librdkafka's default is five minutes); --producer-prop overrides it.
MESSAGE_TIMEOUT_MS = 30_000
#: Kafka's partitioner for keyed records (the Java client's), in librdkafka's name.
PARTITIONER = "murmur2_random"
#: Failures printed one by one before only counting them.
_FAILURES_SHOWN = 10


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "produce", help="send lines from stdin or a file as records",
        description="Send one record per input line (stdin unless --file is given) to TOPIC. The topic is "
        "created if it does not exist and the broker allows auto-creation. Keyed records go to the "
        "partition Kafka's Java client would choose (murmur2 of the key). Prints how many records were "
        "delivered and how many failed; exits 1 if any failed.",
    )
    add_topic_argument(p, "topic to write to")
    p.add_argument("--file", type=Path, metavar="FILE", help="read lines from FILE instead of stdin")
    p.add_argument("--key-separator", metavar="SEP",
                   help="split each line at the first SEP into key and value (a line without SEP fails)")
    p.add_argument("--header", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="add this header to every record (repeatable)")
    p.add_argument("--compression", choices=COMPRESSION, default="none", help="batch compression (default none)")
    p.add_argument("--acks", choices=("0", "1", "all"), default="all",
                   help="acknowledgements to wait for (default all)")
    p.add_argument("--partition", type=non_negative_int, metavar="N",
                   help="write every record to partition N (default: murmur2 of the key, as Kafka's Java "
                   "client; a random partition for records without a key)")
    p.add_argument("--producer-prop", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="any librdkafka producer property, e.g. linger.ms=50 (repeatable)")
    command(p, run)


class _Deliveries:
    """Counts delivery reports and prints the first failures (librdkafka calls back from poll/flush)."""

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.delivered = 0
        self.failed = 0

    def fail(self, line_number: int, reason: str) -> None:
        self.failed += 1
        if self.failed <= _FAILURES_SHOWN:
            print(f"{self.prog}: line {line_number}: {reason}", file=sys.stderr)

    def on_delivery(self, line_number: int, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.fail(line_number, describe_error(error))


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    for line in stream:
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        yield line


def run(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    config = {
        "acks": "-1" if args.acks == "all" else args.acks,
        "compression.type": args.compression,
        "message.timeout.ms": MESSAGE_TIMEOUT_MS,
        "partitioner": PARTITIONER,
    }
    config.update(dict(args.producer_prop))
    try:
        producer = Producer(cluster.config(config))
    except (KafkaException, ValueError, TypeError) as e:  # a bad --producer-prop is rejected here
        raise CliError(f"invalid producer configuration: {e}", exit_code=2) from None
    metadata = cluster.metadata(producer, args.topic)
    require_partition(args.topic, args.partition, require_topic(metadata, args.topic, cluster))
    headers = [(k, v.encode()) for k, v in args.header] or None
    separator = args.key_separator.encode() if args.key_separator is not None else None
    deliveries = _Deliveries(args.prog)
    try:
        stream: BinaryIO = args.file.open("rb") if args.file is not None else sys.stdin.buffer
    except OSError as e:
        raise CliError(f"cannot read {args.file}: {e.strerror}") from None
    lost: BrokerLost | None = None
    with stream:
        try:
            for number, line in enumerate(_lines(stream), 1):
                key = None
                if separator is not None:
                    key, found, value = line.partition(separator)
                    if not found:
                        deliveries.fail(number, f"no key separator {args.key_separator!r}")
                        continue
                else:
                    value = line
                _send(producer, cluster, args, key, value, headers, functools.partial(deliveries.on_delivery, number))
        except KeyboardInterrupt:  # Ctrl-C ends the input like Ctrl-D: what was read still gets delivered
            pass
        except BrokerLost as e:
            lost = e
    remaining = 0
    if lost is None:
        try:
            remaining = _flush(producer, cluster)
        except BrokerLost as e:
            lost = e
    if lost is not None:
        remaining = len(producer)
        print(f"{args.prog}: {lost}", file=sys.stderr)
    deliveries.failed += remaining
    summary = f"Delivered {deliveries.delivered} record(s) to {args.topic}"
    print(summary + (f"; {deliveries.failed} failed." if deliveries.failed else "."), file=sys.stderr)
    return 1 if deliveries.failed else 0


def _send(producer: Producer, cluster: Cluster, args: argparse.Namespace, key: bytes | None, value: bytes,
          headers: list[tuple[str, bytes]] | None, on_delivery) -> None:
    kwargs = {"partition": args.partition} if args.partition is not None else {}
    while True:
        try:
            producer.produce(args.topic, value=value, key=key, headers=headers, on_delivery=on_delivery, **kwargs)
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.1)
            cluster.check_connection(producer)
            continue
        producer.poll(0)
        return


def _flush(producer: Producer, cluster: Cluster) -> int:
    """Wait for the outstanding deliveries (at most the message timeout); the records still queued."""
    deadline = time.monotonic() + MESSAGE_TIMEOUT_MS / 1000 + 5
    while (remaining := producer.flush(0.25)) and time.monotonic() < deadline:
        cluster.check_connection(producer)
    return remaining


__all__ = ["add_parser", "run"]
