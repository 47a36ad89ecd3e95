"""Described configs: each config's value, where it comes from and its synonyms, as Kafka reports them
(Kafka's ``ConfigHelper`` / ``DynamicBrokerConfig``), for DescribeConfigs, CreateTopics v5+ and the CLI.

Where a value comes from. A topic config's *synonyms* are, in this order: the topic's own override
(TOPIC_CONFIG), then the server.properties spellings of its default (``retention.ms`` ->
``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``) as dynamic broker configs
(DYNAMIC_BROKER_CONFIG), then as static ones (STATIC_BROKER_CONFIG), then the built-in defaults
(DEFAULT_CONFIG). An entry's ``source`` is its first synonym's, and DEFAULT_CONFIG when it has none.
Values are printed as Kafka prints them: decimal numbers, ``true``/``false``, comma-joined lists.

A single node keeps one set of dynamic broker configs: described per broker it is
DYNAMIC_BROKER_CONFIG; described as the cluster default, DYNAMIC_DEFAULT_BROKER_CONFIG.

Pure over the metadata image and the broker's static configuration. Loop-only, not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from tidelog.cluster.group_config import GROUP_CONFIGS, group_config_defaults
from tidelog.cluster.metadata import MetadataImage
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    UNIT_ALIASES,
    BrokerConfig,
    ConfigDef,
    ConfigError,
    attr_name,
    is_sensitive,
)

#: Keys only the authorizer reads: Kafka describes them (as any unknown key) only when server.properties sets them.
AUTHORIZER_ONLY_KEYS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})


class ConfigSource(IntEnum):
    """``DescribeConfigsResponse.ConfigSource`` ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


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
    PASSWORD = 9


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
    if d.sensitive:
        return ConfigType.PASSWORD
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


def make_entry(name: str, value: str | None, synonyms: list[Synonym], read_only: bool, ctype: ConfigType,
               doc: str | None) -> ConfigEntry:
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    if is_sensitive(name):  # secrets: described without their value, as Kafka does
        value, synonyms = None, [(n, None, s) for n, _, s in synonyms]
    return ConfigEntry(name, value, source, read_only, tuple(synonyms), ctype, doc)


# ----------------------------------------------------------------------------- broker spellings


def spellings(d: ConfigDef) -> list[tuple[str, int]]:
    """(server.properties key, milliseconds per unit) that set topic config ``d``'s default."""
    if d.broker_synonym is None:
        return []
    return [(d.broker_synonym, 1), *UNIT_ALIASES.get(d.broker_synonym, ())]


