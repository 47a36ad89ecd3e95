"""``tidelog offsets``: a partition's offsets by time, what ``kafka-get-offsets.sh`` prints, and the
ListOffsets lookup the other commands share (:func:`list_offsets`).

One line per partition, ``TOPIC:PARTITION:OFFSET``, sorted by topic and partition::

    $ tidelog offsets --topic orders --time earliest
    orders:0:0
    orders:1:12

``--time`` is ``latest`` (-1, the default: the high watermark, where the next record goes),
``earliest`` (-2, the log start offset), ``max-timestamp`` (-3, the record with the highest
timestamp), or a time (epoch milliseconds or ISO 8601: the first record at or after it). As in
Kafka's tool, a partition with no such offset (no record at or after the time, or an empty partition
for max-timestamp) is left out, and ``--topic`` is a regular expression that must match a whole name.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tidelog.cli.argument import add_check, partition_list, timestamp_ms
from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    CliError,
    Cluster,
    command,
    describe_error,
    internal_topics,
)

_NAMED_TIMES = {"latest": -1, "-1": -1, "earliest": -2, "-2": -2, "max-timestamp": -3, "-3": -3}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "offsets", help="print partitions' earliest, latest or by-time offsets (kafka-get-offsets.sh)",
        description="Print TOPIC:PARTITION:OFFSET for each partition of the matching topics (every topic "
        "by default), at --time: latest (the default; the high watermark), earliest (the log start offset), "
        "max-timestamp, or the first record at or after a time. Partitions without such an offset are "
        "left out.",
    )
    p.add_argument("topic_positional", nargs="?", metavar="TOPIC", help="the same as --topic")
    p.add_argument("--topic", dest="topic_option", metavar="REGEX",
                   help="topics whose whole name matches this regular expression (a plain name matches itself)")
    p.add_argument("--partitions", type=partition_list, metavar="P[,P|P-Q...]",
                   help="only these partitions, e.g. 0,2 or 0-3 (default: all)")
    p.add_argument("--time", type=_time, default=-1, metavar="TIME",
                   help="latest (-1, default), earliest (-2), max-timestamp (-3), epoch milliseconds, or an "
                   "ISO 8601 date-time such as 2024-05-01T12:00:00Z (local time without an offset)")
    p.add_argument("--exclude-internal-topics", "--exclude-internal", dest="exclude_internal",
                   action="store_true", help="leave out internal topics such as __consumer_offsets")
    add_check(p, _check)
    command(p, run)


def _time(text: str) -> int:
    named = _NAMED_TIMES.get(text.lower())
    if named is not None:
        return named
    try:
        return timestamp_ms(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected latest, earliest, max-timestamp, -1, -2, -3, epoch milliseconds or an ISO 8601 "
            f"date-time, got {text!r}") from None


def _check(args: argparse.Namespace) -> None:
    positional, option = args.topic_positional, args.topic_option
    if positional is not None and option is not None and positional != option:
        raise ValueError(f"two topics given ({positional!r} and --topic {option!r}); name one")
    pattern = positional if positional is not None else option
    try:
        args.topic_pattern = re.compile(pattern) if pattern is not None else None
    except re.error as e:
        raise ValueError(f"--topic {pattern!r} is not a regular expression: {e}") from None


def spec(time: int) -> OffsetSpec:
    """The OffsetSpec of a ``--time`` value (-1 latest, -2 earliest, -3 max-timestamp, else a timestamp)."""
    if time == -1:
        return OffsetSpec.latest()
    if time == -2:
        return OffsetSpec.earliest()
    if time == -3:
        return OffsetSpec.max_timestamp()
    return OffsetSpec.for_timestamp(time)


def list_offsets(admin: AdminClient, partitions: Iterable[tuple[str, int]], offset_spec: OffsetSpec,
                 strict: bool = True) -> dict[tuple[str, int], int]:
    """ListOffsets for each ``(topic, partition)``: the offset ``offset_spec`` names (-1 where the broker
    has none, e.g. no record at or after a timestamp). A failure is a CliError when ``strict``,
    otherwise the partition is left out."""
    request = {TopicPartition(t, p): offset_spec for t, p in partitions}
    if not request:
        return {}
    out = {}
    for tp, future in admin.list_offsets(request, request_timeout=REQUEST_TIMEOUT_S).items():
        try:
            out[(tp.topic, tp.partition)] = future.result().offset
        except Exception as e:  # KafkaException, or the client's own errors
            if strict:
                raise CliError(f"cannot look up the offsets of {tp.topic}-{tp.partition}: {describe_error(e)}") \
                    from None
    return out


def run(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    pattern = args.topic_pattern
    names = sorted(n for n in metadata.topics if pattern is None or pattern.fullmatch(n))
    if args.exclude_internal:
        hidden = internal_topics(admin, names)
        names = [n for n in names if n not in hidden]
    wanted = set(args.partitions) if args.partitions is not None else None
    partitions = [(n, p) for n in names for p in sorted(metadata.topics[n].partitions)
                  if wanted is None or p in wanted]
    if not partitions:
        what = f"topic matching {pattern.pattern!r}" if pattern is not None else "topic"
        raise CliError(f"no {what}" + (" has the partitions asked for" if names else " exists"))
    offsets = list_offsets(admin, partitions, spec(args.time))
    for (topic, partition), found in sorted(offsets.items()):
        if found >= 0:
            print(f"{topic}:{partition}:{found}")
    return 0


__all__ = ["add_parser", "list_offsets", "run", "spec"]
