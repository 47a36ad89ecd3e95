"""The web console: a single-page application (``static/``, plain HTML, ES modules and CSS, no build step)
and its JSON API under ``/api/v1`` (docs/console.md), added to the broker's HTTP listener by the
composition root.

Read-only unless enabled (``console.read.only=false``): while read-only, every request that would change
something (any method but GET/HEAD) answers 403 CONSOLE_READ_ONLY. A changing request must send
``Content-Type: application/json`` (415 otherwise), which a cross-site HTML form cannot, so another web
page open in the same browser cannot make the console change data.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from tidelog.clock import Clock
from tidelog.coordinator.group import GroupCoordinator
from tidelog.replica.manager import ReplicaManager
from tidelog.telemetry.pushed import PushedMetrics
from tidelog.web.console.admin import ConsoleAdmin, Send
from tidelog.web.console.api_error import error_middleware
from tidelog.web.console.cluster_api import ClusterApi
from tidelog.web.console.group_api import GroupApi
from tidelog.web.console.message_api import MessageApi
from tidelog.web.console.principal import NONE, ConsoleAuthentication, Lookup
from tidelog.web.console.sampler import Sampler
from tidelog.web.console.security_api import SecurityApi
from tidelog.web.console.session import SessionStore
from tidelog.web.console.share_admin import ShareAdmin
from tidelog.web.console.share_group_api import InFlight, no_in_flight
from tidelog.web.console.telemetry_api import TelemetryApi
from tidelog.web.console.topic_api import TopicApi
from tidelog.web.console.transaction_api import TransactionApi

STATIC_DIR = Path(__file__).parent / "static"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
#: Changing requests a read-only console still answers: they change no data.
SESSION_PATHS = frozenset({"/api/v1/login", "/api/v1/logout"})


class Console:
    def __init__(self, replicas: ReplicaManager, send: Send, clock: Clock, *, groups: GroupCoordinator,
                 broker_id: int, read_only: bool, sample_interval_ms: int, authentication: str = NONE,
                 lookup: Lookup = lambda user, mechanism: None, session_ms: int = 0,
                 share_in_flight: InFlight = no_in_flight, pushed_metrics: PushedMetrics | None = None) -> None:
        """``authentication``: ``none`` or ``sasl`` (logins checked with ``lookup``, the broker's SCRAM
        credential store's ``get``; sessions last ``session_ms``, 8 h when 0). ``groups``: the broker's
        group coordinator, whose committed offsets the lag sampler reads. ``share_in_flight``: the share
        partition manager's read-only snapshot of a share group's in-flight records on this broker.
        ``pushed_metrics``: what clients pushed (client telemetry, telemetry.enable), else None."""
        self.read_only = read_only
        self.authentication = ConsoleAuthentication(authentication, lookup, SessionStore(clock.monotonic_ms, session_ms))
        self.sample_interval_ms = sample_interval_ms
        self.admin = admin = ConsoleAdmin(send)
        self.sampler = Sampler(replicas, groups, clock.wall_ms)
        topics = TopicApi(replicas, admin)
        self.apis = (self.authentication,
                     ClusterApi(topics, admin, self.sampler, self.authentication, broker_id=broker_id,
                                read_only=read_only, sample_interval_ms=sample_interval_ms),
                     topics, MessageApi(replicas, admin, clock), GroupApi(replicas, admin, self.sampler, sample_interval_ms, ShareAdmin(send), share_in_flight),
                     SecurityApi(admin), TransactionApi(admin), TelemetryApi(send, lambda: pushed_metrics))

    def install(self, app: web.Application) -> None:
        """Add the console's middlewares and routes to the HTTP listener's application (before it starts)."""
        # Outermost first: errors as JSON, then who is asking (401 without a session), then the read-only guard.
        app.middlewares.extend([error_middleware, self.authentication.middleware, self._guard_middleware])
        app.router.add_get("/", self._index)
        app.router.add_static("/static/", STATIC_DIR, append_version=False)
        for api in self.apis:
            app.router.add_routes(api.routes())

    async def sample(self) -> None:
        """One sample of the live figures (the composition root runs it every sample interval)."""
        await self.sampler.sample()

    async def _index(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    @web.middleware
    async def _guard_middleware(self, request: web.Request, handler) -> web.StreamResponse:
        routed = request.match_info.http_exception is None  # else: 404/405, answered as such
        if routed and request.path.startswith("/api/") and request.method not in SAFE_METHODS:
            if self.read_only and request.path not in SESSION_PATHS:
                return web.json_response({
                    "error": "The console is read-only: set console.read.only=false in the broker's configuration "
                             "to allow changes.", "code": "CONSOLE_READ_ONLY"}, status=403)
            if request.method != "DELETE" and request.content_type != "application/json":
                return web.json_response({"error": "send the request body as Content-Type: application/json",
                                          "code": "UNSUPPORTED_MEDIA_TYPE"}, status=415)
        return await handler(request)


__all__ = ["STATIC_DIR", "Console"]
