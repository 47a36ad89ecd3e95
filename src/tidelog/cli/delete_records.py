"""``tidelog topics trim`` (rpk's name) and its alias ``delete-records`` (Kafka's): delete the records
at the start of a topic's partitions with DeleteRecords, moving each log start offset (the *low
watermark*) forward. Consumers can no longer read the records before it; the broker frees their
segments with its next retention pass.

Where to cut, per partition:

* ``--offset N``: before offset N in every selected partition (``--partitions``, default all);
* ``--offset P:N[,P:N...]``: before offset N in partition P (a different offset per partition);
* ``--offset end``: everything (up to the high watermark);
* ``--before TIME``: every record before the first one stamped at or after TIME (everything when no
  record is that recent). Timestamps need not grow with offsets: a later record with an older
  timestamp stays.

Prints the new low watermark of each partition::

    TOPIC   PARTITION  LOW-WATERMARK
    orders  0          100
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from tidelog.cli.argument import INT64_MAX, add_check, add_topic_argument, partition_list, timestamp_ms
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, Cluster, command, describe_error, require_topic
from tidelog.cli.offsets import list_offsets
from tidelog.cli.table import print_table

#: DeleteRecords' offset -1: "up to the high watermark".
HIGH_WATERMARK = -1


def add_parser(actions: argparse._SubParsersAction) -> None:
    trim = actions.add_parser(
        "trim", aliases=["delete-records"], help="delete the oldest records of a topic (DeleteRecords)",
        description="Delete the records before an offset or a time in a topic's partitions (rpk's trim; "
        "delete-records is Kafka's name for it), moving their "
        "log start offset (low watermark) forward, and print the new low watermarks. Topics whose "
        "cleanup.policy is only compact refuse it.",
    )
    add_topic_argument(trim, "topic to trim")
    where = trim.add_mutually_exclusive_group(required=True)
    where.add_argument("--offset", type=_offset_spec, metavar="N|P:N[,P:N...]|end",
                       help="delete before offset N in every selected partition, before N in partition P, "
                       "or everything (end)")
    where.add_argument("--before", type=timestamp_ms, metavar="MS|ISO8601",
                       help="delete the records before the first one stamped at or after this time "
                       "(epoch milliseconds or ISO 8601, local time without an offset)")
    trim.add_argument("--partitions", type=partition_list, metavar="P[,P|P-Q...]",
                      help="only these partitions, e.g. 0,2 or 0-3 (default: all); not with --offset P:N")
    add_check(trim, _check)
    command(trim, run)


def _offset_spec(text: str) -> int | dict[int, int]:
    """``N``, ``end`` (-1), or ``P:N[,P:N...]`` -> ``{P: N}``."""
    if text.strip().lower() == "end":
        return HIGH_WATERMARK
    if ":" not in text:
        return _number(text, text)
    per_partition: dict[int, int] = {}
    for part in text.split(","):
        partition, sep, offset = part.partition(":")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected P:N[,P:N...], got {text!r}")
        p = _number(partition, text)
        if p > 2**31 - 1:
            raise argparse.ArgumentTypeError(f"no partition {p}")
        if p in per_partition:
            raise argparse.ArgumentTypeError(f"partition {p} is given twice in {text!r}")
        per_partition[p] = _number(offset, text) if offset.strip().lower() != "end" else HIGH_WATERMARK
    return per_partition


def _number(text: str, whole: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an offset N, P:N[,P:N...] or end, got {whole!r}") from None
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"offsets and partitions are >= 0, got {value}")
    return value


def _check(args: argparse.Namespace) -> None:
    if isinstance(args.offset, dict) and args.partitions is not None:
        raise ValueError("--offset P:N names its partitions; --partitions goes with --offset N or --before")


def run(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    admin, metadata = cluster.connect()
    count = require_topic(metadata, args.topic, cluster)
    if isinstance(args.offset, dict):
        targets = dict(args.offset)
    else:
        chosen = args.partitions if args.partitions is not None else list(range(count))
        targets = dict.fromkeys(chosen, args.offset)
    missing = sorted(p for p in targets if p >= count)
    if missing:
        raise CliError(f"topic {args.topic!r} has {count} partition(s); there is no partition {missing[0]}")
    if args.before is not None:
        found = list_offsets(admin, [(args.topic, p) for p in targets], OffsetSpec.for_timestamp(args.before))
        targets = {p: found[(args.topic, p)] if found[(args.topic, p)] >= 0 else HIGH_WATERMARK for p in targets}
    request = [TopicPartition(args.topic, p, offset) for p, offset in sorted(targets.items())]
    rows, failed = [], 0
    for tp, future in sorted(admin.delete_records(request, request_timeout=REQUEST_TIMEOUT_S).items(),
                             key=lambda item: item[0].partition):
        try:
            rows.append([args.topic, tp.partition, future.result().low_watermark])
        except Exception as e:
            wanted = "the high watermark" if targets[tp.partition] == HIGH_WATERMARK else targets[tp.partition]
            print(f"{args.prog}: cannot delete the records of {args.topic}-{tp.partition} before {wanted}: "
                  f"{describe_error(e)}", file=sys.stderr)
            failed += 1
    if rows:
        print_table(["TOPIC", "PARTITION", "LOW-WATERMARK"], rows)
    return 1 if failed else 0


__all__ = ["HIGH_WATERMARK", "add_parser", "run"]