def _spelling_default(d: ConfigDef, key: str) -> str | None:
    """Kafka's built-in default of a server.properties spelling: only the coarsest unit has one
    (``log.retention.hours=168``; ``log.retention.ms`` and ``.minutes`` default to null)."""
    keys = spellings(d)
    if len(keys) == 1:
        return render(d.default)
    last_key, factor = keys[-1]
    return str(d.default // factor) if key == last_key and d.default % factor == 0 else None


def broker_key_def(key: str) -> ConfigDef | None:
    """The definition behind a broker key: a topic default's synonym, or a broker config."""
    for d in TOPIC_CONFIGS.values():
        if d.broker_synonym == key:
            return d
    return BROKER_CONFIGS.get(key)


def topic_default(name: str) -> str | None:
    d = TOPIC_CONFIGS.get(name)
    return render(d.default) if d else None


def broker_default(key: str) -> str | None:
    d = broker_key_def(key)
    return render(d.default) if d else None


# ----------------------------------------------------------------------------------- describing


class ConfigDescriber:
    """Every config of a topic or of the broker, with values, sources and synonyms."""

    def __init__(self, broker_config: BrokerConfig, topic_configs: TopicConfigs) -> None:
        self.broker_config = broker_config
        self.topic_configs = topic_configs

    def _broker_layers(self, image: MetadataImage, d: ConfigDef, keys: list[str]) -> list[Synonym]:
        dynamic = image.broker_configs
        static = self.broker_config.props
        out: list[Synonym] = [(k, dynamic[k], ConfigSource.DYNAMIC_BROKER_CONFIG) for k in keys if k in dynamic]
        out += [(k, static[k], ConfigSource.STATIC_BROKER_CONFIG) for k in keys if k in static]
        for k in keys:
            default = _spelling_default(d, k)
            if default is not None:
                out.append((k, default, ConfigSource.DEFAULT_CONFIG))
        return out

    def topic_entries(self, image: MetadataImage, overrides: dict[str, str]) -> list[ConfigEntry]:
        """Every topic config of a topic with ``overrides``, sorted by name."""
        effective = self.topic_configs.defaults(image)
        parsed = {k: TOPIC_CONFIGS[k].parse(k, v) for k, v in overrides.items() if k in TOPIC_CONFIGS}
        entries = []
        for name in sorted(TOPIC_CONFIGS):
            d = TOPIC_CONFIGS[name]
            value = parsed[name] if name in parsed else getattr(effective, attr_name(name))
            synonyms: list[Synonym] = []
            if name in parsed:
                synonyms.append((name, render(value), ConfigSource.TOPIC_CONFIG))
            synonyms += self._broker_layers(image, d, [k for k, _ in spellings(d)])
            entries.append(make_entry(name, render(value), synonyms, False, config_type(d), d.doc))
        return entries

    def broker_entries(self, image: MetadataImage) -> list[ConfigEntry]:
        """Every config of this broker (its static and dynamic configs and the topic defaults)."""
        static = self.broker_config
        entries = []
        for name, d in sorted(BROKER_CONFIGS.items()):
            if name in AUTHORIZER_ONLY_KEYS and name not in static.props:
                continue  # the authorizer's own keys, not Kafka broker configs: listed only when set
            synonyms: list[Synonym] = []
            if name in static.props:
                synonyms.append((name, static.props[name], ConfigSource.STATIC_BROKER_CONFIG))
            if render(d.default) is not None:
                synonyms.append((name, render(d.default), ConfigSource.DEFAULT_CONFIG))
            entries.append(make_entry(name, render(static[name]), synonyms, True, config_type(d), d.doc))
        defaults = self.topic_configs.defaults(image)
        for d in TOPIC_CONFIGS.values():
            keys = spellings(d)
            for i, (key, factor) in enumerate(keys):
                synonyms = self._broker_layers(image, d, [k for k, _ in keys[i:]])
                if i == 0:
                    value = render(getattr(defaults, attr_name(d.name)))
                    entries.append(make_entry(key, value, synonyms, False, config_type(d),
                                              f"Default of the topic config {d.name}: {d.doc}"))
                else:
                    own = [s for s in synonyms if s[0] == key]
                    doc = f"{d.name} in units of {factor} ms (server.properties only)."
                    entries.append(make_entry(key, own[0][1] if own else None, synonyms, True, ConfigType.INT, doc))
        known = {e.name for e in entries}
        for key, value in sorted(image.broker_configs.items()):
            if key not in known:  # a key Tidelog does not use, kept as Kafka keeps custom keys
                entries.append(make_entry(key, value, [(key, value, ConfigSource.DYNAMIC_BROKER_CONFIG)], False,
                                          ConfigType.UNKNOWN, None))
        return sorted(entries, key=lambda e: e.name)

    def group_entries(self, image: MetadataImage, group_id: str) -> list[ConfigEntry]:
        """Every group config of ``group_id`` (Kafka's ``createGroupConfigEntry``): GROUP_CONFIG where
        the group overrides it, else DEFAULT_CONFIG with the broker's default."""
        overrides = image.group_configs.get(group_id, {})
        defaults = group_config_defaults(self.broker_config)
        entries = []
        for name, d in sorted(GROUP_CONFIGS.items()):
            if name in overrides:
                value, source = render(d.parse(name, overrides[name])), ConfigSource.GROUP_CONFIG
            else:
                value, source = render(defaults[name]), ConfigSource.DEFAULT_CONFIG
            entries.append(make_entry(name, value, [(name, value, source)], False, config_type(d), d.doc))
        return entries

    def cluster_default_entries(self, image: MetadataImage) -> list[ConfigEntry]:
        """The dynamic cluster-wide broker configs (the broker resource named "")."""
        source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        out = []
        for key, value in sorted(image.broker_configs.items()):
            d = broker_key_def(key)
            out.append(make_entry(key, value, [(key, value, source)], False,
                                  config_type(d) if d else ConfigType.UNKNOWN, None))
        return out


__all__ = [
    "AUTHORIZER_ONLY_KEYS",
    "LIST_TOPIC_CONFIGS",
    "ConfigDescriber",
    "ConfigEntry",
    "ConfigSource",
    "ConfigType",
    "Synonym",
    "broker_default",
    "broker_key_def",
    "config_type",
    "make_entry",
    "render",
    "spellings",
    "topic_default",
]
