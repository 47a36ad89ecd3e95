"""Client telemetry in the console (KIP-714): the client-metrics subscriptions and, per client id, what
its client instances pushed (``telemetry.enable``; docs/telemetry.md).

Who may look: whoever may list config resources (ListConfigResources, DESCRIBE_CONFIGS on the cluster),
asked as the request's principal, as a Kafka client would; the subscriptions come from that request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from tidelog.protocol.messages import DescribeConfigsRequest, ListConfigResourcesRequest
from tidelog.security.principal import KafkaPrincipal
from tidelog.telemetry.pushed import PushedClient, PushedMetrics
from tidelog.web.console.admin import Send
from tidelog.web.console.api_error import ApiError, check
from tidelog.web.console.principal import principal_of

CLIENT_METRICS = 16


def _instance(client: PushedClient) -> dict[str, Any]:
    return {"client_instance_id": str(client.client_instance_id), "software": client.software,
            "source": client.source, "last_push_ms": client.last_push_ms, "pushes": client.pushes,
            "series": [{"name": name, "labels": dict(labels), "kind": s.kind, "value": s.value}
                       for (name, labels), s in sorted(client.series.items())]}


class TelemetryApi:
    def __init__(self, send: Send, pushed: Callable[[], PushedMetrics | None]) -> None:
        self._send = send
        self._pushed = pushed

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/client-metrics", self.overview),
                web.get("/api/v1/client-metrics/clients/{client_id}", self.client)]

    async def _subscriptions(self, principal: KafkaPrincipal) -> list[dict[str, Any]]:
        listed = await self._send(ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]), 1, principal)
        check(listed.error_code)
        names = [r.resource_name for r in listed.config_resources]
        if not names:
            return []
        D = DescribeConfigsRequest
        described = await self._send(D(resources=[D.DescribeConfigsResource(
            resource_type=CLIENT_METRICS, resource_name=n, configuration_keys=None) for n in names]), 4, principal)
        return [{"name": r.resource_name, "configs": {c.name: c.value for c in r.configs}}
                for r in described.results if r.error_code == 0]

    async def overview(self, request: web.Request) -> web.Response:
        subscriptions = await self._subscriptions(principal_of(request))
        pushed = self._pushed()
        clients: dict[str, dict[str, Any]] = {}
        for c in pushed.clients() if pushed is not None else []:
            entry = clients.setdefault(c.client_id, {"client_id": c.client_id, "instances": 0, "series": 0,
                                                     "last_push_ms": 0})
            entry["instances"] += 1
            entry["series"] += len(c.series)
            entry["last_push_ms"] = max(entry["last_push_ms"], c.last_push_ms)
        return web.json_response({"enabled": pushed is not None, "subscriptions": subscriptions,
                                  "clients": sorted(clients.values(), key=lambda e: e["client_id"])})

    async def client(self, request: web.Request) -> web.Response:
        await self._subscriptions(principal_of(request))  # the same check as the overview's
        client_id = request.match_info["client_id"]
        pushed = self._pushed()
        instances = [_instance(c) for c in (pushed.clients() if pushed is not None else []) if c.client_id == client_id]
        if not instances:
            raise ApiError(404, "CLIENT_NOT_FOUND", f"No telemetry from client id '{client_id}' (yet, or any more)")
        return web.json_response({"client_id": client_id, "instances": instances})


__all__ = ["TelemetryApi"]
