"""OTLP MetricsData payloads for the telemetry tests, built with opentelemetry-proto as clients build them."""

from __future__ import annotations

from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2

DELTA = metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
CUMULATIVE = metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE


def _attrs(labels: dict[str, str]) -> list[common_pb2.KeyValue]:
    return [common_pb2.KeyValue(key=k, value=common_pb2.AnyValue(string_value=v)) for k, v in labels.items()]


def gauge(name: str, value: float, **labels: str) -> metrics_pb2.Metric:
    return metrics_pb2.Metric(name=name, gauge=metrics_pb2.Gauge(data_points=[
        metrics_pb2.NumberDataPoint(as_double=value, attributes=_attrs(labels))]))


def counter(name: str, value: int, temporality=DELTA, **labels: str) -> metrics_pb2.Metric:
    return metrics_pb2.Metric(name=name, sum=metrics_pb2.Sum(
        is_monotonic=True, aggregation_temporality=temporality,
        data_points=[metrics_pb2.NumberDataPoint(as_int=value, attributes=_attrs(labels))]))


def payload(*metrics: metrics_pb2.Metric) -> bytes:
    return metrics_pb2.MetricsData(resource_metrics=[metrics_pb2.ResourceMetrics(scope_metrics=[
        metrics_pb2.ScopeMetrics(metrics=list(metrics))])]).SerializeToString()
