"""``tidelog topics describe``: what a topic is and holds, in the layout of ``kafka-topics.sh --describe``
with the figures an operator looks for next (rpk's ``topic describe`` shows them too)::

    Topic: orders  TopicId: 3nFe...  PartitionCount: 2  ReplicationFactor: 1  Configs: retention.ms=3600000
        Topic: orders  Partition: 0  Leader: 0  Replicas: 0  Isr: 0  LogStartOffset: 0  HighWatermark: 7  Size: 1034
        Topic: orders  Partition: 1  Leader: 0  Replicas: 0  Isr: 0  LogStartOffset: 2  HighWatermark: 5  Size: 741

(fields are tab-separated). LogStartOffset and HighWatermark come from ListOffsets (earliest, latest),
Size is the partition's bytes on disk from the leader's DescribeLogDirs (``-`` when the broker does
not answer it). ``Configs`` lists the topic's own overrides; ``--all`` adds the table of every
effective config with its source and built-in default (see :mod:`tidelog.cli.configs`).
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import TopicCollection
from confluent_kafka.admin import ClusterMetadata, ConfigResource, ConfigSource, OffsetSpec, ResourceType

from tidelog.cli.argument import add_topic_argument
from tidelog.cli.client import (
    REQUEST_TIMEOUT_S,
    CliError,
    Cluster,
    command,
    describe_error,
    internal_topics,
    require_topics,
)
from tidelog.cli.configs import config_table, describe_configs, source_id
from tidelog.cli.offsets import list_offsets
from tidelog.cli.table import MISSING


def add_parser(actions: argparse._SubParsersAction) -> None:
    describe = actions.add_parser(
        "describe", help="show partitions, leaders, offsets, sizes and configs of topics",
        description="Describe topics (every topic when none is named): topic id, partition count, "
        "replication factor and config overrides, then for each partition its leader, replicas, in-sync "
        "replicas, log start offset, high watermark and size on disk in bytes. --all adds every "
        "effective config of the topic with its source and default. --under-replicated-partitions and "
        "--unavailable-partitions print only the partitions they keep (no topic lines), as kafka-topics.sh does.",
    )
    add_topic_argument(describe, "topics to describe (default: all)", many=True, required=False)
    describe.add_argument("--all", action="store_true",
                          help="also list every effective config with its source and built-in default")
    describe.add_argument("--exclude-internal", action="store_true",
                          help="without names: leave out internal topics such as __consumer_offsets")
    describe.add_argument("--under-replicated-partitions", action="store_true",
                          help="only partitions with fewer in-sync replicas than replicas")
    describe.add_argument("--unavailable-partitions", action="store_true",
                          help="only partitions without a leader")
    command(describe, run)


def run(args: argparse.Namespace) -> int:
    cluster = Cluster(args.bootstrap_server, args.client_properties)
    admin, metadata = cluster.connect()
    names = args.topics or sorted(metadata.topics)
    require_topics(metadata, names, cluster)
    if not args.topics and args.exclude_internal:
        hidden = internal_topics(admin, names)
        names = [n for n in names if n not in hidden]
    if not names:
        return 0
    futures = admin.describe_topics(TopicCollection(names), request_timeout=REQUEST_TIMEOUT_S)
    descriptions = {}
    for name, future in futures.items():
        try:
            descriptions[name] = future.result()
        except Exception as e:
            raise CliError(f"cannot describe topic {name!r}: {describe_error(e)}") from None
    configs = describe_configs(admin, [ConfigResource(ResourceType.TOPIC, n) for n in names])
    partitions = [(n, p.id) for n in names for p in descriptions[n].partitions]
    starts = list_offsets(admin, partitions, OffsetSpec.earliest(), strict=False)
    ends = list_offsets(admin, partitions, OffsetSpec.latest(), strict=False)
    sizes = _sizes(metadata, descriptions, args.prog, args.client_properties)
    for name in names:
        d = descriptions[name]
        entries = configs[name]
        overrides = ",".join(f"{e.name}={'<sensitive>' if e.is_sensitive else e.value}"
                             for e in sorted(entries.values(), key=lambda e: e.name)
                             if source_id(e) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        rf = len(d.partitions[0].replicas) if d.partitions else 0
        header = (f"Topic: {name}\tTopicId: {_topic_id(d)}\tPartitionCount: {len(d.partitions)}\t"
                  f"ReplicationFactor: {rf}\tConfigs: {overrides}")
        shown = [p for p in sorted(d.partitions, key=lambda p: p.id) if _wanted(args, p)]
        if not (args.under_replicated_partitions or args.unavailable_partitions):
            print(header)  # with a filter kafka-topics.sh prints only the partitions it keeps
        for p in shown:
            key = (name, p.id)
            leader = p.leader.id if p.leader is not None else "none"
            replicas = ",".join(str(n.id) for n in p.replicas)
            isr = ",".join(str(n.id) for n in p.isr)
            print(f"\tTopic: {name}\tPartition: {p.id}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}\t"
                  f"LogStartOffset: {_shown(starts.get(key))}\tHighWatermark: {_shown(ends.get(key))}\t"
                  f"Size: {_shown(sizes.get(key))}")
        if args.all:
            for line in config_table(entries.values(), dynamic_only=False):
                print(f"\t{line}")
    return 0


def _wanted(args: argparse.Namespace, p) -> bool:
    """--under-replicated-partitions: fewer in-sync replicas than replicas; --unavailable-partitions: no
    leader (either filter keeps a partition, as kafka-topics.sh does)."""
    if not (args.under_replicated_partitions or args.unavailable_partitions):
        return True
    return ((args.under_replicated_partitions and len(p.isr) < len(p.replicas))
            or (args.unavailable_partitions and p.leader is None))


def _shown(value: int | None) -> str:
    return MISSING if value is None or value < 0 else str(value)


def _topic_id(description) -> str:
    """Kafka prints topic ids in URL-safe base64 (``Uuid.toString``); librdkafka uses the standard alphabet."""
    return str(description.topic_id).replace("+", "-").replace("/", "_")


def _sizes(metadata: ClusterMetadata, descriptions: dict, prog: str,
           properties: dict) -> dict[tuple[str, int], int]:
    """Bytes on disk of each described partition, asked of its leader with DescribeLogDirs."""
    # Imported here: the wire codec takes about half a second to load, which only this step needs.
    from tidelog.cli.broker_connection import BrokerConnection
    from tidelog.protocol.messages import DescribeLogDirsRequest

    by_leader: dict[int, dict[str, list[int]]] = {}
    for name, d in descriptions.items():
        for p in d.partitions:
            if p.leader is not None:
                by_leader.setdefault(p.leader.id, {}).setdefault(name, []).append(p.id)
    sizes: dict[tuple[str, int], int] = {}
    for broker_id, topics in sorted(by_leader.items()):
        broker = metadata.brokers.get(broker_id)
        if broker is None:
            continue
        address = f"{broker.host}:{broker.port}"
        request = DescribeLogDirsRequest(topics=[
            DescribeLogDirsRequest.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in sorted(topics.items())
        ])
        try:
            with BrokerConnection.open(address, properties) as conn:
                response = conn.request(request)
        except CliError as e:
            print(f"{prog}: sizes unknown: {e}", file=sys.stderr)
            continue
        for result in response.results:
            if result.error_code:
                continue
            for t in result.topics:
                for p in t.partitions:
                    if not p.is_future_key and p.partition_index in topics.get(t.name, ()):
                        sizes[(t.name, p.partition_index)] = p.partition_size
    return sizes


__all__ = ["add_parser", "run"]
