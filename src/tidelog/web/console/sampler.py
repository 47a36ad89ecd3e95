"""The console's live figures, sampled in the broker process every ``console.sample.interval.ms``, with a
bounded history (``HISTORY`` samples, the oldest dropped):

* message rates: records (and bytes) appended per second, in total and per topic, from the change of
  each partition's log end offset (and log size) between two samples;
* consumer lag over time, per group: the sum over its committed partitions of (high watermark -
  committed offset), and each partition's lag.

The committed offsets are read from this broker's group coordinator itself, as ``/metrics`` reads them,
not through a Kafka request: the sampler acts for no user, and with an authorizer no principal it could
name (``User:ANONYMOUS`` least of all) may describe every group. Who may see a group's history is decided
when it is asked for (the group API).

Groups are sampled up to ``MAX_GROUPS`` (the rest are not charted). Loop-only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tidelog.coordinator.group import GroupCoordinator
from tidelog.errors import KafkaError
from tidelog.replica.manager import ReplicaManager

HISTORY = 360
MAX_GROUPS = 200


@dataclass(slots=True)
class GroupHistory:
    points: deque = field(default_factory=lambda: deque(maxlen=HISTORY))  # (ms, total lag, {"t-p": lag})


class Sampler:
    def __init__(self, replicas: ReplicaManager, coordinator: GroupCoordinator, wall_ms: Callable[[], int]) -> None:
        self.replicas = replicas
        self.coordinator = coordinator
        self.wall_ms = wall_ms
        self.rates: deque = deque(maxlen=HISTORY)  # {"time": ms, "records_per_sec", "bytes_per_sec", "topics": {}}
        self.groups: dict[str, GroupHistory] = {}
        self._last: tuple[int, dict[str, tuple[int, int]]] | None = None

    def end_offset(self, topic: str, partition: int) -> int | None:
        """The partition's high watermark on this broker (None when it is not the leader here)."""
        try:
            return self.replicas.leader_offsets(topic, partition).high_watermark
        except KafkaError:
            return None

    async def sample(self) -> None:
        self.sample_rates()
        await self.sample_lag()

    def sample_rates(self) -> None:
        now = self.wall_ms()
        totals: dict[str, tuple[int, int]] = {}
        for summary in self.replicas.local_logs.summaries():
            records, size = totals.get(summary.topic, (0, 0))
            totals[summary.topic] = (records + summary.offsets.log_end_offset, size + summary.size_bytes)
        if self._last is not None:
            then, before = self._last
            seconds = max((now - then) / 1000, 1e-3)
            topics = {}
            for topic, (records, size) in totals.items():
                r0, s0 = before.get(topic, (0, 0))  # a topic new since the last sample: all of it is new
                topics[topic] = {"records_per_sec": round(max(0, records - r0) / seconds, 2),
                                 "bytes_per_sec": round(max(0, size - s0) / seconds, 2)}
            self.rates.append({"time": now,
                               "records_per_sec": round(sum(t["records_per_sec"] for t in topics.values()), 2),
                               "bytes_per_sec": round(sum(t["bytes_per_sec"] for t in topics.values()), 2),
                               "topics": topics})
        self._last = (now, totals)

    async def sample_lag(self) -> None:
        now = self.wall_ms()
        try:
            listed = self.coordinator.list_groups()  # what ListGroups answers, for no user in particular
        except KafkaError:  # a __consumer_offsets partition is loading: try again next time
            return
        offsets = self.coordinator.offsets
        seen = set()
        for group_id in sorted(g.group_id for g in listed)[:MAX_GROUPS]:
            seen.add(group_id)
            committed = {(topic, partition): om.offset for topic, partition, om in offsets.items(group_id)}
            lags = self.lags(committed)
            total = sum(v for v in lags.values() if v is not None)
            history = self.groups.setdefault(group_id, GroupHistory())
            history.points.append((now, total, {f"{t}-{p}": v for (t, p), v in lags.items()}))
        for gone in set(self.groups) - seen:
            del self.groups[gone]

    def lags(self, committed: dict[tuple[str, int], int]) -> dict[tuple[str, int], int | None]:
        out: dict[tuple[str, int], int | None] = {}
        for (topic, partition), offset in committed.items():
            end = self.end_offset(topic, partition)
            out[(topic, partition)] = None if end is None else max(0, end - offset)
        return out

    def lag_history(self, group_id: str) -> list[dict[str, Any]]:
        history = self.groups.get(group_id)
        if history is None:
            return []
        return [{"time": t, "lag": total, "partitions": parts} for t, total, parts in history.points]


__all__ = ["HISTORY", "MAX_GROUPS", "Sampler"]
