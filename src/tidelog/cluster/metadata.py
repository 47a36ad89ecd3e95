"""The cluster metadata model: an immutable image replaced as a whole on every change.

Readers (request handlers) take ``store.image`` once per request and see a consistent snapshot.
Immutable: safe from any thread.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from tidelog.security.acl import AclBinding


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    #: (listener name, advertised host, advertised port) of every listener; host/port above are the first's
    endpoints: tuple[tuple[str, str, int], ...] = ()
    #: the broker's HTTP listener (metrics.listener) as http://HOST:PORT, None without one: where the
    #: other brokers forward schema registry writes to when it leads _schemas (docs/schema-registry.md)
    http_url: str | None = None

    def endpoint(self, listener_name: str | None) -> tuple[str, int]:
        """The address a client connected through ``listener_name`` is told about (Kafka answers
        Metadata with the endpoints of the listener the request came in on)."""
        for name, host, port in self.endpoints:
            if name == listener_name:
                return host, port
        return self.host, self.port


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0
    #: a reassignment in progress (KIP-455): replicas being added / removed (``replicas`` is their union)
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def is_new(self) -> bool:
        """Assigned, no state yet: the controller has not decided its first leader and ISR."""
        return self.partition_epoch < 0

    @staticmethod
    def new(partition: int, replicas: tuple[int, ...]) -> PartitionMetadata:
        """A partition as its assignment alone says (no leader, no ISR, no epochs: the controller
        decides them, :func:`tidelog.cluster.election.first_states`)."""
        return PartitionMetadata(partition, -1, -1, tuple(replicas), (), -1)


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionMetadata, ...]
    configs: dict[str, str] = field(default_factory=dict)  # overrides only, Kafka names
    is_internal: bool = False

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def decided_partitions(self) -> tuple[PartitionMetadata, ...]:
        """The partitions clients are told about: those whose first leader and ISR the controller has
        decided. Partitions being added (CreatePartitions) are the last ones; until the decision is
        seen the topic keeps its old count, as a Kafka broker shows new partitions only once committed
        with their leaders. Empty while the topic itself is being created (or an earlier partition
        still lacks its state), so a client never sees a wrong partition count."""
        parts = self.partitions
        first_new = next((i for i, p in enumerate(parts) if p.is_new), len(parts))
        if any(not p.is_new for p in parts[first_new:]):
            return ()
        return parts[:first_new]


@dataclass(frozen=True, slots=True)
class MetadataImage:
    cluster_id: str
    controller_id: int
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicMetadata]
    #: Broker-level dynamic config overrides (IncrementalAlterConfigs on the broker resource).
    broker_configs: dict[str, str] = field(default_factory=dict)
    #: First producer id not yet handed out in a block (persisted so ids never repeat).
    next_producer_id_block: int = 0
    #: Per-group config overrides (ConfigResource GROUP, KIP-848), by group id.
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    version: int = 0
    #: Client quotas (KIP-546), entity -> {quota key: value}; see cluster/client_quota.py.
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    #: Every ACL binding (CreateAcls/DeleteAcls; the authorizer reads them).
    acls: frozenset[AclBinding] = frozenset()
    #: Client-metrics subscriptions (ConfigResource CLIENT_METRICS, KIP-714), by name: {metrics, interval.ms, match}.
    client_metrics_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Feature levels set by UpdateFeatures (KIP-584; 0 kept: it overrides a config's initial level), and
    #: the epoch of their last change (0: never changed); see cluster/features.py.
    finalized_features: dict[str, int] = field(default_factory=dict)
    features_epoch: int = 0

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        for t in self.topics.values():
            if t.topic_id == topic_id:
                return t
        return None

    def with_topic(self, topic: TopicMetadata) -> MetadataImage:
        topics = dict(self.topics)
        topics[topic.name] = topic
        return replace(self, topics=topics, version=self.version + 1)

    def without_topic(self, name: str) -> MetadataImage:
        topics = dict(self.topics)
        topics.pop(name, None)
        return replace(self, topics=topics, version=self.version + 1)


__all__ = ["BrokerInfo", "MetadataImage", "PartitionMetadata", "TopicMetadata"]
