"""The internal topics, declared once: each coordinator's topic and how it is found.

A coordinator keeps its state in the partitions of one compacted internal topic and serves the keys
that hash to the partitions this broker leads. Everything about such a topic is one
:class:`InternalTopic` entry of :data:`INTERNAL_TOPICS`:

* its **name**, and the broker configs that give its partition count, replication factor, segment
  size and (where Kafka has one) its ``min.insync.replicas``; its fixed topic configs;
* how a key is **routed** to a partition (:meth:`InternalTopic.partition_for`: Kafka's
  ``Utils.abs(key.hashCode()) % partitions``);
* the **FindCoordinator key type** it answers, and what is authorized before it is answered: DESCRIBE on
  the key (a group, a transactional id), or, for the share coordinator's keys (only brokers ask for them),
  CLUSTER_ACTION on the cluster (:attr:`InternalTopic.key_on_cluster`); the lowest FindCoordinator
  version that may ask for the key type;
* whether its coordinator takes every partition on before the topic exists (the transaction
  coordinator does: nothing can be in a topic not yet created).

Everything else reads the table: :class:`InternalTopicManager` creates a topic on first use and
finds the partition (and so the coordinator) of a key; FindCoordinator answers through it; the
controller marks these names internal; :mod:`tidelog.coordinator.leadership` binds each entry to
its coordinator (loads and unloads as leadership moves, and hands transaction markers on the topic
to it). Adding a coordinator with its internal topic is one entry here plus its service.

:data:`SCHEMAS` (``_schemas``, the schema registry's state) is declared here too and created the same
way, but it is no coordinator's topic: it is not in :data:`INTERNAL_TOPICS`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tidelog.cluster.controller import Controller, NewTopic
from tidelog.cluster.metadata import MetadataImage, TopicMetadata
from tidelog.config import BrokerConfig
from tidelog.coordinator.runtime import partition_for
from tidelog.coordinator.share.records import is_share_coordinator_key
from tidelog.errors import ErrorCode, KafkaError
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """One coordinator's internal topic (see the module docstring)."""

    name: str
    #: FindCoordinator's ``key_type`` whose keys live in this topic (None: no FindCoordinator key type)
    key_type: int | None
    #: DESCRIBE on the key (a group id, a transactional id ...) is checked on this resource type (with
    #: ``key_on_cluster``: ``key_operation`` on the cluster resource instead); refused, FindCoordinator
    #: answers ``key_denied``
    key_resource: ResourceType
    key_denied: ErrorCode
    #: the broker config of its partition count (None: always ``partitions``)
    num_partitions_config: str | None
    replication_factor_config: str
    segment_bytes_config: str
    #: the broker config of the topic's min.insync.replicas (capped at its replication factor); None: the default
    min_isr_config: str | None = None
    #: topic configs that do not come from broker configs
    configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: the coordinator takes every partition on before the topic exists (nothing can be in it yet)
    loads_before_creation: bool = False
    #: the operation authorized before FindCoordinator answers for a key
    key_operation: AclOperation = AclOperation.DESCRIBE
    #: ``key_operation`` is checked on the cluster (``kafka-cluster``), not on the key
    key_on_cluster: bool = False
    #: the lowest FindCoordinator version that may ask for this key type (older: INVALID_REQUEST)
    min_find_coordinator_version: int = 0
    #: whether a key is well-formed (None: any string); a malformed key is INVALID_REQUEST
    key_valid: Callable[[str], bool] | None = None
    #: the partition count when no broker config gives it
    partitions: int = 1
    #: marked internal (clients may not produce to it); False: a plain topic the broker itself keeps
    internal: bool = True

    def authorization(self, key: str) -> tuple[AclOperation, ResourceType, str]:
        """What FindCoordinator checks before answering for ``key``: (operation, resource type, name)."""
        if self.key_on_cluster:
            return self.key_operation, ResourceType.CLUSTER, CLUSTER_NAME
        return self.key_operation, self.key_resource, key

    def partition_for(self, key: str, num_partitions: int) -> int:
        """The partition that owns ``key``."""
        return partition_for(key, num_partitions)

    def num_partitions(self, config: BrokerConfig) -> int:
        """The partition count it is created with."""
        if self.num_partitions_config is None:
            return self.partitions
        return config[self.num_partitions_config]

    def new_topic(self, config: BrokerConfig, live_brokers: int) -> NewTopic:
        """The topic to create: its replication factor (and min.insync.replicas) capped at the
        number of brokers (Kafka would instead refuse to create it, or refuse every write)."""
        rf = min(config[self.replication_factor_config], max(1, live_brokers))
        configs = {**self.configs, "segment.bytes": str(config[self.segment_bytes_config])}
        if self.min_isr_config is not None:
            configs["min.insync.replicas"] = str(min(config[self.min_isr_config], rf))
        return NewTopic(self.name, self.num_partitions(config), rf, configs, internal=self.internal)


