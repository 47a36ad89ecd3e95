"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topic, broker and broker-logger configs.

Resources (Kafka's ``ConfigResource.Type``): TOPIC 2, BROKER 4, BROKER_LOGGER 8, GROUP 32 (the KIP-848
group configs ``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms``, which the group
coordinator applies to the group, and the share group ones, kept but unused), CLIENT_METRICS 16 (the
client-metrics subscriptions of KIP-714: ``metrics``, ``interval.ms``, ``match``, validated by
:mod:`tidelog.telemetry.subscriptions`, kept in the metadata image). ListConfigResources lists the
resources of each type (v0: client-metrics ones only).

Thin: values, sources and synonyms are the :class:`~tidelog.cluster.config_entries.ConfigDescriber`'s;
which configs may change and how is the controller's
(:meth:`~tidelog.cluster.controller.Controller.validate_topic_overrides`,
:meth:`~tidelog.cluster.controller.Controller.validate_broker_configs`); log levels are
:mod:`tidelog.server.logger_levels`'. Here: Kafka's request-shape rules (``ConfigAdminManager``), the
incremental operations (SET, DELETE, APPEND, SUBTRACT), and the resource names a single node accepts
(``""`` = the cluster default, or this broker's id).
"""

from __future__ import annotations

from tidelog.cluster.config_entries import (
    LIST_TOPIC_CONFIGS,
    ConfigDescriber,
    ConfigEntry,
    ConfigSource,
    ConfigType,
    broker_default,
    broker_key_def,
    config_type,
    make_entry,
    topic_default,
)
from tidelog.cluster.controller import Controller, validate_topic_name
from tidelog.config import is_sensitive
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.duplicates import duplicated
from tidelog.server.logger_levels import (
    APPEND,
    DELETE,
    OP_NAMES,
    SET,
    SUBTRACT,
    alter_loggers,
    logger_entries,
)
from tidelog.telemetry import subscriptions as client_metrics

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
#: What ListConfigResources lists, per version (Kafka's ListConfigResourcesRequest.supportedResourceTypes).
LISTABLE = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}


def _describe_result(entry: ConfigEntry, version: int, synonyms: bool, docs: bool):
    return DescribeConfigsResponse.DescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_default=version == 0 and entry.source == ConfigSource.DEFAULT_CONFIG,
        is_sensitive=is_sensitive(entry.name),
        synonyms=[
            DescribeConfigsResponse.DescribeConfigsSynonym(name=n, value=v, source=int(s))
            for n, v, s in entry.synonyms
        ] if synonyms else [],
        config_type=int(entry.config_type),
        documentation=entry.documentation if docs else None,
    )


def describe_configs_error_response(request: DescribeConfigsRequest, code: ErrorCode, message: str | None = None):
    return DescribeConfigsResponse(results=[
        DescribeConfigsResponse.DescribeConfigsResult(
            error_code=int(code), error_message=message, resource_type=r.resource_type,
            resource_name=r.resource_name, configs=[])
        for r in request.resources
    ])


def _check_request_shape(r, duplicates: dict[tuple[int, str], None], *, nulls_allowed_for_delete: bool) -> None:
    """Kafka's ``ConfigAdminManager.preprocess`` rules, common to both alter APIs."""
    if (r.resource_type, r.resource_name) in duplicates:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    if len({c.name for c in r.configs}) != len(r.configs):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [
        c.name for c in r.configs
        if c.value is None and not (nulls_allowed_for_delete and c.config_operation == DELETE)
    ]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


def _resource_response(cls, r, error: KafkaError | None):
    return cls(
        error_code=int(error.code) if error else 0,
        error_message=error.message if error else None,
        resource_type=r.resource_type,
        resource_name=r.resource_name,
    )


def alter_configs_error_response(request: AlterConfigsRequest, code: ErrorCode, message: str | None = None):
    cls = AlterConfigsResponse.AlterConfigsResourceResponse
    return AlterConfigsResponse(responses=[_resource_response(cls, r, KafkaError(code, message)) for r in request.resources])


def _list_parts(value: str | None) -> list[str]:
    return [p for p in (value or "").split(",") if p]


def _apply_ops(ops, current: dict[str, str], default_of, is_list) -> dict[str, str | None]:
    """Kafka's incremental operations on ``current`` -> the changes to make (None = remove)."""
    changes: dict[str, str | None] = {}
    for c in ops:
        op = c.config_operation
        if op == SET:
            changes[c.name] = c.value
        elif op == DELETE:
            changes[c.name] = None
        elif op in (APPEND, SUBTRACT):
            if not is_list(c.name):
                raise KafkaError(
                    ErrorCode.INVALID_CONFIG, f"Can't {OP_NAMES[op]} to key {c.name} because its type is not LIST."
                )
            old = changes[c.name] if c.name in changes else current.get(c.name, default_of(c.name))
            parts = _list_parts(old)
            for item in (c.value or "").split(","):
                if op == APPEND and item not in parts:
                    parts.append(item)
                elif op == SUBTRACT and item in parts:
                    parts.remove(item)
            changes[c.name] = ",".join(parts)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    return changes


def incremental_alter_configs_error_response(request: IncrementalAlterConfigsRequest, code: ErrorCode,
                                             message: str | None = None):
    cls = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    return IncrementalAlterConfigsResponse(
        responses=[_resource_response(cls, r, KafkaError(code, message)) for r in request.resources]
    )


def list_config_resources_error_response(request: ListConfigResourcesRequest, code: ErrorCode,
                                         message: str | None = None):
    return ListConfigResourcesResponse(error_code=int(code))


def _broker_is_list(key: str) -> bool:
    d = broker_key_def(key)
    if d is None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {key}")
    return config_type(d) == ConfigType.LIST


def _check_topic_name(name: str) -> None:
    if name == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    validate_topic_name(name)


class ConfigHandlers:
    """DescribeConfigs, AlterConfigs and IncrementalAlterConfigs."""

    def __init__(self, controller: Controller, describer: ConfigDescriber, broker_id: int,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.controller = controller
        self.describer = describer
        self.broker_id = broker_id
        self.authorizer = authorizer

    def _authorize(self, ctx: RequestContext, operation: AclOperation, rtype: int, name: str) -> None:
        """Kafka's checks: broker and logger configs need ``operation`` on the cluster, topic and group
        configs on the topic / group (CLUSTER_, TOPIC_, GROUP_AUTHORIZATION_FAILED)."""
        resource, code = {
            BROKER: ((ResourceType.CLUSTER, CLUSTER_NAME), ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            BROKER_LOGGER: ((ResourceType.CLUSTER, CLUSTER_NAME), ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            CLIENT_METRICS: ((ResourceType.CLUSTER, CLUSTER_NAME), ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            TOPIC: ((ResourceType.TOPIC, name), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            GROUP: ((ResourceType.GROUP, name), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        }.get(rtype, (None, None))
        if resource is not None and code is not None and not self.authorizer.authorize(ctx, operation, *resource):
            raise KafkaError(code)

    def _check_broker_name(self, name: str, *, allow_default: bool) -> None:
        if name == "" and allow_default:
            return
        try:
            broker_id = int(name)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
        if broker_id != self.broker_id:
            expected = f"{self.broker_id} or empty string" if allow_default else str(self.broker_id)
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {expected}, but received {name}")

    # ---------------------------------------------------------------------------- describing

    def _describe(self, rtype: int, name: str) -> list[ConfigEntry]:
        image = self.controller.image
        if rtype == TOPIC:
            validate_topic_name(name)
            topic = image.topics.get(name)
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
            return self.describer.topic_entries(image, topic.configs)
        if rtype == BROKER:
            self._check_broker_name(name, allow_default=True)
            return self.describer.cluster_default_entries(image) if name == "" else self.describer.broker_entries(image)
        if rtype == BROKER_LOGGER:
            if not name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
            self._check_broker_name(name, allow_default=False)
            return logger_entries()
        if rtype == GROUP:
            if not name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
            return self.describer.group_entries(image, name)
        if rtype == CLIENT_METRICS:
            if not name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
            return _client_metrics_entries(image.client_metrics_configs.get(name, {}))
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")

    @handles(ApiKey.DESCRIBE_CONFIGS, 0, 4, describe_configs_error_response)
    def handle_describe_configs(self, ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
        v = ctx.api_version
        synonyms = v >= 1 and request.include_synonyms
        docs = v >= 3 and request.include_documentation
        results = []
        for r in request.resources:
            result = DescribeConfigsResponse.DescribeConfigsResult(
                error_code=0, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name,
                configs=[])
            try:
                self._authorize(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
                entries = self._describe(r.resource_type, r.resource_name)
            except KafkaError as e:
                result.error_code, result.error_message = int(e.code), e.message
            else:
                if r.configuration_keys:  # null or empty = every config
                    wanted = set(r.configuration_keys)
                    entries = [e for e in entries if e.name in wanted]
                result.configs = [_describe_result(e, v, synonyms, docs) for e in entries]
            results.append(result)
        return DescribeConfigsResponse(results=results)

    # ------------------------------------------------------------------------------ altering

    def _alter_topic(self, name: str, changes: dict[str, str | None], validate_only: bool) -> None:
        _check_topic_name(name)
        merged = self.controller.validate_topic_overrides(name, changes)
        if not validate_only:
            self.controller.set_topic_configs(name, merged)

    def _alter_broker(self, configs: dict[str, str], validate_only: bool) -> None:
        checked = self.controller.validate_broker_configs(configs)
        if not validate_only:
            self.controller.set_broker_configs(checked)

    @handles(ApiKey.ALTER_CONFIGS, 0, 2, alter_configs_error_response)
    def handle_alter_configs(self, ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
        """The legacy API: each resource's override set is replaced by exactly the configs given."""
        duplicates = duplicated((r.resource_type, r.resource_name) for r in request.resources)
        responses = []
        for r in request.resources:
            error = None
            try:
                self._authorize(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
                _check_request_shape(r, duplicates, nulls_allowed_for_delete=False)
                new = {c.name: c.value for c in r.configs}
                if r.resource_type == TOPIC:
                    topic = self.controller.image.topics.get(r.resource_name)
                    old = dict.fromkeys(topic.configs) if topic else {}
                    self._alter_topic(r.resource_name, old | new, request.validate_only)
                elif r.resource_type == BROKER:
                    self._check_broker_name(r.resource_name, allow_default=True)
                    self._alter_broker(new, request.validate_only)
                elif r.resource_type == CLIENT_METRICS:
                    self._alter_client_metrics(r.resource_name, new, request.validate_only)
                else:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}")
            except KafkaError as e:
                error = e
            responses.append(_resource_response(AlterConfigsResponse.AlterConfigsResourceResponse, r, error))
        return AlterConfigsResponse(responses=responses)

    @handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs_error_response)
    def handle_incremental_alter_configs(self, ctx: RequestContext,
                                         request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
        duplicates = duplicated((r.resource_type, r.resource_name) for r in request.resources)
        responses = []
        for r in request.resources:
            error = None
            try:
                self._authorize(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
                _check_request_shape(r, duplicates, nulls_allowed_for_delete=True)
                self._incremental_one(r, request.validate_only)
            except KafkaError as e:
                error = e
            responses.append(_resource_response(IncrementalAlterConfigsResponse.AlterConfigsResourceResponse, r,
                                                error))
        return IncrementalAlterConfigsResponse(responses=responses)

    def _incremental_one(self, r, validate_only: bool) -> None:
        image = self.controller.image
        if r.resource_type == TOPIC:
            _check_topic_name(r.resource_name)
            topic = image.topics.get(r.resource_name)
            current = dict(topic.configs) if topic else {}
            changes = _apply_ops(r.configs, current, topic_default, lambda k: k in LIST_TOPIC_CONFIGS)
            self._alter_topic(r.resource_name, changes, validate_only)
        elif r.resource_type == BROKER:
            self._check_broker_name(r.resource_name, allow_default=True)
            current = dict(image.broker_configs)
            changes = _apply_ops(r.configs, current, broker_default, _broker_is_list)
            for key, value in changes.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            self._alter_broker(current, validate_only)
        elif r.resource_type == BROKER_LOGGER:
            self._check_broker_name(r.resource_name, allow_default=False)
            alter_loggers(r.configs, validate_only)
        elif r.resource_type == GROUP:
            current = dict(image.group_configs.get(r.resource_name, {}))
            changes = _apply_ops(r.configs, current, lambda k: None, lambda k: False)
            merged = self.controller.validate_group_overrides(r.resource_name, changes)
            if not validate_only:
                self.controller.set_group_configs(r.resource_name, merged)
        elif r.resource_type == CLIENT_METRICS:
            current = dict(image.client_metrics_configs.get(r.resource_name, {}))
            # Kafka types none of them as LIST here: APPEND and SUBTRACT are INVALID_CONFIG, as in Kafka 4.4
            changes = _apply_ops(r.configs, current, lambda k: None, lambda k: False)
            for key, value in changes.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            self._alter_client_metrics(r.resource_name, current, validate_only)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}")

    def _alter_client_metrics(self, name: str, configs: dict[str, str], validate_only: bool) -> None:
        """A subscription's complete configs (none left: the subscription is removed)."""
        client_metrics.validate(name, configs)
        if not validate_only:
            self.controller.set_client_metrics_configs(name, configs)

    # ---------------------------------------------------------------------------- listing

    @handles(ApiKey.LIST_CONFIG_RESOURCES, 0, 1, list_config_resources_error_response)
    def handle_list_config_resources(self, ctx: RequestContext,
                                     request: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
        """Kafka's ``handleListConfigResources``: DESCRIBE_CONFIGS on the cluster; no types = every type the
        version lists; a type it does not list answers UNSUPPORTED_VERSION."""
        if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
            return ListConfigResourcesResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        supported = LISTABLE[min(ctx.api_version, 1)]
        wanted = list(request.resource_types) if ctx.api_version >= 1 and request.resource_types else list(supported)
        if any(t not in supported for t in wanted):
            return ListConfigResourcesResponse(error_code=int(ErrorCode.UNSUPPORTED_VERSION))
        image = self.controller.image
        names: list[tuple[str, int]] = []
        if GROUP in wanted:
            names += [(g, GROUP) for g in sorted(image.group_configs)]
        if CLIENT_METRICS in wanted:
            names += [(n, CLIENT_METRICS) for n in sorted(image.client_metrics_configs)]
        if BROKER_LOGGER in wanted:
            names += [(str(b), BROKER_LOGGER) for b in sorted(image.brokers)]
        if BROKER in wanted:
            names += [(str(b), BROKER) for b in sorted(image.brokers)]
        if TOPIC in wanted:
            names += [(t, TOPIC) for t in sorted(image.topics)]
        cls = ListConfigResourcesResponse.ConfigResource
        return ListConfigResourcesResponse(config_resources=[cls(resource_name=n, resource_type=t) for n, t in names])


def _client_metrics_entries(configs: dict[str, str]) -> list[ConfigEntry]:
    """Kafka's ``createClientMetricsConfigEntry``: every config, CLIENT_METRICS_CONFIG where set, else its default
    (DEFAULT_CONFIG)."""
    types = {client_metrics.METRICS: ConfigType.LIST, client_metrics.INTERVAL_MS: ConfigType.INT,
             client_metrics.MATCH: ConfigType.LIST}
    entries = []
    for name in sorted(client_metrics.CONFIG_NAMES):
        if name in configs:  # a set config has itself as its one synonym; a default none
            value = configs[name]
            synonyms = [(name, value, ConfigSource.CLIENT_METRICS_CONFIG)]
        else:
            value, synonyms = client_metrics.DEFAULTS[name], []
        entries.append(make_entry(name, value, synonyms, False, types[name], client_metrics.DOCS[name]))
    return entries


__all__ = ["ConfigHandlers"]
