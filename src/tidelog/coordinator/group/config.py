"""The broker settings the group coordinator and its group types read (Kafka's names in
:meth:`GroupConfig.from_broker_config`). Immutable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog.config import INT_MAX, BrokerConfig


@dataclass(frozen=True)
class GroupConfig:
    """The broker settings the coordinator uses (Kafka names in ``from_broker_config``)."""

    offsets_topic_num_partitions: int = 50
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = INT_MAX
    group_initial_rebalance_delay_ms: int = 3000
    offsets_retention_ms: int = 7 * 24 * 3_600_000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    offsets_commit_timeout_ms: int = 5000
    #: Every broker setting by Kafka name (group.consumer.* and others the group types read).
    values: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> GroupConfig:
        return cls(
            offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
            group_min_session_timeout_ms=config["group.min.session.timeout.ms"],
            group_max_session_timeout_ms=config["group.max.session.timeout.ms"],
            group_max_size=config["group.max.size"],
            group_initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
            offsets_commit_timeout_ms=config["offsets.commit.timeout.ms"],
            values=dict(config.values),
        )


__all__ = ["GroupConfig"]
