"""The asyncio shell of the TubeMQ front end: its listeners (master, broker) and connections.

Read, feed, dispatch, write, as :mod:`tidelog.server.network` does for Kafka. A response is written
as soon as its request is handled; one whose handler is ``async`` (its answer waits for the group
coordinator's committed writes, or a message for the ISR) is written when it completes, after responses to later
requests of the connection: TubeMQ clients match responses by serial number (the Java client keeps
a callback per serial), so responses may go out in any order. A connection closed meanwhile gets
nothing; closing the server cancels the waits. A frame that is not
TubeMQ framing (bad token, list size or block length) closes that connection only; everything
else is answered (:mod:`tidelog.server.tubemq.dispatcher`). Back-pressure: while the socket's send
buffer is above its high-water mark the connection is not read. Idle connections are closed after
``connections.max.idle.ms``, as Kafka's are.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable
from dataclasses import dataclass

from tidelog.clock import Clock
from tidelog.listener import NON_ROUTABLE_HOSTS
from tidelog.protocol.tubemq.frame import FrameDecoder, FrameError
from tidelog.server.network import ConnectionSettings, ListenerError
from tidelog.server.tubemq.dispatcher import TubeHandlerRegistry

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TubeListener:
    """One TubeMQ listener: which registry answers it and where it listens."""

    registry: TubeHandlerRegistry
    host: str
    port: int

    @property
    def name(self) -> str:
        return self.registry.name


class TubeServer:
    """The TubeMQ listeners and their live connections. Loop-only, not thread-safe."""

    def __init__(self, listeners: tuple[TubeListener, ...], clock: Clock, settings: ConnectionSettings) -> None:
        self.listeners = listeners
        self.clock = clock
        self.settings = settings
        self.connections: set[TubeConnection] = set()
        self.bound: dict[str, tuple[str, int]] = {}  # listener name -> (host, bound port)
        self._servers: list[asyncio.base_events.Server] = []
        self._advertised: dict[str, tuple[str, int]] = {}
        self._waiting: set[asyncio.Task[None]] = set()  # answers waiting for the ISR

    async def bind(self) -> None:
        """Bind every listener without accepting connections yet (:meth:`start_serving` does)."""
        loop = asyncio.get_running_loop()
        for listener in self.listeners:
            try:
                server = await loop.create_server(
                    lambda registry=listener.registry: TubeConnection(self, registry),
                    listener.host or None, listener.port, reuse_address=True, start_serving=False)
            except OSError as e:
                self.close()
                raise ListenerError(f"cannot listen on {listener.host}:{listener.port} for the TubeMQ {listener.name}: "
                                    f"{e.strerror or e}; change tubemq.{listener.name}.listener (port 0 picks a "
                                    "free one)") from None
            self._servers.append(server)
            self.bound[listener.name] = (listener.host, server.sockets[0].getsockname()[1])

    async def start_serving(self) -> None:
        for server in self._servers:
            await server.start_serving()

    def advertised(self, name: str, advertised: tuple[str, int] | None = None) -> tuple[str, int]:
        """Where clients are told to reach listener ``name`` (once bound): ``advertised`` if given, else
        the listener's own address; an empty or 0.0.0.0 host becomes this machine's host name and
        port 0 the bound port, as Kafka's advertised listeners do. Cached after the first call."""
        if name not in self._advertised:
            host, port = advertised or self.bound[name]
            if not advertised:
                port = self.bound[name][1]
            if host in ("", *NON_ROUTABLE_HOSTS):
                host = socket.getfqdn()
            self._advertised[name] = (host, port or self.bound[name][1])
        return self._advertised[name]

    def reap_idle(self) -> None:
        limit = self.settings.max_idle_ms
        now = self.clock.monotonic_ms()
        for conn in list(self.connections):
            if now - conn.last_active_ms > limit:
                conn.close(f"idle for more than {limit} ms (connections.max.idle.ms)")

    def answer_later(self, conn: TubeConnection, response: Awaitable[bytes]) -> None:
        """Write ``response`` to ``conn`` once it is ready (a wait for the ISR)."""
        async def answer() -> None:
            conn.write_later(await response)

        task = asyncio.get_running_loop().create_task(answer())
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)

    def close(self) -> None:
        for task in list(self._waiting):
            task.cancel()
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()

    async def wait_closed(self) -> None:
        for server in self._servers:
            await server.wait_closed()


class TubeConnection(asyncio.Protocol):
    def __init__(self, server: TubeServer, registry: TubeHandlerRegistry) -> None:
        self.server = server
        self.registry = registry
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = "?"
        self.connection_id = ""
        self.last_active_ms = server.clock.monotonic_ms()
        self.closed = False
        self._reading_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client_host = peer[0] if peer else "?"
        sock = transport.get_extra_info("sockname")
        self.connection_id = f"{sock[0]}:{sock[1]}-{self.peer}" if sock else self.peer
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)

    def close(self, reason: str) -> None:
        if not self.closed:
            log.warning("closing TubeMQ %s connection %s: %s", self.registry.name, self.peer, reason)
            self.closed = True
            if self.transport is not None:
                self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_active_ms = self.server.clock.monotonic_ms()
        try:
            frames = self.decoder.feed(data)
        except FrameError as e:
            self.close(str(e))
            return
        if not frames:
            return
        # Requests that arrived together are answered with one write (pipelining clients send many);
        # those that wait for the ISR are written when they are ready.
        out = []
        for frame in frames:
            response = self.registry.dispatch(frame, self.client_host, self.connection_id)
            if isinstance(response, bytes):
                out.append(response)
            else:
                self.server.answer_later(self, response)
        if out and not self.closed:
            self.transport.writelines(out)  # type: ignore[union-attr]

    def write_later(self, response: bytes) -> None:
        if not self.closed and self.transport is not None and not self.transport.is_closing():
            self.transport.write(response)

    def pause_writing(self) -> None:
        if self.transport is not None and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True

    def resume_writing(self) -> None:
        if self.transport is not None and self._reading_paused and not self.closed:
            self.transport.resume_reading()
            self._reading_paused = False


__all__ = ["TubeConnection", "TubeListener", "TubeServer"]
