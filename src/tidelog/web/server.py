"""The broker's HTTP listener (``metrics.listener``, e.g. ``http://127.0.0.1:9644``), on the broker's own
event loop, built with aiohttp.

Components add their routes in the composition root, before :meth:`HttpServer.start` (aiohttp freezes
the route table when the server starts). The server itself answers two health checks:

- ``GET /healthz``: live (the process answers HTTP), always 200 while the server runs;
- ``GET /readyz``: ready, 200 once the logs are loaded and the Kafka listeners accept connections,
  503 with the reason before that, and while a log dir is full (writes fail; docs/storage.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from aiohttp import web

log = logging.getLogger(__name__)

#: Largest request body the HTTP listener reads (the JSON API's produce action sends small messages).
MAX_BODY_BYTES = 4 * 1024 * 1024


class HttpServer:
    def __init__(self, host: str, port: int, ready: Callable[[], str | None]) -> None:
        """``ready()`` returns None when the broker is ready, else why it is not."""
        self.host = host
        self.port = port
        self._ready = ready
        self.app = web.Application(client_max_size=MAX_BODY_BYTES)
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        self._runner: web.AppRunner | None = None
        self.bound: tuple[str, int] | None = None

    def add_routes(self, routes: Iterable[web.AbstractRouteDef]) -> None:
        self.app.router.add_routes(list(routes))

    def add_subapp(self, prefix: str, app: web.Application) -> None:
        self.app.add_subapp(prefix, app)

    @property
    def url(self) -> str:
        assert self.bound is not None, "not started"
        host, port = self.bound
        shown = host or "0.0.0.0"
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{port}/"

    async def start(self) -> None:
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host or None, self.port, reuse_address=True)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise OSError(e.errno, f"cannot listen on http://{self.host}:{self.port} (metrics.listener): "
                                   f"{e.strerror}; set metrics.listener to another port (http://{self.host}:0 "
                                   "picks a free one; empty: no HTTP listener)") from e
        self._runner = runner
        server = site._server  # the asyncio server: the only way to learn the port picked for port 0
        sockets = getattr(server, "sockets", None) or ()
        port = sockets[0].getsockname()[1] if sockets else self.port
        self.bound = (self.host, port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "live"})

    async def _readyz(self, request: web.Request) -> web.Response:
        why = self._ready()
        if why is None:
            return web.json_response({"status": "ready"})
        return web.json_response({"status": "not ready", "reason": why}, status=503)


__all__ = ["MAX_BODY_BYTES", "HttpServer"]
