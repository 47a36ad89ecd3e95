"""``tidelog share-groups``: list, describe and delete share groups (KIP-932) and reset or delete their
start offsets; the views and options follow Kafka's ``kafka-share-groups.sh``.

``describe`` shows, by default, each share partition's start offset (the first offset the group has not
finished delivering)::

    GROUP   TOPIC   PARTITION  START-OFFSET  LAG
    orders  orders  0          7             3

(``LAG`` is DescribeShareGroupOffsets v1's, KIP-1226: the records from the start offset to the high
watermark not yet acknowledged or archived; ``-`` where it is not known: a share partition not fetched
from yet, or a broker that answers v0). ``--members``
lists the members and their assigned partitions, ``--state`` the group's coordinator, state and member
count; ``--verbose`` adds the epochs (``LEADER-EPOCH``, ``MEMBER-EPOCH``, ``GROUP-EPOCH``,
``ASSIGNMENT-EPOCH``).

``reset-offsets`` computes new start offsets (earliest, latest, a time, an offset) and prints them; with
``--execute`` it alters them, only while the group has no members (AlterShareGroupOffsets answers
NON_EMPTY_GROUP otherwise). The requests are in :mod:`tidelog.cli.share_group_admin`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tidelog.cli.argument import add_check, offset, timestamp_ms
from tidelog.cli.client import CliError, Cluster, command, require_partition, require_topic
from tidelog.cli.consumer_group import assignment_text, group_id
from tidelog.cli.offset_reset import _topic_spec as topic_spec
from tidelog.cli.offsets import list_offsets
from tidelog.cli.table import MISSING, print_table, table
from tidelog.errors import ErrorCode

if TYPE_CHECKING:
    from tidelog.cli.share_group_admin import ShareGroup, ShareGroupAdmin


def _requests() -> ModuleType:
    """tidelog.cli.share_group_admin, imported when a command runs: it loads the wire codec, which the
    CLI's start leaves out (about half a second)."""
    return importlib.import_module("tidelog.cli.share_group_admin")

#: Kafka's share group states (GroupState), as ListGroups and ShareGroupDescribe name them.
STATES = ("Empty", "Stable", "Dead", "Unknown")


