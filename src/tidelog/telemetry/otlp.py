"""A PushTelemetry payload -> samples: decompression (Kafka's codec ids) and OpenTelemetry's
``MetricsData`` (opentelemetry-proto, metrics/v1), flattened to what Prometheus shows.

Gauges stay gauges; sums are counters when monotonic (else gauges), delta or cumulative as the client
says (Tidelog asks for deltas, as Kafka does, and adds them up: :mod:`tidelog.telemetry.pushed`);
histograms and summaries give their ``_count`` and ``_sum``. A data point's attributes are its labels.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError
from opentelemetry.proto.metrics.v1 import metrics_pb2

from tidelog.errors import ErrorCode, KafkaError
from tidelog.records.compression import decompress
from tidelog.records.errors import InvalidRecordError
from tidelog.telemetry.samples import COUNTER, GAUGE, Sample, prometheus_name

_DELTA = metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA


def _any_value(v) -> str:
    kind = v.WhichOneof("value")
    if kind is None:
        return ""
    value = getattr(v, kind)
    if kind == "bool_value":
        return "true" if value else "false"
    if kind == "bytes_value":
        return value.hex()
    if kind in ("array_value", "kvlist_value"):
        return str(value).replace("\n", " ").strip()
    return str(value)


def _labels(attributes) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((prometheus_name(a.key), _any_value(a.value)) for a in attributes))


def _number(point) -> float:
    return float(point.as_double) if point.WhichOneof("value") == "as_double" else float(point.as_int)


def decode(compression_type: int, payload: bytes, max_bytes: int) -> list[Sample]:
    """The samples of a push; INVALID_RECORD when it does not decompress or parse (Kafka answers that
    when its receiver fails on the payload); the decompressed size is bounded too (16 times
    ``max_bytes``, at least 1 MiB: OTLP compresses about tenfold)."""
    try:
        raw = decompress(compression_type, payload, max_size=max(max_bytes * 16, 1 << 20))
    except (InvalidRecordError, ValueError) as e:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"The pushed metrics do not decompress: {e}") from None
    data = metrics_pb2.MetricsData()
    try:
        data.ParseFromString(raw)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"The pushed metrics are not OTLP MetricsData: {e}") from None
    samples: list[Sample] = []
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                samples.extend(_samples(metric))
    return samples


def _samples(metric) -> list[Sample]:
    name, doc = metric.name, metric.description
    kind = metric.WhichOneof("data")
    if kind == "gauge":
        return [Sample(name, GAUGE, _labels(p.attributes), _number(p), False, doc) for p in metric.gauge.data_points]
    if kind == "sum":
        s = metric.sum
        if s.is_monotonic:
            delta = s.aggregation_temporality == _DELTA
            return [Sample(name, COUNTER, _labels(p.attributes), _number(p), delta, doc) for p in s.data_points]
        return [Sample(name, GAUGE, _labels(p.attributes), _number(p), False, doc) for p in s.data_points]
    if kind in ("histogram", "exponential_histogram"):
        h = getattr(metric, kind)
        delta = h.aggregation_temporality == _DELTA
        out = []
        for p in h.data_points:
            labels = _labels(p.attributes)
            out.append(Sample(name + ".count", COUNTER, labels, float(p.count), delta, doc))
            out.append(Sample(name + ".sum", COUNTER, labels, float(p.sum), delta, doc))
        return out
    if kind == "summary":
        out = []
        for p in metric.summary.data_points:
            labels = _labels(p.attributes)
            out.append(Sample(name + ".count", COUNTER, labels, float(p.count), False, doc))
            out.append(Sample(name + ".sum", COUNTER, labels, float(p.sum), False, doc))
        return out
    return []


__all__ = ["decode"]
