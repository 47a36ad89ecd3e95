"""Settings of share groups, by Kafka's broker config names (``group.share.*``). Immutable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.share.heartbeat.interval.ms
    max_size: int = 200  # group.share.max.size

    @classmethod
    def from_broker_config(cls, config: Any) -> ShareGroupConfig:
        values = getattr(config, "values", {})

        def get(name: str, default: int) -> int:
            return int(values[name]) if values.get(name) is not None else default

        return cls(session_timeout_ms=get("group.share.session.timeout.ms", 45_000),
                   heartbeat_interval_ms=get("group.share.heartbeat.interval.ms", 5000),
                   max_size=get("group.share.max.size", 200))


__all__ = ["ShareGroupConfig"]