def _state(text: str) -> str:
    for name in STATES:
        if name.lower() == text.lower():
            return name
    raise argparse.ArgumentTypeError(f"unknown share group state {text!r} (valid: {', '.join(STATES)})")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "share-groups", help="list, describe, delete share groups and reset their start offsets",
        description="Manage share groups (KIP-932, queues) through the Kafka admin API; the output follows "
        "kafka-share-groups.sh. The broker must serve share groups (share.version 1 or more: the default).",
    )
    actions = p.add_subparsers(dest="share_groups_command", metavar="ACTION", required=True)

    lst = actions.add_parser(
        "list", help="list share groups",
        description="Print every share group id, one a line. With --state, a GROUP STATE table of the groups "
        "in those states (--state alone: every share group, with its state).",
    )
    lst.add_argument("--state", nargs="*", type=_state, metavar="STATE",
                     help="Empty or Stable (case-insensitive)")
    command(lst, _list)

    describe = actions.add_parser(
        "describe", help="show a share group's start offsets, its members, or its state",
        description="Describe share groups. Default view (--offsets): each share partition's start offset and lag. "
        "--members: each member with its assigned partitions. --state: coordinator, state and member count. "
        "--verbose adds the epochs.",
    )
    describe.add_argument("groups", nargs="*", type=group_id, metavar="GROUP", help="groups to describe")
    describe.add_argument("--all-groups", action="store_true", help="describe every share group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="the start offset and lag of each share partition (default)")
    view.add_argument("--members", action="store_true", help="list the members and their partitions")
    view.add_argument("--state", action="store_true", help="show the group's coordinator, state and member count")
    describe.add_argument("--verbose", action="store_true", help="add the leader, member, group and assignment epochs")
    add_check(describe, _describe_check)
    command(describe, _describe)

    reset = actions.add_parser(
        "reset-offsets", help="move a share group's start offsets (dry run unless --execute)",
        description="Compute new start offsets for a share group and print them. Nothing changes unless "
        "--execute is given; --execute is refused while the group has members. The group's records "
        "before a new start offset are no longer delivered; those after it are delivered again.",
    )
    reset.add_argument("group", type=group_id, metavar="GROUP", help="the share group whose offsets to reset")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", type=topic_spec, action="append", metavar="TOPIC[:P,...]",
                       help="a topic (every partition) or some of its partitions, e.g. orders:0,2 (repeatable)")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has a start offset for")
    mode = reset.add_mutually_exclusive_group(required=True)
    mode.add_argument("--to-earliest", action="store_true", help="the log start offset")
    mode.add_argument("--to-latest", action="store_true", help="the log end offset")
    mode.add_argument("--to-offset", type=offset, metavar="N",
                      help="offset N (kept within the log start and end offsets)")
    mode.add_argument("--to-datetime", type=timestamp_ms, metavar="ISO8601|MS",
                      help="the first record at or after this time (the log end where there is none): an ISO "
                      "8601 date-time such as 2024-05-01T12:00:00Z (local time without an offset) or epoch ms")
    run_mode = reset.add_mutually_exclusive_group()
    run_mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    run_mode.add_argument("--execute", action="store_true", help="alter the start offsets")
    command(reset, _reset)

    delete_offsets = actions.add_parser(
        "delete-offsets", help="forget a share group's state for whole topics",
        description="Delete the share state (start offset, in-flight deliveries) of the group for whole "
        "topics; only while the group has no members. Prints each topic with Successful or the error.",
    )
    delete_offsets.add_argument("group", type=group_id, metavar="GROUP", help="the share group")
    delete_offsets.add_argument("--topic", action="append", required=True, metavar="TOPIC",
                                help="a topic whose share state to delete (repeatable)")
    command(delete_offsets, _delete_offsets)

    delete = actions.add_parser(
        "delete", help="delete share groups",
        description="Delete share groups and their share state. A group with members cannot be deleted.",
    )
    delete.add_argument("groups", nargs="+", type=group_id, metavar="GROUP", help="groups to delete")
    delete.add_argument("--if-exists", action="store_true", help="skip groups that do not exist")
    command(delete, _delete)


def _warn(args: argparse.Namespace, message: str) -> None:
    print(f"{args.prog}: {message}", file=sys.stderr)


def _admin(args: argparse.Namespace) -> tuple[AdminClient, ShareGroupAdmin]:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    admin, metadata = cluster.connect()
    return admin, _requests().ShareGroupAdmin(metadata, args.client_properties)


def _missing(group: str) -> str:
    return f"share group {group!r} does not exist"


# ------------------------------------------------------------------------------------------ list


def _list(args: argparse.Namespace) -> int:
    _, share = _admin(args)
    with share:
        groups = share.list_groups(args.state or ())
    if args.state is None:
        for group, _ in groups:
            print(group)
    else:
        print_table(["GROUP", "STATE"], groups)
    return 0


# ------------------------------------------------------------------------------------------ describe


def _describe_check(args: argparse.Namespace) -> None:
    if not args.groups and not args.all_groups:
        raise ValueError("name the groups to describe, or give --all-groups")
    if args.groups and args.all_groups:
        raise ValueError("give group names or --all-groups, not both")


