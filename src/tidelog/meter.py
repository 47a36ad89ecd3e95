"""Hot-path measurements: plain Python counters and histograms that the broker's components update
while they work, read by the metrics collector (:mod:`tidelog.web.metrics`) only when Prometheus
scrapes.

Why not prometheus-client's own Counter and Histogram on the hot path: each of their updates takes a
lock and goes through label lookups; a produce request touches several of them. Here an update is a
dict lookup and a few integer additions; everything else (per-topic sums, cumulative buckets, the
exposition format) happens at scrape time. A component holds ``None`` instead of these objects when
metrics are off (``metrics.listener`` empty), so "metrics off" costs one ``is None`` test.

Rules:

1. Counters only grow. :meth:`PartitionTraffic.forget` drops a deleted partition's series but keeps
   its counts in the broker-wide totals, so a total never goes down.
2. Loop-only, not thread-safe, except :class:`SyncHistogram` (fsync latencies are observed on
   executor threads).
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left

#: Upper bounds (seconds) of latency buckets, from 50 µs to 10 s; +Inf is implied.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)

#: The clock for request timings: integer nanoseconds from an arbitrary origin (cheaper to read and
#: subtract than perf_counter's floats).
now = time.perf_counter_ns


class Histogram:
    """Observations counted per bucket (not cumulative: :meth:`cumulative` builds that at scrape time)."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last bucket is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """``(upper bound, observations at or below it)`` pairs, ending with ``+Inf``, as Prometheus
        exposes buckets."""
        out = []
        running = 0
        for bound, n in zip((*map(repr, map(float, self.bounds)), "+Inf"), self.counts):
            running += n
            out.append((bound, running))
        return out


class SyncHistogram(Histogram):
    """A histogram observed from several threads."""

    __slots__ = ("_lock",)

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        super().__init__(bounds)
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            Histogram.observe(self, value)

    def snapshot(self) -> tuple[list[tuple[str, int]], float]:
        with self._lock:
            return self.cumulative(), self.sum


#: The phases of a request, as Kafka's RequestMetrics names them (docs/metrics.md says what each
#: means on Tidelog's single event loop).
REQUEST_PHASES = ("total", "request_queue", "local", "remote", "response_queue", "response_send")


class RequestTimes:
    """One histogram per request phase, per API key (Kafka's RequestMetrics), and the timestamps of
    the requests of one connection until their responses leave.

    A request's timing list is ``[api_key, received, started, local_done, ready, released, sent,
    api_version]``; its timestamps (:data:`now`, nanoseconds), in order: ``received`` (the read that
    completed its frame), ``started`` (dispatch begins), ``local_done`` (the handler returned),
    ``ready`` (its response is known: at once, or when the handler's awaitable finished), then
    ``released`` (every earlier response of the connection has left: the ``ready`` time of the
    response that released it, its own when nothing was in the way) and ``sent`` (the response bytes
    were handed to the transport, after encoding).

    The hot path only buffers the timestamps (:meth:`released`); :meth:`fold` counts them into the
    histograms every :attr:`FOLD_EVERY` requests and before a scrape, unrolled over flat arrays
    (phase ``i``'s buckets start at ``i * (len(LATENCY_BUCKETS) + 1)``; sums in nanoseconds).
    :meth:`histograms` builds :class:`Histogram` objects in seconds at scrape time; :meth:`versions`
    counts the requests of an API per version (Kafka's RequestsPerSec is tagged by request and version)."""

    __slots__ = ("_buffer", "by_api")

    FOLD_EVERY = 2048

    def __init__(self) -> None:
        #: api key -> (phase bucket counts, phase sums, requests per version)
        self.by_api: dict[int, tuple[list[int], list[int], dict[int, int]]] = {}
        self._buffer: list[list] = []

    def add(self, timing: list, released: int, sent: int) -> None:
        """A request's response has left: ``timing`` is its ``[api_key, received, started,
        local_done, ready, _, _, api_version]`` (``released`` and ``sent`` are set here)."""
        timing[5] = released
        timing[6] = sent
        self._buffer.append(timing)
        if len(self._buffer) >= self.FOLD_EVERY:
            self.fold()

    def released(self, pending: dict[int, list], first: int, end: int, released: int, sent: int) -> None:
        """Requests ``first``..``end - 1`` of a connection have left; ``pending[seq]`` holds each one's
        ``[api_key, received, started, local_done, ready, _, _, api_version]`` (``ready`` 0: never finished)."""
        buffer = self._buffer
        for seq in range(first, end):
            t = pending.pop(seq, None)
            if t is not None and t[4]:
                t[5] = released
                t[6] = sent
                buffer.append(t)
        if len(buffer) >= self.FOLD_EVERY:
            self.fold()

    def fold(self) -> None:
        """Count the buffered requests into the histograms."""
        buffer, self._buffer = self._buffer, []
        by_api = self.by_api
        bounds, first, stride, bucket = _BOUNDS_NS, _BOUNDS_NS[0], _STRIDE, bisect_left
        phases = len(REQUEST_PHASES)
        for api_key, received, started, local_done, ready, released, sent, version in buffer:
            arrays = by_api.get(api_key)
            if arrays is None:
                arrays = by_api[api_key] = ([0] * (stride * phases), [0] * phases, {})
            counts, sums, versions = arrays
            versions[version] = versions.get(version, 0) + 1
            # Most phases of most requests fall in the first bucket: one comparison, else a bisect.
            v = sent - received
            counts[0 if v <= first else bucket(bounds, v)] += 1
            sums[0] += v
            v = started - received
            counts[stride + (0 if v <= first else bucket(bounds, v))] += 1
            sums[1] += v
            v = local_done - started
            counts[2 * stride + (0 if v <= first else bucket(bounds, v))] += 1
            sums[2] += v
            v = ready - local_done
            counts[3 * stride + (0 if v <= first else bucket(bounds, v))] += 1
            sums[3] += v
            if released < ready:
                released = ready
            v = released - ready
            counts[4 * stride + (0 if v <= first else bucket(bounds, v))] += 1
            sums[4] += v
            v = sent - released
            counts[5 * stride + (0 if v <= first else bucket(bounds, v))] += 1
            sums[5] += v

    def histograms(self, api_key: int) -> tuple[Histogram, ...]:
        """The API's six phase histograms (in :data:`REQUEST_PHASES` order, seconds), copied (call
        :meth:`fold` first to include the buffered requests)."""
        counts, sums, _ = self.by_api[api_key]
        out = []
        for i, total in enumerate(sums):
            h = Histogram(LATENCY_BUCKETS)
            h.counts = counts[i * _STRIDE:(i + 1) * _STRIDE]
            h.sum = total / 1e9
            out.append(h)
        return tuple(out)


    def versions(self, api_key: int) -> dict[int, int]:
        """Requests of the API counted so far, per request version (call :meth:`fold` first)."""
        return dict(self.by_api[api_key][2])


_BOUNDS_NS = tuple(round(b * 1e9) for b in LATENCY_BUCKETS)
_STRIDE = len(LATENCY_BUCKETS) + 1


#: Indexes into a partition's traffic counters.
BYTES_IN, RECORDS_IN, BYTES_OUT, RECORDS_OUT = range(4)


class PartitionTraffic:
    """Bytes and records in (appended) and out (sent to fetchers), per topic-partition (Kafka's
    BrokerTopicStats, kept per partition; per-topic and broker-wide figures are sums)."""

    __slots__ = ("by_partition", "retired")

    def __init__(self) -> None:
        self.by_partition: dict[tuple[str, int], list[int]] = {}
        self.retired = [0, 0, 0, 0]  # the counts of forgotten (deleted) partitions

    def appended(self, topic: str, partition: int, nbytes: int, records: int) -> None:
        c = self.by_partition.get((topic, partition))
        if c is None:
            c = self.by_partition[(topic, partition)] = [0, 0, 0, 0]
        c[BYTES_IN] += nbytes
        c[RECORDS_IN] += records

    def sent(self, topic: str, partition: int, nbytes: int, records: int) -> None:
        c = self.by_partition.get((topic, partition))
        if c is None:
            c = self.by_partition[(topic, partition)] = [0, 0, 0, 0]
        c[BYTES_OUT] += nbytes
        c[RECORDS_OUT] += records

    def forget(self, topic: str, partition: int) -> None:
        c = self.by_partition.pop((topic, partition), None)
        if c is not None:
            for i, n in enumerate(c):
                self.retired[i] += n

    def totals(self) -> list[int]:
        out = list(self.retired)
        for c in self.by_partition.values():
            for i, n in enumerate(c):
                out[i] += n
        return out


__all__ = [
    "BYTES_IN",
    "BYTES_OUT",
    "LATENCY_BUCKETS",
    "RECORDS_IN",
    "RECORDS_OUT",
    "REQUEST_PHASES",
    "Histogram",
    "PartitionTraffic",
    "RequestTimes",
    "SyncHistogram",
    "now",
]
