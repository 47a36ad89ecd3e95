"""What client instances pushed: per client instance, its series and their latest values.

Counters pushed as deltas are added up, so Prometheus sees ordinary monotonic counters; gauges and
cumulative counters keep the last value. Bounded: a client instance that has not pushed for its
expiry (three push intervals, at least a minute: Kafka's client-instance expiry) is dropped with
its series, and a client instance keeps at most ``MAX_SERIES_PER_CLIENT`` series.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tidelog.telemetry.samples import COUNTER, Sample

MAX_SERIES_PER_CLIENT = 5000

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(slots=True)
class Series:
    kind: str
    value: float
    description: str


@dataclass(slots=True)
class PushedClient:
    """One client instance's latest telemetry."""

    client_instance_id: uuid.UUID
    client_id: str
    software: str  # "name/version", or "" when the client did not say
    source: str  # host:port
    last_push_ms: int = 0
    expires_ms: int = 0
    pushes: int = 0
    series: dict[SeriesKey, Series] = field(default_factory=dict)

    def apply(self, samples: Iterable[Sample]) -> None:
        for s in samples:
            key = (s.name, s.labels)
            current = self.series.get(key)
            if current is None:
                if len(self.series) >= MAX_SERIES_PER_CLIENT:
                    continue
                self.series[key] = Series(s.kind, s.value, s.description)
            elif s.kind == COUNTER and s.delta and current.kind == COUNTER:
                current.value += s.value
            else:
                current.kind, current.value = s.kind, s.value


class PushedMetrics:
    """Every client instance's pushed series, read by /metrics and the console."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._clients: dict[uuid.UUID, PushedClient] = {}

    def record(self, client_instance_id: uuid.UUID, client_id: str, software: str, source: str,
               samples: list[Sample], expiry_ms: int) -> None:
        now = self._now_ms()
        client = self._clients.get(client_instance_id)
        if client is None:
            client = self._clients[client_instance_id] = PushedClient(client_instance_id, client_id, software, source)
        client.last_push_ms, client.expires_ms = now, now + expiry_ms
        client.pushes += 1
        client.apply(samples)

    def forget(self, client_instance_id: uuid.UUID) -> None:
        self._clients.pop(client_instance_id, None)

    def clients(self) -> list[PushedClient]:
        """The client instances still current (the expired ones are dropped here)."""
        now = self._now_ms()
        for gone in [k for k, c in self._clients.items() if c.expires_ms <= now]:
            del self._clients[gone]
        return sorted(self._clients.values(), key=lambda c: (c.client_id, str(c.client_instance_id)))


__all__ = ["MAX_SERIES_PER_CLIENT", "PushedClient", "PushedMetrics", "Series"]
