"""Client instances and their subscriptions: Kafka's ClientMetricsManager (KIP-714), on the broker's clock.

GetTelemetrySubscriptions hands a client an instance id (when it has none), the metrics its matching
subscriptions ask for, the lowest of their push intervals (5 minutes when none matches: then the
metric list is empty and the client pushes nothing), and a subscription id: CRC32C of the metric
set and interval, XORed with the instance id's hash, so that a broker that restarts, or another
broker, computes the same id for the same subscription. PushTelemetry is checked as Kafka checks it
(a terminated instance: INVALID_REQUEST; too early: THROTTLING_QUOTA_EXCEEDED; a stale subscription
id: UNKNOWN_SUBSCRIPTION_ID; an unknown codec: UNSUPPORTED_COMPRESSION_TYPE; more than
``telemetry.max.bytes``: TELEMETRY_TOO_LARGE), then decoded (INVALID_RECORD when that fails) and kept
in :class:`~tidelog.telemetry.pushed.PushedMetrics`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from crc32c import crc32c

from tidelog.errors import ErrorCode, KafkaError
from tidelog.records.compression import CompressionType
from tidelog.telemetry.pushed import PushedMetrics
from tidelog.telemetry.subscriptions import ALL_METRICS, DEFAULT_INTERVAL_MS, Subscription, subscriptions_of

#: Codecs a client may compress its push with, Kafka's order (ClientMetricsManager): zstd, lz4, gzip, snappy.
ACCEPTED_COMPRESSION_TYPES = [int(CompressionType.ZSTD), int(CompressionType.LZ4), int(CompressionType.GZIP),
                              int(CompressionType.SNAPPY)]
#: Kafka's cache expiry of a client instance: at least a minute, else three push intervals.
MIN_EXPIRY_MS = 60_000
CACHE_MAX_SIZE = 16384


@dataclass(frozen=True, slots=True)
class ClientAttributes:
    """What ``match`` selectors test (Kafka's ClientMetricsInstanceMetadata)."""

    client_id: str
    software_name: str | None
    software_version: str | None
    source_address: str
    source_port: str | None

    def as_map(self, instance_id: uuid.UUID) -> dict[str, str | None]:
        return {
            "client_instance_id": str(instance_id), "client_id": self.client_id,
            "client_software_name": self.software_name, "client_software_version": self.software_version,
            "client_source_address": self.source_address, "client_source_port": self.source_port,
        }


@dataclass(slots=True)
class ClientInstance:
    instance_id: uuid.UUID
    attributes: ClientAttributes
    subscription_id: int
    subscription_version: int
    metrics: list[str]
    push_interval_ms: int
    connection_id: str
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE
    expires_ms: int = field(default=0)

    def may_get(self, now: int) -> bool:
        if now - max(self.last_get_ms, self.last_push_ms) >= self.push_interval_ms:
            self.last_get_ms = now
            return True
        return False

    def may_push(self, now: int) -> bool:
        # The first push after a GetTelemetrySubscriptions is taken whenever it comes: clients jitter
        # their interval (0.5 to 1.5 of it).
        ok = self.last_get_ms > self.last_push_ms or now - self.last_push_ms >= self.push_interval_ms
        if ok:
            self.last_push_ms = now
        return ok


def _java_uuid_hash(u: uuid.UUID) -> int:
    msb, lsb = u.int >> 64, u.int & ((1 << 64) - 1)
    h = msb ^ lsb
    return ((h >> 32) ^ h) & 0xFFFFFFFF


def subscription_id(metrics: list[str], push_interval_ms: int, instance_id: uuid.UUID) -> int:
    """CRC32C of the metric set and the interval, XORed with the instance id's hash, as a signed int32."""
    text = "[" + ", ".join(metrics) + "]" + str(push_interval_ms)
    value = (crc32c(text.encode()) ^ _java_uuid_hash(instance_id)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass(frozen=True, slots=True)
class Subscribed:
    """A GetTelemetrySubscriptions answer."""

    instance_id: uuid.UUID
    subscription_id: int
    metrics: list[str]
    push_interval_ms: int


class ClientMetricsManager:
    def __init__(self, configs: Callable[[], Mapping[str, Mapping[str, str]]], now_ms: Callable[[], int],
                 max_bytes: int, pushed: PushedMetrics) -> None:
        self._configs = configs
        self._now_ms = now_ms
        self.max_bytes = max_bytes
        self.pushed = pushed
        self._seen: Mapping[str, Mapping[str, str]] | None = None
        self._subscriptions: list[Subscription] = []
        self._version = 0
        self._instances: dict[uuid.UUID, ClientInstance] = {}
        self._by_connection: dict[str, uuid.UUID] = {}

    # ------------------------------------------------------------------------------ subscriptions

    def _refresh(self) -> None:
        configs = self._configs()
        if configs is self._seen or configs == self._seen:
            self._seen = configs
            return
        self._seen = configs
        self._subscriptions = subscriptions_of(configs)
        self._version += 1

    def subscriptions(self) -> list[Subscription]:
        self._refresh()
        return list(self._subscriptions)

    def _new_instance(self, instance_id: uuid.UUID, attributes: ClientAttributes, connection_id: str) -> ClientInstance:
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        everything = False
        attrs = attributes.as_map(instance_id)
        for s in self._subscriptions:
            if s.matches(attrs):
                everything = everything or ALL_METRICS in s.metrics
                metrics |= s.metrics
                interval = min(interval, s.interval_ms)
        wanted = [ALL_METRICS] if everything else sorted(metrics)
        instance = ClientInstance(instance_id, attributes, subscription_id(wanted, interval, instance_id),
                                  self._version, wanted, interval, connection_id)
        if len(self._instances) >= CACHE_MAX_SIZE:  # least recently used first
            self._instances.pop(next(iter(self._instances)))
        self._instances[instance_id] = instance
        self._by_connection[connection_id] = instance_id
        return instance

    def _instance(self, instance_id: uuid.UUID, attributes: ClientAttributes, connection_id: str) -> ClientInstance:
        self._refresh()
        now = self._now_ms()
        self._expire(now)
        instance = self._instances.pop(instance_id, None)
        if instance is None or instance.subscription_version < self._version:
            if instance is not None:
                attributes = instance.attributes
            instance = self._new_instance(instance_id, attributes, connection_id)
        else:
            self._instances[instance_id] = instance  # most recently used last
        instance.expires_ms = now + max(MIN_EXPIRY_MS, 3 * instance.push_interval_ms)
        return instance

    def _expire(self, now: int) -> None:
        for gone in [k for k, i in self._instances.items() if i.expires_ms and i.expires_ms <= now]:
            self._drop(gone)

    def _drop(self, instance_id: uuid.UUID) -> None:
        instance = self._instances.pop(instance_id, None)
        if instance is not None and self._by_connection.get(instance.connection_id) == instance_id:
            del self._by_connection[instance.connection_id]

    def connection_closed(self, connection_id: str) -> None:
        """Kafka forgets the client instance last seen on a closed connection."""
        instance_id = self._by_connection.pop(connection_id, None)
        if instance_id is not None:
            self._instances.pop(instance_id, None)

    def instance(self, instance_id: uuid.UUID) -> ClientInstance | None:
        return self._instances.get(instance_id)

    # ------------------------------------------------------------------------------------ the APIs

    def get_subscriptions(self, instance_id: uuid.UUID, attributes: ClientAttributes,
                          connection_id: str) -> Subscribed:
        """GetTelemetrySubscriptions; KafkaError(THROTTLING_QUOTA_EXCEEDED) when asked again before the
        push interval passed and the subscriptions did not change."""
        if instance_id == uuid.UUID(int=0):
            instance_id = uuid.uuid4()
            while instance_id in self._instances or instance_id.int == 0:
                instance_id = uuid.uuid4()
        instance = self._instance(instance_id, attributes, connection_id)
        if not instance.may_get(self._now_ms()):
            raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                             f"Request from the client [{instance_id}] arrived before the next push interval time")
        instance.last_error = ErrorCode.NONE
        return Subscribed(instance_id, instance.subscription_id, list(instance.metrics), instance.push_interval_ms)

    def push(self, instance_id: uuid.UUID, subscription: int, terminating: bool, compression_type: int,
             metrics: bytes, attributes: ClientAttributes, connection_id: str) -> None:
        """PushTelemetry: checked, decoded, kept; a KafkaError with Kafka's code when refused."""
        if instance_id.int == 0 or instance_id.int == 1:  # Kafka's reserved ids (ZERO_UUID, METADATA_TOPIC_ID)
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Invalid request from the client [{instance_id}], invalid client instance id")
        instance = self._instance(instance_id, attributes, connection_id)
        try:
            self._check_push(instance, subscription, terminating, compression_type, metrics)
        except KafkaError as e:
            instance.last_error = e.code
            raise
        finally:
            instance.terminating = terminating
        if metrics:
            from tidelog.telemetry.otlp import decode  # protobuf is loaded on the first push, not at start

            try:
                samples = decode(compression_type, metrics, self.max_bytes)
            except KafkaError as e:
                instance.last_error = e.code
                raise
            a = instance.attributes
            software = f"{a.software_name}/{a.software_version}" if a.software_name else ""
            source = f"{a.source_address}:{a.source_port}" if a.source_port else a.source_address
            self.pushed.record(instance_id, a.client_id, software, source, samples,
                               max(MIN_EXPIRY_MS, 3 * instance.push_interval_ms))
        instance.last_error = ErrorCode.NONE

    def _check_push(self, instance: ClientInstance, subscription: int, terminating: bool, compression_type: int,
                    metrics: bytes) -> None:
        iid = instance.instance_id
        if instance.terminating:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Client [{iid}] sent the previous request with state terminating to TRUE, can not "
                             "accept any requests after that")
        if not instance.may_push(self._now_ms()) and not terminating:
            raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                             f"Request from the client [{iid}] arrived before the next push interval time")
        if subscription != instance.subscription_id:
            raise KafkaError(ErrorCode.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client [{iid}]")
        if compression_type not in {int(c) for c in CompressionType}:
            raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                             f"Unknown compression type [{compression_type}] is received in telemetry request "
                             f"from [{iid}]")
        if len(metrics) > self.max_bytes:
            raise KafkaError(ErrorCode.TELEMETRY_TOO_LARGE,
                             f"Telemetry request from [{iid}] is larger than the maximum allowed size "
                             f"[{self.max_bytes}]")


__all__ = ["ACCEPTED_COMPRESSION_TYPES", "ClientAttributes", "ClientInstance", "ClientMetricsManager", "Subscribed", "subscription_id"]
