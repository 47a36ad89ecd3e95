"""CreateTopics, DeleteTopics and CreatePartitions, answered per topic with Kafka's error codes.

CreateTopics (Kafka's ``ControllerApis`` + ``ReplicationControlManager``), checked in this order:

* more than 10,000 partitions in the whole request (every topic counted, valid or not) ->
  POLICY_VIOLATION for every topic; so do more than 10,000 metadata records (Kafka's controller bound);
* a name given twice -> INVALID_REQUEST "Duplicate topic name." (one answer per such name, at the end);
  ``__cluster_metadata`` -> INVALID_REQUEST;
* the name's legality, TOPIC_ALREADY_EXISTS, a ``.``/``_`` collision (INVALID_TOPIC_EXCEPTION), then the
  configs: a null value or a bad key/value -> INVALID_CONFIG;
* partitions and replication factor: -1 means the broker's ``num.partitions`` /
  ``default.replication.factor``; 0 or below -1 -> INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR; more
  replicas than brokers -> INVALID_REPLICATION_FACTOR;
* a manual assignment needs both counts at -1 (else INVALID_REQUEST); each partition's replica list must
  be non-empty, name only registered brokers (on a single node: this one), no broker twice, the same
  length for every partition, and the partition indexes must run 0..n-1 (else INVALID_REPLICA_ASSIGNMENT).

Only the topics' assignments are written here; the active controller decides each new partition's
first leader and ISR in its event queue. The answer waits (at most the request's ``timeout_ms``; 0 or
less: :data:`LEADERS_WAIT_MS`) until this broker's metadata shows a leader for every partition, so a
client that looks next finds them, as it would on Kafka; a topic whose leaders do not come within a
positive ``timeout_ms`` is answered REQUEST_TIMED_OUT (Kafka's ZooKeeper-era ``DelayedCreatePartitions``;
the topic exists). CreatePartitions waits for its new partitions the same way.

``validate_only`` runs every check and changes nothing; its answer carries a fresh topic id, as Kafka's. From v5 a
success carries the partition count, replication factor and every config of the topic with its source.

DeleteTopics: by name (v0-5) or by name or id (v6). ``delete.topic.enable=false`` fails every topic with
TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3). Unknown names -> UNKNOWN_TOPIC_OR_PARTITION, unknown
ids -> UNKNOWN_TOPIC_ID. As in Kafka, internal topics may be deleted.

CreatePartitions: the count can only grow (INVALID_PARTITIONS otherwise); assignments, when given, must
cover exactly the new partitions with the topic's replication factor; more than 10,000 new partitions
in one request fail every topic of it with POLICY_VIOLATION.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Collection

from tidelog.cluster.config_entries import ConfigDescriber
from tidelog.cluster.controller import Controller, NewTopic
from tidelog.cluster.metadata import TopicMetadata
from tidelog.config import BrokerConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.duplicates import duplicated

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: How long an answer waits for new partitions' leaders when the request gives no timeout (ms of the clock).
LEADERS_WAIT_MS = 30_000
#: (topics, timeout in ms) -> the topics whose partitions still lack a leader once waited for
#: (:meth:`~tidelog.server.partition_controller.PartitionController.await_leaders`)
AwaitLeaders = Callable[[Collection[str], int], Awaitable[set[str]]]

TopicResult = CreateTopicsResponse.CreatableTopicResult
TopicConfigResult = CreateTopicsResponse.CreatableTopicConfigs
DeleteResult = DeleteTopicsResponse.DeletableTopicResult
PartitionsResult = CreatePartitionsResponse.CreatePartitionsTopicResult


def _failed(name: str, code: ErrorCode, message: str | None) -> TopicResult:
    return TopicResult(name=name, error_code=int(code), error_message=message)


# -------------------------------------------------------------------------------- CreateTopics


def create_topics_error_response(request: CreateTopicsRequest, code: ErrorCode, message: str | None = None):
    return CreateTopicsResponse(topics=[_failed(t.name, code, message) for t in request.topics])


def delete_topics_error_response(request: DeleteTopicsRequest, code: ErrorCode, message: str | None = None):
    targets = [(t.name, t.topic_id) for t in request.topics] or [(n, ZERO_UUID) for n in request.topic_names]
    return DeleteTopicsResponse(responses=[
        DeleteResult(name=name, topic_id=topic_id, error_code=int(code), error_message=message)
        for name, topic_id in targets
    ])


def create_partitions_error_response(request: CreatePartitionsRequest, code: ErrorCode, message: str | None = None):
    return CreatePartitionsResponse(results=[
        PartitionsResult(name=t.name, error_code=int(code), error_message=message) for t in request.topics
    ])


class TopicHandlers:
    """CreateTopics, DeleteTopics and CreatePartitions."""

    def __init__(self, controller: Controller, config: BrokerConfig, describer: ConfigDescriber,
                 authorizer: Authorizer = NO_AUTHORIZER, leaders: AwaitLeaders | None = None) -> None:
        self.controller = controller
        self.leaders = leaders  # None: nothing to wait for (the states come with the assignment)
        self.config = config
        self.describer = describer
        self.authorizer = authorizer

    def _may(self, ctx: RequestContext, operation: AclOperation, topic: str) -> bool:
        """``operation`` on the topic, or (as Kafka's controller grants it) on the whole cluster."""
        auth = self.authorizer
        cluster_op = {AclOperation.CREATE: AclOperation.CREATE, AclOperation.DELETE: AclOperation.DELETE,
                      AclOperation.DESCRIBE: AclOperation.DELETE}.get(operation)
        return ((cluster_op is not None and auth.authorize(ctx, cluster_op, ResourceType.CLUSTER, CLUSTER_NAME))
                or auth.authorize(ctx, operation, ResourceType.TOPIC, topic))

    # ---------------------------------------------------------------------------- CreateTopics

    async def _timed_out(self, names: list[str], timeout_ms: int) -> set[str]:
        """Wait until the new partitions of ``names`` have leaders; those that did not within a positive
        ``timeout_ms`` (answered REQUEST_TIMED_OUT)."""
        if not names or self.leaders is None:
            return set()
        missing = await self.leaders(names, timeout_ms if timeout_ms > 0 else LEADERS_WAIT_MS)
        return missing if timeout_ms > 0 else set()

    @handles(ApiKey.CREATE_TOPICS, 0, 7, create_topics_error_response)
    async def handle_create_topics(self, ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
        v = ctx.api_version
        validate_only = v >= 1 and request.validate_only
        duplicates = duplicated(t.name for t in request.topics)
        try:
            self.controller.check_request_size(sum(
                self.config["num.partitions"] if t.num_partitions == -1 and not t.assignments
                else max(len(t.assignments), t.num_partitions, 0) for t in request.topics))
        except KafkaError as e:
            return create_topics_error_response(request, e.code, e.message)
        checked: list[tuple[str, NewTopic | KafkaError]] = []
        for t in request.topics:
            if t.name in duplicates:
                continue
            if t.name != CLUSTER_METADATA_TOPIC and not self._may(ctx, AclOperation.CREATE, t.name):
                checked.append((t.name, KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")))
                continue
            try:
                checked.append((t.name, self._check(t)))
            except KafkaError as e:
                checked.append((t.name, e))
        new_topics = [c for _, c in checked if isinstance(c, NewTopic)]
        try:
            self.controller.check_request_size(
                0, sum(1 + t.num_partitions + len(t.configs or {}) for t in new_topics))
        except KafkaError as e:
            checked = [(name, e) for name, _ in checked]
            new_topics = []
        created = iter(self.controller.create_topics(new_topics)) if new_topics and not validate_only else None
        results = []
        for name, c in checked:
            outcome = next(created) if created is not None and isinstance(c, NewTopic) else None
            if isinstance(c, KafkaError) or isinstance(outcome, KafkaError):
                error = c if isinstance(c, KafkaError) else outcome
                results.append(_failed(name, error.code, error.message))
            else:
                describable = self.authorizer.authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
                results.append(self._created(v, c, outcome, describable))
        timed_out = await self._timed_out([r.name for r in results if r.error_code == 0 and created is not None],
                                          request.timeout_ms)
        results = [_failed(r.name, ErrorCode.REQUEST_TIMED_OUT, None) if r.name in timed_out else r for r in results]
        results += [_failed(n, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for n in duplicates]
        return CreateTopicsResponse(topics=results)

    def _check(self, t) -> NewTopic:
        """Every check of one topic, in Kafka's order."""
        if t.name == CLUSTER_METADATA_TOPIC:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.")
        try:
            num_partitions, replication_factor = self._layout(t)
            layout_error = None
        except KafkaError as e:  # reported after the name and config checks, as Kafka orders them
            num_partitions, replication_factor, layout_error = 1, 1, e
        configs = {c.name: c.value for c in t.configs if c.value is not None}
        overrides = self.controller.validate_new_topic(t.name, num_partitions, replication_factor, configs)
        nulls = [c.name for c in t.configs if c.value is None]
        if nulls:
            raise KafkaError(ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls))
        if layout_error is not None:
            raise layout_error
        assignments = (tuple(tuple(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index))
                       if t.assignments else None)
        return NewTopic(t.name, num_partitions, replication_factor, overrides, assignments=assignments)

    def _layout(self, t) -> tuple[int, int]:
        """(partitions, replication factor) the request asks for, or KafkaError."""
        if t.assignments:
            return self._manual_layout(t)
        if t.replication_factor < -1 or t.replication_factor == 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        if t.num_partitions < -1 or t.num_partitions == 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        num_partitions = self.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
        replication_factor = (self.config["default.replication.factor"] if t.replication_factor == -1
                              else t.replication_factor)
        return num_partitions, replication_factor

    def _manual_layout(self, t) -> tuple[int, int]:
        if t.replication_factor != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "A manual partition assignment was specified, but replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "A manual partition assignment was specified, but numPartitions was not set to -1.")
        seen: set[int] = set()
        replication_factor: int | None = None
        for a in t.assignments:
            if a.partition_index in seen:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Found multiple manual partition assignments for partition {a.partition_index}")
            seen.add(a.partition_index)
            self._check_replica_assignment(a.broker_ids, replication_factor)
            replication_factor = len(a.broker_ids)
        if seen != set(range(len(seen))):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence")
        return len(seen), replication_factor or 1

    def _check_replica_assignment(self, broker_ids: list[int], replication_factor: int | None) -> None:
        """Kafka's ``validateManualPartitionAssignment``: one partition's replica list."""
        if not broker_ids:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        brokers = self.controller.image.brokers
        previous = None
        for broker_id in sorted(broker_ids):
            if broker_id not in brokers:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {broker_id}, but no such broker "
                                 "is registered.")
            if broker_id == previous:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker {broker_id} more than once.")
            previous = broker_id
        if replication_factor is not None and len(broker_ids) != replication_factor:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but this is "
                f"not consistent with previous partitions, which have {replication_factor} replica(s).",
            )

    def _created(self, version: int, new: NewTopic, topic: TopicMetadata | None, describable: bool = True) -> TopicResult:
        # validate_only: Kafka answers with the id the topic would have been given (a fresh random one)
        topic_id = topic.topic_id if topic is not None else uuid.uuid4()
        result = TopicResult(name=new.name, topic_id=topic_id, error_code=0, error_message=None)
        if version >= 5 and not describable:  # no DESCRIBE_CONFIGS on the topic: no layout, no configs
            result.topic_config_error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif version >= 5:
            result.num_partitions = new.num_partitions
            result.replication_factor = new.replication_factor
            result.topic_config_error_code = 0
            result.configs = [
                TopicConfigResult(name=e.name, value=e.value, read_only=e.read_only, config_source=int(e.source),
                                  is_sensitive=False)
                for e in self.describer.topic_entries(self.controller.image, dict(new.configs or {}))
            ]
        return result

    # ---------------------------------------------------------------------------- DeleteTopics

    @handles(ApiKey.DELETE_TOPICS, 0, 6, delete_topics_error_response)
    def handle_delete_topics(self, ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
        v = ctx.api_version
        wanted = _requested_deletions(v, request)
        if not self.config["delete.topic.enable"]:
            code = ErrorCode.INVALID_REQUEST if v < 3 else ErrorCode.TOPIC_DELETION_DISABLED
            return DeleteTopicsResponse(responses=[
                DeleteResult(name=n, topic_id=i, error_code=int(code), error_message="Topic deletion is disabled.")
                for n, i in wanted
            ])
        names = Counter(n for n, i in wanted if n is not None and i == ZERO_UUID)
        ids = Counter(i for n, i in wanted if n is None and i != ZERO_UUID)
        resolved: list[str | KafkaError] = []
        for name, topic_id in wanted:
            try:
                target = self._resolve_deletion(ctx, name, topic_id, names, ids)
                if target in resolved:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "The provided topic name maps to an ID that was already supplied.")
                resolved.append(target)
            except KafkaError as e:
                resolved.append(e)
        targets = [t for t in resolved if not isinstance(t, KafkaError)]
        deleted_ids = {t.name: t.topic_id for t in self.controller.delete_topics(targets)} if targets else {}
        responses = []
        for (name, topic_id), target in zip(wanted, resolved):
            if isinstance(target, _HiddenTopic):  # by id, not describable: the name stays secret
                responses.append(DeleteResult(name=None, topic_id=topic_id, error_code=int(target.code),
                                              error_message=target.message))
            elif isinstance(target, KafkaError):
                responses.append(DeleteResult(name=target.name if isinstance(target, _DeniedTopic) else name,
                                              topic_id=topic_id, error_code=int(target.code),
                                              error_message=target.message))
            else:
                responses.append(DeleteResult(name=target, topic_id=deleted_ids[target] if v >= 6 else ZERO_UUID,
                                              error_code=0))
        return DeleteTopicsResponse(responses=responses)

    def _resolve_deletion(self, ctx: RequestContext, name: str | None, topic_id: uuid.UUID, names: Counter,
                          ids: Counter) -> str:
        image = self.controller.image
        if name is not None and topic_id != ZERO_UUID:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
        if name is None:
            if topic_id == ZERO_UUID:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
            if ids[topic_id] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
            topic = image.topic_by_id(topic_id)
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, f"Topic id {topic_id} does not exist")
            if not self._may(ctx, AclOperation.DELETE, topic.name):
                if self._may(ctx, AclOperation.DESCRIBE, topic.name):
                    raise _DeniedTopic(topic.name)
                raise _HiddenTopic(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            return topic.name
        if names[name] > 1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        if not self._may(ctx, AclOperation.DESCRIBE, name):
            raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if name in image.topics and not self._may(ctx, AclOperation.DELETE, name):
            raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if name not in image.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
        return name

    # ------------------------------------------------------------------------ CreatePartitions

    @handles(ApiKey.CREATE_PARTITIONS, 0, 3, create_partitions_error_response)
    async def handle_create_partitions(self, ctx: RequestContext,
                                       request: CreatePartitionsRequest) -> CreatePartitionsResponse:
        duplicates = duplicated(t.name for t in request.topics)
        image = self.controller.image
        try:
            self.controller.check_request_size(sum(
                max(0, t.count - len(image.topics[t.name].partitions)) for t in request.topics
                if t.name not in duplicates and t.name in image.topics), adding=True)
        except KafkaError as e:
            return create_partitions_error_response(request, e.code, e.message)
        results = []
        for t in request.topics:
            if t.name in duplicates:
                continue
            if not self.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):
                results.append(PartitionsResult(name=t.name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                                error_message=None))
                continue
            try:
                self._add_partitions(t, request.validate_only)
                results.append(PartitionsResult(name=t.name, error_code=0, error_message=None))
            except KafkaError as e:
                results.append(PartitionsResult(name=t.name, error_code=int(e.code), error_message=e.message))
        if not request.validate_only:
            timed_out = await self._timed_out([r.name for r in results if r.error_code == 0], request.timeout_ms)
            results = [PartitionsResult(name=r.name, error_code=int(ErrorCode.REQUEST_TIMED_OUT), error_message=None)
                       if r.name in timed_out else r for r in results]
        results += [PartitionsResult(name=n, error_code=int(ErrorCode.INVALID_REQUEST),
                                     error_message="Duplicate topic name.") for n in duplicates]
        return CreatePartitionsResponse(results=results)

    def _add_partitions(self, t, validate_only: bool) -> None:
        topic = self.controller.validate_create_partitions(t.name, t.count)
        if t.assignments is not None:
            additional = t.count - len(topic.partitions)
            if len(t.assignments) != additional:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {additional} additional partition(s), but only {len(t.assignments)} "
                    "assignment(s) were specified.",
                )
            for a in t.assignments:
                self._check_replica_assignment(a.broker_ids, topic.replication_factor)
        if not validate_only:
            self.controller.create_partitions(
                t.name, t.count, [list(a.broker_ids) for a in t.assignments] if t.assignments else None)


class _HiddenTopic(KafkaError):
    """A deletion by id the requester may not even describe: answered without the topic's name."""


class _DeniedTopic(KafkaError):
    """A deletion by id of a topic the requester may describe but not delete."""

    def __init__(self, name: str) -> None:
        super().__init__(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        self.name = name


def _requested_deletions(version: int, request: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    if version >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, ZERO_UUID) for name in request.topic_names]


__all__ = ["TopicHandlers"]
