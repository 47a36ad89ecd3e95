"""``tidelog topics``: create, list, describe, alter, trim and delete topics and change their configs
(a Kafka admin client; ``kafka-topics.sh``'s actions, with rpk's ``trim``).

This module holds the parser of every action and the simple ones; ``describe`` lives in
:mod:`tidelog.cli.topic_description` and ``trim`` / ``delete-records`` in :mod:`tidelog.cli.delete_records`.
A topic is named positionally or with ``--topic``, as Kafka's tools take it.
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic, ResourceType

from tidelog.cli import delete_records, topic_description
from tidelog.cli.argument import add_check, add_topic_argument, key_value, positive_int
from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    CliError,
    Cluster,
    command,
    describe_error,
    error_code,
    internal_topics,
    require_topic,
    require_topics,
)
from tidelog.cli.configs import alter_configs


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "topics", help="create, list, describe, alter, trim, delete topics and change their configs",
        description="Manage topics through the Kafka admin API (works with any Kafka-compatible broker).",
    )
    actions = p.add_subparsers(dest="topics_command", metavar="ACTION", required=True)

    create = actions.add_parser(
        "create", help="create a topic",
        description="Create a topic. Partitions and replication factor default to the broker's "
        "num.partitions and default.replication.factor.",
    )
    add_topic_argument(create, "topic name")
    create.add_argument("--partitions", type=positive_int, metavar="N", help="number of partitions")
    create.add_argument("--replication-factor", type=positive_int, metavar="N", help="replicas per partition")
    create.add_argument(
        "--config", type=key_value, action="append", default=[], metavar="KEY=VALUE",
        help="a topic config such as retention.ms=3600000 (repeatable)",
    )
    create.add_argument("--if-not-exists", action="store_true", help="succeed if the topic already exists")
    command(create, _create)

    lst = actions.add_parser(
        "list", help="list topic names",
        description="Print every topic name, one a line; an internal topic (such as __consumer_offsets) "
        "is followed by ' (internal)' unless --exclude-internal hides it.",
    )
    lst.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    command(lst, _list)

    topic_description.add_parser(actions)

    alter = actions.add_parser(
        "alter", help="add partitions to a topic",
        description="Raise a topic's partition count with CreatePartitions (Kafka cannot remove "
        "partitions). Keys then map to partitions differently: records of one key written before and "
        "after may be in different partitions.",
    )
    add_topic_argument(alter, "topic name")
    alter.add_argument("--partitions", type=positive_int, required=True, metavar="N",
                       help="the new total number of partitions (more than now)")
    command(alter, _alter)

    delete_records.add_parser(actions)

    delete = actions.add_parser("delete", help="delete topics", description="Delete one or more topics.")
    add_topic_argument(delete, "topics to delete", many=True)
    delete.add_argument("--if-exists", action="store_true", help="skip topics that do not exist")
    command(delete, _delete)

    alter_config = actions.add_parser(
        "alter-config", help="set or remove a topic's config overrides",
        description="Change a topic's config overrides with IncrementalAlterConfigs: --set adds or replaces "
        "an override, --delete removes one (the topic falls back to the broker default). The same as "
        "`tidelog configs alter --topic NAME --add-config ... --delete-config ...`.",
    )
    add_topic_argument(alter_config, "topic name")
    alter_config.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                              help="set a config override (repeatable)")
    alter_config.add_argument("--delete", action="append", default=[], metavar="KEY",
                              help="remove a config override (repeatable)")
    add_check(alter_config, _alter_config_check)
    command(alter_config, _alter_config)


# ------------------------------------------------------------------------------------------ actions


def _create(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
    topic = NewTopic(
        args.topic,
        num_partitions=args.partitions if args.partitions is not None else -1,
        replication_factor=args.replication_factor if args.replication_factor is not None else -1,
        config=dict(args.config),
    )
    future = admin.create_topics([topic], request_timeout=REQUEST_TIMEOUT_S)[args.topic]
    try:
        future.result()
    except KafkaException as e:
        if error_code(e) == KafkaError.TOPIC_ALREADY_EXISTS:
            if args.if_not_exists:
                print(f"Topic {args.topic} already exists.")
                return 0
            raise CliError(f"topic {args.topic!r} already exists") from None
        raise CliError(f"cannot create topic {args.topic!r}: {describe_error(e)}") from None
    print(f"Created topic {args.topic}.")
    return 0


def _list(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    names = sorted(metadata.topics)
    internal = internal_topics(admin, names)
    for name in names:
        if name not in internal:
            print(name)
        elif not args.exclude_internal:
            print(f"{name} (internal)")
    return 0


def _alter(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    admin, metadata = cluster.connect()
    current = require_topic(metadata, args.topic, cluster)
    if args.partitions <= current:
        raise CliError(f"topic {args.topic!r} has {current} partition(s); --partitions must be more than that "
                       "(partitions cannot be removed)")
    future = admin.create_partitions([NewPartitions(args.topic, args.partitions)],
                                     request_timeout=REQUEST_TIMEOUT_S)[args.topic]
    try:
        future.result()
    except KafkaException as e:
        raise CliError(f"cannot add partitions to topic {args.topic!r}: {describe_error(e)}") from None
    print(f"Topic {args.topic} now has {args.partitions} partitions (was {current}).")
    return 0


def _delete(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    admin, metadata = cluster.connect()
    names = args.topics
    if args.if_exists:
        names = [n for n in names if n in metadata.topics]
    else:
        require_topics(metadata, names, cluster)
    if not names:
        return 0
    futures = admin.delete_topics(names, request_timeout=REQUEST_TIMEOUT_S)
    failed = 0
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as e:
            if args.if_exists and error_code(e) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            print(f"{args.prog}: cannot delete topic {name!r}: {describe_error(e)}", file=sys.stderr)
            failed += 1
            continue
        print(f"Deleted topic {name}.")
    return 1 if failed else 0


def _alter_config_check(args: argparse.Namespace) -> None:
    if not args.set and not args.delete:
        raise ValueError("nothing to change: give --set KEY=VALUE and/or --delete KEY")


def _alter_config(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    require_topics(metadata, [args.topic])
    alter_configs(admin, ConfigResource(ResourceType.TOPIC, args.topic), args.set, args.delete)
    done = [f"set {k}={v}" for k, v in args.set] + [f"deleted {k}" for k in args.delete]
    print(f"Updated topic {args.topic}: {', '.join(done)}.")
    return 0


__all__ = ["add_parser"]