def _describe(args: argparse.Namespace) -> int:
    _, share = _admin(args)
    with share:
        groups = [g for g, _ in share.list_groups()] if args.all_groups else list(dict.fromkeys(args.groups))
        failed = printed = 0
        for group in groups:
            try:
                description = share.describe(group)
                if args.state:
                    lines = _state_lines(description, args.verbose)
                elif args.members:
                    lines = _member_lines(description, args.verbose)
                else:
                    lines = _offset_lines(share, description, args.verbose)
            except _requests().ShareGroupError as e:
                failed += 1
                _warn(args, _missing(group) if e.code == ErrorCode.GROUP_ID_NOT_FOUND
                      else f"cannot describe share group {group!r}: {e}")
                continue
            if description.state in ("Empty", "Dead") and not args.state:
                _warn(args, f"share group {group!r} has no active members")
            if not lines and not args.state and not args.members:
                _warn(args, f"share group {group!r} has no offset information")
            if lines:
                if printed:
                    print()
                print("\n".join(lines))
                printed += 1
    return 1 if failed else 0


def _offset_lines(share: ShareGroupAdmin, d: ShareGroup, verbose: bool) -> list[str]:
    offsets = share.start_offsets(d.group_id)
    headers = ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if verbose else []) + ["START-OFFSET", "LAG"]
    rows = []
    for (topic, partition), (start, leader_epoch, lag) in sorted(offsets.items()):
        epoch = [MISSING if leader_epoch < 0 else leader_epoch] if verbose else []
        rows.append([d.group_id, topic, partition, *epoch, MISSING if start < 0 else start,
                     MISSING if lag < 0 else lag])
    return table(headers, rows) if rows else []


def _member_lines(d: ShareGroup, verbose: bool) -> list[str]:
    if not d.members:
        return []
    headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (["MEMBER-EPOCH"] if verbose else []) \
        + ["ASSIGNMENT"]
    rows = []
    for m in d.members:
        assigned = [TopicPartition(t, p) for t, p in m.assignment]
        rows.append([d.group_id, m.member_id, m.host, m.client_id, len(assigned),
                     *([m.member_epoch] if verbose else []), assignment_text(assigned)])
    return table(headers, rows)


def _state_lines(d: ShareGroup, verbose: bool) -> list[str]:
    node, host, port = d.coordinator
    headers = ["GROUP", "COORDINATOR (ID)", "STATE"] + (["GROUP-EPOCH", "ASSIGNMENT-EPOCH"] if verbose else []) \
        + ["#MEMBERS"]
    row = [d.group_id, f"{host}:{port} ({node})", d.state,
           *([d.group_epoch, d.assignment_epoch] if verbose else []), len(d.members)]
    return table(headers, [row])


# ------------------------------------------------------------------------------------------ reset-offsets


def _reset(args: argparse.Namespace) -> int:
    group = args.group
    admin, share = _admin(args)
    with share:
        try:
            description: ShareGroup | None = share.describe(group)
        except _requests().ShareGroupError as e:
            if e.code != ErrorCode.GROUP_ID_NOT_FOUND:
                raise CliError(f"cannot describe share group {group!r}: {e}") from None
            description = None
        active = description is not None and bool(description.members)
        if active and args.execute:
            raise CliError(f"share group {group!r} is not empty ({len(description.members)} member(s), state "
                           f"{description.state}); stop its consumers before --execute")
        current = share.start_offsets(group) if description is not None else {}
        partitions = _partitions_to_reset(args, share, current)
        plan = _plan(args, admin, partitions)
        print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[group, t, p, o] for (t, p), o in plan.items()])
        if not args.execute:
            print("Dry run: nothing was changed; add --execute to alter these start offsets.", file=sys.stderr)
            if active:
                _warn(args, f"share group {group!r} has {len(description.members)} member(s): --execute is "
                      "refused until its consumers stop")
            return 0
        try:
            share.alter_start_offsets(group, plan)
        except _requests().ShareGroupError as e:
            if e.code == ErrorCode.NON_EMPTY_GROUP:
                raise CliError(f"share group {group!r} is not empty now; stop its consumers first") from None
            raise CliError(f"cannot alter the start offsets of share group {group!r}: {e}") from None
    print(f"Altered the start offsets of {len(plan)} partition(s) of share group {group}.", file=sys.stderr)
    return 0


