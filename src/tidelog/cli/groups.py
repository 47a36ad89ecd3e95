"""``tidelog groups``: list, describe and delete consumer groups and reset their committed offsets (a Kafka
admin client; the views follow ``kafka-consumer-groups.sh``).

``describe`` shows, for every partition the group has committed an offset for or has assigned to a
member, the committed offset, the log end offset (ListOffsets ``latest``) and the lag between them::

    GROUP   TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID      HOST        CLIENT-ID
    orders  orders  0          7               10              3    rdkafka-3f9c...  /10.0.0.7   billing

``--members`` lists the members and their assigned partitions; ``--state`` the group's type, state,
coordinator, assignor and member count.

``reset-offsets`` lives in :mod:`tidelog.cli.offset_reset`; the lookups and Kafka's names for group
states and types in :mod:`tidelog.cli.consumer_group`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, OffsetSpec

from tidelog.cli import offset_reset
from tidelog.cli.argument import add_check
from tidelog.cli.client import REQUEST_TIMEOUT_S, Cluster, command, describe_error, error_code
from tidelog.cli.consumer_group import (
    REBALANCING,
    assignment_text,
    committed,
    describe_groups,
    exists,
    group_id,
    group_type,
    state,
    state_name,
    type_name,
)
from tidelog.cli.offsets import list_offsets
from tidelog.cli.table import MISSING, print_table, table


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
    lst.add_argument("--state", nargs="*", type=state, metavar="STATE",
                     help="Empty, Stable, PreparingRebalance, CompletingRebalance or Dead (case-insensitive)")
    lst.add_argument("--type", nargs="*", type=group_type, metavar="TYPE",
                     help="classic (JoinGroup/SyncGroup) or consumer (KIP-848)")
    command(lst, _list)

    describe = actions.add_parser(
        "describe", help="show a group's offsets and lag, its members, or its state",
        description="Describe consumer groups. Default view: for every partition the group has committed "
        "or assigned, the committed offset, the log end offset, the lag and the member that owns it. "
        "--members: each member with its assigned partitions. --state: type, coordinator, assignor, "
        "state and member count.",
    )
    describe.add_argument("groups", nargs="*", type=group_id, metavar="GROUP", help="groups to describe")
    describe.add_argument("--all-groups", action="store_true", help="describe every group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="list the members and their partitions")
    view.add_argument("--state", action="store_true", help="show the group's state, coordinator and assignor")
    add_check(describe, _describe_check)
    command(describe, _describe)

    delete = actions.add_parser(
        "delete", help="delete groups",
        description="Delete consumer groups and their committed offsets. A group with active members "
        "cannot be deleted.",
    )
    delete.add_argument("groups", nargs="+", type=group_id, metavar="GROUP", help="groups to delete")
    delete.add_argument("--if-exists", action="store_true", help="skip groups that do not exist")
    command(delete, _delete)

    offset_reset.add_parser(actions)


def _warn(args: argparse.Namespace, message: str) -> None:
    print(f"{args.prog}: {message}", file=sys.stderr)


# ------------------------------------------------------------------------------------------ list


def _list(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
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
                row.append(type_name(listing.type))
            if args.state is not None:
                row.append(state_name(listing.state))
            rows.append(row)
        print_table(headers, rows)
    return 1 if result.errors else 0


# ------------------------------------------------------------------------------------------ describe


def _describe_check(args: argparse.Namespace) -> None:
    if not args.groups and not args.all_groups:
        raise ValueError("name the groups to describe, or give --all-groups")
    if args.groups and args.all_groups:
        raise ValueError("give group names or --all-groups, not both")


def _describe(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
    if args.all_groups:
        listed = admin.list_consumer_groups(request_timeout=REQUEST_TIMEOUT_S).result()
        groups = sorted(g.group_id for g in listed.valid or ())
    else:
        groups = list(dict.fromkeys(args.groups))
    if not groups:
        return 0
    descriptions = describe_groups(admin, groups)
    failed = 0
    printed = 0
    for group in groups:
        description = descriptions[group]
        if not exists(description):
            _warn(args, f"group {group!r} does not exist")
            failed += 1
            continue
        if isinstance(description, KafkaException):
            _warn(args, f"cannot describe group {group!r}: {describe_error(description)}")
            failed += 1
            continue
        if description.state == ConsumerGroupState.EMPTY:
            _warn(args, f"group {group!r} has no active members")
        elif description.state in REBALANCING:
            _warn(args, f"group {group!r} is rebalancing ({state_name(description.state)})")
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
    offsets = committed(admin, d.group_id)
    owners: dict[tuple[str, int], Any] = {}
    for member in d.members:
        for tp in member.assignment.topic_partitions or ():
            owners[(tp.topic, tp.partition)] = member
    partitions = sorted(set(offsets) | set(owners))
    if not partitions:
        return []
    ends = list_offsets(admin, partitions, OffsetSpec.latest(), strict=False)
    rows = []
    for key in partitions:
        current = offsets.get(key)
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
    return table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
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
        row += [m.host, m.client_id, len(assigned), assignment_text(assigned)]
        if with_target:
            target = m.target_assignment.topic_partitions if m.target_assignment is not None else ()
            row.append(assignment_text(target or ()))
        rows.append(row)
    return table(headers, rows)


def _state_lines(d: ConsumerGroupDescription) -> list[str]:
    c = d.coordinator
    coordinator = f"{c.host}:{c.port} ({c.id})" if c is not None else MISSING
    row = [d.group_id, type_name(d.type), coordinator, d.partition_assignor or MISSING, state_name(d.state),
           len(d.members)]
    return table(["GROUP", "TYPE", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"], [row])


# ------------------------------------------------------------------------------------------ delete


def _delete(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
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


__all__ = ["add_parser"]
