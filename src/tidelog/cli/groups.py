"""``tidelog groups``: list, describe and delete consumer groups and reset their committed offsets (a Kafka
admin client; the views follow ``kafka-consumer-groups.sh``).

``describe`` shows, for every partition the group has committed an offset for or has assigned to a
member, the committed offset, the log end offset (ListOffsets ``latest``) and the lag between them::

    GROUP   TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID      HOST        CLIENT-ID
    orders  orders  0          7               10              3    rdkafka-3f9c...  /10.0.0.7   billing

``--members`` lists the members and their assigned partitions; ``--state`` the group's type, state,
coordinator, assignor and member count.

``reset-offsets`` computes new committed offsets (earliest, latest, an offset, a timestamp, or a shift
of the current offset, each kept within the partition's log start and end) and prints the plan; it
commits them only with ``--execute``, and only while the group has no active members, as Kafka's tool
does (a member would overwrite them with its own commits). A group may be reset before it exists:
committing offsets creates it.

Group states are Kafka's names (``Empty``, ``PreparingRebalance``, ``CompletingRebalance``, ``Stable``,
``Dead``); the transitional states of KIP-848 groups (``Assigning``, ``Reconciling``) are shown as
``Unknown`` because librdkafka does not know them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConsumerGroupDescription, OffsetSpec

from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    CliError,
    Cluster,
    add_bootstrap_argument,
    describe_error,
    entry,
    error_code,
    non_negative_int,
    require_partition,
    require_topic,
    timestamp_ms,
)

MISSING = "-"

_STATES = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}
_STATE_BY_NAME = {name.lower(): state for state, name in _STATES.items() if state != ConsumerGroupState.UNKNOWN}
_TYPES = {ConsumerGroupType.CLASSIC: "Classic", ConsumerGroupType.CONSUMER: "Consumer",
          ConsumerGroupType.UNKNOWN: "Unknown"}
_TYPE_BY_NAME = {"classic": ConsumerGroupType.CLASSIC, "consumer": ConsumerGroupType.CONSUMER}
_INACTIVE = {ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD}
_REBALANCING = {ConsumerGroupState.PREPARING_REBALANCING, ConsumerGroupState.COMPLETING_REBALANCING}
# What a commit without a member id gets from a group that has members (UNKNOWN_MEMBER_ID in Kafka's
# coordinator), or while it rebalances.
_GROUP_ACTIVE_ERRORS = {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                        KafkaError.REBALANCE_IN_PROGRESS, KafkaError.FENCED_INSTANCE_ID}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "groups", help="list, describe, delete consumer groups and reset their offsets",
        description="Manage consumer groups through the Kafka admin API (works with any Kafka-compatible "
        "broker); the output follows kafka-consumer-groups.sh.",
    )
    actions = p.add_subparsers(dest="groups_command", metavar="ACTION", required=True)

    lst = actions.add_parser(
        "list", help="list consumer groups",
        description="Print every consumer group id, one a line. With --state or --type, only the groups in "
        "those states or of those types, as a table with the matching columns (--state or --type alone: "
        "every group, with the column).",
    )
    lst.add_argument("--state", nargs="*", type=_state, metavar="STATE",
                     help="Empty, Stable, PreparingRebalance, CompletingRebalance or Dead (case-insensitive)")
    lst.add_argument("--type", nargs="*", type=_type, metavar="TYPE",
                     help="classic (JoinGroup/SyncGroup) or consumer (KIP-848)")
    _finish(lst, _list)

    describe = actions.add_parser(
        "describe", help="show a group's offsets and lag, its members, or its state",
        description="Describe consumer groups. Default view: for every partition the group has committed "
        "or assigned, the committed offset, the log end offset, the lag and the member that owns it. "
        "--members: each member with its assigned partitions. --state: type, coordinator, assignor, "
        "state and member count.",
    )
    describe.add_argument("groups", nargs="*", type=_group_id, metavar="GROUP", help="groups to describe")
    describe.add_argument("--all-groups", action="store_true", help="describe every group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="list the members and their partitions")
    view.add_argument("--state", action="store_true", help="show the group's state, coordinator and assignor")
    _finish(describe, _describe)

    delete = actions.add_parser(
        "delete", help="delete groups",
        description="Delete consumer groups and their committed offsets. A group with active members "
        "cannot be deleted.",
    )
    delete.add_argument("groups", nargs="+", type=_group_id, metavar="GROUP", help="groups to delete")
    delete.add_argument("--if-exists", action="store_true", help="skip groups that do not exist")
    _finish(delete, _delete)

    reset = actions.add_parser(
        "reset-offsets", help="move a group's committed offsets (dry run unless --execute)",
        description="Compute new committed offsets for a group and print them with the current ones. "
        "Nothing changes unless --execute is given; --execute is refused while the group has active "
        "members. New offsets are kept within each partition's log start and end offsets.",
    )
    reset.add_argument("group", type=_group_id, metavar="GROUP", help="the group whose offsets to reset")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", type=_topic_spec, action="append", metavar="TOPIC[:P,...]",
                       help="a topic (every partition) or some of its partitions, e.g. orders:0,2 (repeatable)")
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has a committed offset for")
    mode = reset.add_mutually_exclusive_group(required=True)
    mode.add_argument("--to-earliest", action="store_true", help="the log start offset")
    mode.add_argument("--to-latest", action="store_true", help="the log end offset")
    mode.add_argument("--to-offset", type=non_negative_int, metavar="N", help="offset N")
    mode.add_argument("--to-datetime", type=timestamp_ms, metavar="ISO8601|MS",
                      help="the first record at or after this time (the log end where there is none): an "
                      "ISO 8601 date-time such as 2024-05-01T12:00:00Z (local time without an offset) or "
                      "epoch milliseconds")
    mode.add_argument("--shift-by", type=int, metavar="N", help="the current committed offset plus N (N may be < 0)")
    run = reset.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    run.add_argument("--execute", action="store_true", help="commit the new offsets")
    _finish(reset, _reset_offsets)


def _finish(parser: argparse.ArgumentParser, fn) -> None:
    add_bootstrap_argument(parser)
    parser.set_defaults(func=entry(fn, parser.prog), prog=parser.prog)


# ------------------------------------------------------------------------------------------ argument types


def _group_id(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("a group id must not be empty")
    return text


def _state(text: str) -> ConsumerGroupState:
    state = _STATE_BY_NAME.get(text.lower())
    if state is None:
        valid = ", ".join(name for s, name in _STATES.items() if s != ConsumerGroupState.UNKNOWN)
        raise argparse.ArgumentTypeError(f"unknown group state {text!r} (valid: {valid})")
    return state


def _type(text: str) -> ConsumerGroupType:
    group_type = _TYPE_BY_NAME.get(text.lower())
    if group_type is None:
        raise argparse.ArgumentTypeError(f"unknown group type {text!r} (valid: classic, consumer)")
    return group_type


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
    if any(n < 0 for n in numbers):
        raise argparse.ArgumentTypeError(f"bad partition list in {text!r}: partitions are >= 0")
    return topic, sorted(set(numbers))


# ------------------------------------------------------------------------------------------ output


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """Left-aligned columns, each as wide as its widest cell, two spaces apart."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]