#: How long (of the clock) a first use of an internal topic waits for the first leaders of its new partitions
#: (FindCoordinator, a front end writing to a brand-new ``__consumer_offsets``).
FIRST_LEADERS_WAIT_MS = 5_000

#: Kafka's group coordinator: committed offsets and group metadata (FindCoordinator key type GROUP).
CONSUMER_OFFSETS = InternalTopic(
    "__consumer_offsets", key_type=0, key_resource=ResourceType.GROUP,
    key_denied=ErrorCode.GROUP_AUTHORIZATION_FAILED,
    num_partitions_config="offsets.topic.num.partitions",
    replication_factor_config="offsets.topic.replication.factor",
    segment_bytes_config="offsets.topic.segment.bytes",
    configs=MappingProxyType({"cleanup.policy": "compact", "compression.type": "producer"}))

#: Kafka's transaction coordinator: each transactional id's state (FindCoordinator key type TRANSACTION).
TRANSACTION_STATE = InternalTopic(
    "__transaction_state", key_type=1, key_resource=ResourceType.TRANSACTIONAL_ID,
    key_denied=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    num_partitions_config="transaction.state.log.num.partitions",
    replication_factor_config="transaction.state.log.replication.factor",
    segment_bytes_config="transaction.state.log.segment.bytes",
    min_isr_config="transaction.state.log.min.isr",
    configs=MappingProxyType({"cleanup.policy": "compact", "compression.type": "uncompressed",
                              "unclean.leader.election.enable": "false"}),
    loads_before_creation=True)

#: Kafka's share coordinator: share partitions' delivery state (FindCoordinator key type SHARE, KIP-932).
#: Only brokers look it up: CLUSTER_ACTION on the cluster, FindCoordinator v6+. Kafka keeps this topic with
#: the delete policy and no retention (its coordinator prunes it); Tidelog never prunes it.
SHARE_GROUP_STATE = InternalTopic(
    "__share_group_state", key_type=2, key_resource=ResourceType.CLUSTER,
    key_denied=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    num_partitions_config="share.coordinator.state.topic.num.partitions",
    replication_factor_config="share.coordinator.state.topic.replication.factor",
    segment_bytes_config="share.coordinator.state.topic.segment.bytes",
    min_isr_config="share.coordinator.state.topic.min.isr",
    configs=MappingProxyType({"cleanup.policy": "delete", "compression.type": "producer", "retention.ms": "-1"}),
    key_operation=AclOperation.CLUSTER_ACTION, key_on_cluster=True, min_find_coordinator_version=6,
    key_valid=is_share_coordinator_key)

#: The schema registry's state (docs/schema-registry.md): one partition, as Confluent's ``_schemas``.
#: Declared here, created and found as the coordinators' topics are, but no coordinator's: not in
#: INTERNAL_TOPICS (no FindCoordinator key type, no coordinator loads it), and not marked internal: in
#: Kafka it is a plain topic, and a Confluent Schema Registry run beside Tidelog
#: (schema.registry.enable=false) writes it as a client.
SCHEMAS = InternalTopic(
    "_schemas", key_type=None, key_resource=ResourceType.TOPIC, key_denied=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    num_partitions_config=None, partitions=1,
    replication_factor_config="schema.registry.topic.replication.factor",
    segment_bytes_config="schema.registry.topic.segment.bytes",
    configs=MappingProxyType({"cleanup.policy": "compact", "compression.type": "producer"}), internal=False)

#: Every internal topic, one entry per coordinator.
INTERNAL_TOPICS: tuple[InternalTopic, ...] = (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE)
#: Their names: topics clients may not produce to, nor add to transactions; marked internal in metadata.
INTERNAL_TOPIC_NAMES: frozenset[str] = frozenset(t.name for t in INTERNAL_TOPICS)


