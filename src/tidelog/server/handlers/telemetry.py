"""GetTelemetrySubscriptions and PushTelemetry (KIP-714): decode, ask the client-metrics manager, encode.

Registered only with ``telemetry.enable`` (Kafka serves them only with a telemetry receiver plugin), so
that ApiVersions lists them exactly when they are served. Neither API is authorized, as in Kafka.
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.telemetry.manager import ACCEPTED_COMPRESSION_TYPES, ClientAttributes, ClientMetricsManager


class ClientSoftware:
    """Each connection's client software name and version, as its ApiVersions (v3+) said: what the
    ``client_software_name`` / ``client_software_version`` selectors of a subscription match."""

    def __init__(self) -> None:
        self._by_connection: dict[str, tuple[str, str]] = {}

    def told(self, connection_id: str, name: str, version: str) -> None:
        self._by_connection[connection_id] = (name, version)

    def get(self, connection_id: str) -> tuple[str, str] | None:
        return self._by_connection.get(connection_id)

    def connection_closed(self, connection_id: str) -> None:
        self._by_connection.pop(connection_id, None)


def _get_error(request: GetTelemetrySubscriptionsRequest, code: ErrorCode, message: str | None = None):
    return GetTelemetrySubscriptionsResponse(error_code=int(code))


def _push_error(request: PushTelemetryRequest, code: ErrorCode, message: str | None = None):
    return PushTelemetryResponse(error_code=int(code))


def _source_port(connection_id: str) -> str | None:
    """The client's port: a connection id ends with the peer's ``host:port``."""
    port = connection_id.rsplit(":", 1)[-1]
    return port if port.isdigit() else None


class TelemetryHandlers:
    def __init__(self, manager: ClientMetricsManager, software: ClientSoftware | None = None) -> None:
        self.manager = manager
        self.software = software or ClientSoftware()

    def _attributes(self, ctx: RequestContext) -> ClientAttributes:
        software = self.software.get(ctx.connection_id)
        return ClientAttributes(ctx.client_id or "", software[0] if software else None,
                                software[1] if software else None, ctx.client_host, _source_port(ctx.connection_id))

    @handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, _get_error)
    def handle_get_telemetry_subscriptions(self, ctx: RequestContext, request: GetTelemetrySubscriptionsRequest
                                           ) -> GetTelemetrySubscriptionsResponse:
        try:
            s = self.manager.get_subscriptions(request.client_instance_id, self._attributes(ctx), ctx.connection_id)
        except KafkaError as e:
            return GetTelemetrySubscriptionsResponse(error_code=int(e.code))
        return GetTelemetrySubscriptionsResponse(
            client_instance_id=s.instance_id, subscription_id=s.subscription_id,
            accepted_compression_types=list(ACCEPTED_COMPRESSION_TYPES), push_interval_ms=s.push_interval_ms,
            telemetry_max_bytes=self.manager.max_bytes, delta_temporality=True, requested_metrics=s.metrics)

    @handles(ApiKey.PUSH_TELEMETRY, 0, 0, _push_error)
    def handle_push_telemetry(self, ctx: RequestContext, request: PushTelemetryRequest) -> PushTelemetryResponse:
        try:
            self.manager.push(request.client_instance_id, request.subscription_id, request.terminating,
                              request.compression_type, bytes(request.metrics or b""), self._attributes(ctx),
                              ctx.connection_id)
        except KafkaError as e:
            return PushTelemetryResponse(error_code=int(e.code))
        return PushTelemetryResponse()


__all__ = ["ClientSoftware", "TelemetryHandlers"]
