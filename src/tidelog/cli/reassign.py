"""``tidelog cluster reassign``: move partitions between brokers, as ``kafka-reassign-partitions.sh``
does, with its JSON files (AlterPartitionReassignments / ListPartitionReassignments, KIP-455)::

    tidelog cluster reassign --generate --topics-to-move-json-file topics.json --broker-list 2,3
    tidelog cluster reassign --execute --reassignment-json-file plan.json
    tidelog cluster reassign --verify --reassignment-json-file plan.json
    tidelog cluster reassign --cancel --reassignment-json-file plan.json
    tidelog cluster reassign --list

The files::

    topics.json  {"version":1,"topics":[{"topic":"clicks"}]}
    plan.json    {"version":1,"partitions":[{"topic":"clicks","partition":0,"replicas":[2,3],
                                             "log_dirs":["any","any"]}]}

``--generate`` prints the current assignment and a proposed one over ``--broker-list`` (Kafka's
replica placement, rack-aware unless ``--disable-rack-aware``); it changes nothing. ``--execute``
prints the current assignment of the partitions in the plan (save it: it is the plan for a rollback)
and starts the reassignments; with reassignments already in progress it refuses unless
``--additional``. ``--verify`` says, per partition, whether its reassignment is complete (exit 0
only when all are; Kafka's tool exits 0 either way). ``--cancel`` cancels those of the plan's
partitions still in progress. Requests go to the first ``--bootstrap-server`` (any broker; TLS and SASL as ``--command-config`` says).
Exit codes: 2 for usage errors, 1 for failures (a refused partition, an unreadable file).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidelog.cli.client import CliError, command

_ACTIONS = ("generate", "execute", "verify", "cancel", "list")


def add_parser(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser(
        "reassign", help="move partitions between brokers (kafka-reassign-partitions.sh)",
        description="Generate, execute, verify, cancel or list partition reassignments, with "
        "kafka-reassign-partitions.sh's JSON files. --execute prints the current assignment to keep "
        "for a rollback. Exit codes: 0 done, 1 failed (or, for --verify, not complete yet), 2 usage error.")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--generate", action="store_true",
                       help="propose an assignment of the topics of --topics-to-move-json-file over --broker-list")
    group.add_argument("--execute", action="store_true", help="start the reassignment of --reassignment-json-file")
    group.add_argument("--verify", action="store_true",
                       help="tell whether the reassignment of --reassignment-json-file is complete")
    group.add_argument("--cancel", action="store_true",
                       help="cancel the reassignments in progress of --reassignment-json-file's partitions")
    group.add_argument("--list", action="store_true", help="list the reassignments in progress")
    p.add_argument("--reassignment-json-file", metavar="FILE",
                   help='{"version":1,"partitions":[{"topic":T,"partition":P,"replicas":[ids]}]}')
    p.add_argument("--topics-to-move-json-file", metavar="FILE", help='{"version":1,"topics":[{"topic":T}]}')
    p.add_argument("--broker-list", metavar="IDS", help="with --generate: the brokers to place replicas on, e.g. 1,2,3")
    p.add_argument("--disable-rack-aware", action="store_true", help="with --generate: ignore broker.rack")
    p.add_argument("--additional", action="store_true",
                   help="with --execute: start even though other reassignments are in progress")
    command(p, run)


def run(args: argparse.Namespace) -> int:
    action = next(a for a in _ACTIONS if getattr(args, a))
    if action == "generate":
        if not args.topics_to_move_json_file or not args.broker_list:
            raise CliError("--generate needs --topics-to-move-json-file and --broker-list", 2)
    elif action != "list" and not args.reassignment_json_file:
        raise CliError(f"--{action} needs --reassignment-json-file", 2)
    if action != "generate" and (args.topics_to_move_json_file or args.broker_list):
        raise CliError("--topics-to-move-json-file and --broker-list go with --generate only", 2)
    if args.additional and action != "execute":
        raise CliError("--additional goes with --execute only", 2)
    from tidelog.cli.broker_connection import BrokerConnection

    with BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties) as conn:
        conn.api_versions()
        return {"generate": _generate, "execute": _execute, "verify": _verify, "cancel": _cancel,
                "list": _list}[action](conn, args)


# ------------------------------------------------------------------------------------------ files

def _read_json(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise CliError(f"{path} is not valid JSON: {e}") from None


def _plan(path: str) -> list[tuple[str, int, list[int]]]:
    """The (topic, partition, replicas) of a reassignment JSON file, checked as Kafka's tool checks it."""
    data = _read_json(path)
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise CliError(f'{path}: expected {{"version":1,"partitions":[...]}}')
    if not entries:
        raise CliError(f"{path}: the partition reassignment list cannot be empty")
    plan, seen = [], set()
    for e in entries:
        try:
            topic, partition, replicas = e["topic"], e["partition"], e["replicas"]
            valid = (isinstance(topic, str) and isinstance(partition, int) and isinstance(replicas, list)
                     and all(isinstance(r, int) for r in replicas))
        except (KeyError, TypeError):
            valid = False
        if not valid:
            raise CliError(f'{path}: each partition needs "topic" (string), "partition" (integer) and '
                           f'"replicas" (broker ids): {json.dumps(e)}')
        if (topic, partition) in seen:
            raise CliError(f"{path}: {topic}-{partition} appears more than once")
        if len(set(replicas)) != len(replicas):
            raise CliError(f"{path}: the replicas of {topic}-{partition} contain duplicates: {replicas}")
        log_dirs = e.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list) or any(d != "any" for d in log_dirs)):
            raise CliError(f'{path}: log_dirs other than "any" are not supported (Tidelog has no '
                           "AlterReplicaLogDirs)")
        seen.add((topic, partition))
        plan.append((topic, partition, replicas))
    return plan


