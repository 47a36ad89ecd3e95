"""``tidelog transactions``: what ``kafka-transactions.sh`` does, with its columns::

    tidelog transactions list [--state S ...] [--producer-id ID ...] [--duration-filter MS] [--transactional-id-pattern RE]
    tidelog transactions describe --transactional-id ID
    tidelog transactions describe-producers --topic T --partition P [--broker-id N]
    tidelog transactions abort --topic T --partition P (--start-offset O | --producer-id ID --producer-epoch E
                                                        --coordinator-epoch C)
    tidelog transactions find-hanging (--topic T [--partition P] | --broker-id N) [--max-transaction-timeout MIN]

``find-hanging`` looks for open transactions older than the largest transaction timeout (15 minutes
unless told) whose coordinator no longer expects them in that partition: their producer id has no
transactional id, the id is gone, or its transaction does not list the partition. ``abort`` ends
such a transaction with an ABORT marker (found by its first offset, as Kafka's tool does), which
moves the partition's last stable offset past it. Requests confluent-kafka lacks go through
:mod:`tidelog.cli.transaction_admin`.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from tidelog.cli.argument import add_check, bounded_int, non_negative_int, offset, topic_name
from tidelog.cli.client import CliError, Cluster, command
from tidelog.cli.table import print_table

if TYPE_CHECKING:
    from tidelog.cli.transaction_admin import TransactionAdmin

DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "transactions", help="list, describe, abort transactions; find hanging ones",
        description="Inspect the transactional state of producers and recover from hanging transactions, as "
        "kafka-transactions.sh does (works with any Kafka-compatible broker).",
    )
    actions = p.add_subparsers(dest="transactions_command", metavar="ACTION", required=True)

    lst = actions.add_parser("list", help="list the transactional ids of every coordinator",
                             description="List transactional ids with their coordinator, producer id and state.")
    lst.add_argument("--state", nargs="+", default=[], metavar="STATE",
                     help="only these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, "
                     "CompleteAbort)")
    lst.add_argument("--producer-id", nargs="+", type=non_negative_int, default=[], metavar="ID",
                     help="only these producer ids")
    lst.add_argument("--duration-filter", type=non_negative_int, default=-1, metavar="MS",
                     help="only transactions running longer than this (milliseconds)")
    lst.add_argument("--transactional-id-pattern", metavar="REGEX", help="only ids matching this regular expression")
    command(lst, run_list)

    desc = actions.add_parser("describe", help="describe a transactional id",
                              description="Describe the state of a transactional id and its open transaction.")
    desc.add_argument("--transactional-id", type=_transactional_id, required=True)
    command(desc, run_describe)

    prod = actions.add_parser("describe-producers", help="the active producers of a partition",
                              description="Describe the producer state of a partition (its leader's, or the "
                              "given broker's).")
    _partition_arguments(prod)
    prod.add_argument("--broker-id", type=non_negative_int, help="ask this broker instead of the partition's leader")
    command(prod, run_describe_producers)

    abort = actions.add_parser("abort", help="abort a hanging transaction",
                               description="Write an ABORT marker for an open transaction of a partition, found by "
                               "its first offset (or given by producer id, epoch and coordinator epoch).")
    _partition_arguments(abort)
    abort.add_argument("--start-offset", type=offset, help="first offset of the transaction to abort")
    abort.add_argument("--producer-id", type=non_negative_int)
    abort.add_argument("--producer-epoch", type=bounded_int(0, 32767))
    abort.add_argument("--coordinator-epoch", type=bounded_int(-1, 2**31 - 1))
    add_check(abort, _check_abort)
    command(abort, run_abort)

    hanging = actions.add_parser("find-hanging", help="find hanging transactions",
                                 description="Find open transactions the coordinator no longer knows of, in a "
                                 "topic, a partition or every partition of a broker.")
    hanging.add_argument("--broker-id", type=non_negative_int, help="search every partition this broker holds")
    hanging.add_argument("--topic", type=topic_name, help="search this topic")
    hanging.add_argument("--partition", type=non_negative_int, help="search only this partition (needs --topic)")
    hanging.add_argument("--max-transaction-timeout", type=non_negative_int, default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
                         metavar="MINUTES", help="the largest transaction timeout in use (default 15)")
    add_check(hanging, _check_find_hanging)
    command(hanging, run_find_hanging)


def _partition_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", type=topic_name, required=True)
    p.add_argument("--partition", type=non_negative_int, required=True)


def _admin(args: argparse.Namespace) -> TransactionAdmin:
    # Imported here: the wire codec takes about half a second to load, which only running a command needs.
    from tidelog.cli.transaction_admin import TransactionAdmin

    _, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    return TransactionAdmin(metadata, args.client_properties)


def _transactional_id(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("a transactional id cannot be empty")
    return text


def _check_abort(args: argparse.Namespace) -> None:
    if args.start_offset is None and args.producer_id is None:
        raise ValueError("the transaction to abort needs --start-offset, or --producer-id, --producer-epoch "
                         "and --coordinator-epoch")
    if args.start_offset is None and (args.producer_epoch is None or args.coordinator_epoch is None):
        raise ValueError("--producer-id needs --producer-epoch and --coordinator-epoch")


def _check_find_hanging(args: argparse.Namespace) -> None:
    if args.topic is None and args.broker_id is None:
        raise ValueError("find-hanging needs --topic or --broker-id to limit the search")
    if args.partition is not None and args.topic is None:
        raise ValueError("--partition needs --topic")


# ----------------------------------------------------------------------------------- commands


def run_list(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        listings = admin.list_transactions(states=args.state, producer_ids=args.producer_id,
                                           duration_ms=args.duration_filter, pattern=args.transactional_id_pattern)
    print_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
                [[t.transactional_id, t.coordinator, t.producer_id, t.state]
                 for t in sorted(listings, key=lambda t: t.transactional_id)])
    return 0


def run_describe(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        d = admin.describe_transaction(args.transactional_id)
    if d is None:
        raise CliError(f"transactional id {args.transactional_id!r} does not exist")
    started = d.start_time_ms >= 0
    print_table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                 "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"],
                [[d.coordinator, d.transactional_id, d.producer_id, d.producer_epoch, d.state, d.timeout_ms,
                  d.start_time_ms if started else "None",
                  int(time.time() * 1000) - d.start_time_ms if started else "None",
                  ",".join(f"{t}-{p}" for t, p in d.partitions)]])
    return 0


def run_describe_producers(args: argparse.Namespace) -> int:
    tp = (args.topic, args.partition)
    with _admin(args) as admin:
        producers = admin.describe_producers([tp], args.broker_id)[tp]
    print_table(["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                 "CurrentTransactionStartOffset"],
                [[s.producer_id, s.producer_epoch, s.coordinator_epoch, s.last_sequence, s.last_timestamp,
                  s.current_txn_start_offset if s.current_txn_start_offset >= 0 else "None"] for s in producers])
    return 0


def run_abort(args: argparse.Namespace) -> int:
    tp = (args.topic, args.partition)
    with _admin(args) as admin:
        if args.start_offset is not None:
            found = [s for s in admin.describe_producers([tp])[tp] if s.current_txn_start_offset == args.start_offset]
            if not found:
                raise CliError(f"no open transaction starts at offset {args.start_offset} of "
                               f"{args.topic}-{args.partition}")
            s = found[0]
            spec = (s.producer_id, s.producer_epoch, max(s.coordinator_epoch, 0))
        else:
            # A transaction hanging before its producer's first marker has coordinator epoch -1: 0 is safe.
            spec = (args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0))
        admin.abort(*tp, *spec)
    print(f"aborted the transaction of producer {spec[0]} (epoch {spec[1]}) in {args.topic}-{args.partition}")
    return 0


def run_find_hanging(args: argparse.Namespace) -> int:
    max_timeout_ms = args.max_transaction_timeout * 60_000
    with _admin(args) as admin:
        partitions = _partitions_to_search(admin, args)
        now = int(time.time() * 1000)
        open_txns = [(tp, s) for tp, states in admin.describe_producers(partitions, args.broker_id).items()
                     for s in states if s.current_txn_start_offset >= 0 and now - s.last_timestamp > max_timeout_ms]
        hanging = []
        if open_txns:
            ids = {t.producer_id: t.transactional_id
                   for t in admin.list_transactions(producer_ids=sorted({s.producer_id for _, s in open_txns}))}
            described = {txn_id: admin.describe_transaction(txn_id) for txn_id in set(ids.values())}
            for tp, s in open_txns:
                d = described.get(ids.get(s.producer_id, ""))
                if d is None or tp not in d.partitions:
                    hanging.append((tp, s))
    print_table(["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                 "LastTimestamp", "Duration(min)"],
                [[t, p, s.producer_id, s.producer_epoch, s.coordinator_epoch, s.current_txn_start_offset,
                  s.last_timestamp, (now - s.last_timestamp) // 60_000] for (t, p), s in hanging])
    return 0


def _partitions_to_search(admin: TransactionAdmin, args: argparse.Namespace) -> list[tuple[str, int]]:
    if args.topic is not None:
        admin.leader(args.topic, args.partition if args.partition is not None else 0)  # checks that it exists
        if args.partition is not None:
            return [(args.topic, args.partition)]
        topics = [args.topic]
    else:
        topics = sorted(admin.metadata.topics)
    out = []
    for name in topics:
        for p in sorted(admin.metadata.topics[name].partitions.values(), key=lambda p: p.id):
            if args.broker_id is None or args.broker_id in p.replicas:
                out.append((name, p.id))
    return out


__all__ = ["add_parser"]
