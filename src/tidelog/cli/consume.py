"""``tidelog consume``: print a topic's records (a console consumer on confluent-kafka).

Where reading starts, per partition:

* default: the end of the log (only new records), or the group's committed offset with ``--group``;
* ``--from-beginning``: the log start offset (with ``--group``, only where nothing is committed);
* ``--offset N``: offset N (or ``earliest`` / ``latest``);
* ``--timestamp T``: the first record whose timestamp is at or after T (the end if there is none).

Without ``--group`` the command assigns the partitions itself and commits nothing (librdkafka still needs
a group id: ``tidelog-console-consumer-<pid>``, which an authorizer must let the user read; a refusal
names it). With ``--group`` and
no explicit position it subscribes (the group coordinator assigns partitions) and commits as it goes.
Ctrl-C and SIGTERM stop it cleanly: a group member commits, leaves its group and exits 0. A broker
that dies is noticed: after :data:`~tidelog.cli.client.CONNECT_TIMEOUT_S` without an answer the command
reports ``lost the broker at HOST:PORT`` and exits 1.

``--format json`` prints one object per record::

    {"topic": "t", "partition": 0, "offset": 5, "timestamp": 1700000000000, "timestamp_type": "CreateTime",
     "key": "k", "value": "v", "headers": [{"key": "h", "value": "x"}]}

A key, value or header value that is not valid UTF-8 is printed in base64, and the object then carries
``"key_encoding": "base64"`` (``value_encoding``, or ``value_encoding`` inside the header). Missing keys and
values are ``null``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from tidelog.cli.argument import (
    add_topic_argument,
    key_value,
    non_negative_int,
    offset,
    positive_int,
    timestamp_ms,
)
from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    BrokerLost,
    CliError,
    Cluster,
    close_consumer,
    command,
    describe_error,
    require_partition,
    require_topic,
)

_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}
_BATCH = 500
# Errors after which reading cannot go on.
#: The group id of a consumer run without --group (followed by the process id).
ANONYMOUS_GROUP_PREFIX = "tidelog-console-consumer-"
_FATAL = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION,
          KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError._FATAL}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "consume", help="print a topic's records",
        description="Read records from TOPIC and print them, as text (the values) or as JSON lines. "
        "Stops after --max-messages records, after --timeout-ms without a record, or on Ctrl-C or SIGTERM "
        "(exit 0; a group member commits and leaves its group). Exits 1 if the broker is lost.",
    )
    add_topic_argument(p, "topic to read")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the oldest record")
    start.add_argument("--offset", type=_offset, metavar="N",
                       help="start at offset N in each partition read (or 'earliest' / 'latest')")
    start.add_argument("--timestamp", type=timestamp_ms, metavar="MS|ISO8601",
                       help="start at the first record at or after this time: epoch milliseconds or an "
                       "ISO 8601 date-time (local time unless it has an offset such as Z or +02:00)")
    p.add_argument("--partition", type=non_negative_int, metavar="N", help="read only partition N")
    p.add_argument("--max-messages", type=positive_int, metavar="N", help="exit after N records")
    p.add_argument("--timeout-ms", type=positive_int, metavar="T",
                   help="exit when no record arrived for T milliseconds (default: wait forever)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: one value per line; json: one JSON object per record (default text)")
    p.add_argument("--print-key", action="store_true", help="text format: print the key before the value")
    p.add_argument("--key-separator", default="\t", metavar="SEP",
                   help="text format: what goes between key and value with --print-key (default a tab)")
    p.add_argument("--group", metavar="G",
                   help="consumer group to commit offsets under; without --partition, --offset or --timestamp "
                   "the command subscribes and the group's coordinator assigns the partitions")
    p.add_argument("--consumer-prop", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="any librdkafka consumer property, e.g. isolation.level=read_committed (repeatable)")
    command(p, run)


def _offset(text: str) -> int:
    named = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}
    if text in named:
        return named[text]
    return offset(text)


# ------------------------------------------------------------------------------------------ running


def run(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    config: dict[str, Any] = {
        "group.id": args.group or f"{ANONYMOUS_GROUP_PREFIX}{os.getpid()}",
        "enable.auto.commit": args.group is not None,
        "auto.offset.reset": "earliest" if args.from_beginning else "latest",
    }
    config.update(dict(args.consumer_prop))
    try:  # before connecting, so that a bad --consumer-prop is a usage error whether or not a broker is up
        consumer = Consumer(cluster.config(config))
    except (KafkaException, ValueError, TypeError) as e:
        raise CliError(f"invalid consumer configuration: {e}", exit_code=2) from None
    assigned: list[bool] = []
    count, lost, subscribed, connected = 0, None, False, False
    try:
        _, metadata = cluster.connect()
        connected = True
        partition_count = require_topic(metadata, args.topic, cluster)
        require_partition(args.topic, args.partition, partition_count)
        subscribed = _position(consumer, args, partition_count, lambda *_: assigned.append(True))
        count, lost = _read(consumer, cluster, args)
    finally:
        # Without a broker there is nothing to commit to or leave: do not wait for it.
        close_consumer(consumer, args.prog, timeout_s=10.0 if connected and lost is None else 0.5)
    if lost is not None:
        print(f"{args.prog}: {lost}", file=sys.stderr)
        print(f"Consumed {count} record(s).", file=sys.stderr)
        return 1
    if subscribed and not assigned:
        print(f"{args.prog}: group {args.group!r} was assigned no partitions (is its coordinator reachable?)",
              file=sys.stderr)
    print(f"Consumed {count} record(s).", file=sys.stderr)
    return 0


def _position(consumer: Consumer, args: argparse.Namespace, partition_count: int, on_assign) -> bool:
    """Subscribe (returns True) or assign the partitions at the requested start (returns False)."""
    explicit = args.offset is not None or args.timestamp is not None or args.partition is not None
    if args.group is not None and not explicit:
        consumer.subscribe([args.topic], on_assign=on_assign)
        return True
    partitions = [args.partition] if args.partition is not None else list(range(partition_count))
    if args.timestamp is not None:
        wanted = [TopicPartition(args.topic, p, args.timestamp) for p in partitions]
        found = consumer.offsets_for_times(wanted, timeout=REQUEST_TIMEOUT_S)
        for tp in found:
            if tp.error is not None:
                raise CliError(f"cannot look up offsets by timestamp: {describe_error(tp.error)}")
            if tp.offset < 0:  # no record at or after the timestamp: wait for new ones
                tp.offset = OFFSET_END
        consumer.assign(found)
        return False
    if args.offset is not None:
        start = args.offset
    elif args.from_beginning:
        start = OFFSET_BEGINNING
    else:
        start = OFFSET_STORED if args.group is not None else OFFSET_END
    consumer.assign([TopicPartition(args.topic, p, start) for p in partitions])
    return False


def _read(consumer: Consumer, cluster: Cluster, args: argparse.Namespace) -> tuple[int, BrokerLost | None]:
    """Print records until done; returns how many, and the BrokerLost error that ended it early."""
    out = sys.stdout.buffer
    count = 0
    idle_s = args.timeout_ms / 1000 if args.timeout_ms is not None else None
    last = time.monotonic()
    try:
        while args.max_messages is None or count < args.max_messages:
            wait = 1.0 if idle_s is None else max(min(1.0, last + idle_s - time.monotonic()), 0.0)
            want = _BATCH if args.max_messages is None else min(_BATCH, args.max_messages - count)
            messages = consumer.consume(num_messages=want, timeout=wait)
            records = [m for m in messages if not _failed(m, args)]
            if records:
                last = time.monotonic()
                for m in records:
                    out.write(_format(m, args))
                out.flush()
                count += len(records)
            else:
                if idle_s is not None and time.monotonic() - last >= idle_s:
                    break
                cluster.check_connection(consumer)
    except KeyboardInterrupt:
        pass
    except BrokerLost as e:
        return count, e
    return count, None


def _failed(message: Message, args: argparse.Namespace) -> bool:
    error = message.error()
    if error is None:
        return False
    if error.code() == KafkaError._PARTITION_EOF:
        return True
    if error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        raise CliError(_group_refused(error, args))
    if error.code() in _FATAL or error.fatal():
        raise CliError(describe_error(error))
    print(f"{args.prog}: {describe_error(error)}", file=sys.stderr)
    return True


def _group_refused(error: KafkaError, args: argparse.Namespace) -> str:
    """GROUP_AUTHORIZATION_FAILED, naming the group: without --group it is one the command made up."""
    if args.group is not None:
        return f"{describe_error(error)}: group {args.group!r}"
    return (f"{describe_error(error)}: group '{ANONYMOUS_GROUP_PREFIX}{os.getpid()}' (without --group the consumer "
            f"still needs a group id, which librdkafka looks up although nothing is committed: allow Read on groups "
            f"prefixed {ANONYMOUS_GROUP_PREFIX}, or pass --group with a group the user may read)")


def _format(message: Message, args: argparse.Namespace) -> bytes:
    if args.format == "json":
        return json.dumps(record_as_json(message), ensure_ascii=False).encode() + b"\n"
    value = message.value()
    line = b"null" if value is None else value
    if args.print_key:
        key = message.key()
        line = (b"null" if key is None else key) + args.key_separator.encode() + line
    return line + b"\n"


def record_as_json(message: Message) -> dict[str, Any]:
    """One record as a JSON-ready dict (the ``--format json`` object)."""
    ts_type, ts = message.timestamp()
    obj: dict[str, Any] = {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": ts if ts_type in _TIMESTAMP_TYPES else None,
        "timestamp_type": _TIMESTAMP_TYPES.get(ts_type),
    }
    _put(obj, "key", message.key())
    _put(obj, "value", message.value())
    headers = []
    for name, raw in message.headers() or ():
        header: dict[str, Any] = {"key": name}
        _put(header, "value", raw)
        headers.append(header)
    obj["headers"] = headers
    return obj


def _put(obj: dict[str, Any], field: str, raw: bytes | None) -> None:
    if raw is None:
        obj[field] = None
        return
    try:
        obj[field] = raw.decode("utf-8")
    except UnicodeDecodeError:
        obj[field] = base64.b64encode(raw).decode("ascii")
        obj[f"{field}_encoding"] = "base64"


__all__ = ["add_parser", "record_as_json", "run"]
