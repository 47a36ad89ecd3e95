"""One quota's rate measurement and throttle time, as Kafka's quota sensors compute them (a ``Sensor``
with a ``Rate`` over a windowed sum, ``quota.window.num`` samples of ``quota.window.size.seconds``).

* A sample covers ``window_ms`` from its start; recording into a full sample moves to the next one,
  round-robin over ``samples + 1`` slots (the extra slot is Kafka's "overlapping sample").
* Before measuring, a sample whose last event is ``samples * window_ms`` old or older is reset.
* The rate is the sum of the samples over the elapsed time since the oldest sample started, that time
  padded to at least ``samples - 1`` whole windows (so a new client is measured over ~10 s, not over
  its first millisecond) and at least 1 ms.
* After recording, a rate above the bound is a violation; the throttle time is the time the rate needs
  to fall back to the bound if nothing more is recorded: ``(rate - bound) / bound * window``, rounded
  half up (Java's ``Math.round``); request-time quotas cap it at one sample window.

Sans-IO: times are passed in (milliseconds of the broker's clock). Not thread-safe.
"""

from __future__ import annotations

import math


class _Sample:
    __slots__ = ("event_count", "last_event_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class QuotaSensor:
    """Rate of one quota entity (bytes/s, or percent of the event loop's time)."""

    __slots__ = ("_current", "_samples", "last_record_ms", "num_samples", "window_ms")

    def __init__(self, num_samples: int = 11, window_ms: int = 1000) -> None:
        if num_samples < 1 or window_ms < 1:
            raise ValueError("a quota sensor needs at least one sample of at least 1 ms")
        self.num_samples = num_samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0
        self.last_record_ms = 0

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms`` (negative to take back an earlier record) without checking."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            self._current = (self._current + 1) % (self.num_samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire_age = self.num_samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        oldest = min(s.start_ms for s in self._samples)
        elapsed = now_ms - oldest
        full_windows = elapsed // self.window_ms
        if full_windows < self.num_samples - 1:
            elapsed += (self.num_samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1)

    def rate(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000)

    def throttle_time_ms(self, bound: float, now_ms: int, max_ms: int | None = None) -> int:
        """0 if the rate is within ``bound``, else how long the client must wait (Kafka's QuotaUtils)."""
        value = self.rate(now_ms)
        if value <= bound:
            return 0
        throttle = math.floor((value - bound) / bound * self.window_size_ms(now_ms) + 0.5)
        return throttle if max_ms is None else min(throttle, max_ms)

    def record_and_throttle_ms(self, value: float, bound: float, now_ms: int, max_ms: int | None = None) -> int:
        """Kafka's ``Sensor.record(value, now, checkQuotas=true)`` turned into a throttle time."""
        self.record(value, now_ms)
        return self.throttle_time_ms(bound, now_ms, max_ms)


__all__ = ["QuotaSensor"]