def enabled_internal_topics(share_groups: Callable[[], bool]) -> Callable[[], tuple[InternalTopic, ...]]:
    """The internal topics whose coordinators serve now: ``__share_group_state`` only while share groups
    are on (the finalized ``share.version`` >= 1, ``share_groups()``; without, FindCoordinator's SHARE key
    type is INVALID_REQUEST, as Kafka answers without a share coordinator)."""
    without_share = tuple(t for t in INTERNAL_TOPICS if t is not SHARE_GROUP_STATE)
    return lambda: INTERNAL_TOPICS if share_groups() else without_share


def by_key_type(key_type: int, table: tuple[InternalTopic, ...] = INTERNAL_TOPICS) -> InternalTopic | None:
    """The internal topic whose coordinator answers FindCoordinator for ``key_type`` (None: no such key type)."""
    return next((t for t in table if t.key_type == key_type), None)


class InternalTopicManager:
    """The internal topics of one broker: created on first use (Kafka creates ``__consumer_offsets``
    on the first FindCoordinator), and where a key's coordinator is. Loop-only."""

    def __init__(self, controller: Controller, config: BrokerConfig, image: Callable[[], MetadataImage],
                 table: Callable[[], tuple[InternalTopic, ...]] = lambda: INTERNAL_TOPICS,
                 leaders: Callable[[Collection[str], int], Awaitable[set[str]]] | None = None) -> None:
        self.controller = controller
        self.config = config
        self.image = image
        self.table = table
        #: waits until topics' partitions have leaders (PartitionController.await_leaders; None: no wait)
        self.leaders = leaders

    async def ready(self, topic: InternalTopic, timeout_ms: int = FIRST_LEADERS_WAIT_MS) -> TopicMetadata | None:
        """The topic once its partitions have their first leaders: created first if it does not exist, then,
        while the controller has not yet decided a brand-new partition's state, a wait of at most
        ``timeout_ms``. None while the topic is not seen here (another broker's creation); a partition may
        still lack a leader when the wait ran out (callers answer a retriable error then)."""
        metadata = self.image().topics.get(topic.name)
        if metadata is not None and not any(p.is_new for p in metadata.partitions):
            return metadata
        try:
            self.ensure(topic)
        except KafkaError:
            return None
        if self.leaders is not None:
            await self.leaders([topic.name], timeout_ms)
        return self.image().topics.get(topic.name)

    def ensure(self, topic: InternalTopic) -> TopicMetadata:
        """The topic, created first if it does not exist yet (KafkaError COORDINATOR_NOT_AVAILABLE
        while another broker's creation is not seen here yet)."""
        return self.controller.ensure_topic(topic.new_topic(self.config, len(self.image().brokers)))

    def ensurer(self, topic: InternalTopic) -> Callable[[], object]:
        """``ensure`` for one topic, for what writes to it (the coordinator's writer, handlers)."""
        return lambda: self.ensure(topic)

    def by_key_type(self, key_type: int) -> InternalTopic | None:
        return by_key_type(key_type, self.table())

    def locate(self, topic: InternalTopic, key: str) -> tuple[TopicMetadata | None, int]:
        """Where ``key``'s coordinator is: the topic (created on first use; None if it is not seen
        yet) and the key's partition."""
        self.ensure(topic)
        metadata = self.image().topics.get(topic.name)
        count = len(metadata.partitions) if metadata is not None else topic.num_partitions(self.config)
        return metadata, topic.partition_for(key, count)

    def leader_epoch(self, topic: InternalTopic, partition: int) -> int:
        """A partition's leader epoch (0 before the topic exists): the coordinator epoch of what it writes."""
        metadata = self.image().topics.get(topic.name)
        if metadata is None or partition >= len(metadata.partitions):
            return 0
        return metadata.partitions[partition].leader_epoch


__all__ = [
    "CONSUMER_OFFSETS",
    "FIRST_LEADERS_WAIT_MS",
    "INTERNAL_TOPICS",
    "INTERNAL_TOPIC_NAMES",
    "SCHEMAS",
    "SHARE_GROUP_STATE",
    "TRANSACTION_STATE",
    "InternalTopic",
    "InternalTopicManager",
    "by_key_type",
    "enabled_internal_topics",
]