def _print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    for line in _table(headers, rows):
        print(line)


def _state_name(state: Any) -> str:
    return _STATES.get(state, str(state))


def _type_name(group_type: Any) -> str:
    return _TYPES.get(group_type, str(group_type))


def _assignment_text(partitions: Iterable[TopicPartition]) -> str:
    """``topic:0,1,2;other:3`` (Kafka's ``--members --verbose`` notation), or ``-``."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ";".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items()))


def _warn(args: argparse.Namespace, message: str) -> None:
    print(f"{args.prog}: {message}", file=sys.stderr)


# ------------------------------------------------------------------------------------------ admin helpers


def _describe_groups(admin: AdminClient, groups: list[str]) -> dict[str, ConsumerGroupDescription | KafkaException]:
    futures = admin.describe_consumer_groups(groups, request_timeout=REQUEST_TIMEOUT_S)
    out: dict[str, ConsumerGroupDescription | KafkaException] = {}
    for group, future in futures.items():
        try:
            out[group] = future.result()
        except KafkaException as e:
            out[group] = e
    return out


def _exists(description: ConsumerGroupDescription | KafkaException) -> bool:
    if isinstance(description, KafkaException):
        return error_code(description) != KafkaError.GROUP_ID_NOT_FOUND
    return description.state != ConsumerGroupState.DEAD


def _committed(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets by (topic, partition)."""
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                               request_timeout=REQUEST_TIMEOUT_S)[group]
    try:
        result = future.result()
    except KafkaException as e:
        if error_code(e) == KafkaError.GROUP_ID_NOT_FOUND:
            return {}
        raise CliError(f"cannot fetch the committed offsets of group {group!r}: {describe_error(e)}") from None
    offsets = {}
    for tp in result.topic_partitions or ():
        if tp.error is not None:
            raise CliError(f"cannot fetch the committed offset of group {group!r} for {tp.topic}-{tp.partition}: "
                           f"{describe_error(tp.error)}")
        if tp.offset >= 0:
            offsets[(tp.topic, tp.partition)] = tp.offset
    return offsets


