"""Per-group configs (ConfigResource type GROUP, KIP-848): their definitions with Kafka's names,
each one's default on a broker (``group.consumer.*`` broker keys supply the consumer ones), and
Kafka's ``GroupConfig.validate`` (known names, parsable values within the broker's bounds, session
timeouts above heartbeat intervals). The share group configs are Kafka 4.4's (``GroupConfig``; the
broker's ``group.share.*`` supply the session and heartbeat defaults and bounds; the other bounds are
Kafka's defaults of its ``group.share.min/max.*`` broker configs). ``share.assignment.interval.ms`` is
accepted and described; Tidelog assigns at each heartbeat. ``errors.deadletterqueue.topic.name`` and
``errors.deadletterqueue.copy.record.enable`` are a share group's dead-letter queue (KIP-1191).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tidelog.config import BrokerConfig
from tidelog.config_def import ConfigDef, parse_bool, parse_choice, parse_string
from tidelog.config_def import int_value as _int
from tidelog.errors import ConfigError

#: ``broker_synonym`` is the broker key that supplies each default.
_GROUP_DEFS = [
    ConfigDef("consumer.session.timeout.ms", _int(1), 45_000,
              "Session timeout of the group's members (KIP-848 consumer groups).",
              "group.consumer.session.timeout.ms", topic=False),
    ConfigDef("consumer.heartbeat.interval.ms", _int(1), 5000,
              "Heartbeat interval given to the group's members (KIP-848 consumer groups).",
              "group.consumer.heartbeat.interval.ms", topic=False),
    ConfigDef("share.session.timeout.ms", _int(1), 45_000, "Session timeout of the share group's members.",
              "group.share.session.timeout.ms", topic=False),
    ConfigDef("share.heartbeat.interval.ms", _int(1), 5000, "Heartbeat interval given to the share group's members.",
              "group.share.heartbeat.interval.ms", topic=False),
    ConfigDef("share.record.lock.duration.ms", _int(1000), 30_000,
              "Record acquisition lock duration of the share group.", "group.share.record.lock.duration.ms",
              topic=False),
    ConfigDef("share.delivery.count.limit", _int(1), 5,
              "Delivery attempts of a record before it is archived (the share group's).",
              "group.share.delivery.count.limit", topic=False),
    ConfigDef("share.partition.max.record.locks", _int(1), 2000,
              "Most records a share partition of the group may have acquired at once.",
              "group.share.partition.max.record.locks", topic=False),
    ConfigDef("share.auto.offset.reset", lambda k, v: _parse_share_reset(k, v), "latest",
              "Where a share partition starts: latest, earliest or by_duration:<ISO 8601 duration>.", topic=False),
    ConfigDef("share.isolation.level", parse_choice("read_uncommitted", "read_committed"), "read_uncommitted",
              "Whether the share group delivers uncommitted transactional records.", topic=False),
    ConfigDef("share.renew.acknowledge.enable", parse_bool, True,
              "Whether members may RENEW their acquisition locks (KIP-1222; Kafka 4.4's default true).",
              topic=False),
    ConfigDef("streams.session.timeout.ms", _int(1), 45_000, "Session timeout of the streams group's members.",
              "group.streams.session.timeout.ms", topic=False),
    ConfigDef("streams.heartbeat.interval.ms", _int(1), 5000,
              "Heartbeat interval given to the streams group's members.", "group.streams.heartbeat.interval.ms",
              topic=False),
    ConfigDef("streams.num.standby.replicas", _int(0), 0, "Standby replicas of each task of the streams group.",
              "group.streams.num.standby.replicas", topic=False),
    ConfigDef("streams.assignment.interval.ms", _int(0), 1000,
              "The streams group's target assignment is computed at most once per this interval.",
              "group.streams.assignment.interval.ms", topic=False),
    ConfigDef("streams.initial.rebalance.delay.ms", _int(0), 3000,
              "How long the new streams group waits for more members before its first assignment.",
              "group.streams.initial.rebalance.delay.ms", topic=False),
    ConfigDef("share.assignment.interval.ms", _int(0), 1000,
              "Interval between assignment updates of the share group (accepted; Tidelog assigns at each "
              "heartbeat).", topic=False),
    # KIP-1191 (Kafka 4.4, share.version=2): the share group's dead-letter queue (tidelog.share.dead_letter)
    ConfigDef("errors.deadletterqueue.topic.name", parse_string, "",
              "The share group's dead-letter queue topic; empty (the default): none.", topic=False),
    ConfigDef("errors.deadletterqueue.copy.record.enable", parse_bool, False,
              "Whether a dead-letter record copies the original record's key and value (else headers only).",
              topic=False),
]
#: Kafka's bounds of the share group configs whose broker bounds Tidelog does not have (their defaults).
SHARE_GROUP_BOUNDS = {
    "share.record.lock.duration.ms": (15_000, 60_000),
    "share.delivery.count.limit": (2, 10),
    "share.partition.max.record.locks": (100, 4000),
    "share.assignment.interval.ms": (0, 15_000),
}
_DURATION = re.compile(r"P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?", re.IGNORECASE)


def _parse_share_reset(key: str, raw: object) -> str:
    """Kafka's ShareGroupAutoOffsetResetStrategy: latest, earliest, or by_duration:<non-negative ISO 8601>."""
    value = str(raw).strip()
    if value.lower() in ("latest", "earliest"):
        return value
    if value.lower().startswith("by_duration:"):
        duration = value.split(":", 1)[1].strip()
        if duration.lower() not in ("p", "pt") and _DURATION.fullmatch(duration):
            return value
    raise ConfigError(f"Invalid value {raw} for configuration {key}: must be latest, earliest or "
                      "by_duration:PnDTnHnMn.nS")

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
    for kind in ("session.timeout.ms", "heartbeat.interval.ms"):
        bounds[f"share.{kind}"] = (broker[f"group.share.min.{kind}"], broker[f"group.share.max.{kind}"])
    bounds["consumer.session.timeout.ms"] = (broker["group.consumer.min.session.timeout.ms"],
                                             broker["group.consumer.max.session.timeout.ms"])
    bounds["consumer.heartbeat.interval.ms"] = (broker["group.consumer.min.heartbeat.interval.ms"],
                                                broker["group.consumer.max.heartbeat.interval.ms"])
    for kind in ("session.timeout.ms", "heartbeat.interval.ms"):
        bounds[f"streams.{kind}"] = (broker[f"group.streams.min.{kind}"], broker[f"group.streams.max.{kind}"])
    bounds["streams.num.standby.replicas"] = (0, broker["group.streams.max.standby.replicas"])
    bounds["streams.assignment.interval.ms"] = (broker["group.streams.min.assignment.interval.ms"],
                                                broker["group.streams.max.assignment.interval.ms"])
    bound_keys = {"consumer.session.timeout.ms": "group.consumer.{}.session.timeout.ms",
                  "streams.session.timeout.ms": "group.streams.{}.session.timeout.ms",
                  "streams.heartbeat.interval.ms": "group.streams.{}.heartbeat.interval.ms",
                  "streams.num.standby.replicas": "group.streams.{}.standby.replicas",
                  "streams.assignment.interval.ms": "group.streams.{}.assignment.interval.ms",
                  "consumer.heartbeat.interval.ms": "group.consumer.{}.heartbeat.interval.ms",
                  "share.session.timeout.ms": "group.share.{}.session.timeout.ms",
                  "share.heartbeat.interval.ms": "group.share.{}.heartbeat.interval.ms",
                  "share.record.lock.duration.ms": "group.share.{}.record.lock.duration.ms",
                  "share.delivery.count.limit": "group.share.{}.delivery.count.limit",
                  "share.partition.max.record.locks": "group.share.{}.partition.max.record.locks",
                  "share.assignment.interval.ms": "group.share.{}.assignment.interval.ms"}
    for name, (lo, hi) in bounds.items():
        if values[name] < lo:
            raise ConfigError(f"{name} must be greater than or equal to {bound_keys[name].format('min')}")
        if values[name] > hi:
            raise ConfigError(f"{name} must be less than or equal to {bound_keys[name].format('max')}")
    for kind in ("consumer", "share", "streams"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            raise ConfigError(f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")
    if values["errors.deadletterqueue.topic.name"].startswith("__"):
        raise ConfigError("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
    return values


__all__ = ["GROUP_CONFIGS", "SHARE_GROUP_BOUNDS", "group_config_defaults", "validate_group_configs"]
