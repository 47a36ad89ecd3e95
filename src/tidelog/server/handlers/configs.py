"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topic, broker and broker-logger configs.

Resources (Kafka's ``ConfigResource.Type``): TOPIC 2, BROKER 4, BROKER_LOGGER 8. Other types (GROUP,
CLIENT_METRICS) are answered with INVALID_REQUEST.

Where a value comes from (Kafka's ``ConfigHelper``). A topic config's *synonyms* are, in this order:
the topic's own override (TOPIC_CONFIG), then the server.properties spellings of its default
(``retention.ms`` -> ``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``) as
dynamic broker configs (DYNAMIC_BROKER_CONFIG), then as static ones (STATIC_BROKER_CONFIG), then the
built-in defaults (DEFAULT_CONFIG). An entry's ``config_source`` is its first synonym's, and
DEFAULT_CONFIG when it has none. v0 has no source but ``is_default``. Values are printed as Kafka prints
them: decimal numbers, ``true``/``false``, comma-joined lists.

A single node keeps one set of dynamic broker configs: the resource names ``""`` (cluster default) and
this broker's id both address it. Described per broker it is DYNAMIC_BROKER_CONFIG; described as the
cluster default, DYNAMIC_DEFAULT_BROKER_CONFIG. Which keys may change is the controller's rule
(:meth:`~tidelog.cluster.controller.Controller.validate_broker_configs`).

BROKER_LOGGER lists the broker's Python loggers (``root`` and ``tidelog.*``) with their effective
levels under Kafka's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL); IncrementalAlterConfigs SETs a
level or DELETEs it (the logger then inherits its parent's), as Kafka's ``RuntimeLoggerManager`` does.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from tidelog.cluster.controller import validate_topic_name
from tidelog.config import BROKER_CONFIGS, TOPIC_CONFIGS, UNIT_ALIASES, ConfigDef, ConfigError, attr_name
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handler

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class ConfigSource(IntEnum):
    """``DescribeConfigsResponse.ConfigSource`` ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigType(IntEnum):
    """``DescribeConfigsResponse.ConfigType`` ids."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7


#: Topic configs Kafka types as LIST (APPEND/SUBTRACT apply to them).
LIST_TOPIC_CONFIGS = frozenset({"cleanup.policy"})

Synonym = tuple[str, str | None, ConfigSource]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described config, independent of the response version."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    synonyms: tuple[Synonym, ...]
    config_type: ConfigType
    documentation: str | None


def render(value: Any) -> str | None:
    """A parsed value as Kafka prints it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value) if value else None
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items()) if value else None
    return str(value)


def config_type(d: ConfigDef) -> ConfigType:
    if d.name in LIST_TOPIC_CONFIGS or isinstance(d.default, tuple):
        return ConfigType.LIST
    if isinstance(d.default, bool):
        return ConfigType.BOOLEAN
    if isinstance(d.default, float):
        return ConfigType.DOUBLE
    if isinstance(d.default, int):
        try:  # a parser that takes 2**31 is a LONG
            d.parse(d.name, str(2**31))
        except ConfigError:
            return ConfigType.INT
        return ConfigType.LONG
    return ConfigType.STRING


# ----------------------------------------------------------------------------- broker spellings


def _spellings(d: ConfigDef) -> list[tuple[str, int]]:
    """(server.properties key, milliseconds per unit) that set topic config ``d``'s default."""
    if d.broker_synonym is None:
        return []
    return [(d.broker_synonym, 1), *UNIT_ALIASES.get(d.broker_synonym, ())]


def _spelling_default(d: ConfigDef, key: str) -> str | None:
    """Kafka's built-in default of a server.properties spelling: only the coarsest unit has one
    (``log.retention.hours=168``; ``log.retention.ms`` and ``.minutes`` default to null)."""
    spellings = _spellings(d)
    if len(spellings) == 1:
        return render(d.default)
    last_key, factor = spellings[-1]
    return str(d.default // factor) if key == last_key and d.default % factor == 0 else None


def _broker_layers(ctx: RequestContext, d: ConfigDef, keys: list[str]) -> list[Synonym]:
    dynamic = ctx.broker.store.image.broker_configs
    static = ctx.broker.config.props
    out: list[Synonym] = [(k, dynamic[k], ConfigSource.DYNAMIC_BROKER_CONFIG) for k in keys if k in dynamic]
    out += [(k, static[k], ConfigSource.STATIC_BROKER_CONFIG) for k in keys if k in static]
    for k in keys:
        default = _spelling_default(d, k)
        if default is not None:
            out.append((k, default, ConfigSource.DEFAULT_CONFIG))
    return out


def _entry(name: str, value: str | None, synonyms: list[Synonym], read_only: bool, ctype: ConfigType,
           doc: str | None) -> ConfigEntry:
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(name, value, source, read_only, tuple(synonyms), ctype, doc)


# ----------------------------------------------------------------------------------- describing


def topic_config_entries(ctx: RequestContext, overrides: dict[str, str]) -> list[ConfigEntry]:
    """Every topic config of a topic with ``overrides``, sorted by name (also CreateTopics v5+)."""
    effective = ctx.broker.controller.topic_defaults
    parsed = {k: TOPIC_CONFIGS[k].parse(k, v) for k, v in overrides.items() if k in TOPIC_CONFIGS}
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        d = TOPIC_CONFIGS[name]
        value = parsed[name] if name in parsed else getattr(effective, attr_name(name))
        synonyms: list[Synonym] = []
        if name in parsed:
            synonyms.append((name, render(value), ConfigSource.TOPIC_CONFIG))
        synonyms += _broker_layers(ctx, d, [k for k, _ in _spellings(d)])
        entries.append(_entry(name, render(value), synonyms, False, config_type(d), d.doc))
    return entries


def _broker_entries(ctx: RequestContext) -> list[ConfigEntry]:
    broker = ctx.broker
    entries = []
    for name, d in sorted(BROKER_CONFIGS.items()):
        synonyms: list[Synonym] = []
        if name in broker.config.props:
            synonyms.append((name, broker.config.props[name], ConfigSource.STATIC_BROKER_CONFIG))
        if render(d.default) is not None:
            synonyms.append((name, render(d.default), ConfigSource.DEFAULT_CONFIG))
        entries.append(_entry(name, render(broker.config[name]), synonyms, True, config_type(d), d.doc))
    defaults = broker.controller.topic_defaults
    for d in TOPIC_CONFIGS.values():
        spellings = _spellings(d)
        for i, (key, factor) in enumerate(spellings):
            synonyms = _broker_layers(ctx, d, [k for k, _ in spellings[i:]])
            if i == 0:
                value = render(getattr(defaults, attr_name(d.name)))
                entries.append(_entry(key, value, synonyms, False, config_type(d), f"Default of the topic config {d.name}: {d.doc}"))
            else:
                own = [s for s in synonyms if s[0] == key]
                doc = f"{d.name} in units of {factor} ms (server.properties only)."
                entries.append(_entry(key, own[0][1] if own else None, synonyms, True, ConfigType.INT, doc))
    known = {e.name for e in entries}
    for key, value in sorted(broker.store.image.broker_configs.items()):
        if key not in known:  # a key Tidelog does not use, kept as Kafka keeps custom keys
            entries.append(_entry(key, value, [(key, value, ConfigSource.DYNAMIC_BROKER_CONFIG)], False,
                                  ConfigType.UNKNOWN, None))
    return sorted(entries, key=lambda e: e.name)


def _cluster_default_entries(ctx: RequestContext) -> list[ConfigEntry]:
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    out = []
    for key, value in sorted(ctx.broker.store.image.broker_configs.items()):
        d = _broker_key_def(key)
        out.append(_entry(key, value, [(key, value, source)], False, config_type(d) if d else ConfigType.UNKNOWN, None))
    return out


def _check_broker_name(ctx: RequestContext, name: str, *, allow_default: bool) -> None:
    if name == "" and allow_default:
        return
    try:
        broker_id = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker.broker_id:
        expected = f"{ctx.broker.broker_id} or empty string" if allow_default else str(ctx.broker.broker_id)
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {expected}, but received {name}")


def _check_topic_name(name: str) -> None:
    if name == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    validate_topic_name(name)


def _describe(ctx: RequestContext, rtype: int, name: str) -> list[ConfigEntry]:
    if rtype == TOPIC:
        validate_topic_name(name)
        topic = ctx.broker.store.image.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
        return topic_config_entries(ctx, topic.configs)
    if rtype == BROKER:
        _check_broker_name(ctx, name, allow_default=True)
        return _cluster_default_entries(ctx) if name == "" else _broker_entries(ctx)
    if rtype == BROKER_LOGGER:
        if not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        _check_broker_name(ctx, name, allow_default=False)
        return _logger_entries()
    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")


def _describe_result(entry: ConfigEntry, version: int, synonyms: bool, docs: bool):
    return DescribeConfigsResponse.DescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_default=version == 0 and entry.source == ConfigSource.DEFAULT_CONFIG,
        is_sensitive=False,
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


@handler(ApiKey.DESCRIBE_CONFIGS, 0, 4, describe_configs_error_response)
def handle_describe_configs(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    v = ctx.api_version
    synonyms = v >= 1 and request.include_synonyms
    docs = v >= 3 and request.include_documentation
    results = []
    for r in request.resources:
        result = DescribeConfigsResponse.DescribeConfigsResult(
            error_code=0, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name, configs=[]
        )
        try:
            entries = _describe(ctx, r.resource_type, r.resource_name)
        except KafkaError as e:
            result.error_code, result.error_message = int(e.code), e.message
        else:
            if r.configuration_keys:  # null or empty = every config
                wanted = set(r.configuration_keys)
                entries = [e for e in entries if e.name in wanted]
            result.configs = [_describe_result(e, v, synonyms, docs) for e in entries]
        results.append(result)
    return DescribeConfigsResponse(results=results)


# ------------------------------------------------------------------------------------- altering


def _duplicates(resources) -> set[tuple[int, str]]:
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    return {k for k, n in counts.items() if n > 1}


def _check_request_shape(r, duplicates: set[tuple[int, str]], *, nulls_allowed_for_delete: bool) -> None:
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


def _alter_topic(ctx: RequestContext, name: str, changes: dict[str, str | None], validate_only: bool) -> None:
    _check_topic_name(name)
    controller = ctx.broker.controller
    merged = controller.validate_topic_overrides(name, changes)
    if not validate_only:
        controller.set_topic_configs(name, merged)


def _alter_broker(ctx: RequestContext, configs: dict[str, str], validate_only: bool) -> None:
    controller = ctx.broker.controller
    checked = controller.validate_broker_configs(configs)
    if not validate_only:
        controller.set_broker_configs(checked)


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


@handler(ApiKey.ALTER_CONFIGS, 0, 2, alter_configs_error_response)
def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    """The legacy API: each resource's override set is replaced by exactly the configs given."""
    duplicates = _duplicates(request.resources)
    responses = []
    for r in request.resources:
        error = None
        try:
            _check_request_shape(r, duplicates, nulls_allowed_for_delete=False)
            new = {c.name: c.value for c in r.configs}
            if r.resource_type == TOPIC:
                topic = ctx.broker.store.image.topics.get(r.resource_name)
                old = dict.fromkeys(topic.configs) if topic else {}
                _alter_topic(ctx, r.resource_name, old | new, request.validate_only)
            elif r.resource_type == BROKER:
                _check_broker_name(ctx, r.resource_name, allow_default=True)
                _alter_broker(ctx, new, request.validate_only)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}")
        except KafkaError as e:
            error = e
        responses.append(_resource_response(AlterConfigsResponse.AlterConfigsResourceResponse, r, error))
    return AlterConfigsResponse(responses=responses)


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
                    ErrorCode.INVALID_CONFIG, f"Can't {_OP_NAMES[op]} to key {c.name} because its type is not LIST."
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


def _topic_default(name: str) -> str | None:
    d = TOPIC_CONFIGS.get(name)
    return render(d.default) if d else None


def _broker_key_def(key: str) -> ConfigDef | None:
    for d in TOPIC_CONFIGS.values():
        if d.broker_synonym == key:
            return d
    return BROKER_CONFIGS.get(key)


def _broker_default(key: str) -> str | None:
    d = _broker_key_def(key)
    return render(d.default) if d else None


def _broker_is_list(key: str) -> bool:
    d = _broker_key_def(key)
    if d is None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {key}")
    return config_type(d) == ConfigType.LIST


def incremental_alter_configs_error_response(request: IncrementalAlterConfigsRequest, code: ErrorCode,
                                             message: str | None = None):
    cls = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    return IncrementalAlterConfigsResponse(
        responses=[_resource_response(cls, r, KafkaError(code, message)) for r in request.resources]
    )


@handler(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs_error_response)
def handle_incremental_alter_configs(ctx: RequestContext,
                                     request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    duplicates = _duplicates(request.resources)
    responses = []
    for r in request.resources:
        error = None
        try:
            _check_request_shape(r, duplicates, nulls_allowed_for_delete=True)
            _incremental_one(ctx, r, request.validate_only)
        except KafkaError as e:
            error = e
        responses.append(_resource_response(IncrementalAlterConfigsResponse.AlterConfigsResourceResponse, r, error))
    return IncrementalAlterConfigsResponse(responses=responses)


def _incremental_one(ctx: RequestContext, r, validate_only: bool) -> None:
    image = ctx.broker.store.image
    if r.resource_type == TOPIC:
        _check_topic_name(r.resource_name)
        topic = image.topics.get(r.resource_name)
        current = dict(topic.configs) if topic else {}
        changes = _apply_ops(r.configs, current, _topic_default, lambda k: k in LIST_TOPIC_CONFIGS)
        _alter_topic(ctx, r.resource_name, changes, validate_only)
    elif r.resource_type == BROKER:
        _check_broker_name(ctx, r.resource_name, allow_default=True)
        current = dict(image.broker_configs)
        changes = _apply_ops(r.configs, current, _broker_default, _broker_is_list)
        for key, value in changes.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        _alter_broker(ctx, current, validate_only)
    elif r.resource_type == BROKER_LOGGER:
        _check_broker_name(ctx, r.resource_name, allow_default=False)
        _alter_loggers(r.configs, validate_only)
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}")


# -------------------------------------------------------------------------------- broker loggers

#: Kafka's log level names -> Python levels (Python has no TRACE: it is 5, below DEBUG).
LOG_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
ROOT_LOGGER = "root"


def _level_name(level: int) -> str:
    for name, value in sorted(LOG_LEVELS.items(), key=lambda kv: kv[1]):
        if level <= value:
            return name
    return "FATAL"


def _loggers() -> dict[str, logging.Logger]:
    found = {ROOT_LOGGER: logging.getLogger()}
    for name, obj in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger) and (name == "tidelog" or name.startswith("tidelog.")):
            found[name] = obj
    return found


def _logger_entries() -> list[ConfigEntry]:
    return [
        ConfigEntry(name, _level_name(lg.getEffectiveLevel()), ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False, (),
                    ConfigType.UNKNOWN, None)
        for name, lg in _loggers().items()
    ]


def _alter_loggers(ops, validate_only: bool) -> None:
    loggers = _loggers()
    for c in ops:
        if c.config_operation in (APPEND, SUBTRACT):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"{_OP_NAMES[c.config_operation]} operation is not allowed for the BROKER_LOGGER resource")
        if c.config_operation not in (SET, DELETE):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {c.config_operation} is not allowed "
                             "for the BROKER_LOGGER resource")
        if c.name not in loggers:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!")
        if c.config_operation == SET and c.value not in LOG_LEVELS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {c.name} to {c.value} as it is "
                             f"not a supported log level. Valid log levels are {', '.join(sorted(LOG_LEVELS))}")
        if c.config_operation == DELETE and c.name == ROOT_LOGGER:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    if validate_only:
        return
    for c in ops:
        loggers[c.name].setLevel(LOG_LEVELS[c.value] if c.config_operation == SET else logging.NOTSET)


__all__ = [
    "ConfigEntry",
    "ConfigSource",
    "ConfigType",
    "handle_alter_configs",
    "handle_describe_configs",
    "handle_incremental_alter_configs",
    "render",
    "topic_config_entries",
]
