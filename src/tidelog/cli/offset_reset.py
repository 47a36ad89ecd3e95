"""``tidelog groups reset-offsets``: move a consumer group's committed offsets, as
``kafka-consumer-groups.sh --reset-offsets`` does.

It computes new committed offsets (earliest, latest, an offset, a timestamp, or a shift of the current
offset, each kept within the partition's log start and end) and prints the plan; it commits them only
with ``--execute``, and only while the group has no active members, as Kafka's tool does (a member
would overwrite them with its own commits). A group may be reset before it exists: committing offsets
creates it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConsumerGroupDescription, OffsetSpec

from tidelog.cli.argument import offset, timestamp_ms
from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    CliError,
    Cluster,
    command,
    describe_error,
    error_code,
    require_partition,
    require_topic,
)
from tidelog.cli.consumer_group import INACTIVE, committed, describe_groups, exists, group_id, state_name
from tidelog.cli.offsets import list_offsets
from tidelog.cli.table import MISSING, print_table

# What a commit without a member id gets from a group that has members (UNKNOWN_MEMBER_ID in Kafka's
# coordinator), or while it rebalances.
_GROUP_ACTIVE_ERRORS = {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                        KafkaError.REBALANCE_IN_PROGRESS, KafkaError.FENCED_INSTANCE_ID}


def add_parser(actions: argparse._SubParsersAction) -> None:
    reset = actions.add_parser(
        "reset-offsets", help="move a group's committed offsets (dry run unless --execute)",
        description="Compute new committed offsets for a group and print them with the current ones. "
        "Nothing changes unless --execute is given; --execute is refused while the group has active "
        "members. New offsets are kept within each partition's log start and end offsets.",
    )
    reset.add_argument("group", type=group_id, metavar="GROUP", help="the group whose offsets to reset")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", type=_topic_spec, action="append", metavar="TOPIC[:P,...]",
                       help="a topic (every partition) or some of its partitions, e.g. orders:0,2 (repeatable)")
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has a committed offset for")
    mode = reset.add_mutually_exclusive_group(required=True)
    mode.add_argument("--to-earliest", action="store_true", help="the log start offset")
    mode.add_argument("--to-latest", action="store_true", help="the log end offset")
    mode.add_argument("--to-offset", type=offset, metavar="N", help="offset N")
    mode.add_argument("--to-datetime", type=timestamp_ms, metavar="ISO8601|MS",
                      help="the first record at or after this time (the log end where there is none): an "
                      "ISO 8601 date-time such as 2024-05-01T12:00:00Z (local time without an offset) or "
                      "epoch milliseconds")
    mode.add_argument("--shift-by", type=_shift, metavar="N", help="the current committed offset plus N (N may be < 0)")
    run_mode = reset.add_mutually_exclusive_group()
    run_mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    run_mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    command(reset, run)


def _topic_spec(text: str) -> tuple[str, list[int] | None]:
    """``TOPIC`` (every partition) or ``TOPIC:P[,P...]``."""
    topic, sep, partitions = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:PARTITION[,PARTITION...], got {text!r}")
    if not sep:
        return topic, None
    try:
        numbers = [int(p) for p in partitions.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad partition list in {text!r}: expected numbers such as {topic}:0,2") from None
    if any(n < 0 or n > 2**31 - 1 for n in numbers):
        raise argparse.ArgumentTypeError(f"bad partition list in {text!r}: partitions are 0 to 2147483647")
    return topic, sorted(set(numbers))


def _shift(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number (may be < 0), got {text!r}") from None
    if abs(value) > 2**63 - 1:
        raise argparse.ArgumentTypeError(f"shift {value} is out of range")
    return value


def _warn(args: argparse.Namespace, message: str) -> None:
    print(f"{args.prog}: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    group = args.group
    admin, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    description = describe_groups(admin, [group])[group]
    if isinstance(description, KafkaException) and exists(description):
        raise CliError(f"cannot describe group {group!r}: {describe_error(description)}")
    active = isinstance(description, ConsumerGroupDescription) and (
        description.state not in INACTIVE or bool(description.members))
    if active and args.execute:
        raise CliError(_active_message(description))
    current = committed(admin, group)
    partitions = _partitions_to_reset(args, metadata, current)
    plan = _plan(args, admin, partitions, current)
    print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
                [[group, t, p, current.get((t, p), MISSING), new] for (t, p), new in plan.items()])
    if not args.execute:
        print("Dry run: nothing was changed; add --execute to commit these offsets.", file=sys.stderr)
        if active:
            _warn(args, f"group {group!r} has {len(description.members)} active member(s) (state "
                  f"{state_name(description.state)}): --execute is refused until its consumers stop")
        return 0
    _commit(admin, group, plan)
    print(f"Committed new offsets for {len(plan)} partition(s) of group {group}.", file=sys.stderr)
    return 0


def _active_message(d: Any) -> str:
    return (f"cannot reset the offsets of group {d.group_id!r}: it has {len(d.members)} active member(s) "
            f"(state {state_name(d.state)}); offsets can only be reset while the group is inactive, "
            "so stop its consumers first")


def _partitions_to_reset(args: argparse.Namespace, metadata: ClusterMetadata,
                         current: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    if args.all_topics:
        if not current:
            raise CliError(f"group {args.group!r} has no committed offsets; name the partitions with --topic")
        wanted = []
        for topic, partition in sorted(current):
            if topic not in metadata.topics:
                _warn(args, f"skipping {topic}-{partition}: topic {topic!r} no longer exists")
                continue
            wanted.append((topic, partition))
        if not wanted:
            raise CliError(f"none of the topics group {args.group!r} committed offsets for exists any more")
        return wanted
    wanted_set: set[tuple[str, int]] = set()
    for topic, partitions in args.topic:
        count = require_topic(metadata, topic)
        for p in partitions if partitions is not None else range(count):
            require_partition(topic, p, count)
            wanted_set.add((topic, p))
    return sorted(wanted_set)


def _plan(args: argparse.Namespace, admin: AdminClient, partitions: list[tuple[str, int]],
          current: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The new offset of each partition, in ``partitions`` order."""
    if args.to_earliest:
        return list_offsets(admin, partitions, OffsetSpec.earliest())
    latest = list_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_latest:
        return {key: latest[key] for key in partitions}
    if args.to_datetime is not None:
        found = list_offsets(admin, partitions, OffsetSpec.for_timestamp(args.to_datetime))
        plan = {}
        for key in partitions:
            if found.get(key, -1) < 0:
                _warn(args, f"{key[0]}-{key[1]} has no record at or after {args.to_datetime} ms; "
                      "using its log end offset")
                plan[key] = latest[key]
            else:
                plan[key] = found[key]
        return plan
    if args.shift_by is not None:
        missing = [key for key in partitions if key not in current]
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise CliError(f"cannot shift the offsets of group {args.group!r}: it has no committed offset for {names}")
        requested = {key: current[key] + args.shift_by for key in partitions}
    else:
        requested = {key: args.to_offset for key in partitions}
    earliest = list_offsets(admin, partitions, OffsetSpec.earliest())
    plan = {}
    for key, wanted in requested.items():
        low, high = earliest[key], latest[key]
        if wanted > high:
            _warn(args, f"{key[0]}-{key[1]}: offset {wanted} is past the log end offset; using {high}")
            wanted = high
        elif wanted < low:
            _warn(args, f"{key[0]}-{key[1]}: offset {wanted} is before the log start offset; using {low}")
            wanted = low
        plan[key] = wanted
    return plan


def _commit(admin: AdminClient, group: str, plan: dict[tuple[str, int], int]) -> None:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in plan.items()])
    future = admin.alter_consumer_group_offsets([request], request_timeout=REQUEST_TIMEOUT_S)[group]
    try:
        result = future.result()
    except KafkaException as e:
        raise CliError(_commit_failure(group, error_code(e), describe_error(e))) from None
    failures = [tp for tp in result.topic_partitions or () if tp.error is not None]
    if failures:
        first = failures[0]
        raise CliError(_commit_failure(group, first.error.code(), describe_error(first.error),
                                       f" ({len(failures)} of {len(plan)} partition(s) failed, e.g. "
                                       f"{first.topic}-{first.partition})"))


def _commit_failure(group: str, code: int | None, text: str, detail: str = "") -> str:
    if code in _GROUP_ACTIVE_ERRORS:
        return (f"cannot reset the offsets of group {group!r}: the group has active members now "
                f"({text}); stop its consumers first{detail}")
    return f"cannot commit the new offsets of group {group!r}: {text}{detail}"


__all__ = ["add_parser", "run"]
