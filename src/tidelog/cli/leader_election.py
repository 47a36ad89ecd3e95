"""``tidelog cluster elect-leaders``: what ``kafka-leader-election.sh`` does (ElectLeaders through the
admin API, KIP-460), with its options and its output::

    tidelog cluster elect-leaders --election-type preferred --all-topic-partitions
    Successfully completed leader election (PREFERRED) for partitions orders-0, orders-2
    Valid replica already elected for partitions orders-1

``--topic T --partition P`` (both) or ``--all-topic-partitions`` (then partitions that need no
election are not listed, as Kafka's broker leaves them out) or ``--path-to-json-file`` (Kafka's
``{"partitions": [{"topic": ..., "partition": ...}]}``). A partition that could not be elected prints
``Error completing leader election (TYPE) for partition: t-p: <reason>`` and the command exits 1 with
``N replica(s) could not be elected``.
"""

from __future__ import annotations

import argparse
import json

from confluent_kafka import ElectionType, KafkaError, TopicPartition

from tidelog.cli.argument import add_check, non_negative_int, topic_name
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, Cluster, command, describe_error

_TYPES = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}


def add_parser(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser(
        "elect-leaders", help="elect the preferred (or, with no leader, any live) replica as leader",
        description="Run a leader election (ElectLeaders), as kafka-leader-election.sh does. preferred: make "
        "each partition's preferred replica (the first of its assignment) its leader, if it is alive and "
        "in sync. unclean: give a partition without a leader one, the first live in-sync replica or, if "
        "none, the first live replica (records only the old leader had are lost). Name the partitions with "
        "--topic and --partition, --all-topic-partitions or --path-to-json-file.")
    p.add_argument("--election-type", required=True, type=str.lower, choices=sorted(_TYPES),
                   help="preferred or unclean (any case)")
    p.add_argument("--topic", type=topic_name, help="the topic of the partition (with --partition)")
    p.add_argument("--partition", type=non_negative_int, help="the partition (with --topic)")
    p.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    p.add_argument("--path-to-json-file", metavar="FILE",
                   help='partitions as {"partitions": [{"topic": "t", "partition": 0}, ...]}')
    add_check(p, _check)
    command(p, run)


def _check(args: argparse.Namespace) -> None:
    chosen = sum((args.topic is not None or args.partition is not None, args.all_topic_partitions,
                  args.path_to_json_file is not None))
    if chosen != 1:
        raise ValueError("name the partitions with exactly one of --topic/--partition, --all-topic-partitions "
                         "and --path-to-json-file")
    if (args.topic is None) != (args.partition is None):
        raise ValueError("--topic and --partition go together")


def _partitions(args: argparse.Namespace) -> list[TopicPartition] | None:
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        return [TopicPartition(args.topic, args.partition)]
    try:
        with open(args.path_to_json_file, encoding="utf-8") as f:
            data = json.load(f)
        entries = [(str(e["topic"]), int(e["partition"])) for e in data["partitions"]]
    except OSError as e:
        raise CliError(f"cannot read {args.path_to_json_file}: {e.strerror}", 2) from None
    except (ValueError, KeyError, TypeError):
        raise CliError(f'{args.path_to_json_file}: expected {{"partitions": [{{"topic": ..., "partition": ...}}]}}',
                       2) from None
    if len(set(entries)) != len(entries):
        raise CliError(f"{args.path_to_json_file}: a partition is listed twice", 2)
    return [TopicPartition(t, p) for t, p in entries]


def _code(error: object) -> int | None:
    """The error code of a KafkaError, or of the KafkaError a KafkaException carries."""
    if isinstance(error, KafkaError):
        return error.code()
    inner = error.args[0] if isinstance(error, Exception) and error.args else None
    return inner.code() if isinstance(inner, KafkaError) else None


def run(args: argparse.Namespace) -> int:
    kind = _TYPES[args.election_type]
    label = args.election_type.upper()
    partitions = _partitions(args)
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
    try:
        # (no request_timeout: confluent-kafka 2.16's elect_leaders fails on its timeout arguments)
        results = admin.elect_leaders(kind, partitions).result(REQUEST_TIMEOUT_S)
    except Exception as e:
        if _code(e) == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            print("Not authorized to perform leader election")
        raise CliError(f"leader election failed: {describe_error(e)}") from None
    succeeded, noop, failed = [], [], []
    for tp, error in sorted(results.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
        name = f"{tp.topic}-{tp.partition}"
        if error is None:
            succeeded.append(name)
        elif _code(error) == KafkaError.ELECTION_NOT_NEEDED:
            noop.append(name)
        else:
            failed.append((name, error.str() if isinstance(error, KafkaError) else describe_error(error)))
    if succeeded:
        print(f"Successfully completed leader election ({label}) for partitions {', '.join(succeeded)}")
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(noop)}")
    for name, reason in failed:
        print(f"Error completing leader election ({label}) for partition: {name}: {reason}")
    if failed:
        raise CliError(f"{len(failed)} replica(s) could not be elected")
    return 0


__all__ = ["add_parser", "run"]
