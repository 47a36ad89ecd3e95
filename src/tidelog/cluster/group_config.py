"""Per-group configs (ConfigResource type GROUP, KIP-848): their definitions with Kafka's names,
each one's default on a broker (``group.consumer.*`` broker keys supply the consumer ones), and
Kafka's ``GroupConfig.validate`` (known names, parsable values within the broker's bounds, session
timeouts above heartbeat intervals). Share groups are not served; their configs are kept and
described as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidelog.config import BrokerConfig
from tidelog.config_def import ConfigDef, parse_choice_ignoring_case
from tidelog.config_def import int_value as _int
from tidelog.config_def import parse_int as _parse_int
from tidelog.errors import ConfigError

#: ``broker_synonym`` is the broker key that supplies each default.
_GROUP_DEFS = [
    ConfigDef("consumer.session.timeout.ms", _int(1), 45_000,
              "Session timeout of the group's members (KIP-848 consumer groups).",
              "group.consumer.session.timeout.ms", topic=False),
    ConfigDef("consumer.heartbeat.interval.ms", _int(1), 5000,
              "Heartbeat interval given to the group's members (KIP-848 consumer groups).",
              "group.consumer.heartbeat.interval.ms", topic=False),
    ConfigDef("share.session.timeout.ms", _int(1), 45_000, "Session timeout of share group members (not served).",
              topic=False),
    ConfigDef("share.heartbeat.interval.ms", _int(1), 5000, "Heartbeat interval of share group members (not served).",
              topic=False),
    ConfigDef("share.record.lock.duration.ms", _int(1000), 30_000,
              "Record acquisition lock duration of share groups (not served).", topic=False),
    ConfigDef("share.delivery.count.limit", _parse_int(2, 10), 5,
              "Deliveries of a record to the share group after which it is archived.",
              "group.share.delivery.count.limit", topic=False),
    ConfigDef("share.partition.max.record.locks", _parse_int(100, 4000), 2000,
              "Records in flight per share partition of the share group.",
              "group.share.partition.max.record.locks", topic=False),
    ConfigDef("share.auto.offset.reset", parse_choice_ignoring_case("earliest", "latest"), "latest",
              "Where a share group starts consuming a partition it has no start offset for.", topic=False),
    ConfigDef("share.isolation.level", parse_choice_ignoring_case("read_committed", "read_uncommitted"),
              "read_uncommitted", "Whether a share group's consumers get only committed transactional records.",
              topic=False),
]
#: Kafka's fixed bounds of the share group configs (broker configs Tidelog does not have).
SHARE_GROUP_BOUNDS = {
    "share.session.timeout.ms": (45_000, 60_000),
    "share.heartbeat.interval.ms": (5000, 15_000),
    "share.record.lock.duration.ms": (15_000, 60_000),
}

GROUP_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _GROUP_DEFS}


def group_config_defaults(broker: BrokerConfig) -> dict[str, Any]:
    """Every group config's default on this broker (the consumer ones come from group.consumer.*)."""
    return {d.name: broker[d.broker_synonym] if d.broker_synonym else d.default for d in _GROUP_DEFS}


def validate_group_configs(configs: Mapping[str, Any], broker: BrokerConfig) -> dict[str, Any]:
    """Kafka's ``GroupConfig.validate``: known names, parsable values within the broker's bounds,
    session timeouts above heartbeat intervals. Returns every group config's effective value;
    raises ConfigError."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise ConfigError(f"Unknown group config name: {name}")
    values = group_config_defaults(broker)
    values.update({k: GROUP_CONFIGS[k].parse(k, v) for k, v in configs.items()})
    bounds = dict(SHARE_GROUP_BOUNDS)
    bounds["consumer.session.timeout.ms"] = (broker["group.consumer.min.session.timeout.ms"],
                                             broker["group.consumer.max.session.timeout.ms"])
    bounds["consumer.heartbeat.interval.ms"] = (broker["group.consumer.min.heartbeat.interval.ms"],
                                                broker["group.consumer.max.heartbeat.interval.ms"])
    bound_keys = {"consumer.session.timeout.ms": "group.consumer.{}.session.timeout.ms",
                  "consumer.heartbeat.interval.ms": "group.consumer.{}.heartbeat.interval.ms",
                  "share.session.timeout.ms": "group.share.{}.session.timeout.ms",
                  "share.heartbeat.interval.ms": "group.share.{}.heartbeat.interval.ms",
                  "share.record.lock.duration.ms": "group.share.{}.record.lock.duration.ms"}
    for name, (lo, hi) in bounds.items():
        if values[name] < lo:
            raise ConfigError(f"{name} must be greater than or equal to {bound_keys[name].format('min')}")
        if values[name] > hi:
            raise ConfigError(f"{name} must be less than or equal to {bound_keys[name].format('max')}")
    for kind in ("consumer", "share"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            raise ConfigError(f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")
    return values


__all__ = ["GROUP_CONFIGS", "SHARE_GROUP_BOUNDS", "group_config_defaults", "validate_group_configs"]
