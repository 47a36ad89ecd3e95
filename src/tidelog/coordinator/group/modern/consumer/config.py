"""Settings of KIP-848 consumer groups, by Kafka's broker config names (``group.consumer.*``).
Immutable."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from tidelog.coordinator.group.modern.assignors import ASSIGNORS, RANGE_ASSIGNOR_NAME, UNIFORM_ASSIGNOR_NAME

_INT32_MAX = 2**31 - 1

_ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


class ConsumerGroupMigrationPolicy(Enum):
    """``group.consumer.migration.policy``: which online conversions of non-empty groups are allowed
    (Kafka's ConsumerGroupMigrationPolicy; empty groups convert either way whatever it says). The value
    is Kafka's config string; the flags are (upgrade, downgrade)."""

    BIDIRECTIONAL = "bidirectional"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    DISABLED = "disabled"

    @property
    def upgrade_enabled(self) -> bool:
        """A classic group becomes a consumer group when a consumer-protocol member joins it."""
        return self in (ConsumerGroupMigrationPolicy.BIDIRECTIONAL, ConsumerGroupMigrationPolicy.UPGRADE)

    @property
    def downgrade_enabled(self) -> bool:
        """A consumer group becomes a classic group when its last consumer-protocol member leaves."""
        return self in (ConsumerGroupMigrationPolicy.BIDIRECTIONAL, ConsumerGroupMigrationPolicy.DOWNGRADE)

    @classmethod
    def parse(cls, name: str | None) -> ConsumerGroupMigrationPolicy:
        """Case-insensitive, as Kafka; anything else is DISABLED (the broker config refuses it first)."""
        try:
            return cls(str(name).strip().lower())
        except ValueError:
            return cls.DISABLED


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """Consumer group settings, by Kafka's broker config names. Immutable."""

    assignors: tuple[str, ...] = (UNIFORM_ASSIGNOR_NAME, RANGE_ASSIGNOR_NAME)  # group.consumer.assignors
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    max_size: int = _INT32_MAX  # group.consumer.max.size
    migration_policy: ConsumerGroupMigrationPolicy = ConsumerGroupMigrationPolicy.BIDIRECTIONAL
    classic_max_size: int = _INT32_MAX  # group.max.size: a downgraded group must fit a classic group

    @classmethod
    def from_broker_config(cls, config: Any) -> ConsumerGroupConfig:
        """From a BrokerConfig: parsed values where config.py defines the key, else the supplied text."""
        def get(name: str, default: Any) -> Any:
            values = getattr(config, "values", {})
            if values.get(name) is not None:
                return values[name]
            return getattr(config, "props", {}).get(name, default)

        raw = get("group.consumer.assignors", f"{UNIFORM_ASSIGNOR_NAME},{RANGE_ASSIGNOR_NAME}")
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        assignors = tuple(_ASSIGNOR_CLASS_NAMES.get(n.strip(), n.strip()) for n in items if n.strip())
        unknown = [n for n in assignors if n not in ASSIGNORS]
        if not assignors or unknown:
            raise ValueError(f"group.consumer.assignors: unknown {unknown}; known: {sorted(ASSIGNORS)}")
        return cls(assignors=assignors,
                   heartbeat_interval_ms=int(get("group.consumer.heartbeat.interval.ms", 5000)),
                   session_timeout_ms=int(get("group.consumer.session.timeout.ms", 45000)),
                   max_size=int(get("group.consumer.max.size", _INT32_MAX)),
                   migration_policy=ConsumerGroupMigrationPolicy.parse(
                       get("group.consumer.migration.policy", ConsumerGroupMigrationPolicy.BIDIRECTIONAL.value)),
                   classic_max_size=int(get("group.max.size", _INT32_MAX)))


__all__ = ["ConsumerGroupConfig", "ConsumerGroupMigrationPolicy"]
