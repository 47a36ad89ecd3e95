"""The controller: the one place that changes cluster metadata (topics, partitions, configs).

Rules (Kafka's):

* Topic names: 1-249 characters from ``[a-zA-Z0-9._-]``, not ``.`` or ``..``. Names that differ only
  by ``.`` vs ``_`` collide in metric names: creating one while the other exists fails with
  INVALID_TOPIC_EXCEPTION, and a name with either character is allowed with a logged warning.
* A new topic gets a random topic id; its partitions' replicas are assigned over the live brokers by
  :mod:`tidelog.cluster.assignment` (a single node: every replica list is [broker id]). Only the
  assignment is written here (Kafka's ZooKeeper-era ``AdminZkClient``): the active controller decides
  each new partition's first leader and ISR in its event queue (:mod:`tidelog.server.partition_controller`,
  :func:`~tidelog.cluster.election.first_states`) and writes them; whoever answers a client waits for
  them. A replication factor larger than the number of live brokers fails with INVALID_REPLICATION_FACTOR.
* Partitions can only be added (CreatePartitions), never removed.
* One request may not write more than :data:`MAX_RECORDS_PER_REQUEST` metadata records (Kafka's
  controller bound): more partitions than that in one CreateTopics or CreatePartitions request, or
  more records (a topic, its partitions, its configs) in one CreateTopics, fail every topic of the
  request with POLICY_VIOLATION (:meth:`Controller.check_request_size`).
* Config overrides are validated with :mod:`tidelog.config` before anything changes.
* Dynamic broker configs: the topic-default synonyms (``log.retention.ms``, ``log.segment.bytes``,
  ``message.max.bytes`` ...) change the defaults of every topic at once, live; other keys Tidelog
  knows cannot change at run time (INVALID_REQUEST, as Kafka answers for its non-dynamic keys); keys
  it does not know are stored and reported, as Kafka keeps custom keys.

Every change publishes a new immutable :class:`MetadataImage` through the store, once per request
(creating or deleting a hundred topics is one write). The controller never touches logs: the store's
subscribers (the replica manager) create, reconfigure and delete them. Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from tidelog.cluster import client_quota
from tidelog.cluster.assignment import assign_replicas
from tidelog.cluster.group_config import validate_group_configs
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import MetadataStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import (
    BROKER_ALIASES,
    BROKER_CONFIGS,
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    UNIT_ALIASES,
    BrokerConfig,
    ConfigError,
    TopicConfig,
    validate_topic_configs,
)
from tidelog.errors import ErrorCode, KafkaError
from tidelog.security.acl import AclBinding, AclBindingFilter, invalid_acl_reason

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
#: The most metadata records one request may write (Kafka's MAX_RECORDS_PER_USER_OP).
MAX_RECORDS_PER_REQUEST = 10_000
#: ``log.retention.hours`` and the like: static-only spellings of a topic default (Kafka: not dynamic).
_COARSE_UNIT_KEYS = frozenset(alias for aliases in UNIT_ALIASES.values() for alias, _ in aliases)
#: Broker keys that only server.properties sets.
STATIC_BROKER_KEYS = frozenset(BROKER_CONFIGS) | frozenset(BROKER_ALIASES) | _COARSE_UNIT_KEYS


def validate_topic_name(name: str) -> None:
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters: {len(name)}",
        )
    if not _LEGAL.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name {name!r} is illegal: it may only contain ASCII letters, digits, '.', '_' and '-'",
        )


def collision_key(name: str) -> str:
    return name.replace(".", "_")


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create: what CreateTopics, auto-creation and internal topics ask for."""

    name: str
    num_partitions: int
    replication_factor: int = 1
    configs: Mapping[str, str] | None = None
    internal: bool = False
    #: a manual assignment (CreateTopics' ``assignments``): partition i's replicas, preferred leader first
    assignments: tuple[tuple[int, ...], ...] | None = None