def _assignment_json(entries: list[tuple[str, int, list[int]]]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)} for t, p, r in entries]},
        separators=(",", ":"))


# ------------------------------------------------------------------------------------------ requests

def _metadata(conn, topics: list[str] | None):
    from tidelog.protocol.messages import MetadataRequest

    request = MetadataRequest(topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t)
                                                                  for t in topics],
                              allow_auto_topic_creation=False)
    return conn.request(request)


def _current(conn, topics: list[str]) -> dict[tuple[str, int], list[int]]:
    """Each partition's current replicas; CliError for a topic that does not exist."""
    from tidelog.errors import ErrorCode

    out = {}
    for t in _metadata(conn, sorted(set(topics))).topics:
        if t.error_code:
            raise CliError(f"topic {t.name}: {ErrorCode(t.error_code).name}")
        for p in t.partitions:
            out[(t.name, p.partition_index)] = list(p.replica_nodes)
    return out


def _in_progress(conn, partitions: list[tuple[str, int]] | None = None) -> dict[tuple[str, int], tuple]:
    from tidelog.errors import ErrorCode
    from tidelog.protocol.messages import ListPartitionReassignmentsRequest as L

    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        topics = [L.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps) for t, ps in by_topic.items()]
    response = conn.request(L(topics=topics))
    if response.error_code:
        raise CliError(f"cannot list reassignments: {ErrorCode(response.error_code).name}: {response.error_message}")
    return {(t.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
            for t in response.topics for p in t.partitions}


def _alter(conn, targets: list[tuple[str, int, list[int] | None]]) -> dict[tuple[str, int], str]:
    """Send the reassignments; the refused partitions with why."""
    from tidelog.errors import ErrorCode
    from tidelog.protocol.messages import AlterPartitionReassignmentsRequest as A

    by_topic: dict[str, list] = {}
    for t, p, r in targets:
        by_topic.setdefault(t, []).append(A.ReassignablePartition(partition_index=p, replicas=r))
    response = conn.request(A(topics=[A.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()]))
    if response.error_code:
        raise CliError(f"{ErrorCode(response.error_code).name}: {response.error_message}")
    return {(t.name, p.partition_index): f"{ErrorCode(p.error_code).name}: {p.error_message}"
            for t in response.responses for p in t.partitions if p.error_code}


def _names(keys) -> str:
    return ",".join(f"{t}-{p}" for t, p in keys)


# ------------------------------------------------------------------------------------------ actions

@dataclass(frozen=True, slots=True)
class _Broker:
    """What the replica placement reads of a broker."""

    broker_id: int
    rack: str | None


def _generate(conn, args: argparse.Namespace) -> int:
    from tidelog.cluster.assignment import assign_replicas

    data = _read_json(args.topics_to_move_json_file)
    entries = data.get("topics") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("topic"), str)
                                                for e in entries):
        raise CliError(f'{args.topics_to_move_json_file}: expected {{"version":1,"topics":[{{"topic":"name"}}]}}')
    if not entries:
        raise CliError(f"{args.topics_to_move_json_file}: the list of topics to move is empty")
    try:
        ids = [int(b) for b in args.broker_list.split(",")]
    except ValueError:
        raise CliError(f"--broker-list: expected broker ids separated by commas, got {args.broker_list!r}", 2) from None
    if len(set(ids)) != len(ids):
        raise CliError(f"--broker-list contains duplicate entries: {args.broker_list}", 2)
    topics = list(dict.fromkeys(e["topic"] for e in entries))
    metadata = _metadata(conn, None)
    known = {b.node_id: b for b in metadata.brokers}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise CliError(f"--broker-list names brokers that are not in the cluster: {unknown}")
    current = _current(conn, topics)
    racks = {i: None if args.disable_rack_aware else known[i].rack for i in ids}
    if not args.disable_rack_aware and any(racks.values()) and not all(racks.values()):
        raise CliError("not every broker of --broker-list has a rack: use --disable-rack-aware", 1)
    brokers = [_Broker(i, racks[i]) for i in ids]
    proposed = []
    for topic in topics:
        parts = sorted(p for t, p in current if t == topic)
        rf = len(current[(topic, parts[0])])
        if rf > len(brokers):
            raise CliError(f"topic {topic} has replication factor {rf}, more than the {len(brokers)} brokers "
                           "of --broker-list")
        for p, replicas in zip(parts, assign_replicas(brokers, len(parts), rf)):
            proposed.append((topic, p, list(replicas)))
    print("Current partition replica assignment")
    print(_assignment_json(sorted((t, p, r) for (t, p), r in current.items())))
    print()
    print("Proposed partition reassignment configuration")
    print(_assignment_json(proposed))
    return 0


