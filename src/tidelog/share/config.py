"""The settings one share group's partitions run with: a broker default (``group.share.*``) that the
group's own config (``share.*``, IncrementalAlterConfigs on a GROUP resource) may override. Immutable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from tidelog.replica.fetch import READ_COMMITTED, READ_UNCOMMITTED


class AcquireMode(IntEnum):
    """``share.acquire.mode`` (KIP-1206; ShareFetch v2's ShareAcquireMode)."""

    #: whole batches: ``max_records`` may be exceeded to end on a batch boundary (Kafka's default)
    BATCH_OPTIMIZED = 0
    #: at most ``max_records`` records, cutting a batch if need be
    RECORD_LIMIT = 1


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    #: how long a consumer holds acquired records before they are released (``share.record.lock.duration.ms``)
    record_lock_duration_ms: int = 30_000
    #: deliveries after which a record is archived instead of offered again (``share.delivery.count.limit``)
    delivery_count_limit: int = 5
    #: in-flight records (acquired or waiting) per share partition (``share.partition.max.record.locks``)
    partition_max_record_locks: int = 2000
    #: where a share partition with no start offset begins: ``earliest`` or ``latest``
    auto_offset_reset: str = "latest"
    #: READ_UNCOMMITTED (0) or READ_COMMITTED (1) (``share.isolation.level``)
    isolation_level: int = READ_UNCOMMITTED
    #: RENEW acknowledgements (KIP-1222) accepted (``share.renew.acknowledge.enable``; Kafka 4.4's default true)
    renew_acknowledge_enable: bool = True

    @classmethod
    def of(cls, broker: Mapping[str, Any], group: Mapping[str, Any] | None = None) -> ShareGroupSettings:
        """Broker defaults (``group.share.*``) under a group's overrides (``share.*``; values as text or parsed)."""
        group = group or {}

        def pick(group_key: str, broker_key: str, default: int) -> int:
            if group_key in group:
                return int(group[group_key])
            return int(broker.get(broker_key, default))

        isolation = str(group.get("share.isolation.level", "read_uncommitted")).lower()
        return cls(
            record_lock_duration_ms=pick("share.record.lock.duration.ms", "group.share.record.lock.duration.ms",
                                         30_000),
            delivery_count_limit=pick("share.delivery.count.limit", "group.share.delivery.count.limit", 5),
            partition_max_record_locks=pick("share.partition.max.record.locks",
                                            "group.share.partition.max.record.locks", 2000),
            auto_offset_reset=str(group.get("share.auto.offset.reset", "latest")).lower(),
            isolation_level=READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED,
            renew_acknowledge_enable=str(group.get("share.renew.acknowledge.enable", "true")).lower() == "true",
        )


__all__ = ["AcquireMode", "ShareGroupSettings"]