class Controller:
    """Applies metadata changes for a single node (a cluster of one)."""

    def __init__(self, store: MetadataStore, broker_id: int, topic_configs: TopicConfigs,
                 broker_config: BrokerConfig | None = None, *, internal_topics: Collection[str] = frozenset()) -> None:
        """``internal_topics``: the coordinators' topics (the composition root passes
        :data:`~tidelog.coordinator.internal_topics.INTERNAL_TOPIC_NAMES`): created internal, whoever asks."""
        self.store = store
        self.internal_topics = frozenset(internal_topics)
        self.broker_id = broker_id
        self.topic_configs = topic_configs
        self.broker_config = broker_config or BrokerConfig.from_props({})

    @property
    def image(self) -> MetadataImage:
        return self.store.image

    @property
    def topic_defaults(self) -> TopicConfig:
        """Topic defaults after the dynamic broker configs."""
        return self.topic_configs.defaults(self.image)

    def topic_config(self, topic: str) -> TopicConfig:
        return self.topic_configs.for_topic(self.image, topic)

    # ----------------------------------------------------------------------------------- topics

    def validate_new_topic(
        self, name: str, num_partitions: int, replication_factor: int, configs: Mapping[str, str],
        image: MetadataImage | None = None,
    ) -> dict[str, str]:
        """Kafka's checks for a new topic against ``image`` (default: the current one); returns the
        overrides as strings. Raises KafkaError."""
        validate_topic_name(name)
        image = image or self.image
        if name in image.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        key = collision_key(name)
        for other in image.topics:
            if collision_key(other) == key:
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic '{other}' ('.' and '_' are interchangeable "
                    "in metric names)",
                )
        if num_partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Number of partitions must be larger than 0: {num_partitions}")
        if replication_factor <= 0:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR, f"Replication factor must be larger than 0: {replication_factor}"
            )
        if replication_factor > len(image.brokers):
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Replication factor: {replication_factor} larger than available brokers: {len(image.brokers)}.",
            )
        try:
            validate_topic_configs(configs)
        except ConfigError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
        return {k: str(v) for k, v in configs.items()}

    @staticmethod
    def check_request_size(partitions: int, records: int = 0, *, adding: bool = False) -> None:
        """Kafka's bound on one request: ``partitions`` new partitions (all topics of the request)
        and ``records`` metadata records in all. Raises KafkaError(POLICY_VIOLATION)."""
        if partitions > MAX_RECORDS_PER_REQUEST:
            what = "additional partitions" if adding else "partitions"
            raise KafkaError(ErrorCode.POLICY_VIOLATION, f"Excessively large number of {what} per request.")
        if records > MAX_RECORDS_PER_REQUEST:
            raise KafkaError(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        internal: bool = False,
    ) -> TopicMetadata:
        (result,) = self.create_topics([NewTopic(name, num_partitions, replication_factor, configs, internal)])
        if isinstance(result, KafkaError):
            raise result
        return result

    def create_topics(self, new_topics: Sequence[NewTopic]) -> list[TopicMetadata | KafkaError]:
        """Create topics with one metadata write. Each is checked against the image that includes
        the ones before it; a failing topic gets its KafkaError and does not stop the others, except
        that a request too large for :meth:`check_request_size` fails every topic."""
        try:
            self.check_request_size(sum(t.num_partitions for t in new_topics),
                                    sum(1 + t.num_partitions + len(t.configs or {}) for t in new_topics))
        except KafkaError as e:
            return [e for _ in new_topics]
        image = self.image
        results: list[TopicMetadata | KafkaError] = []
        for new in new_topics:
            try:
                overrides = self.validate_new_topic(new.name, new.num_partitions, new.replication_factor,
                                                    new.configs or {}, image)
            except KafkaError as e:
                results.append(e)
                continue
            try:
                partitions = (self._manual_partitions(0, new.assignments) if new.assignments
                              else self._new_partitions(image, 0, new.num_partitions, new.replication_factor))
            except KafkaError as e:
                results.append(e)
                continue
            topic = TopicMetadata(new.name, uuid.uuid4(), partitions, overrides,
                                  new.internal or new.name in self.internal_topics)
            image = image.with_topic(topic)
            results.append(topic)
        created = [t for t in results if isinstance(t, TopicMetadata)]
        if created:
            try:
                self.store.publish(image)
            except KafkaError as e:  # a cluster's store lost a race or cannot reach ZooKeeper
                results = [e if isinstance(r, TopicMetadata) else r for r in results]
                created = []
        for topic in created:
            log.info("created topic %s with %d partitions", topic.name, len(topic.partitions))
            if ("." in topic.name or "_" in topic.name) and not topic.is_internal:
                log.warning("topic %r uses '.' or '_': it could collide in metric names with a similar name",
                            topic.name)
        return results

    def ensure_topic(self, new: NewTopic) -> TopicMetadata:
        """The topic, created first if it does not exist (internal topics, on first use). If another
        broker created it a moment ago, the winner's topic (once this broker's metadata shows it; until
        then COORDINATOR_NOT_AVAILABLE, retriable: the client asks again), never TOPIC_ALREADY_EXISTS."""
        existing = self.image.topics.get(new.name)
        if existing is not None:
            return existing
        rf = min(new.replication_factor, len(self.image.brokers))
        try:
            return self.create_topic(new.name, new.num_partitions, rf, new.configs, internal=new.internal)
        except KafkaError as e:
            if e.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise
            existing = self.image.topics.get(new.name)  # the refused write may have read it in
            if existing is not None:
                return existing
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"{new.name} was just created by another broker; this broker does not see it yet") from None

    @staticmethod
    def _new_partitions(image: MetadataImage, start: int, count: int, replication_factor: int,
                        fixed_start: int | None = None) -> tuple[PartitionMetadata, ...]:
        assignment = assign_replicas(image.brokers.values(), count, replication_factor, start_partition=start,
                                     fixed_start=fixed_start)
        return tuple(PartitionMetadata.new(start + i, replicas) for i, replicas in enumerate(assignment))

    @staticmethod
    def _manual_partitions(start: int, assignments: Sequence[Sequence[int]]) -> tuple[PartitionMetadata, ...]:
        """Partitions ``start``, ``start + 1`` ... placed as given (checked by the caller), the preferred
        replica first."""
        return tuple(PartitionMetadata.new(start + i, tuple(replicas)) for i, replicas in enumerate(assignments))

    def delete_topic(self, name: str) -> None:
        self.delete_topics([name])

    def delete_topics(self, names: Sequence[str]) -> list[TopicMetadata]:
        """Delete topics with one metadata write (subscribers then delete their logs)."""
        image = self.image
        topics = []
        for name in names:
            topic = image.topics.get(name)
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
            topics.append(topic)
            image = image.without_topic(name)
        self.store.publish(image)
        for topic in topics:
            log.info("deleted topic %s", topic.name)
        return topics

    def validate_create_partitions(self, name: str, count: int) -> TopicMetadata:
        topic = self.image.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
        current = len(topic.partitions)
        if count < current:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the requested {count}.",
            )
        if count == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        return topic

    def create_partitions(self, name: str, count: int,
                          assignments: Sequence[Sequence[int]] | None = None) -> TopicMetadata:
        """Grow the topic to ``count`` partitions, the new ones placed as ``assignments`` says (checked
        by the caller) or by Kafka's round robin."""
        topic = self.validate_create_partitions(name, count)
        self.check_request_size(count - len(topic.partitions), adding=True)
        if assignments:
            new_parts = self._manual_partitions(len(topic.partitions), assignments)
        else:
            # Kafka continues the round robin from partition 0's leader (the first broker id at or above it).
            ids = sorted(self.image.brokers)
            first_leader = topic.partitions[0].replicas[0] if topic.partitions else 0
            start = next((i for i, b in enumerate(ids) if b >= first_leader), 0)
            new_parts = self._new_partitions(self.image, len(topic.partitions), count - len(topic.partitions),
                                             topic.replication_factor, fixed_start=start)
        updated = replace(topic, partitions=topic.partitions + new_parts)
        self.store.publish(self.image.with_topic(updated))
        return updated

    # ---------------------------------------------------------------------------------- configs

    def validate_topic_overrides(self, name: str, overrides: Mapping[str, str | None]) -> dict[str, str]:
        """The topic's complete override map after applying ``overrides`` (None = remove)."""
        topic = self.image.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
        merged = _with_overrides(topic.configs, overrides)
        try:
            validate_topic_configs(merged)
        except ConfigError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
        return merged

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace the topic's overrides (validated by :meth:`validate_topic_overrides`)."""
        topic = self.image.topics[name]
        self.store.publish(self.image.with_topic(replace(topic, configs=dict(configs))))

    def validate_broker_configs(self, configs: Mapping[str, str]) -> dict[str, str]:
        """The complete dynamic broker config set ``configs`` would become; KafkaError if not allowed.

        Kafka answers INVALID_REQUEST (not INVALID_CONFIG) for broker configs it cannot take (KAFKA-13609)."""
        fixed = sorted(k for k in configs if k in STATIC_BROKER_KEYS)
        if fixed:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: {fixed}")
        for key, value in configs.items():
            if key in BROKER_SYNONYMS:
                try:
                    TOPIC_CONFIGS[BROKER_SYNONYMS[key]].parse(key, value)
                except ConfigError as e:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, str(e)) from None
        return {k: str(v) for k, v in configs.items()}

    def set_broker_configs(self, configs: dict[str, str]) -> None:
        """Replace the dynamic broker configs (validated by :meth:`validate_broker_configs`); the
        topic-default synonyms among them apply to every topic that does not override them."""
        self.store.publish(replace(self.image, broker_configs=dict(configs), version=self.image.version + 1))

    # -------------------------------------------------------------------------------- group configs

    def validate_group_overrides(self, group_id: str, overrides: Mapping[str, str | None]) -> dict[str, str]:
        """The group's complete override map after applying ``overrides`` (None = remove), checked
        as Kafka's GroupConfig does (INVALID_CONFIG)."""
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        merged = _with_overrides(self.image.group_configs.get(group_id, {}), overrides)
        try:
            validate_group_configs(merged, self.broker_config)
        except ConfigError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
        return merged

    def set_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        """Replace a group's config overrides (validated by :meth:`validate_group_overrides`)."""
        group_configs = dict(self.image.group_configs)
        if configs:
            group_configs[group_id] = dict(configs)
        else:
            group_configs.pop(group_id, None)
        self.store.publish(replace(self.image, group_configs=group_configs, version=self.image.version + 1))

    def set_client_metrics_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a client-metrics subscription's configs (KIP-714; validated by the caller with
        tidelog.telemetry.subscriptions); empty removes the subscription."""
        subscriptions = dict(self.image.client_metrics_configs)
        if configs:
            subscriptions[name] = dict(configs)
        else:
            subscriptions.pop(name, None)
        self.store.publish(replace(self.image, client_metrics_configs=subscriptions, version=self.image.version + 1))

    # ------------------------------------------------------------------------------ producer ids

    def alter_client_quotas(self, alterations, validate_only: bool = False) -> list:
        """AlterClientQuotas (cluster/client_quota.py): one result per entry; valid entries apply."""
        quotas, results = client_quota.alter(self.image.client_quotas, alterations)
        if not validate_only and quotas != self.image.client_quotas:
            self.store.publish(replace(self.image, client_quotas=quotas, version=self.image.version + 1))
        return results

    def allocate_producer_id_block(self, size: int) -> int:
        """A single node's producer-id block: ``size`` ids from ``next_producer_id_block``, persisted
        before any is handed out; returns the first (a cluster uses cluster/zk_producer_id.py)."""
        start = self.image.next_producer_id_block
        self.reserve_producer_ids(start + size)
        return start

    def reserve_producer_ids(self, next_block_start: int) -> None:
        """Persist the start of the next producer-id block (ids below it may have been handed out)."""
        self.store.publish(replace(self.image, next_producer_id_block=next_block_start,
                                   version=self.image.version + 1))

    # ------------------------------------------------------------------------------ ACLs

    def create_acls(self, acls: Sequence[AclBinding]) -> list[KafkaError | None]:
        """Add ACL bindings (one metadata write): per binding, None or why it was refused
        (INVALID_REQUEST, Kafka's checks). Adding an ACL that exists already succeeds."""
        results: list[KafkaError | None] = []
        added = set(self.image.acls)
        for acl in acls:
            reason = invalid_acl_reason(acl)
            if reason is not None:
                results.append(KafkaError(ErrorCode.INVALID_REQUEST, reason))
                continue
            added.add(acl)
            results.append(None)
        if len(added) != len(self.image.acls):
            self.store.publish(replace(self.image, acls=frozenset(added), version=self.image.version + 1))
        return results

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding] | KafkaError]:
        """Remove the ACL bindings each filter matches (one metadata write): per filter, the bindings
        it removed, or why the filter was refused (INVALID_REQUEST)."""
        results: list[list[AclBinding] | KafkaError] = []
        acls = self.image.acls
        removed: set[AclBinding] = set()
        for acl_filter in filters:
            reason = acl_filter.unknown_reason
            if reason is not None:
                results.append(KafkaError(ErrorCode.INVALID_REQUEST, reason))
                continue
            matched = sorted((a for a in acls if acl_filter.matches(a)), key=str)
            removed.update(matched)
            results.append(matched)
        if removed:
            self.store.publish(replace(self.image, acls=acls - removed, version=self.image.version + 1))
        return results



def _with_overrides(configs: Mapping[str, str], overrides: Mapping[str, str | None]) -> dict[str, str]:
    """``configs`` with ``overrides`` applied: a value sets its key (as text), None removes it."""
    merged = dict(configs)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = str(value)
    return merged


__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "STATIC_BROKER_KEYS",
    "Controller",
    "NewTopic",
    "collision_key",
    "validate_topic_name",
]