def _execute(conn, args: argparse.Namespace) -> int:
    plan = _plan(args.reassignment_json_file)
    if not args.additional and _in_progress(conn):
        raise CliError("cannot execute because there are reassignments in progress: use --additional to start "
                       "this one as well (tidelog cluster reassign --list shows them)")
    current = _current(conn, [t for t, _, _ in plan])
    missing = [(t, p) for t, p, _ in plan if (t, p) not in current]
    if missing:
        raise CliError(f"unknown partitions: {_names(missing)}")
    print("Current partition replica assignment")
    print()
    print(_assignment_json([(t, p, current[(t, p)]) for t, p, _ in plan]))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")
    refused = _alter(conn, [(t, p, r) for t, p, r in plan])
    started = [(t, p) for t, p, _ in plan if (t, p) not in refused]
    if started:
        print(f"Successfully started partition reassignment{'s' if len(started) > 1 else ''} for {_names(started)}")
    if refused:
        print("Error reassigning partition(s):")
        for (t, p), why in refused.items():
            print(f"{t}-{p}: {why}")
        return 1
    return 0


def _verify(conn, args: argparse.Namespace) -> int:
    plan = _plan(args.reassignment_json_file)
    ongoing = _in_progress(conn, [(t, p) for t, p, _ in plan])
    current = _current(conn, [t for t, _, _ in plan])
    print("Status of partition reassignment:")
    complete = True
    for t, p, target in plan:
        if (t, p) in ongoing:
            print(f"Reassignment of partition {t}-{p} is still in progress.")
            complete = False
        elif current.get((t, p)) == target:
            print(f"Reassignment of partition {t}-{p} is completed.")
        else:
            print(f"There is no active reassignment of partition {t}-{p}, but replica set is "
                  f"{current.get((t, p))} rather than {target}.")
            complete = False
    return 0 if complete else 1


def _cancel(conn, args: argparse.Namespace) -> int:
    plan = _plan(args.reassignment_json_file)
    ongoing = _in_progress(conn, [(t, p) for t, p, _ in plan])
    targets = [(t, p) for t, p, _ in plan if (t, p) in ongoing]
    if not targets:
        print("None of the specified partition reassignments are active.")
        return 0
    refused = _alter(conn, [(t, p, None) for t, p in targets])
    cancelled = [k for k in targets if k not in refused]
    if cancelled:
        print(f"Successfully cancelled partition reassignment{'s' if len(cancelled) > 1 else ''} for: "
              f"{_names(cancelled)}")
    if refused:
        print("Error cancelling partition reassignment(s):")
        for (t, p), why in refused.items():
            print(f"{t}-{p}: {why}")
        return 1
    return 0


def _list(conn, args: argparse.Namespace) -> int:
    ongoing = _in_progress(conn)
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for (t, p), (replicas, adding, removing) in sorted(ongoing.items()):
        print(f"{t}-{p}: replicas: {','.join(map(str, replicas))}. adding: {','.join(map(str, adding))}. "
              f"removing: {','.join(map(str, removing))}.")
    return 0


__all__ = ["add_parser", "run"]
