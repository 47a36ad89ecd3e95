"""Replica assignment of new partitions to brokers: Kafka's algorithm (AdminUtils.assignReplicasToBrokers).

Without racks: brokers sorted by id; partition ``p``'s first replica is broker ``(p + start) % n``
and the others follow at a shift that grows by one every ``n`` partitions, so leaders and followers
spread evenly; ``start`` and the first shift are random (fixed in tests).

With ``broker.rack`` set on every broker: brokers are first arranged alternating between racks
(racks sorted, brokers of a rack by id), then each further replica skips brokers on a rack that
already holds a replica (while some rack holds none) and brokers already chosen. Some brokers with a
rack and some without is an error, as in Kafka's enforced rack-aware mode.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from tidelog.cluster.metadata import BrokerInfo
from tidelog.errors import ErrorCode, KafkaError


def assign_replicas(brokers: Iterable[BrokerInfo], num_partitions: int, replication_factor: int, *,
                    start_partition: int = 0, fixed_start: int | None = None) -> list[tuple[int, ...]]:
    """Replica lists of partitions ``start_partition .. start_partition + num_partitions - 1``
    (the first replica is the preferred leader). Raises KafkaError."""
    brokers = sorted(brokers, key=lambda b: b.broker_id)
    if num_partitions <= 0:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    with_rack = [b for b in brokers if b.rack is not None]
    if not with_rack:
        return _rack_unaware([b.broker_id for b in brokers], num_partitions, replication_factor,
                             start_partition, fixed_start)
    if len(with_rack) != len(brokers):
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         "Not all brokers have rack information for replica rack aware assignment.")
    return _rack_aware({b.broker_id: b.rack for b in brokers if b.rack is not None}, num_partitions,
                       replication_factor, start_partition, fixed_start)


def _replica_index(first: int, shift: int, index: int, n: int) -> int:
    return (first + 1 + (shift + index) % (n - 1)) % n


def _starts(n: int, fixed_start: int | None) -> tuple[int, int]:
    if fixed_start is not None:
        return fixed_start, fixed_start
    return random.randrange(n), random.randrange(n)


def _rack_unaware(ids: list[int], num_partitions: int, rf: int, start_partition: int,
                  fixed_start: int | None) -> list[tuple[int, ...]]:
    n = len(ids)
    start, shift = _starts(n, fixed_start)
    result = []
    for partition in range(max(0, start_partition), max(0, start_partition) + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        result.append((ids[first], *(ids[_replica_index(first, shift, j, n)] for j in range(rf - 1))))
    return result


def rack_alternated(racks: dict[int, str]) -> list[int]:
    """Brokers ordered one per rack in turn (racks sorted, each rack's brokers by id)."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker_id)
    queues = [by_rack[r] for r in sorted(by_rack)]
    result: list[int] = []
    depth = 0
    while len(result) < len(racks):
        result.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return result


def _rack_aware(racks: dict[int, str], num_partitions: int, rf: int, start_partition: int,
                fixed_start: int | None) -> list[tuple[int, ...]]:
    arranged = rack_alternated(racks)
    n, num_racks = len(arranged), len(set(racks.values()))
    start, shift = _starts(n, fixed_start)
    result = []
    for partition in range(max(0, start_partition), max(0, start_partition) + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = arranged[first]
        replicas, used_racks, used = [leader], {racks[leader]}, {leader}
        k = 0
        while len(replicas) < rf:
            broker = arranged[_replica_index(first, shift * num_racks, k, n)]
            k += 1
            rack = racks[broker]
            if (rack not in used_racks or len(used_racks) == num_racks) and (broker not in used or len(used) == n):
                replicas.append(broker)
                used_racks.add(rack)
                used.add(broker)
        result.append(tuple(replicas))
    return result


__all__ = ["assign_replicas", "rack_alternated"]
