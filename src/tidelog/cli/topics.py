"""``tidelog topics``: create, list, describe, delete topics and change their configs (a Kafka admin client).

The output of ``describe`` follows ``kafka-topics.sh --describe`` so that habits and scripts carry over::

    Topic: orders  TopicId: 3nFe...  PartitionCount: 3  ReplicationFactor: 1  Configs: retention.ms=3600000
        Topic: orders  Partition: 0  Leader: 0  Replicas: 0  Isr: 0
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    CliError,
    Cluster,
    add_bootstrap_argument,
    describe_error,
    entry,
    error_code,
    key_value,
    positive_int,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "topics", help="create, list, describe, delete topics and change their configs",
        description="Manage topics through the Kafka admin API (works with any Kafka-compatible broker).",
    )
    actions = p.add_subparsers(dest="topics_command", metavar="ACTION", required=True)

    create = actions.add_parser(
        "create", help="create a topic",
        description="Create a topic. Partitions and replication factor default to the broker's "
        "num.partitions and default.replication.factor.",
    )
    create.add_argument("name", help="topic name")
    create.add_argument("--partitions", type=positive_int, metavar="N", help="number of partitions")
    create.add_argument("--replication-factor", type=positive_int, metavar="N", help="replicas per partition")
    create.add_argument(
        "--config", type=key_value, action="append", default=[], metavar="KEY=VALUE",
        help="a topic config such as retention.ms=3600000 (repeatable)",
    )
    create.add_argument("--if-not-exists", action="store_true", help="succeed if the topic already exists")
    _finish(create, _create)

    lst = actions.add_parser("list", help="list topic names", description="Print every topic name, one a line.")
    _finish(lst, _list)

    describe = actions.add_parser(
        "describe", help="show partitions, leaders, replicas, ISR, topic id and config overrides",
        description="Describe topics (every topic when no name is given): topic id, partition count, "
        "replication factor, config overrides, and for each partition its leader, replicas and in-sync replicas.",
    )
    describe.add_argument("names", nargs="*", metavar="NAME", help="topics to describe (default: all)")
    _finish(describe, _describe)

    delete = actions.add_parser("delete", help="delete topics", description="Delete one or more topics.")
    delete.add_argument("names", nargs="+", metavar="NAME", help="topics to delete")
    delete.add_argument("--if-exists", action="store_true", help="skip topics that do not exist")
    _finish(delete, _delete)

    alter = actions.add_parser(
        "alter-config", help="set or remove a topic's config overrides",
        description="Change a topic's config overrides with IncrementalAlterConfigs: --set adds or replaces "
        "an override, --delete removes one (the topic falls back to the broker default).",
    )
    alter.add_argument("name", help="topic name")
    alter.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="set a config override (repeatable)")
    alter.add_argument("--delete", action="append", default=[], metavar="KEY",
                       help="remove a config override (repeatable)")
    _finish(alter, _alter_config)


def _finish(parser: argparse.ArgumentParser, fn) -> None:
    add_bootstrap_argument(parser)
    parser.set_defaults(func=entry(fn, parser.prog), prog=parser.prog)


def _wait(futures: dict, what: str) -> dict:
    """Results of admin futures by key; the first failure becomes a CliError naming ``what``."""
    results = {}
    for key, future in futures.items():
        try:
            results[key] = future.result()
        except KafkaException as e:
            raise CliError(f"{what} {_label(key)}: {describe_error(e)}") from None
    return results


def _label(key) -> str:
    return repr(key.name) if isinstance(key, ConfigResource) else repr(key)


def _check_exist(metadata: ClusterMetadata, names: list[str]) -> None:
    missing = [n for n in names if n not in metadata.topics]
    if missing:
        raise CliError(", ".join(f"topic {n!r}" for n in missing) + (" does not exist" if len(missing) == 1
                                                                       else " do not exist"))


# ------------------------------------------------------------------------------------------ actions


def _create(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server).connect()
    topic = NewTopic(
        args.name,
        num_partitions=args.partitions if args.partitions is not None else -1,
        replication_factor=args.replication_factor if args.replication_factor is not None else -1,
        config=dict(args.config),
    )
    future = admin.create_topics([topic], request_timeout=REQUEST_TIMEOUT_S)[args.name]
    try:
        future.result()
    except KafkaException as e:
        if error_code(e) == KafkaError.TOPIC_ALREADY_EXISTS:
            if args.if_not_exists:
                print(f"Topic {args.name} already exists.")
                return 0
            raise CliError(f"topic {args.name!r} already exists") from None
        raise CliError(f"cannot create topic {args.name!r}: {describe_error(e)}") from None
    print(f"Created topic {args.name}.")
    return 0


def _list(args: argparse.Namespace) -> int:
    _, metadata = Cluster(args.bootstrap_server).connect()
    for name in sorted(metadata.topics):
        print(name)
    return 0


def _describe(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server).connect()
    names = list(dict.fromkeys(args.names)) or sorted(metadata.topics)
    _check_exist(metadata, names)
    if not names:
        return 0
    descriptions = _wait(admin.describe_topics(TopicCollection(names), request_timeout=REQUEST_TIMEOUT_S),
                         "cannot describe topic")
    overrides = _config_overrides(admin, names)
    for name in names:
        d = descriptions[name]
        configs = ",".join(f"{k}={v}" for k, v in sorted(overrides[name].items()))
        rf = len(d.partitions[0].replicas) if d.partitions else 0
        print(f"Topic: {name}\tTopicId: {_topic_id(d)}\tPartitionCount: {len(d.partitions)}\t"
              f"ReplicationFactor: {rf}\tConfigs: {configs}")
        for p in sorted(d.partitions, key=lambda p: p.id):
            leader = p.leader.id if p.leader is not None else "none"
            replicas = ",".join(str(n.id) for n in p.replicas)
            isr = ",".join(str(n.id) for n in p.isr)
            print(f"\tTopic: {name}\tPartition: {p.id}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}")
    return 0


def _config_overrides(admin: AdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    """Configs set on the topic itself (DescribeConfigs source DYNAMIC_TOPIC_CONFIG)."""
    resources = [ConfigResource(ResourceType.TOPIC, n) for n in names]
    results = _wait(admin.describe_configs(resources, request_timeout=REQUEST_TIMEOUT_S),
                    "cannot describe the configs of topic")
    out: dict[str, dict[str, str]] = {}
    for resource, entries in results.items():
        out[resource.name] = {
            e.name: ("<sensitive>" if e.is_sensitive else e.value)
            for e in entries.values()
            if _source(e) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        }
    return out


def _source(entry: ConfigEntry) -> int:
    """confluent-kafka hands the source over as a plain int in some versions, as a ConfigSource in others."""
    return entry.source.value if isinstance(entry.source, ConfigSource) else int(entry.source)


def _topic_id(description) -> str:
    """Kafka prints topic ids in URL-safe base64 (``Uuid.toString``); librdkafka uses the standard alphabet."""
    return str(description.topic_id).replace("+", "-").replace("/", "_")


def _delete(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server).connect()
    names = list(dict.fromkeys(args.names))
    if args.if_exists:
        names = [n for n in names if n in metadata.topics]
    else:
        _check_exist(metadata, names)
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


def _alter_config(args: argparse.Namespace) -> int:
    if not args.set and not args.delete:
        raise CliError("nothing to change: give --set KEY=VALUE and/or --delete KEY", exit_code=2)
    admin, metadata = Cluster(args.bootstrap_server).connect()
    _check_exist(metadata, [args.name])
    changes = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in args.set]
    changes += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in args.delete]
    resource = ConfigResource(ResourceType.TOPIC, args.name, incremental_configs=changes)
    _wait(admin.incremental_alter_configs([resource], request_timeout=REQUEST_TIMEOUT_S),
          "cannot change the configs of topic")
    done = [f"set {k}={v}" for k, v in args.set] + [f"deleted {k}" for k in args.delete]
    print(f"Updated topic {args.name}: {', '.join(done)}.")
    return 0


__all__ = ["add_parser"]
