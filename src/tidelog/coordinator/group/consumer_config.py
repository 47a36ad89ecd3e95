"""Settings of KIP-848 consumer groups, by Kafka's broker config names (``group.consumer.*``).
Immutable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidelog.coordinator.group.assignors import ASSIGNORS, RANGE_ASSIGNOR_NAME, UNIFORM_ASSIGNOR_NAME

_INT32_MAX = 2**31 - 1

_ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """Consumer group settings, by Kafka's broker config names. Immutable."""

    assignors: tuple[str, ...] = (UNIFORM_ASSIGNOR_NAME, RANGE_ASSIGNOR_NAME)  # group.consumer.assignors
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    max_size: int = _INT32_MAX  # group.consumer.max.size

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
                   max_size=int(get("group.consumer.max.size", _INT32_MAX)))


__all__ = ["ConsumerGroupConfig"]