def _log_offsets(admin: AdminClient, partitions: Iterable[tuple[str, int]], spec: OffsetSpec,
                 strict: bool = True) -> dict[tuple[str, int], int]:
    """ListOffsets for each partition: ``spec`` is earliest, latest or a timestamp. A failure is a
    CliError when ``strict``, otherwise the partition is left out."""
    request = {TopicPartition(t, p): spec for t, p in partitions}
    if not request:
        return {}
    out = {}
    for tp, future in admin.list_offsets(request, request_timeout=REQUEST_TIMEOUT_S).items():
        try:
            out[(tp.topic, tp.partition)] = future.result().offset
        except KafkaException as e:
            if strict:
                raise CliError(f"cannot look up the offsets of {tp.topic}-{tp.partition}: {describe_error(e)}") from None
    return out


# ------------------------------------------------------------------------------------------ list


def _list(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server).connect()
    options: dict[str, Any] = {"request_timeout": REQUEST_TIMEOUT_S}
    if args.state:
        options["states"] = set(args.state)
    if args.type:
        options["types"] = set(args.type)
    result = admin.list_consumer_groups(**options).result()
    for error in result.errors or ():
        _warn(args, f"a broker could not list its groups: {describe_error(error)}")
    listings = sorted(result.valid or (), key=lambda g: g.group_id)
    if args.state is None and args.type is None:
        for listing in listings:
            print(listing.group_id)
    else:
        headers = ["GROUP"]
        if args.type is not None:
            headers.append("TYPE")
        if args.state is not None:
            headers.append("STATE")
        rows = []
        for listing in listings:
            row = [listing.group_id]
            if args.type is not None:
                row.append(_type_name(listing.type))
            if args.state is not None:
                row.append(_state_name(listing.state))
            rows.append(row)
        _print_table(headers, rows)
    return 1 if result.errors else 0


# ------------------------------------------------------------------------------------------ describe


def _describe(args: argparse.Namespace) -> int:
    if not args.groups and not args.all_groups:
        raise CliError("name the groups to describe, or give --all-groups", exit_code=2)
    if args.groups and args.all_groups:
        raise CliError("give group names or --all-groups, not both", exit_code=2)
    admin, _ = Cluster(args.bootstrap_server).connect()
    if args.all_groups:
        listed = admin.list_consumer_groups(request_timeout=REQUEST_TIMEOUT_S).result()
        groups = sorted(g.group_id for g in listed.valid or ())
    else:
        groups = list(dict.fromkeys(args.groups))
    if not groups:
        return 0
    descriptions = _describe_groups(admin, groups)
    failed = 0
    printed = 0
    for group in groups:
        description = descriptions[group]
        if not _exists(description):
            _warn(args, f"group {group!r} does not exist")
            failed += 1
            continue
        if isinstance(description, KafkaException):
            _warn(args, f"cannot describe group {group!r}: {describe_error(description)}")
            failed += 1
            continue
        if description.state == ConsumerGroupState.EMPTY:
            _warn(args, f"group {group!r} has no active members")
        elif description.state in _REBALANCING:
            _warn(args, f"group {group!r} is rebalancing ({_state_name(description.state)})")
        if args.state:
            lines = _state_lines(description)
        elif args.members:
            lines = _member_lines(description)
        else:
            lines = _offset_lines(admin, description)
        if lines:
            if printed:
                print()
            print("\n".join(lines))
            printed += 1
    return 1 if failed else 0


def _offset_lines(admin: AdminClient, d: ConsumerGroupDescription) -> list[str]:
    committed = _committed(admin, d.group_id)
    owners: dict[tuple[str, int], Any] = {}
    for member in d.members:
        for tp in member.assignment.topic_partitions or ():
            owners[(tp.topic, tp.partition)] = member
    partitions = sorted(set(committed) | set(owners))
    if not partitions:
        return []
    ends = _log_offsets(admin, partitions, OffsetSpec.latest(), strict=False)
    rows = []
    for key in partitions:
        current = committed.get(key)
        end = ends.get(key)
        lag = end - current if current is not None and end is not None else None
        member = owners.get(key)
        rows.append([
            d.group_id, key[0], key[1],
            MISSING if current is None else current,
            MISSING if end is None else end,
            MISSING if lag is None else lag,
            member.member_id if member else MISSING,
            member.host if member else MISSING,
            member.client_id if member else MISSING,
        ])
    return _table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                   "HOST", "CLIENT-ID"], rows)


def _member_lines(d: ConsumerGroupDescription) -> list[str]:
    if not d.members:
        return []
    with_instance = any(m.group_instance_id for m in d.members)
    with_target = d.type == ConsumerGroupType.CONSUMER
    headers = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else []) + \
        ["HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"] + (["TARGET-ASSIGNMENT"] if with_target else [])
    rows = []
    for m in sorted(d.members, key=lambda m: m.member_id):
        assigned = list(m.assignment.topic_partitions or ())
        row: list[Any] = [d.group_id, m.member_id]
        if with_instance:
            row.append(m.group_instance_id or MISSING)
        row += [m.host, m.client_id, len(assigned), _assignment_text(assigned)]
        if with_target:
            target = m.target_assignment.topic_partitions if m.target_assignment is not None else ()
            row.append(_assignment_text(target or ()))
        rows.append(row)
    return _table(headers, rows)


