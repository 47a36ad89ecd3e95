"""The asyncio shell around :class:`~tidelog.server.connection.Connection`: listeners and connections
(Kafka's ``SocketServer``): read, feed, dispatch, write.

:class:`SocketServer` binds the listeners (before the broker loads anything, without accepting yet),
starts serving once the broker is ready, reaps idle connections and closes everything at shutdown.
One :class:`ClientProtocol` per TCP connection. Requests are handled as they arrive (pipelining);
responses leave in arrival order. Back-pressure: while more than ``queued.max.requests`` requests of
a connection are unanswered, or while the socket's send buffer is above its high-water mark, the
broker stops reading from that connection.

Record data in Fetch responses is a :class:`~tidelog.storage.segment.FileSlice`. On a transport that
supports it (the standard asyncio loop with a plain TCP socket), it is sent with ``loop.sendfile``
(zero-copy ``os.sendfile``); otherwise (uvloop, or TLS, which must encrypt every byte in user space)
it is read with one ``pread`` and written. A slice keeps its segment file open until it is written
(or the connection is gone), so deleting a topic never pulls a file from under a queued response.
A write that fails for any other reason than the peer closes the connection with a log line.

Security (docs/security.md): each listener has a :class:`~tidelog.server.tls.ListenerSecurity`. SSL and
SASL_SSL listeners serve TLS (:mod:`~tidelog.server.tls_transport`: a refused handshake sends its alert, is
logged, rate-limited, and counted); an SSL client's certificate names its principal. On SASL listeners a
:class:`~tidelog.server.authenticator.SaslAuthenticator` gates every request: before authentication only
ApiVersions, SaslHandshake and SaslAuthenticate (anything else closes the connection), with frames
limited to ``sasl.server.max.receive.size``; after a SaslHandshake v0, frames are bare SASL tokens.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.clock import Clock, TimerHandle
from tidelog.listener import Listener
from tidelog.meter import RequestTimes, now
from tidelog.protocol.exceptions import ProtocolError
from tidelog.protocol.headers import encode_response_buffers, peek_api
from tidelog.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from tidelog.security.principal_mapping import distinguished_name
from tidelog.security.scram import AuthenticationError
from tidelog.server.authenticator import SaslAuthenticator
from tidelog.server.connection import Connection
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import CloseConnection, Dispatched, HandlerRegistry
from tidelog.server.tls import ListenerSecurity
from tidelog.server.tls_transport import TlsServerProtocol

log = logging.getLogger(__name__)


#: At most this many failed authentications are logged per window; the rest are counted in the next line.
AUTH_LOG_BURST = 10
AUTH_LOG_WINDOW_MS = 60_000


class ListenerError(Exception):
    """A listener could not be bound (the port is taken, the address is not this machine's ...)."""


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Per-connection limits, by Kafka's names: ``socket.request.max.bytes``, ``queued.max.requests``,
    ``connections.max.idle.ms``."""

    max_request_bytes: int = 104_857_600
    max_queued_requests: int = 500
    max_idle_ms: int = 600_000


class SocketServer:
    """The broker's listeners and live connections. Loop-only, not thread-safe."""

    def __init__(self, handlers: HandlerRegistry, clock: Clock, settings: ConnectionSettings,
                 use_sendfile: bool | None = None, security: dict[str, ListenerSecurity] | None = None,
                 request_times: RequestTimes | None = None) -> None:
        self.handlers = handlers
        #: listener name -> its security (absent: PLAINTEXT)
        self.security = security if security is not None else {}
        self.clock = clock
        self.settings = settings
        self._use_sendfile = use_sendfile
        self.use_sendfile = False  # decided at bind time, by the event loop in use
        self.connections: set[ClientProtocol] = set()
        self.bound: dict[str, tuple[str, int]] = {}  # listener name -> (host, bound port)
        self._servers: list[asyncio.base_events.Server] = []
        #: Request phase timings (docs/metrics.md; None: metrics off).
        self.request_times = request_times
        #: listener name -> connections closed for a failed TLS handshake or SASL authentication
        #: (Kafka's ``failed-authentication-total``)
        self.failed_authentications: Counter[str] = Counter()
        self._auth_log_window = (0, 0, 0)  # (window start ms, lines logged in it, lines not logged)
        self._handshaking: weakref.WeakSet[TlsServerProtocol] = weakref.WeakSet()
        #: called with a client connection's id when it closes (share sessions end with their connection)
        self.on_connection_closed: list[Callable[[str], object]] = []

    async def bind(self, listeners: tuple[Listener, ...]) -> None:
        """Bind every listener without accepting connections (:meth:`start_serving` does)."""
        loop = asyncio.get_running_loop()
        # os.sendfile needs the standard selector loop; uvloop transports fall back to pread + write.
        self.use_sendfile = (self._use_sendfile if self._use_sendfile is not None
                             else "uvloop" not in type(loop).__module__)
        for listener in listeners:
            sec = self.security.get(listener.name)
            factory = (self._tls_factory(listener.name, sec.ssl_context) if sec and sec.ssl_context
                       else lambda name=listener.name: ClientProtocol(self, name))
            try:
                server = await loop.create_server(factory, listener.host or None, listener.port,
                                                  reuse_address=True, start_serving=False)
            except OSError as e:
                self.close()
                raise ListenerError(f"cannot listen on {listener}: {e.strerror or e}; change its port in "
                                    "listeners (tidelog serve --port; 0 picks a free one)") from None
            self._servers.append(server)
            self.bound[listener.name] = (listener.host, server.sockets[0].getsockname()[1])

    def _tls_factory(self, name: str, context):
        def refused(peer: str, reason: str) -> None:
            self.failed_authentication(name, peer, f"SSL handshake failed: {reason}")

        def factory() -> TlsServerProtocol:
            layer = TlsServerProtocol(context, ClientProtocol(self, name), refused)
            self._handshaking.add(layer)
            return layer

        return factory

    def failed_authentication(self, listener: str, peer: str, reason: str | None) -> None:
        """Count a connection closed for failed authentication; log ``reason`` (None: the caller logs)
        as Kafka does ("Failed authentication with /IP (...)"), at most AUTH_LOG_BURST lines a minute."""
        self.failed_authentications[listener] += 1
        if reason is None:
            return
        now_ms = self.clock.monotonic_ms()
        start, logged, dropped = self._auth_log_window
        if now_ms - start >= AUTH_LOG_WINDOW_MS:
            if dropped:
                log.info("%d more failed authentications were not logged", dropped)
            start, logged, dropped = now_ms, 0, 0
        if logged < AUTH_LOG_BURST:
            log.info("Failed authentication with /%s on listener %s (%s)", peer, listener, reason)
            logged += 1
        else:
            dropped += 1
        self._auth_log_window = (start, logged, dropped)

    async def start_serving(self) -> None:
        for server in self._servers:
            await server.start_serving()

    def reap_idle(self) -> None:
        limit = self.settings.max_idle_ms
        now = self.clock.monotonic_ms()
        for conn in list(self.connections):
            if now - conn.last_active_ms > limit and conn.conn.in_flight == 0:
                conn.close(f"idle for more than {limit} ms (connections.max.idle.ms)")

    def close(self) -> None:
        """Stop accepting and close every connection."""
        for server in self._servers:
            server.close()
        for layer in list(self._handshaking):
            if layer.app_transport is None and layer.raw is not None:
                layer.raw.abort()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()

    async def wait_closed(self) -> None:
        for server in self._servers:
            await server.wait_closed()


def _is_file_slice(part) -> bool:
    return hasattr(part, "fileno") and hasattr(part, "position")


def _release(parts) -> None:
    """Release the file slices among ``parts`` (see :class:`~tidelog.storage.segment.FileSlice`)."""
    for part in parts:
        release = getattr(part, "release", None) if _is_file_slice(part) else None
        if release is not None:
            release()


class ClientProtocol(asyncio.Protocol):
    def __init__(self, server: SocketServer, listener_name: str = "PLAINTEXT") -> None:
        self.server = server
        self.listener_name = listener_name
        self.conn = Connection(server.settings.max_request_bytes)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.connection_id = ""
        self.last_active_ms = server.clock.monotonic_ms()
        self._max_queued = server.settings.max_queued_requests
        self._reading_paused = False
        self._writing_paused = False
        self._out: deque[list] = deque()
        self._writer: asyncio.Task | None = None
        self._drain_waiter: asyncio.Future | None = None
        self.closed = False
        self.security = security = server.security.get(listener_name)
        self.security_protocol = security.protocol if security else "PLAINTEXT"
        self.use_sendfile = server.use_sendfile and (security is None or security.ssl_context is None)
        self.tls_principal: KafkaPrincipal = ANONYMOUS
        self.authenticator: SaslAuthenticator | None = None
        if security is not None and security.sasl is not None:
            self.authenticator = SaslAuthenticator(security.sasl, server.clock)
            self.conn.limit_frames(security.sasl.max_receive_size)
        self._mute_timer: TimerHandle | None = None  # a quota's throttle (mute_for), on the server's clock
        self._mute_until_ms = 0
        self._held: deque[bytes] = deque()  # requests received while muted
        self._times = server.request_times
        self._timings: dict[int, list] = {}  # metrics on: seq -> the request's timestamps (meter.RequestTimes)

    # ------------------------------------------------------------------------------ connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        sock = transport.get_extra_info("sockname")
        self.connection_id = f"{sock[0]}:{sock[1]}-{self.peer}" if sock else self.peer
        self.server.connections.add(self)
        cert = transport.get_extra_info("peercert") if self.security and self.security.ssl_context else None
        if cert and self.security and self.security.principal_mapper:
            try:
                name = self.security.principal_mapper.name(distinguished_name(cert.get("subject", ())))
            except ValueError as e:
                self.server.failed_authentication(self.listener_name, self.peer, None)
                self.close(f"failed authentication (SSL): {e}", logging.INFO)
                return
            self.tls_principal = KafkaPrincipal(USER_TYPE, name)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        for hook in self.server.on_connection_closed:
            try:
                hook(self.connection_id)
            except Exception:  # a hook's failure must not keep the connection's resources
                log.exception("connection-closed hook failed for %s", self.peer)
        if self._mute_timer is not None:
            self._mute_timer.cancel()
        if self._writer is not None:
            self._writer.cancel()
        else:
            self._drop_queue()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    def close(self, reason: str, level: int = logging.WARNING) -> None:
        if not self.closed:
            log.log(level, "closing connection %s: %s", self.peer, reason)
            self.closed = True
            if self.transport is not None:
                self.transport.close()

    # ---------------------------------------------------------------------------------- reading

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_active_ms = self.server.clock.monotonic_ms()
        try:
            frames = self.conn.receive(data)
        except ProtocolError as e:
            self.close(str(e))
            return
        received = 0  # metrics on: the first frame's start time, for the frames after it
        for i, frame in enumerate(frames):
            if self._mute_timer is not None or self._held:
                self._held.extend(frames[i:])
                break
            received = self._handle(frame, received)
            if self.closed:
                return
        self._update_reading()

    def mute_for(self, ms: int) -> None:
        """Stop reading from this connection for ``ms`` of the server's clock (a client over its quota,
        KIP-219): requests already received wait too, responses already due still go out. A longer mute
        extends it."""
        if ms <= 0 or self.closed:
            return
        end = self.server.clock.monotonic_ms() + ms
        if self._mute_timer is not None:
            if self._mute_until_ms >= end:
                return
            self._mute_timer.cancel()
        self._mute_until_ms = end
        self._mute_timer = self.server.clock.call_later(ms, self._unmute)
        self._update_reading()

    def _unmute(self) -> None:
        self._mute_timer = None
        while self._held and self._mute_timer is None and not self.closed:
            self._handle(self._held.popleft())
        self._update_reading()

    def _handle(self, frame: bytes, received: int = 0) -> int:
        """Dispatch one frame. Metrics on: ``received`` is when the read that completed it was
        handled (0: now, for the first frame of a read); returns that time for the next frame."""
        auth = self.authenticator
        if auth is not None and not self._admit(auth, frame):
            return received
        seq = self.conn.start()
        started = now() if self._times is not None else 0
        received = received or started
        try:
            d = self.server.handlers.dispatch(frame, self._context)
        except CloseConnection as e:
            self.close(str(e))
            return received
        timing = [d.api_key, received, started, now(), 0, 0, 0, d.api_version] if self._times is not None else None
        result = d.result
        if inspect.isawaitable(result):
            if timing is not None:
                self._timings[seq] = timing
            task = asyncio.ensure_future(result)
            task.add_done_callback(lambda t: self._finish_async(seq, d, t))
        else:
            self._finish(seq, d, result, timing)
        return received

    def _admit(self, auth: SaslAuthenticator, frame: bytes) -> bool:
        """Whether ``frame`` goes on to the dispatcher: bare SASL tokens (after SaslHandshake v0) are
        answered here, requests the SASL state does not allow close the connection."""
        if auth.raw:
            try:
                reply = auth.raw_token(bytes(frame))
            except AuthenticationError as e:
                self.server.failed_authentication(self.listener_name, self.peer, None)
                self.close(f"failed authentication ({auth.mechanism}): {e}", logging.INFO)
                return False
            self._send([len(reply).to_bytes(4, "big"), reply])
            if auth.authenticated:
                self.conn.limit_frames(self.server.settings.max_request_bytes)
            return False
        try:
            api_key = peek_api(frame)[0]
        except ProtocolError:
            self.close("malformed request header before SASL authentication")
            return False
        reason = auth.refusal(api_key)
        if reason is not None:
            self.close(reason)
            return False
        return True

    def _context(self, header) -> RequestContext:
        auth = self.authenticator
        principal = (auth.principal or ANONYMOUS) if auth is not None else self.tls_principal
        return RequestContext(header, self.connection_id, self.peer.rsplit(":", 1)[0], self.listener_name,
                              principal, self.security_protocol, auth)

    def _finish_async(self, seq: int, d: Dispatched, task: asyncio.Future) -> None:
        if task.cancelled() or self.closed:
            return
        exc = task.exception()
        if exc is not None:
            log.error("request %s failed", d.api_key, exc_info=exc)
            self.close("internal error")
            return
        self._finish(seq, d, task.result())

    def _finish(self, seq: int, d: Dispatched, response, timing: list | None = None) -> None:
        if self.closed:
            return
        ready = 0
        if self._times is not None:
            if timing is not None:  # straight from dispatch: ready as the handler returned
                ready = timing[4] = timing[3]
            else:
                ready = now()
                timing = self._timings.pop(seq, None)
                if timing is not None:
                    timing[4] = ready
        buffers = None
        if response is not None:
            try:
                buffers = encode_response_buffers(response, d.api_version, d.correlation_id)
            except ProtocolError as e:
                log.error("cannot encode the response to API %d v%d: %s", d.api_key, d.api_version, e)
                self.close("unencodable response")
                return
        if self._times is None:
            for ready in self.conn.finish(seq, buffers):
                self._send(ready)
        else:  # metrics on: time the responses that leave now (this one, unless an earlier one is pending)
            first = self.conn.next_to_send
            for out in self.conn.finish(seq, buffers):
                self._send(out)
            end = self.conn.next_to_send
            sent = now()
            if timing is not None:
                if end > seq:
                    self._times.add(timing, ready, sent)
                else:
                    self._timings[seq] = timing
            if end - first > (end > seq):  # earlier-finished responses left with it
                self._times.released(self._timings, first, end, ready, sent)
        auth = self.authenticator
        if auth is not None:
            if auth.close_reason is not None:  # the answer is written; close() lets it leave first
                self.server.failed_authentication(self.listener_name, self.peer, None)
                self.close(auth.close_reason, logging.INFO)  # failed authentication: a client's mistake
                return
            if auth.authenticated:
                self.conn.limit_frames(self.server.settings.max_request_bytes)
        if d.throttle_ms > 0:
            self.mute_for(d.throttle_ms)
        self._update_reading()

    def _update_reading(self) -> None:
        if self.transport is None or self.closed:
            return
        busy = (self.conn.in_flight >= self._max_queued or self._writing_paused or len(self._out) > 64
                or self._mute_timer is not None)
        if busy and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
        elif not busy and self._reading_paused:
            self.transport.resume_reading()
            self._reading_paused = False

    # ---------------------------------------------------------------------------------- writing

    def _send(self, buffers: list) -> None:
        if self._writer is None and not self._out and not any(_is_file_slice(p) for p in buffers):
            self.transport.writelines(buffers)  # type: ignore[union-attr]
            return
        self._out.append(buffers)
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._write_queue())

    async def _write_queue(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._out and not self.closed:
                buffers = self._out.popleft()
                pending: list = []
                for i, part in enumerate(buffers):
                    if not _is_file_slice(part):
                        pending.append(part)
                        continue
                    if self.use_sendfile:
                        if pending:
                            self.transport.writelines(pending)  # type: ignore[union-attr]
                            pending = []
                        await self._drain()
                        try:
                            await loop.sendfile(self.transport, part.file, part.position, part.size)  # type: ignore[arg-type]
                        except BaseException:
                            _release(buffers[i:])
                            raise
                    else:
                        pending.append(part.read())
                    _release((part,))  # written: a deleted segment's file may close now
                if pending:
                    self.transport.writelines(pending)  # type: ignore[union-attr]
                if self._writing_paused:
                    await self._drain()
        except (ConnectionError, OSError) as e:
            self.close(f"write failed: {e}")
        except Exception:
            # never leave a connection open and silent with its responses unsent
            log.exception("writing to %s failed", self.peer)
            self.close("internal error while writing a response")
        finally:
            self._writer = None
            if self.closed:
                self._drop_queue()
            self._update_reading()

    def _drop_queue(self) -> None:
        """The connection is gone: responses that will never be written release their files."""
        while self._out:
            _release(self._out.popleft())

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)
        self._update_reading()

    async def _drain(self) -> None:
        if not self._writing_paused:
            return
        self._drain_waiter = asyncio.get_running_loop().create_future()
        await self._drain_waiter


__all__ = ["ClientProtocol", "ConnectionSettings", "ListenerError", "SocketServer"]
