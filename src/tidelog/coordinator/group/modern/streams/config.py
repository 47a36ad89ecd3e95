"""Settings of streams groups, by Kafka 4.4's broker config names (``group.streams.*``); a group's own
``streams.*`` configs (ConfigResource GROUP) override some of them per group. Immutable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StreamsGroupConfig:
    session_timeout_ms: int = 45_000  # group.streams.session.timeout.ms (group: streams.session.timeout.ms)
    heartbeat_interval_ms: int = 5000  # group.streams.heartbeat.interval.ms (streams.heartbeat.interval.ms)
    max_size: int = 2**31 - 1  # group.streams.max.size
    num_standby_replicas: int = 0  # group.streams.num.standby.replicas (streams.num.standby.replicas)
    initial_rebalance_delay_ms: int = 3000  # group.streams.initial.rebalance.delay.ms (streams.initial...)
    assignment_interval_ms: int = 1000  # group.streams.assignment.interval.ms
    task_offset_interval_ms: int = 60_000  # group.streams.task.offset.interval.ms
    acceptable_recovery_lag: int = 10_000  # group.streams.acceptable.recovery.lag
    rack_aware_assignment_tags: tuple[str, ...] = ()  # group.streams.rack.aware.assignment.tags

    @classmethod
    def from_broker_config(cls, config: Any) -> StreamsGroupConfig:
        values = getattr(config, "values", {})

        def get(name: str, default: int) -> int:
            return int(values[name]) if values.get(name) is not None else default

        return cls(session_timeout_ms=get("group.streams.session.timeout.ms", 45_000),
                   heartbeat_interval_ms=get("group.streams.heartbeat.interval.ms", 5000),
                   max_size=get("group.streams.max.size", 2**31 - 1),
                   num_standby_replicas=get("group.streams.num.standby.replicas", 0),
                   initial_rebalance_delay_ms=get("group.streams.initial.rebalance.delay.ms", 3000),
                   assignment_interval_ms=get("group.streams.assignment.interval.ms", 1000),
                   task_offset_interval_ms=get("group.streams.task.offset.interval.ms", 60_000),
                   acceptable_recovery_lag=get("group.streams.acceptable.recovery.lag", 10_000),
                   rack_aware_assignment_tags=_tags(values.get("group.streams.rack.aware.assignment.tags")))


def _tags(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(t.strip() for t in items if str(t).strip())


#: The group-level configs (ConfigResource GROUP) a streams group reads, and the broker default each overrides.
GROUP_CONFIGS = {
    "streams.session.timeout.ms": "session_timeout_ms",
    "streams.heartbeat.interval.ms": "heartbeat_interval_ms",
    "streams.num.standby.replicas": "num_standby_replicas",
    "streams.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "streams.assignment.interval.ms": "assignment_interval_ms",
    "streams.task.offset.interval.ms": "task_offset_interval_ms",
    "streams.acceptable.recovery.lag": "acceptable_recovery_lag",
}


__all__ = ["GROUP_CONFIGS", "StreamsGroupConfig"]