def _partitions_to_reset(args: argparse.Namespace, share: ShareGroupAdmin,
                         current: dict[tuple[str, int], tuple[int, int]]) -> list[tuple[str, int]]:
    metadata = share.metadata
    if args.all_topics:
        wanted = [tp for tp in sorted(current) if tp[0] in metadata.topics]
        if not wanted:
            raise CliError(f"share group {args.group!r} has no start offsets; name the partitions with --topic")
        return wanted
    chosen: set[tuple[str, int]] = set()
    for topic, partitions in args.topic:
        count = require_topic(metadata, topic)
        for p in partitions if partitions is not None else range(count):
            require_partition(topic, p, count)
            chosen.add((topic, p))
    return sorted(chosen)


def _plan(args: argparse.Namespace, admin: AdminClient, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    if args.to_earliest:
        return list_offsets(admin, partitions, OffsetSpec.earliest())
    latest = list_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_latest:
        return {tp: latest[tp] for tp in partitions}
    if args.to_datetime is not None:
        found = list_offsets(admin, partitions, OffsetSpec.for_timestamp(args.to_datetime))
        for tp in partitions:
            if found.get(tp, -1) < 0:
                _warn(args, f"{tp[0]}-{tp[1]} has no record at or after {args.to_datetime} ms; using its log end "
                      "offset")
        return {tp: found[tp] if found.get(tp, -1) >= 0 else latest[tp] for tp in partitions}
    earliest = list_offsets(admin, partitions, OffsetSpec.earliest())
    plan = {}
    for tp in partitions:
        wanted = min(max(args.to_offset, earliest[tp]), latest[tp])
        if wanted != args.to_offset:
            _warn(args, f"{tp[0]}-{tp[1]}: offset {args.to_offset} is outside {earliest[tp]}..{latest[tp]}; "
                  f"using {wanted}")
        plan[tp] = wanted
    return plan


# ------------------------------------------------------------------------------------------ delete


def _delete_offsets(args: argparse.Namespace) -> int:
    _, share = _admin(args)
    topics = list(dict.fromkeys(args.topic))
    with share:
        try:
            results = share.delete_start_offsets(args.group, topics)
        except _requests().ShareGroupError as e:
            if e.code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise CliError(_missing(args.group)) from None
            if e.code == ErrorCode.NON_EMPTY_GROUP:
                raise CliError(f"share group {args.group!r} is not empty; stop its consumers first") from None
            raise CliError(f"cannot delete the offsets of share group {args.group!r}: {e}") from None
    rows = []
    for topic in topics:
        code, message = results.get(topic, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
        rows.append([topic, "Successful" if code == 0 else f"Error: {message or _requests().error_name(code)}"])
    print_table(["TOPIC", "STATUS"], rows)
    return 1 if any(row[1] != "Successful" for row in rows) else 0


def _delete(args: argparse.Namespace) -> int:
    _, share = _admin(args)
    failed = 0
    with share:
        for group in dict.fromkeys(args.groups):
            try:
                share.describe(group)  # only share groups: DeleteGroups would delete any group of that id
                code = share.delete_group(group)
            except _requests().ShareGroupError as e:
                code = e.code
                if code not in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NON_EMPTY_GROUP):
                    _warn(args, f"cannot delete share group {group!r}: {e}")
                    failed += 1
                    continue
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                if args.if_exists:
                    continue
                _warn(args, _missing(group))
            elif code == ErrorCode.NON_EMPTY_GROUP:
                _warn(args, f"cannot delete share group {group!r}: it has members (stop its consumers first)")
            elif code:
                _warn(args, f"cannot delete share group {group!r}: {_requests().error_name(code)}")
            else:
                print(f"Deleted share group {group}.")
                continue
            failed += 1
    return 1 if failed else 0


__all__ = ["add_parser"]