def _state_lines(d: ConsumerGroupDescription) -> list[str]:
    c = d.coordinator
    coordinator = f"{c.host}:{c.port} ({c.id})" if c is not None else MISSING
    row = [d.group_id, _type_name(d.type), coordinator, d.partition_assignor or MISSING, _state_name(d.state),
           len(d.members)]
    return _table(["GROUP", "TYPE", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"], [row])


# ------------------------------------------------------------------------------------------ delete


def _delete(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server).connect()
    groups = list(dict.fromkeys(args.groups))
    futures = admin.delete_consumer_groups(groups, request_timeout=REQUEST_TIMEOUT_S)
    failed = 0
    for group in groups:
        try:
            futures[group].result()
        except KafkaException as e:
            code = error_code(e)
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                if args.if_exists:
                    continue
                _warn(args, f"group {group!r} does not exist")
            elif code == KafkaError.NON_EMPTY_GROUP:
                _warn(args, f"cannot delete group {group!r}: it has active members (stop its consumers first)")
            else:
                _warn(args, f"cannot delete group {group!r}: {describe_error(e)}")
            failed += 1
            continue
        print(f"Deleted group {group}.")
    return 1 if failed else 0


# ------------------------------------------------------------------------------------------ reset-offsets


def _reset_offsets(args: argparse.Namespace) -> int:
    group = args.group
    admin, metadata = Cluster(args.bootstrap_server).connect()
    description = _describe_groups(admin, [group])[group]
    if isinstance(description, KafkaException) and _exists(description):
        raise CliError(f"cannot describe group {group!r}: {describe_error(description)}")
    active = isinstance(description, ConsumerGroupDescription) and (
        description.state not in _INACTIVE or bool(description.members))
    if active and args.execute:
        raise CliError(_active_message(description))
    committed = _committed(admin, group)
    partitions = _partitions_to_reset(args, metadata, committed)
    plan = _plan(args, admin, partitions, committed)
    _print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
                 [[group, t, p, committed.get((t, p), MISSING), new] for (t, p), new in plan.items()])
    if not args.execute:
        note = "Dry run: nothing was changed; add --execute to commit these offsets."
        print(note, file=sys.stderr)
        if active:
            _warn(args, f"group {group!r} has {len(description.members)} active member(s) (state "
                  f"{_state_name(description.state)}): --execute is refused until its consumers stop")
        return 0
    _commit(admin, group, plan, description)
    print(f"Committed new offsets for {len(plan)} partition(s) of group {group}.", file=sys.stderr)
    return 0


def _active_message(d: Any) -> str:
    return (f"cannot reset the offsets of group {d.group_id!r}: it has {len(d.members)} active member(s) "
            f"(state {_state_name(d.state)}); offsets can only be reset while the group is inactive, "
            "so stop its consumers first")


def _partitions_to_reset(args: argparse.Namespace, metadata: ClusterMetadata,
                         committed: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    if args.all_topics:
        if not committed:
            raise CliError(f"group {args.group!r} has no committed offsets; name the partitions with --topic")
        wanted = []
        for topic, partition in sorted(committed):
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
          committed: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The new offset of each partition, in ``partitions`` order."""
    if args.to_earliest:
        return _log_offsets(admin, partitions, OffsetSpec.earliest())
    latest = _log_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_latest:
        return {key: latest[key] for key in partitions}
    if args.to_datetime is not None:
        found = _log_offsets(admin, partitions, OffsetSpec.for_timestamp(args.to_datetime))
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
        missing = [key for key in partitions if key not in committed]
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise CliError(f"cannot shift the offsets of group {args.group!r}: it has no committed offset for {names}")
        requested = {key: committed[key] + args.shift_by for key in partitions}
    else:
        requested = {key: args.to_offset for key in partitions}
    earliest = _log_offsets(admin, partitions, OffsetSpec.earliest())
    plan = {}
    for key, offset in requested.items():
        low, high = earliest[key], latest[key]
        if offset > high:
            _warn(args, f"{key[0]}-{key[1]}: offset {offset} is past the log end offset; using {high}")
            offset = high
        elif offset < low:
            _warn(args, f"{key[0]}-{key[1]}: offset {offset} is before the log start offset; using {low}")
            offset = low
        plan[key] = offset
    return plan


def _commit(admin: AdminClient, group: str, plan: dict[tuple[str, int], int], description: Any) -> None:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, offset) for (t, p), offset in plan.items()])
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


__all__ = ["add_parser"]
