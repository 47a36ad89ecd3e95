"""Client telemetry (KIP-714): client-metrics subscriptions, the client instances that ask for them and
push, and what they pushed, decoded from OpenTelemetry's protobuf for /metrics and the console.

subscriptions (the CLIENT_METRICS config resources: ``metrics``, ``interval.ms``, ``match``; validation
as Kafka's ClientMetricsConfigs), manager (Kafka's ClientMetricsManager: client instance ids,
subscription ids, push intervals, the checks of PushTelemetry), otlp (decompression and OTLP
MetricsData -> samples; protobuf is loaded on the first push), samples (the flattened values, without
protobuf), pushed (the samples each client instance pushed last, bounded: clients gone for a while are
dropped). docs/telemetry.md.
"""
